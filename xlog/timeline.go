package xlog

import (
	"bufio"
	"fmt"
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

// candidates returns the timelines whose files may hold segment segno, in the
// order recovery tries them (XLogFileReadAnyTLI): the newest timeline that
// began at or before the segment first.
func candidates(plan []Timeline, segno uint64, segSize uint32) []TimeLineID {
	var out []TimeLineID
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
