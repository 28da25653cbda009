package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestVerifyManyEmptyFiles: two real segments followed by empty files named
// as the next segments (issue 16: a span's resync walked every later file,
// quadratic in the files). Each empty file is one truncated-segment problem,
// and spans of one segment on several workers find what one reader finds.
func TestVerifyManyEmptyFiles(t *testing.T) {
	saved := verifySpanBytes
	verifySpanBytes = 1 << 20
	defer func() { verifySpanBytes = saved }()
	const empty = 300
	d := t.TempDir()
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "sample", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range empty {
		name := xlog.NewSegmentName(1, uint64(8+i), 1<<20).String()
		if err := os.WriteFile(filepath.Join(d, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := xlog.OpenDir(d)
	if err != nil {
		t.Fatal(err)
	}
	opts := xlog.Options{FollowHistory: true}
	one, err := Verify(src, opts, 8192, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := one.ByClass[ClassTruncated]; got != empty || len(one.Problems) != empty {
		t.Fatalf("one reader: %d truncated-segment problems of %d, want %d", got, len(one.Problems), empty)
	}
	many, err := Verify(src, opts, 8192, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(one)
	b, _ := json.Marshal(many)
	if string(a) != string(b) {
		t.Errorf("one reader found\n%s\nthree workers found\n%s", a, b)
	}
}
