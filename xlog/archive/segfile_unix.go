//go:build unix

package archive

import (
	"os"
	"syscall"
)

// fileHandle is an open file descriptor.
type fileHandle int

func openHandle(path string) (fileHandle, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fileHandle(fd), err
		}
	}
}

func (h fileHandle) pread(b []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(int(h), b, off)
		if err != syscall.EINTR {
			return max(n, 0), err
		}
	}
}

func (h fileHandle) close() error { return syscall.Close(int(h)) }

// osFile hands the descriptor to an *os.File (which does not register a
// blocking descriptor with the poller).
func (h fileHandle) osFile(path string) treeFile { return os.NewFile(uintptr(h), path) }
