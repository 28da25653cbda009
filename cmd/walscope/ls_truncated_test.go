package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// TestLsTruncatedSegments: an empty and a truncated segment (not .partial)
// beside whole ones are problems for ls, with and without --quick, as they
// are for verify (issue 17: ls called them fine); the other files of the
// folder are listed as not read, with the reason.
func TestLsTruncatedSegments(t *testing.T) {
	root := testwal.Root(t)
	dir := t.TempDir()
	archivetest.Plain(t, filepath.Join(root, "fixtures", "sample"), dir) // segments 6 and 7
	b, err := os.ReadFile(filepath.Join(dir, "000000010000000000000007"))
	if err != nil {
		t.Fatal(err)
	}
	// the first 300,000 bytes of a real segment under a later name
	if err := os.WriteFile(filepath.Join(dir, "000000010000000000000009"), b[:300000], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000000010000000000000008"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// files that are not WAL are listed with the reason, not skipped silently
	for _, n := range []string{"README.md", "000000010000000000000006.00000028.backup"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, quick := range []bool{false, true} {
		args := []string{"ls", dir}
		if quick {
			args = []string{"ls", "--quick", dir}
		}
		out, stderr, code := walscope(t, "", args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1 (a file has a problem); stderr %q", args, code, stderr)
		}
		for _, want := range []string{
			"truncated-segment: empty: 0 bytes, where a segment holds 1048576 bytes",
			"truncated-segment: truncated: 300000 bytes, less than the segment size of 1048576 bytes",
			"2 problems: 2 truncated-segment",
			"2 other files not read:",
			"README.md: not a WAL file name",
			"000000010000000000000006.00000028.backup: a backup history file: not WAL (pitr --backup reads it)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
	}
}
