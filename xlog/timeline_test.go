package xlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseHistory(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		own        TimeLineID
		want       []HistoryEntry // nil: an error
	}{
		{"one switch", "1\t0/11000A0\tno recovery target specified\n", 2, []HistoryEntry{{1, 0x11000A0, "no recovery target specified"}}},
		{"comments and blanks", "# c\n\n1\t0/3000000\tx\n2\t0/5000000\n", 3, []HistoryEntry{{1, 0x3000000, "x"}, {2, 0x5000000, ""}}},
		{"equal switch points", "1\t0/3000000\n2\t0/3000000\n", 3, []HistoryEntry{{1, 0x3000000, ""}, {2, 0x3000000, ""}}},
		{"switch points out of order", "1\t0/11000A0\n2\t0/1000000\n", 3, nil},
		{"timeline repeated (a loop)", "1\t0/1000000\n1\t0/2000000\n", 3, nil},
		{"timelines decreasing", "2\t0/1000000\n1\t0/2000000\n", 3, nil},
		{"parent not before the child", "1\t0/1000000\n3\t0/2000000\n", 3, nil},
		{"its own timeline", "2\t0/1000000\n", 2, nil},
		{"no LSN", "1\n", 2, nil},
		{"bad LSN", "1\t0/G\n", 2, nil},
	} {
		got, err := ParseHistory(tc.text, tc.own)
		if tc.want == nil {
			if err == nil || !errors.Is(err, ErrSyntax) {
				t.Errorf("%s: %v, %v; want an ErrSyntax", tc.name, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v, %v", tc.name, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: entry %d %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// histories is a HistoryReader of texts by timeline.
type histories map[TimeLineID]string

func (h histories) Histories() map[TimeLineID]string {
	m := map[TimeLineID]string{}
	for t := range h {
		m[t] = fmt.Sprintf("%08X.history", uint32(t))
	}
	return m
}

func (h histories) ReadHistory(key string) (string, error) {
	t, _ := ParseHistoryName(key)
	return h[t], nil
}

func TestCheckHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    histories
		bad  []TimeLineID
	}{
		{"consistent", histories{2: "1\t0/3000000\n", 3: "1\t0/3000000\n2\t0/5000000\n"}, nil},
		{"a child contradicting its parent", histories{2: "1\t0/3000000\n", 3: "1\t0/4000000\n2\t0/5000000\n"}, []TimeLineID{3}},
		{"a file the reading does not follow, out of order", histories{2: "1\t0/3000000\n", 4: "1\t0/3000000\n2\t0/1000000\n"}, []TimeLineID{4}},
		{"a loop: the parent after the child", histories{2: "3\t0/3000000\n", 3: "1\t0/3000000\n"}, []TimeLineID{2}},
	} {
		var got []TimeLineID
		for _, p := range CheckHistories(tc.h) {
			if !errors.Is(p, ErrSyntax) || !strings.Contains(p.Error(), p.File) {
				t.Errorf("%s: %v", tc.name, p)
			}
			got = append(got, p.TLI)
		}
		if len(got) != len(tc.bad) {
			t.Errorf("%s: problems in %v, want %v", tc.name, got, tc.bad)
			continue
		}
		for i := range got {
			if got[i] != tc.bad[i] {
				t.Errorf("%s: problems in %v, want %v", tc.name, got, tc.bad)
			}
		}
	}
}

// FuzzParseHistory: any text parses or is refused, never panics, and what
// parses is a history a reader can follow.
func FuzzParseHistory(f *testing.F) {
	f.Add("1\t0/11000A0\tno recovery target specified\n", uint32(2))
	f.Add("# c\n1\t0/3000000\n2\t0/5000000\tx\n", uint32(3))
	f.Add("1\t0/3000000\n1\t0/1000000\n", uint32(5))
	f.Fuzz(func(t *testing.T, text string, own uint32) {
		h, err := ParseHistory(text, TimeLineID(own))
		if err != nil {
			return
		}
		for i, e := range h {
			if own != 0 && e.TLI >= TimeLineID(own) {
				t.Fatalf("timeline %d in the history of %d", e.TLI, own)
			}
			if i > 0 && (e.TLI <= h[i-1].TLI || e.Switch < h[i-1].Switch) {
				t.Fatalf("entries out of order: %+v", h)
			}
		}
		plan := TimelinePlan(TimeLineID(own), h)
		for _, p := range plan {
			if p.End != 0 && p.End < p.Begin {
				t.Fatalf("a plan that goes back: %+v", plan)
			}
		}
	})
}
