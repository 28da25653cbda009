package main

import (
	"path/filepath"
	"strings"
	"testing"

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
