package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
)

// TestCompare puts the 8 kB and 4 kB runs of the same pgbench workload side
// by side: the same records and record bytes (only the WAL page size
// differs), every row's ratio 1.000; and warns when one stream starts after a
// checkpoint and the other does not.
func TestCompare(t *testing.T) {
	dirs := map[string]string{}
	for _, s := range testwal.Sets(t) {
		dirs[s.Name] = filepath.Join(testwal.Extract(t, s), "archive")
	}
	a, b := dirs["corpora/pg18-8k-pgbench-replica"], dirs["corpora/pg18-4k-pgbench-replica"]
	out, stderr, code := walscope(t, "", "compare", "--format", "csv", a, b)
	if code != 0 || strings.Contains(stderr, "start differently") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) < 10 || !strings.HasPrefix(rows[len(rows)-1], "Total,38498,38498,") {
		t.Fatalf("compare output:\n%s", out)
	}
	for _, r := range rows[1:] {
		if !strings.HasSuffix(r, ",0,1.000") {
			t.Errorf("row %q differs between two runs of one workload", r)
		}
	}
	// The mixed corpus starts in the middle of a checkpoint cycle.
	_, stderr, code = walscope(t, "", "compare", a, dirs["corpora/pg18-8k-mixed"])
	if code != 0 || !strings.Contains(stderr, "start differently") {
		t.Errorf("no warning about different starts: exit %d, stderr %q", code, stderr)
	}
}

// TestCompareDamagedStream: a stream that ends in damage is compared up to
// there, then reported as every command reports it (class, file, offset,
// LSN) with exit 1, naming which input; --by and --format are refused
// before anything is read (issue 17: compare warned and exited 0, and took
// any --by or --format).
func TestCompareDamagedStream(t *testing.T) {
	sample := sampleWAL(t)
	dir := t.TempDir()
	archivetest.Plain(t, sample, dir)
	seg := filepath.Join(dir, "000000010000000000000007")
	if err := os.Truncate(seg, 100000); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{sample, dir}, "walscope: error: B (" + dir + "): "},
		{[]string{dir, sample}, "walscope: error: A (" + dir + "): "},
	} {
		stdout, stderr, code := walscope(t, "", append([]string{"compare"}, tc.args...)...)
		if code != exitProblem || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "[truncated-segment: file "+seg+", offset 100000") ||
			!strings.Contains(stdout, "\nTotal ") {
			t.Errorf("compare %v: exit %d, want %d with %q: %s%s", tc.args, code, exitProblem, tc.says, stdout, stderr)
		}
	}
	for _, flag := range [][]string{{"--by", "relation"}, {"--format", "xml"}} {
		stdout, stderr, code := walscope(t, "", append(append([]string{"compare"}, flag...), sample, sample)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "unrecognized value for option "+flag[0]) {
			t.Errorf("compare %v: exit %d, want %d: %s%s", flag, code, exitUsage, stdout, stderr)
		}
	}
}
