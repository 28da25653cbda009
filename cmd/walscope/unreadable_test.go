//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnreadableFile: a segment file the user may not read is the same
// input problem, class unreadable-file and exit 2, for every command (it was
// corrupt-archive-file, exit 1, or a bare usage error). Run as nobody: root
// reads every file.
func TestUnreadableFile(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("WALSCOPE_REQUIRE_ROOT") == "1" {
			t.Fatal("needs root, to run walscope as another user")
		}
		t.Skip("needs root, to run walscope as another user")
	}
	bin := buildWalscope(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(sampleWAL(t), n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	for _, locked := range []string{"000000010000000000000007", "000000010000000000000006"} {
		os.Chmod(filepath.Join(dir, locked), 0)
		for _, c := range []string{"stats", "dump", "verify", "whatif", "events"} {
			cmd := exec.Command(bin, c, dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "unreadable-file") || !strings.Contains(string(out), locked) {
				t.Errorf("%s, %s unreadable: %v: %s", c, locked, err, lastLine(string(out)))
			}
		}
	}
}
