package xlog

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// HistoryEntry is one line of a timeline history file: timeline TLI ended
// (switched to a child) at Switch (TimeLineHistoryEntry in
// src/include/access/timeline.h; readTimeLineHistory in
// src/backend/access/transam/timeline.c).
type HistoryEntry struct {
	TLI    TimeLineID
	Switch LSN
	Reason string
}

// ParseHistory parses the text of a TTTTTTTT.history file as PostgreSQL does:
// blank and '#' lines are ignored, each other line is "tli<TAB>X/Y<TAB>reason",
// timelines strictly increase and are all below the file's own timeline.
func ParseHistory(text string, own TimeLineID) ([]HistoryEntry, error) {
	var out []HistoryEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: syntax error in history file: %s", ErrSyntax, line)
		}
		t, err := strconv.ParseUint(strings.TrimSpace(f[0]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: syntax error in history file: %s", ErrSyntax, line)
		}
		lsn, err := ParseLSN(strings.TrimSpace(f[1]))
		if err != nil {
			return nil, fmt.Errorf("%w: syntax error in history file: %s", ErrSyntax, line)
		}
		if len(out) > 0 && TimeLineID(t) <= out[len(out)-1].TLI {
			return nil, fmt.Errorf("%w: timeline IDs must be in increasing sequence", ErrSyntax)
		}
		if own != 0 && TimeLineID(t) >= own {
			return nil, fmt.Errorf("%w: timeline IDs must be less than child timeline's ID", ErrSyntax)
		}
		// PostgreSQL does not check it, but a timeline cannot end before
		// its parent did: a reader following such a history would skip
		// the WAL between (or read a stretch twice).
		if len(out) > 0 && lsn < out[len(out)-1].Switch {
			return nil, fmt.Errorf("%w: switch point %s of timeline %d is before %s, where its parent timeline %d ended",
				ErrSyntax, lsn, t, out[len(out)-1].Switch, out[len(out)-1].TLI)
		}
		e := HistoryEntry{TLI: TimeLineID(t), Switch: lsn}
		if len(f) == 3 {
			e.Reason = strings.TrimSpace(f[2])
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Timeline is one stretch of a timeline's history: WAL in [Begin, End) belongs
// to TLI (End 0 means open-ended).
type Timeline struct {
	TLI        TimeLineID
	Begin, End LSN
}

// TimelinePlan lists, oldest first, the timelines a reader follows to read
// timeline target from the start: the target's ancestors up to their switch
// points, then the target itself.
func TimelinePlan(target TimeLineID, history []HistoryEntry) []Timeline {
	var plan []Timeline
	var begin LSN
	for _, h := range history {
		plan = append(plan, Timeline{TLI: h.TLI, Begin: begin, End: h.Switch})
		begin = h.Switch
	}
	return append(plan, Timeline{TLI: target, Begin: begin})
}

// candidates appends to out the timelines whose files may hold segment
// segno, in the order recovery tries them (XLogFileReadAnyTLI): the newest
// timeline that began at or before the segment first. Callers pass a small
// array of their own: it is asked for every segment opened and, building a
// reader, for every file.
func candidates(out []TimeLineID, plan []Timeline, segno uint64, segSize uint32) []TimeLineID {
	for i := len(plan) - 1; i >= 0; i-- {
		if uint64(plan[i].Begin)/uint64(segSize) > segno {
			continue
		}
		// Unlike recovery, never read a parent past its switch point: in an
		// archive the old primary may have gone on writing there.
		if plan[i].End != 0 && uint64(plan[i].End)/uint64(segSize) < segno {
			continue
		}
		out = append(out, plan[i].TLI)
	}
	return out
}

// HistoryProblem is a history file that is not a valid history, or that
// contradicts the history of one of its ancestors.
type HistoryProblem struct {
	TLI  TimeLineID // the history file's timeline
	File string     // its key in the source
	Err  error      // wraps ErrSyntax
}

func (p HistoryProblem) Error() string { return fmt.Sprintf("history file %s: %v", p.File, p.Err) }

func (p HistoryProblem) Unwrap() error { return p.Err }

// CheckHistories validates every history file of src, not only the one a
// reading follows: each must parse (ParseHistory: timelines increasing and
// below the file's own, switch points in order), and a file's entries must
// agree with the history files of the ancestors it names: timeline T's
// history is its parent P's history, then P's switch point.
func CheckHistories(hr HistoryReader) []HistoryProblem {
	keys := hr.Histories()
	tlis := make([]TimeLineID, 0, len(keys))
	for t := range keys {
		tlis = append(tlis, t)
	}
	sort.Slice(tlis, func(i, j int) bool { return tlis[i] < tlis[j] })
	parsed := map[TimeLineID][]HistoryEntry{}
	var out []HistoryProblem
	for _, t := range tlis {
		text, err := hr.ReadHistory(keys[t])
		if err == nil {
			var h []HistoryEntry
			if h, err = ParseHistory(text, t); err == nil {
				parsed[t] = h
				continue
			}
		}
		out = append(out, HistoryProblem{TLI: t, File: keys[t], Err: err})
	}
	for _, t := range tlis {
		h, ok := parsed[t]
		if !ok {
			continue
		}
		for i, e := range h {
			ph, ok := parsed[e.TLI]
			if !ok {
				continue
			}
			// The parent's own history must be this file's entries before it.
			if !sameHistory(ph, h[:i]) {
				out = append(out, HistoryProblem{TLI: t, File: keys[t], Err: fmt.Errorf(
					"%w: the history of timeline %d it gives differs from %s", ErrSyntax, e.TLI, keys[e.TLI])})
				break
			}
		}
	}
	return out
}

func sameHistory(a, b []HistoryEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].TLI != b[i].TLI || a[i].Switch != b[i].Switch {
			return false
		}
	}
	return true
}
