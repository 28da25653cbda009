package export

import (
	"testing"
	"time"

	"github.com/walscope/walscope/xlog"
)

// TestDays: the day of a row is the UTC date of the last commit time at or
// before its record in WAL order; a span's rows before its first commit
// take the day of the spans before it (placed when they are merged), the
// first span's the carried time's, else the batch's first time.
func TestDays(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Span 1: commits at 23:59:58 on the 1st, then 00:00:01 on the 2nd
	// (in Kathmandu it is still the 2nd, 05:45 later: UTC decides).
	var s1 Span
	s1.first = 0x1000
	if d := s1.clock.dayDir(s1.first); d != "pending-0000000000001000" {
		t.Errorf("before any time: %q", d)
	}
	s1.clock.see(0x1100, at("2026-12-01T23:59:58Z"))
	s1.clock.see(0x1200, at("2026-12-01T23:59:59+00:00"))
	s1.clock.see(0x1300, at("2026-12-02T05:45:01+05:45"))
	if d := s1.clock.dayDir(s1.first); d != "2026-12-02" {
		t.Errorf("after midnight: %q", d)
	}
	// Span 2: no commit at all; span 3: one on the 3rd.
	s2 := Span{first: 0x2000}
	s3 := Span{first: 0x3000}
	s3.clock.see(0x3100, at("2026-12-03T10:00:00Z"))

	for _, carried := range []string{"", "2026-11-30T22:00:00Z"} {
		var d dayTrack
		if carried != "" {
			d.start(at(carried))
		}
		for _, s := range []*Span{&s1, &s2, &s3} {
			d.merge(s)
		}
		first := "2026-12-01"
		if carried != "" {
			first = "2026-11-30"
		}
		want := map[string]string{
			"pending-0000000000001000": "",           // resolved at the end: first
			"pending-0000000000002000": "2026-12-02", // the day before span 2
			"pending-0000000000003000": "2026-12-02",
		}
		if carried != "" {
			want["pending-0000000000001000"] = "2026-11-30"
		}
		for k, v := range want {
			if d.pending[k] != v {
				t.Errorf("carried %q: %s: %q, want %q", carried, k, d.pending[k], v)
			}
		}
		if d.first() != first {
			t.Errorf("carried %q: first %q, want %q", carried, d.first(), first)
		}
		for lsn, want := range map[xlog.LSN]string{0x1000: first, 0x1100: "2026-12-01", 0x1250: "2026-12-01", 0x1300: "2026-12-02",
			0x2500: "2026-12-02", 0x3100: "2026-12-03", 0x9000: "2026-12-03"} {
			if got := d.at(lsn); got != want {
				t.Errorf("carried %q: day at %X: %s, want %s", carried, lsn, got, want)
			}
		}
		if d.current() != "2026-12-03" || !d.lastTime.Equal(at("2026-12-03T10:00:00Z")) {
			t.Errorf("carried %q: current %s, last time %v", carried, d.current(), d.lastTime)
		}
	}
	var none dayTrack
	if none.first() != UnknownDay || none.at(5) != UnknownDay {
		t.Errorf("no time at all: %s", none.first())
	}
}
