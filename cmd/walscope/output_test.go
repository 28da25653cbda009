//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

func sampleWAL(t *testing.T) string {
	return filepath.Join(testwal.Root(t), "fixtures", "sample")
}

// TestOutputLostIsExit2: output lost on a full device fails every command
// with exit 2 (it exited 0 for stats, verify and whatif).
func TestOutputLostIsExit2(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	wal := sampleWAL(t)
	for _, args := range [][]string{
		{"stats", wal}, {"stats", "--by", "relation", wal}, {"verify", wal}, {"verify", "--format", "json", wal},
		{"whatif", wal}, {"dump", wal}, {"ls", wal}, {"events", wal},
	} {
		var errb bytes.Buffer
		code := run(append([]string{"walscope"}, args...), full, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "could not write the output") {
			t.Errorf("%v > /dev/full: exit %d, stderr %q", args, code, errb.String())
		}
		if strings.Count(errb.String(), "error:") != 1 {
			t.Errorf("%v > /dev/full: want one error line, stderr %q", args, errb.String())
		}
	}
}

// TestReportOutputTargets: report --out never replaces a device, a pipe or
// a symbolic link, and honours the umask for a new file.
func TestReportOutputTargets(t *testing.T) {
	wal := sampleWAL(t)
	dir := t.TempDir()
	report := func(out string) (string, int) {
		_, stderr, code := walscope(t, "", "report", "-q", "--out", out, wal)
		return stderr, code
	}

	// umask 077: the report is the owner's alone (it was written 0644).
	old := syscall.Umask(0o077)
	_, code := report(filepath.Join(dir, "private.html"))
	syscall.Umask(old)
	if fi, err := os.Stat(filepath.Join(dir, "private.html")); code != 0 || err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("under umask 077: exit %d, %v, %v", code, err, fi)
	}

	// A symbolic link: the file it names is written, the link stays.
	os.WriteFile(filepath.Join(dir, "real.html"), nil, 0o640)
	os.Symlink("real.html", filepath.Join(dir, "link.html"))
	if stderr, code := report(filepath.Join(dir, "link.html")); code != 0 {
		t.Fatalf("report over a link: exit %d: %s", code, stderr)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link.html")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "real.html")); fi.Size() < 1000 || fi.Mode().Perm() != 0o640 {
		t.Errorf("the link's target: %d bytes, %v", fi.Size(), fi.Mode())
	}

	// A FIFO is written to, as a shell's > would.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- len(b)
	}()
	if stderr, code := report(fifo); code != 0 {
		t.Fatalf("report into a FIFO: exit %d: %s", code, stderr)
	}
	if n := <-got; n < 1000 {
		t.Errorf("the FIFO's reader got %d bytes", n)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced by a %v", fi.Mode())
	}

	// A device (a null device of the test's own, as root) is written to.
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		if stderr, code := report(dev); code != 0 {
			t.Errorf("report into a device: exit %d: %s", code, stderr)
		}
		if fi, _ := os.Lstat(dev); fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("the device was replaced by a %v", fi.Mode())
		}
	}

	// A full device, a directory: exit 2, nothing left behind.
	if stderr, code := report("/dev/full"); code != exitUsage || !strings.Contains(stderr, "no space left") {
		t.Errorf("report into /dev/full: exit %d: %s", code, stderr)
	}
	if stderr, code := report(dir); code != exitUsage {
		t.Errorf("report into a directory: exit %d: %s", code, stderr)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestFlagsAndUsage: flags after the paths, --, --version, an unknown flag,
// values no run could use.
func TestFlagsAndUsage(t *testing.T) {
	wal := sampleWAL(t)
	out, _, code := walscope(t, "", "dump", wal, "-n", "3")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("dump PATH -n 3: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
	out2, _, code := walscope(t, "", "dump", "-n", "3", "--", wal)
	if code != 0 || out2 != out {
		t.Errorf("dump -n 3 -- PATH: exit %d, output differs", code)
	}
	html := filepath.Join(t.TempDir(), "x.html")
	if _, stderr, code := walscope(t, "", "report", "--compare", wal, wal, "--out", html, "-q"); code != 0 {
		t.Errorf("report --compare A B --out x.html: exit %d: %s", code, stderr)
	} else if _, err := os.Stat(html); err != nil {
		t.Error(err)
	}

	out, stderr, code := walscope(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "walscope version ") || stderr != "" {
		t.Errorf("--version: exit %d, %q, %q", code, out, stderr)
	}

	out, stderr, code = walscope(t, "", "stats", "--bogus", wal)
	if code != exitUsage || out != "" || !strings.Contains(stderr, "flag provided but not defined: -bogus") ||
		!strings.Contains(stderr, "usage: walscope stats") || strings.Count(stderr, "\n") != 3 {
		t.Errorf("unknown flag: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	out, stderr, code = walscope(t, "", "nosuch", wal)
	if code != exitUsage || out != "" || !strings.Contains(stderr, `unknown command "nosuch"`) {
		t.Errorf("unknown command: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	for _, args := range [][]string{
		{"stats", "-j", "0", wal}, {"verify", "-j", "-1", wal}, {"dump", "--jobs", "100000", wal},
		{"stats", "--blcksz", "1000", wal}, {"dump", "--blcksz", "65536", wal}, {"verify", "--blcksz", "0", wal},
		{"stats", "--by", "xid", "--top", "0", wal}, {"stats", "--by", "relation", "--top", "-5", wal},
		{"dump", "-s", "0/700000", "-e", "0/600000", wal}, {"stats", "-e", "0/600000", "-s", "0/600000", wal},
		{"dump", "-n", "-1", wal}, {"dump", "-j", "x", wal},
		// a bucket wider than a year started decades before the WAL
		{"stats", "--by", "time", "--bucket", "1000000h", wal}, {"stats", "--by", "time", "--bucket", "1ns", wal},
		{"compare", "--by", "relation", wal, wal}, {"compare", "--format", "xml", wal, wal},
		{"export", "--row-group", "0", "--out", t.TempDir(), wal}, {"export", "--row-group", "16777217", "--out", t.TempDir(), wal},
	} {
		out, stderr, code := walscope(t, "", args...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, "error:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
}

// buildWalscope builds the command, for tests that need a real process (a
// signal, another user).
func buildWalscope(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own temporary directory
	bin := filepath.Join(dir, "walscope")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestReportNeverReplacesInput: report --out naming one of the files read
// (a segment, through a symbolic link too, in either form and in --compare)
// is refused with exit 2 and the file is left as it was; it was replaced by
// the HTML report.
func TestReportNeverReplacesInput(t *testing.T) {
	dir := t.TempDir()
	archivetest.Plain(t, sampleWAL(t), dir)
	seg6, seg7 := filepath.Join(dir, "000000010000000000000006"), filepath.Join(dir, "000000010000000000000007")
	if err := os.Symlink("000000010000000000000007", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{seg6, seg7} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = b
	}
	for _, args := range [][]string{
		{"--out", seg7, dir},
		{"--out", filepath.Join(dir, "link"), dir},
		{"--out", seg6, seg6},
		{"--out", seg7, "-p", dir, "000000010000000000000006"},
		{"--compare", "--out", seg6, sampleWAL(t), dir},
	} {
		stdout, stderr, code := walscope(t, "", append([]string{"report"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "an input of this run: it would be replaced") {
			t.Errorf("report %v: exit %d, want %d: %s%s", args, code, exitUsage, stdout, stderr)
		}
		for p, b := range before {
			if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
				t.Fatalf("report %v changed %s", args, p)
			}
		}
	}
}
