package verify

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestVerifyParallelEqualsSequential: verifying in spans of one segment on
// several workers finds exactly what one reader finds, on every catalogue case
// (damage at and across span joins included) and every corpus.
func TestVerifyParallelEqualsSequential(t *testing.T) {
	saved := verifySpanBytes
	verifySpanBytes = 1 << 20
	defer func() { verifySpanBytes = saved }()
	var dirs []string
	for _, c := range testwal.CorruptCases(t, 0) {
		dirs = append(dirs, testwal.ExtractCase(t, c))
	}
	for _, s := range testwal.Sets(t) {
		dirs = append(dirs, filepath.Join(testwal.Extract(t, s), "archive"))
	}
	if len(dirs) < 20 {
		t.Fatalf("only %d inputs", len(dirs))
	}
	for _, d := range dirs {
		src, err := xlog.OpenDir(d)
		if err != nil {
			t.Fatal(err)
		}
		opts := xlog.Options{FollowHistory: true}
		one, err := Verify(src, opts, 8192, 1)
		if err != nil {
			t.Fatal(err)
		}
		many, err := Verify(src, opts, 8192, 3)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(one)
		b, _ := json.Marshal(many)
		if string(a) != string(b) {
			t.Errorf("%s: one reader found\n%s\nthree workers found\n%s", d, a, b)
		}
	}
}
