//go:build unix

package export

import (
	"os"
	"syscall"
)

// lockFile opens (creating) path and waits for an exclusive flock on it,
// released when the file is closed or the process ends.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// holdStaging locks a staging directory for the life of the export.
func holdStaging(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tryLock locks a staging directory if no live export holds it.
func tryLock(dir string) (*os.File, bool) {
	f, err := holdStaging(dir)
	return f, err == nil
}

// processAlive reports whether a process of this host has the pid.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
