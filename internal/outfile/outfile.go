// Package outfile writes walscope's outputs (reports, saved page images,
// export files) so that nothing that is not ours is destroyed and nothing
// half-written looks complete:
//
//   - a regular file (or a name that does not exist yet) is written under a
//     temporary dot-name in its directory, synced and renamed over the
//     target when complete; an existing file keeps its mode, a new one gets
//     0666 less the umask, as the shell's > would give it;
//   - a device, a pipe or a socket (/dev/null, /dev/stdout, a FIFO) is
//     opened and written to as it is, never replaced;
//   - a symbolic link is written through: the file it names is replaced (or
//     streamed to), the link itself is kept.
//
// Temporary files and directories are tracked, so that a signal handler can
// remove them (Cleanup) before the process exits; after Cleanup no new ones
// can be made.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// ErrNotWritable is wrapped by the error for an output that cannot be
// written where it was asked: a directory, a link loop.
var ErrNotWritable = errors.New("cannot write output there")

// ErrInterrupted is returned when a file would be created after Cleanup.
var ErrInterrupted = errors.New("interrupted")

// File is an output being written. Write to it, then Commit; Abort (safe
// after Commit) removes what was written to a temporary file.
type File struct {
	target string // the file written, symbolic links resolved
	tmp    string // "" when streaming to a device or pipe
	f      *os.File
	mode   fs.FileMode
	keep   bool // chmod the temporary file to mode (the target existed)
	uid    int
	gid    int
	done   bool
}

// Create starts writing the output path.
func Create(path string) (*File, error) {
	if isDescriptor(path) {
		// /dev/stdout and the like name an open descriptor (a terminal, a
		// pipe, or a file the shell opened, maybe for appending): written
		// to at its end, never replaced.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, err
		}
		return &File{target: path, f: f}, nil
	}
	target, fi, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	if fi != nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%w: is a directory", ErrNotWritable)}
		}
		// A device, pipe or socket: written to as it is.
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{target: target, f: f}, nil
	}
	out := &File{target: target, uid: -1, gid: -1}
	if fi != nil {
		out.mode, out.keep = fi.Mode().Perm(), true
		out.uid, out.gid = owner(fi)
	}
	out.f, out.tmp, err = CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Resolve follows the symbolic links of path to the file an output
// replaces, and returns it with its Lstat (nil when it does not exist yet).
func Resolve(path string) (string, fs.FileInfo, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// A link to a device or pipe (whose link text, as /proc's
		// "pipe:[N]", may name no file): the path itself is opened.
		return path, fi, nil
	}
	p := path
	for range 40 { // as the kernel's MAXSYMLINKS
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, fi, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", nil, &fs.PathError{Op: "write", Path: path, Err: fmt.Errorf("%w: too many levels of symbolic links", ErrNotWritable)}
}

// Name returns the file written (symbolic links resolved).
func (f *File) Name() string { return f.target }

// Streaming reports whether the output is a device or pipe written as it is.
func (f *File) Streaming() bool { return f.tmp == "" }

func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Commit completes the output: syncs the temporary file and renames it over
// the target, or closes the device or pipe.
func (f *File) Commit() error {
	if f.done {
		return errors.New("outfile: commit after commit or abort")
	}
	f.done = true
	if f.tmp == "" {
		return f.f.Close()
	}
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && f.keep {
		err = os.Chmod(f.tmp, f.mode)
		if f.uid >= 0 {
			os.Lchown(f.tmp, f.uid, f.gid) // only root may; others keep their own
		}
	}
	if err == nil {
		err = os.Rename(f.tmp, f.target)
	}
	if err != nil {
		os.Remove(f.tmp)
	}
	untrack(f.tmp)
	return err
}

// Abort removes the temporary file (or closes the device).
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	if f.tmp != "" {
		os.Remove(f.tmp)
		untrack(f.tmp)
	}
}

// WriteFile writes the output path with write, as Create and Commit.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// CreateTemp creates a new file in dir named prefix and a random suffix,
// with mode 0666 less the umask, tracked for Cleanup until Untrack.
func CreateTemp(dir, prefix string) (*os.File, string, error) {
	var f *os.File
	var name string
	err := Guard(func() error {
		for range 100 {
			name = filepath.Join(dir, prefix+randomSuffix())
			var err error
			f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return err
			}
			reg.paths[name] = true
			return nil
		}
		return &fs.PathError{Op: "create", Path: dir, Err: errors.New("could not find a free temporary name")}
	})
	return f, name, err
}

// MkdirTemp creates a new directory in dir named prefix and a random suffix,
// tracked for Cleanup (which removes it whole) until Untrack.
func MkdirTemp(dir, prefix string) (string, error) {
	var name string
	err := Guard(func() error {
		var err error
		name, err = os.MkdirTemp(dir, prefix)
		if err == nil {
			reg.paths[name] = true
		}
		return err
	})
	return name, err
}

// Untrack stops tracking a temporary path (it was renamed or removed).
func Untrack(path string) { untrack(path) }

func untrack(path string) {
	reg.mu.Lock()
	delete(reg.paths, path)
	reg.mu.Unlock()
}

// reg holds the temporary paths Cleanup removes.
var reg = struct {
	mu      sync.Mutex
	paths   map[string]bool
	stopped bool
}{paths: map[string]bool{}}

// Guard runs fn unless Cleanup has begun, excluding Cleanup while it runs:
// a file fn creates in a tracked directory, or a rename fn publishes, is
// either done before Cleanup or not at all.
func Guard(fn func() error) error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.stopped {
		return ErrInterrupted
	}
	return fn()
}

// Cleanup removes every tracked temporary file and directory and makes any
// later Create or Guard fail with ErrInterrupted. It is called on SIGINT or
// SIGTERM, before the process exits.
func Cleanup() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.stopped = true
	for p := range reg.paths {
		os.RemoveAll(p)
		delete(reg.paths, p)
	}
}

// isDescriptor reports whether path names an open file descriptor of the
// process (Linux's /proc/self/fd, /dev/fd, /dev/stdout, /dev/stderr).
func isDescriptor(path string) bool {
	p := filepath.Clean(path)
	return p == "/dev/stdout" || p == "/dev/stderr" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OnSignal makes SIGINT and SIGTERM run Cleanup, then then(sig) (which
// reports and exits: a library never does). The waiting is the library's;
// then runs on its goroutine.
func OnSignal(then func(sig os.Signal)) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		Cleanup()
		then(s)
	}()
}
