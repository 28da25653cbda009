package stats

import (
	"encoding/binary"
	"sort"
	"strconv"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// CheckpointCause tells why a checkpoint began.
type CheckpointCause uint8

const (
	CauseUnknown       CheckpointCause = iota // no earlier checkpoint to measure from, or the WAL before the first redo point
	CauseTime                                 // checkpoint_timeout elapsed (CHECKPOINT_CAUSE_TIME)
	CauseWAL                                  // a filled segment reached max_wal_size's distance (CHECKPOINT_CAUSE_XLOG)
	CauseRequested                            // CHECKPOINT, CREATE/DROP DATABASE, ...: neither spacing fits
	CauseShutdown                             // CHECKPOINT_SHUTDOWN: a clean stop, or the end of crash recovery
	CauseEndOfRecovery                        // the first of a new timeline, or the first after a promotion's END_OF_RECOVERY
	CauseBackup                               // pg_backup_start's: a BACKUP_END names its redo point
)

var causeNames = [...]string{"unknown", "time", "wal", "requested", "shutdown", "end-of-recovery", "backup"}

func (c CheckpointCause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText writes the cause's name (in JSON).
func (c CheckpointCause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Spread reports a checkpoint PostgreSQL spreads over
// checkpoint_completion_target of the interval (time and WAL triggers); the
// others are mostly immediate.
func (c CheckpointCause) Spread() bool { return c == CauseTime || c == CauseWAL }

// Inferred is what the spacing of a stream's checkpoints tells of the
// settings that spaced them.
type Inferred struct {
	// CheckpointSegments is the segment distance of the WAL-triggered
	// checkpoints (0: none seen).
	CheckpointSegments int
	// Timeout is the spacing of the time-triggered checkpoints (0: none seen).
	Timeout time.Duration
	// MinCheckpointSegments is a lower bound where no checkpoint shows the
	// distance: the longest cycle (in segments) that ended without one
	// (0: none).
	MinCheckpointSegments int
}

// gap is the spacing of a checkpoint from the one before.
type gap struct {
	dt     int64 // seconds between the starts
	dseg   int64 // segments between the redo points
	offset uint64
}

// classify sets the Cause of each checkpoint of points (distinct, in LSN
// order; marks dropped): from the record (shutdown), the BACKUP_END and
// END_OF_RECOVERY records marks holds, then from the spacing of the redo
// points. A WAL-triggered checkpoint begins just after a segment boundary
// (XLogWrite requests it when it finishes the segment
// RedoRecPtr's segment + CheckPointSegments - 1, XLogCheckpointNeeded), the
// same number of segments after the previous redo point each time; a timed
// one begins checkpoint_timeout after the previous checkpoint began (the
// checkpointer's last_checkpoint_time, checkpointer.c; the checkpoint
// record's time is when it began, in whole seconds), or a multiple of it when
// idle time skipped some.
func classify(points []CycleInfo, marks []CycleInfo) (inf Inferred) {
	backups := map[xlog.LSN]bool{}
	var recoveries []xlog.LSN
	for _, m := range marks {
		switch m.mark {
		case markBackupEnd:
			backups[m.Redo] = true
		case markEndOfRecovery:
			recoveries = append(recoveries, m.Redo)
		}
	}
	sort.Slice(recoveries, func(i, j int) bool { return recoveries[i] < recoveries[j] })
	gaps := make([]gap, len(points))
	for i := range points {
		p := &points[i]
		switch {
		case p.Cause >= CauseShutdown: // classified before, from the records
			continue
		case p.newTLI:
			// the end-of-recovery checkpoint of a timeline switch
			// (CreateEndOfRecoveryRecord's or, written as a shutdown
			// checkpoint, CreateCheckPoint's with CHECKPOINT_END_OF_RECOVERY)
			p.Cause = CauseEndOfRecovery
			continue
		case !p.Online:
			p.Cause = CauseShutdown
			continue
		case backups[p.Redo]:
			p.Cause = CauseBackup
			continue
		}
		if i > 0 {
			k := sort.Search(len(recoveries), func(k int) bool { return recoveries[k] >= points[i-1].Redo })
			if k < len(recoveries) && recoveries[k] < p.Redo {
				p.Cause = CauseEndOfRecovery
				continue
			}
		}
		if i == 0 || p.segSize == 0 {
			p.Cause = CauseUnknown
			continue
		}
		seg := uint64(p.segSize)
		p.Cause = CauseRequested // until a spacing fits
		gaps[i] = gap{dt: p.Time.Unix() - points[i-1].Time.Unix(), dseg: int64(uint64(p.Redo)/seg) - int64(uint64(points[i-1].Redo)/seg),
			offset: uint64(p.Redo) % seg}
	}
	nearStart := func(i int) bool { return gaps[i].offset < uint64(points[i].segSize)/16 }
	// The WAL distance: the most frequent segment spacing of the redo
	// points that begin just after a boundary.
	segCount := map[int64]int{}
	for i := range points {
		if points[i].Cause == CauseRequested && nearStart(i) && gaps[i].dseg > 0 {
			segCount[gaps[i].dseg]++
		}
	}
	best, bestN := int64(0), 0
	for d, n := range segCount {
		if n > bestN || n == bestN && d < best {
			best, bestN = d, n
		}
	}
	// Twice at least: a CHECKPOINT after pg_switch_wal() also begins just
	// after a boundary. Once is enough where that checkpoint was spread
	// over at least a segment of WAL (its record a segment or more after
	// its redo point): an immediate CHECKPOINT writes its record at once
	// (a range that starts inside the WAL, read from the redo point before
	// it, often holds one WAL-triggered checkpoint only).
	if bestN == 1 {
		for i := range points {
			if points[i].Cause == CauseRequested && nearStart(i) && gaps[i].dseg == best &&
				points[i].Checkpoint >= points[i].Redo+xlog.LSN(points[i].segSize) {
				bestN = 2
			}
		}
	}
	if bestN >= 2 {
		inf.CheckpointSegments = int(best)
	}
	// The timeout: the most frequent time spacing (within a second) of 30 s
	// or more among the others.
	timeCount := map[int64]int{}
	for i := range points {
		if points[i].Cause == CauseRequested && gaps[i].dt >= 30 && !(inf.CheckpointSegments > 0 && nearStart(i) && gaps[i].dseg >= int64(inf.CheckpointSegments)) {
			timeCount[gaps[i].dt]++
		}
	}
	bt, btN := int64(0), 0
	for dt := range timeCount {
		n := timeCount[dt-1] + timeCount[dt] + timeCount[dt+1]
		if n > btN || n == btN && dt < bt {
			bt, btN = dt, n
		}
	}
	// One spacing alone is taken where it is a round setting (a whole
	// number of minutes, or of half minutes from 90 s): a CHECKPOINT that
	// falls on one, to the second, is unlikely.
	if btN == 1 && (bt%60 == 0 || bt%60 == 1 || bt >= 90 && (bt%30 == 0 || bt%30 == 1)) {
		btN = 2
	}
	if btN >= 2 {
		// the spacing is checkpoint_timeout or a second more
		lo := bt - 1
		if timeCount[lo] == 0 {
			lo = bt
		}
		inf.Timeout = time.Duration(lo) * time.Second
	}
	defer func() {
		// A cycle that ended without a WAL-triggered checkpoint filled no
		// segment reaching the trigger: CheckPointSegments is more than its
		// length in segments.
		for i := 1; i < len(points); i++ {
			if c := points[i].Cause; c != CauseWAL && c != CauseEndOfRecovery && points[i].segSize > 0 {
				seg := uint64(points[i].segSize)
				if d := int(uint64(points[i].Redo)/seg) - int(uint64(points[i-1].Redo)/seg); d+1 > inf.MinCheckpointSegments {
					inf.MinCheckpointSegments = d + 1
				}
			}
		}
		if inf.CheckpointSegments > 0 {
			inf.MinCheckpointSegments = 0
		}
	}()
	applySpacing(points, gaps, inf, nearStart)
	return inf
}

// applySpacing sets the cause of the requested checkpoints of points whose
// spacing fits inf's WAL distance or timeout.
func applySpacing(points []CycleInfo, gaps []gap, inf Inferred, nearStart func(int) bool) {
	for i := range points {
		p := &points[i]
		if p.Cause != CauseRequested {
			continue
		}
		g := gaps[i]
		walDue := inf.CheckpointSegments > 0 && g.dseg >= int64(inf.CheckpointSegments)
		switch {
		case walDue && nearStart(i), inf.CheckpointSegments > 0 && g.dseg == int64(inf.CheckpointSegments):
			p.Cause = CauseWAL
		case inf.Timeout > 0 && timedSpacing(g.dt, int64(inf.Timeout/time.Second)):
			p.Cause = CauseTime
		case inf.Timeout > 0 && g.dt > int64(inf.Timeout/time.Second) && g.dt < 2*int64(inf.Timeout/time.Second) &&
			p.Redo >= points[i-1].Checkpoint && uint64(p.Redo-points[i-1].Checkpoint) < uint64(p.segSize)/4:
			// due while the previous one still ran: begun as soon as
			// it ended (the checkpointer loops without sleeping)
			p.Cause = CauseTime
		case walDue:
			// due by WAL volume but late: queued behind a running checkpoint
			p.Cause = CauseWAL
		}
	}
}

// ApplySettings sets the cause of each checkpoint of cycles (as
// RedoFinder.Sorted gives them) that the spacing alone left "requested"
// (or "unknown", the first after a gap in what was read) where it fits
// settings known otherwise: segs, CheckPointSegments (max_wal_size given
// by the user), and the checkpoint_timeout, 0 for either when unknown.
func ApplySettings(cycles []CycleInfo, segs int, timeout time.Duration) {
	var idx []int
	for i := range cycles {
		if cycles[i].Checkpoint != 0 && !cycles[i].IsMark() {
			idx = append(idx, i)
		}
	}
	pts := make([]CycleInfo, len(idx))
	gaps := make([]gap, len(idx))
	for k, i := range idx {
		pts[k] = cycles[i]
		if k == 0 || pts[k].segSize == 0 {
			continue
		}
		if pts[k].Cause == CauseUnknown {
			pts[k].Cause = CauseRequested
		}
		seg := uint64(pts[k].segSize)
		gaps[k] = gap{dt: pts[k].Time.Unix() - pts[k-1].Time.Unix(), dseg: int64(uint64(pts[k].Redo)/seg) - int64(uint64(pts[k-1].Redo)/seg),
			offset: uint64(pts[k].Redo) % seg}
	}
	nearStart := func(k int) bool { return gaps[k].offset < uint64(pts[k].segSize)/16 }
	applySpacing(pts, gaps, Inferred{CheckpointSegments: segs, Timeout: timeout}, nearStart)
	for k, i := range idx {
		if c := pts[k].Cause; c == CauseRequested && cycles[i].Cause == CauseUnknown {
			continue // nothing fitted: left as it was
		}
		cycles[i].Cause = pts[k].Cause
	}
}

// timedSpacing reports whether dt seconds is k timeouts (k >= 1), within a
// second per timeout (idle intervals skip timed checkpoints but still move
// last_checkpoint_time on).
func timedSpacing(dt, timeout int64) bool {
	if timeout <= 0 || dt < timeout-1 {
		return false
	}
	k := (dt + 1) / timeout
	return k >= 1 && dt >= k*timeout-1 && dt <= k*(timeout+1)
}

// Marks the finder keeps among its points (never returned as cycles).
const (
	markNone = iota
	markBackupEnd
	markEndOfRecovery
)

// InferSettings returns what the spacing of cycles' checkpoints tells of the
// settings (cycles as RedoFinder.Sorted gives them).
func InferSettings(cycles []CycleInfo) Inferred {
	var pts []CycleInfo
	for _, c := range cycles {
		if c.Checkpoint != 0 {
			pts = append(pts, c)
		}
	}
	return classify(pts, nil)
}

// RecordTime returns the time a record carries: a commit's or abort's
// xact_time (the first field of xl_xact_commit and xl_xact_abort), a
// checkpoint's time. Allocation-free: it runs on every record.
func RecordTime(rec *decode.Record) (time.Time, bool) {
	switch rec.Header.Rmid {
	case xlog.RmgrTransaction:
		switch rec.Header.Info & 0x70 {
		case 0x00, 0x20, 0x30, 0x40: // COMMIT, ABORT, COMMIT_PREPARED, ABORT_PREPARED
			if md := rec.MainData; len(md) >= 8 {
				us := int64(binary.LittleEndian.Uint64(md))
				return pgEpoch.Add(time.Duration(us) * time.Microsecond), true
			}
		}
	case xlog.RmgrXLOG:
		if info := rec.Header.Info & 0xF0; info == 0x00 || info == 0x10 {
			if c, ok := rmgr.Checkpoint(rec); ok {
				return c.Time, true
			}
		}
	}
	return time.Time{}, false
}

// pgEpoch is PostgreSQL's timestamp epoch.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Reclassify sets the causes of cycles' checkpoints again, with the
// checkpoints before them (earlier, in LSN order, read from segments of
// segSize bytes) as the history of their spacing: a stream read in pieces
// (export --append's batches) classifies a piece's first checkpoint from
// the one before it, and infers checkpoint_timeout and the WAL distance
// from more of them. Causes the records tell (shutdown, backup, end of
// recovery) are kept; the earlier points are not changed. It returns what
// the whole history tells of the settings.
func Reclassify(earlier []CycleInfo, segSize uint32, cycles []CycleInfo) Inferred {
	first := xlog.LSN(0)
	for _, c := range cycles {
		if c.Checkpoint != 0 {
			first = c.Redo
			break
		}
	}
	var pts []CycleInfo
	for _, e := range earlier {
		if e.Checkpoint != 0 && (first == 0 || e.Redo < first) {
			e.segSize = segSize
			pts = append(pts, e)
		}
	}
	n := len(pts)
	var idx []int
	for i, c := range cycles {
		if c.Checkpoint != 0 {
			if c.segSize == 0 {
				c.segSize = segSize
			}
			pts = append(pts, c)
			idx = append(idx, i)
		}
	}
	inf := classify(pts, nil)
	for k, i := range idx {
		cycles[i].Cause = pts[n+k].Cause
	}
	return inf
}
