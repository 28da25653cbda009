package verify

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/xlog"
)

// TestStartVerifyBesideAReading: a Verify started beside another reading of
// the same source (as report's second pass reads it) finds what Verify
// alone finds, on one worker (run in Wait) and on two, over damaged
// archives and a clean one.
func TestStartVerifyBesideAReading(t *testing.T) {
	var dirs []string
	for _, c := range testwal.CorruptCases(t, 3)[:3] {
		dirs = append(dirs, testwal.ExtractCase(t, c))
	}
	clean := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(testwal.Root(t), "fixtures", "whatif", "compression-off", "archive.tar.zst"), clean); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, filepath.Join(clean, "archive"))
	for _, d := range dirs {
		src, err := xlog.OpenDir(d)
		if err != nil {
			t.Fatal(err)
		}
		opts := xlog.Options{FollowHistory: true}
		alone, err := Verify(src, opts, 8192, 1)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(alone)
		for _, workers := range []int{1, 2} {
			v := StartVerify(src, opts, 8192, workers)
			parts, _, _, err := pass.RecordPass(src, opts, 8192, 1, 0, func(n *int, _ *decode.Record) { *n++ })
			if err != nil || len(parts) == 0 || parts[0] == 0 {
				t.Fatalf("%s: the reading beside: %v, %v", d, parts, err)
			}
			got, err := v.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(got); string(b) != string(want) {
				t.Errorf("%s, %d workers: beside a reading\n%s\nalone\n%s", d, workers, b, want)
			}
		}
	}
}
