package whatif

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/walscope/walscope/xlog"
)

// TestCheckpointSegments: the distances PostgreSQL 15 kept in
// fixtures/whatif-settings (redo points 4, 8, 16 segments apart with 1 MB
// segments and target 0.9; 64MB: 33, never reached), and the defaults'.
func TestCheckpointSegments(t *testing.T) {
	for _, c := range []struct {
		max    uint64
		seg    uint32
		target float64
		v      xlog.Version
		want   int
	}{
		{8 << 20, 1 << 20, 0.9, xlog.V15, 4},
		{16 << 20, 1 << 20, 0.9, xlog.V15, 8},
		{32 << 20, 1 << 20, 0.9, xlog.V15, 16},
		{64 << 20, 1 << 20, 0.9, xlog.V15, 33},
		{1 << 30, 16 << 20, 0.9, xlog.V15, 33},    // the default: a checkpoint every 33 segments
		{1 << 30, 16 << 20, 0.5, xlog.V13, 42},    // 13's default target
		{1 << 30, 16 << 20, 0.5, xlog.V10, 25},    // 10 kept two cycles
		{2 << 20, 16 << 20, 0.9, xlog.V15, 1},     // never below one
		{1 << 30, 64 << 20, 0.9, xlog.V15, 8},     // --wal-segsize=64
		{100 << 20, 16 << 20, 0.9, xlog.V15, 3},   // whole MB over MB per segment: 6 segments
		{96 << 20, 1 << 20, 0.0, xlog.V15, 96},    // target 0
		{1 << 40, 16 << 20, 0.9, xlog.V18, 34492}, // 1TB
	} {
		got := CheckpointSettings{MaxWALSize: c.max, CompletionTarget: c.target}.CheckpointSegments(c.seg, c.v)
		if got != c.want {
			t.Errorf("max_wal_size %s, segments of %s, target %v, %v: %d, want %d", FormatSize(c.max), FormatSize(uint64(c.seg)), c.target, c.v, got, c.want)
		}
	}
}

func TestParseFormatSettings(t *testing.T) {
	for _, c := range []struct {
		in, out string
		b       uint64
	}{{"1GB", "1GB", 1 << 30}, {"1024MB", "1GB", 1 << 30}, {"64", "64MB", 64 << 20}, {" 80MB ", "80MB", 80 << 20}, {"1536MB", "1536MB", 1536 << 20}, {"512kB", "512kB", 512 << 10}} {
		b, err := ParseSize(c.in)
		if err != nil || b != c.b || FormatSize(b) != c.out {
			t.Errorf("%q: %d %v, formatted %q; want %d, %q", c.in, b, err, FormatSize(b), c.b, c.out)
		}
	}
	for _, c := range []struct {
		in, out string
		d       time.Duration
	}{{"5min", "5min", 5 * time.Minute}, {"300", "5min", 5 * time.Minute}, {"30s", "30s", 30 * time.Second}, {"90s", "90s", 90 * time.Second}, {"1h", "1h", time.Hour}, {"1d", "1d", 24 * time.Hour}} {
		d, err := ParseTimeout(c.in)
		if err != nil || d != c.d || FormatTimeout(d) != c.out {
			t.Errorf("%q: %v %v, formatted %q; want %v, %q", c.in, d, err, FormatTimeout(d), c.d, c.out)
		}
	}
	for _, bad := range []string{"", "0", "-1GB", "1.5GB", "lots", "1 parsec"} {
		if _, err := ParseSize(bad); !errors.Is(err, ErrSetting) {
			t.Errorf("ParseSize(%q): %v", bad, err)
		}
		if _, err := ParseTimeout(bad); !errors.Is(err, ErrSetting) {
			t.Errorf("ParseTimeout(%q): %v", bad, err)
		}
	}
}

func ExampleCheckpointSettings_CheckpointSegments() {
	s := DefaultCheckpointSettings // max_wal_size = 1GB, checkpoint_completion_target = 0.9
	fmt.Println(s.CheckpointSegments(16<<20, xlog.V15))
	s.MaxWALSize, _ = ParseSize("4GB")
	fmt.Println(s.CheckpointSegments(16<<20, xlog.V15))
	// Output:
	// 33
	// 134
}

func ExampleParseTimeout() {
	d, _ := ParseTimeout("30min")
	fmt.Println(d, FormatTimeout(d))
	// Output: 30m0s 30min
}
