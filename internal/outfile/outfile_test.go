//go:build unix

package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(path, s string) error {
	return WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, s); return err })
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// onlyFiles fails if dir holds anything but names (a temporary file left).
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

func TestNewFileHonoursUmask(t *testing.T) {
	for _, tc := range []struct {
		umask int
		want  fs.FileMode
	}{{0o077, 0o600}, {0o022, 0o644}, {0o002, 0o664}} {
		dir := t.TempDir()
		old := syscall.Umask(tc.umask)
		err := write(filepath.Join(dir, "r.html"), "x")
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if m := mode(t, filepath.Join(dir, "r.html")); m != tc.want {
			t.Errorf("umask %03o: mode %v, want %v", tc.umask, m, tc.want)
		}
		onlyFiles(t, dir, "r.html")
	}
}

func TestReplaceKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.html")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o640)
	if err := write(p, "new"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if m := mode(t, p); m != 0o640 {
		t.Errorf("mode %v, want -rw-r-----", m)
	}
	onlyFiles(t, dir, "r.html")
}

func TestSymlinkWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	real := filepath.Join(sub, "real.html")
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink("sub/real.html", link); err != nil {
		t.Fatal(err)
	}
	// a chain, and a link whose target does not exist yet
	os.Symlink("link.html", filepath.Join(dir, "chain.html"))
	os.Symlink("new.html", filepath.Join(dir, "dangling.html"))
	for _, name := range []string{"link.html", "chain.html", "dangling.html"} {
		if err := write(filepath.Join(dir, name), "new "+name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m := mode(t, filepath.Join(dir, name)); m&fs.ModeSymlink == 0 {
			t.Errorf("%s was replaced by a %v", name, m)
		}
	}
	if b, _ := os.ReadFile(real); string(b) != "new chain.html" {
		t.Errorf("target holds %q", b)
	}
	if m := mode(t, real); m != 0o600 {
		t.Errorf("target mode %v, want -rw-------", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.html")); string(b) != "new dangling.html" {
		t.Errorf("dangling link's target holds %q", b)
	}
	os.Symlink("loop2", filepath.Join(dir, "loop1"))
	os.Symlink("loop1", filepath.Join(dir, "loop2"))
	if err := write(filepath.Join(dir, "loop1"), "x"); !errors.Is(err, ErrNotWritable) {
		t.Errorf("a link loop: %v, want ErrNotWritable", err)
	}
}

func TestFIFOStreamedTo(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	f, err := Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Streaming() {
		t.Error("a FIFO is not streamed to")
	}
	io.WriteString(f, "through the pipe")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if m := mode(t, fifo); m&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced by a %v", m)
	}
	onlyFiles(t, dir, "fifo")
}

// TestDeviceNotReplaced writes to a null device made for the test (as root;
// /dev/null itself is what a broken version would have replaced).
func TestDeviceNotReplaced(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skip("mknod (needs root):", err)
	}
	if err := write(dev, "gone"); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dev); m&fs.ModeCharDevice == 0 {
		t.Errorf("the device was replaced by a %v", m)
	}
	onlyFiles(t, dir, "null")
}

func TestWriteErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err == nil {
		err := write("/dev/full", strings.Repeat("x", 1<<16))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("/dev/full: %v, want ENOSPC", err)
		}
	}
	dir := t.TempDir()
	if err := write(dir, "x"); !errors.Is(err, ErrNotWritable) {
		t.Errorf("a directory: %v, want ErrNotWritable", err)
	}
	// A failing writer leaves neither the file nor a temporary.
	p := filepath.Join(dir, "r.html")
	err := WriteFile(p, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("boom") })
	if err == nil || err.Error() != "boom" {
		t.Errorf("err %v", err)
	}
	onlyFiles(t, dir)
}

func TestCleanup(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	stage, err := MkdirTemp(dir, ".stage")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stage, "part"), nil, 0o644)
	Cleanup()
	defer func() { reg.mu.Lock(); reg.stopped = false; reg.mu.Unlock() }()
	onlyFiles(t, dir)
	if _, err := Create(filepath.Join(dir, "s.html")); !errors.Is(err, ErrInterrupted) {
		t.Errorf("Create after Cleanup: %v", err)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit of a removed temporary file succeeded")
	}
	onlyFiles(t, dir)
}

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	err := WriteFile(filepath.Join(dir, "report.html"), func(w io.Writer) error {
		_, err := io.WriteString(w, "<!doctype html>")
		return err
	})
	b, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	fmt.Println(string(b), err)
	// Output: <!doctype html> <nil>
}

// TestDescriptorPaths: /dev/stdout and /proc/self/fd/N are written to
// (appended to, for a file), never replaced: through a pipe, whose link
// text "pipe:[N]" names no file, and through a file opened for appending.
func TestDescriptorPaths(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	if err := write(fmt.Sprintf("/proc/self/fd/%d", w.Fd()), "piped"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if s := <-got; s != "piped" {
		t.Errorf("the pipe's reader got %q", s)
	}

	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("before\n")
	if err := write(fmt.Sprintf("/dev/fd/%d", f.Fd()), "after\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != "before\nafter\n" {
		t.Errorf("the file holds %q", b)
	}
	onlyFiles(t, dir, "log")
}
