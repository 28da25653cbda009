package main

import (
	"io"

	"github.com/walscope/walscope/internal/outfile"
)

// writeAtomic writes an output file (--save-fullpage, report) through
// internal/outfile: a regular file is replaced atomically when complete,
// keeping its mode (a new one honours the umask); a device or pipe is
// written to, never replaced; a symbolic link is written through.
func writeAtomic(path string, write func(io.Writer) error) error {
	return outfile.WriteFile(path, write)
}
