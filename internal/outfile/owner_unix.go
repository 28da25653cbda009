//go:build unix

package outfile

import (
	"io/fs"
	"syscall"
)

// owner returns the owner of an existing file, kept when root replaces it.
func owner(fi fs.FileInfo) (int, int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}
