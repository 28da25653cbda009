package analyze

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
	root := testwal.Root(t)
	cases, _ := filepath.Glob(filepath.Join(root, "fixtures", "corrupt", "*", "segments.tar.zst"))
	var dirs []string
	for _, c := range cases {
		d := t.TempDir()
		if err := testwal.UntarZstd(c, d); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
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
