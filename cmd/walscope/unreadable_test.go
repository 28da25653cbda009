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
// corrupt-archive-file, exit 1, or a bare usage error; ls called it
// "unreadable", exit 1, compare warned and exited 0, report exited 1 naming
// no class, pitr found "no event" in the half it read, exit 1). Run as nobody: root reads every file.
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
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own temporary directory
	out := t.TempDir()
	os.Chmod(out, 0o777) // nobody writes the report there
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(sampleWAL(t), n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	for _, locked := range []string{"000000010000000000000007", "000000010000000000000006"} {
		os.Chmod(filepath.Join(dir, locked), 0)
		for _, args := range [][]string{{"stats"}, {"dump"}, {"verify"}, {"whatif"}, {"events"}, {"advise"},
			{"ls"}, {"ls", "--quick"}, {"compare", dir}, {"report", "--out", filepath.Join(out, "r.html")}, {"pitr", "-R", "bt_k"}} {
			c := strings.Join(args, " ")
			cmd := exec.Command(bin, append(args, dir)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "unreadable-file") || !strings.Contains(string(out), locked) {
				t.Errorf("%s, %s unreadable: %v: %s", c, locked, err, lastLine(string(out)))
			}
		}
	}
}
