//go:build unix

package xlog

import (
	"os"
	"syscall"
)

// mappedFile is a segment file mapped read-only into memory: the reader uses
// its bytes in place, with no copy from the page cache. WAL files are not
// truncated while PostgreSQL or an archive holds them; set
// WALSCOPE_NO_MMAP=1 to read with pread instead.
type mappedFile struct {
	*os.File
	data []byte
}

func (m *mappedFile) Bytes() []byte { return m.data }

func (m *mappedFile) Close() error {
	var err error
	if m.data != nil {
		err = syscall.Munmap(m.data)
		m.data = nil
	}
	if cerr := m.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func openMapped(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || os.Getenv("WALSCOPE_NO_MMAP") != "" || st.Size() == 0 || st.Size() > MaxSegmentSize || !st.Mode().IsRegular() {
		return f, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, mmapFlags)
	if err != nil {
		return f, nil // fall back to pread
	}
	return &mappedFile{File: f, data: data}, nil
}
