package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// TestLsInvalidHistory: a timeline history file that is no valid history,
// beside real segments, is invalid-history, exit 1, for ls (text, --quick,
// JSON) as for the commands that read (issue 17: ls said "no problems",
// exit 0, where stats, dump and verify stopped at it).
func TestLsInvalidHistory(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"switch points out of order", "1\t0/11000A0\tx\n2\t0/1000000\ty\n"},
		{"a switch point that is no LSN", "1\tzz\tx\n"},
		{"a timeline not below its own", "1\t0/1000000\tx\n3\t0/2000000\ty\n"},
	} {
		dir := t.TempDir()
		archivetest.Plain(t, filepath.Join(testwal.Root(t), "fixtures", "sample"), dir)
		if err := os.WriteFile(filepath.Join(dir, "00000003.history"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"ls"}, {"ls", "--quick"}} {
			stdout, stderr, code := walscope(t, "", append(args, dir)...)
			if code != exitProblem || !strings.Contains(stdout, "00000003.history") || !strings.Contains(stdout, "\n    invalid-history: ") ||
				!strings.Contains(stdout, "1 problems: 1 invalid-history") {
				t.Errorf("%s: %v: exit %d, want %d with invalid-history: %s%s", tc.name, args, code, exitProblem, stdout, stderr)
			}
		}
		stdout, _, code := walscope(t, "", "ls", "--format", "json", dir)
		var rep struct {
			Files []struct {
				Name     string
				Problems []struct{ Class, Kind string }
			}
			Summary struct{ Problems map[string]int }
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, f := range rep.Files {
			for _, p := range f.Problems {
				if f.Name != "00000003.history" || p.Class != "invalid-history" {
					t.Errorf("%s: ls json: %s has problem %+v", tc.name, f.Name, p)
				}
				found++
			}
		}
		if code != exitProblem || found != 1 || rep.Summary.Problems["invalid-history"] != 1 {
			t.Errorf("%s: ls json: exit %d, %d problems, summary %v", tc.name, code, found, rep.Summary.Problems)
		}
		for _, c := range []string{"verify", "stats", "dump"} {
			stdout, stderr, code := walscope(t, "", c, dir)
			if code != exitProblem || !strings.Contains(stdout+stderr, "invalid-history") {
				t.Errorf("%s: %s: exit %d, want %d with invalid-history: %s", tc.name, c, code, exitProblem, lastLine(stdout+stderr))
			}
		}
	}
}
