package main

import (
	"io"
	"os"

	"github.com/walscope/walscope/internal/outfile"
	"github.com/walscope/walscope/xlog"
)

// writeAtomic writes an output file (--save-fullpage, report) through
// internal/outfile: a regular file is replaced atomically when complete,
// keeping its mode (a new one honours the umask); a device or pipe is
// written to, never replaced; a symbolic link is written through.
func writeAtomic(path string, write func(io.Writer) error) error {
	return outfile.WriteFile(path, write)
}

// refuseInput refuses an output that is one of the files read (the paths
// given, the segment and history files of srcs): report --out onto a
// segment replaced the WAL with HTML. Only an existing regular file can be
// one; the files are compared by identity (os.SameFile), so links and other
// names for them are caught too.
func refuseInput(out string, paths []string, srcs ...xlog.Source) error {
	_, fi, err := outfile.Resolve(out)
	if err != nil || fi == nil || !fi.Mode().IsRegular() {
		return nil
	}
	is := func(path string) bool {
		in, err := os.Stat(path)
		return err == nil && os.SameFile(fi, in)
	}
	refuse := func(path string) error {
		return usageErr("--out %s is %s, an input of this run: it would be replaced", out, path)
	}
	for _, p := range paths {
		if is(p) {
			return refuse(p)
		}
	}
	for _, src := range srcs {
		for _, f := range src.Segments() {
			if is(f.Path) {
				return refuse(f.Path)
			}
		}
		if hr, ok := src.(xlog.HistoryReader); ok {
			for _, key := range hr.Histories() {
				if is(key) {
					return refuse(key)
				}
			}
		}
	}
	return nil
}
