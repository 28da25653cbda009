//go:build !unix

package archive

import (
	"io"
	"os"
)

// fileHandle is an open file: without Unix descriptors, an *os.File.
type fileHandle struct{ f *os.File }

func openHandle(path string) (fileHandle, error) {
	f, err := os.Open(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err // openSegmentFile wraps it again
		}
		return fileHandle{}, err
	}
	return fileHandle{f}, nil
}

// pread reads as pread(2) does: the end of the file is a short count (0
// at the end), not an error.
func (h fileHandle) pread(b []byte, off int64) (int, error) {
	n, err := h.f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err // segmentFile wraps it again
	}
	return n, err
}

func (h fileHandle) close() error { return h.f.Close() }

func (h fileHandle) osFile(string) treeFile { return h.f }
