package stats

import "testing"

// TestTimedSpacing: a timed checkpoint begins k timeouts after the last
// began (whole seconds: one more or less), never in between.
func TestTimedSpacing(t *testing.T) {
	for _, c := range []struct {
		dt, timeout int64
		want        bool
	}{{300, 300, true}, {301, 300, true}, {299, 300, true}, {600, 300, true}, {602, 300, true}, {450, 300, false}, {200, 300, false}, {31, 30, true}, {45, 30, false}} {
		if got := timedSpacing(c.dt, c.timeout); got != c.want {
			t.Errorf("%d s after, timeout %d s: %v", c.dt, c.timeout, got)
		}
	}
}
