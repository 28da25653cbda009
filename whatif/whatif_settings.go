package whatif

import (
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// checkpointer replays PostgreSQL's checkpoint triggers on a scenario's own
// WAL (issue 18), as the server would have spaced checkpoints under other
// max_wal_size and checkpoint_timeout values:
//
//   - WAL: XLogWrite, on finishing a segment, requests a checkpoint when
//     XLogCheckpointNeeded says the segment is RedoRecPtr's segment +
//     CheckPointSegments - 1 or later (xlog.c); here when the scenario's
//     insert position crosses the end of that segment.
//   - Time: the checkpointer starts one when checkpoint_timeout has passed
//     since the last began (last_checkpoint_time, checkpointer.c), unless no
//     WAL was written since the last (CreateCheckPoint skips it, the timer
//     still moves on); time is the WAL's own: commit and checkpoint
//     timestamps.
//   - A request waits while a checkpoint runs; a spread checkpoint ends
//     when checkpoint_completion_target of the interval has passed in WAL
//     (CheckPointSegments) or in time, whichever first (IsCheckpointOnSchedule
//     in checkpointer.c), and writes its record there.
//   - The stream's requested checkpoints (CHECKPOINT, shutdown, backups,
//     CREATE DATABASE: any cause but time and WAL) happen whatever the
//     settings: they are kept where they were.
//
// The new redo point is where the checkpoint begins: the record before which
// it starts. pg_wal keeps from the previous checkpoint's redo segment (or
// wal_keep_size back, if further) to the segment being written, and the
// segments RemoveOldXlogFiles recycles ahead, up to XLOGfileslop's horizon
// (min_wal_size, max_wal_size and the checkpoint distance estimate).
type checkpointer struct {
	set       CheckpointSettings
	cps       int // CheckPointSegments
	segSize   uint64
	fixed     []stats.CycleInfo       // the stream's requested checkpoints, in LSN order
	next      int                     // the next of fixed
	drop      map[xlog.LSN]bool       // the stream's time and WAL checkpoint records: not in the scenario
	cycle     int                     // the simulated cycle (as WhatIf.touched counts them)
	redo      xlog.LSN                // the scenario position of the current redo point
	started   time.Time               // last_checkpoint_time
	running   bool                    // a checkpoint is between its redo point and its record
	spread    bool                    // the running one is spread over the interval
	fixedAt   xlog.LSN                // the stream's checkpoint record ending a running fixed one
	pending   bool                    // a request waits for the running checkpoint to end
	wrote     bool                    // WAL written since the last checkpoint began
	prior     xlog.LSN                // the redo point before the current one (PriorRedoPtr)
	estim     float64                 // CheckPointDistanceEstimate
	first     uint64                  // the oldest segment pg_wal holds
	top       uint64                  // the newest segment file pg_wal holds (recycled ones included)
	Redo      []xlog.LSN              // the stream LSNs the simulated checkpoints began at
	Causes    []stats.CheckpointCause // and why
	keep      uint64                  // most WAL kept: from the oldest kept segment through the insert position
	disk      uint64                  // most segment files, recycled ones included
	ckLen     uint32                  // a checkpoint record's length, as the stream writes them
	lastPos   xlog.LSN                // the scenario position before the record being placed
	endRecord bool                    // a simulated checkpoint ended: its record goes before the next
	replay    bool                    // the stream's own checkpoints, all kept where they were
	countFrom int                     // Redo[countFrom:] began where the results count (WhatIfInput.CountFrom)
	lastAt    xlog.LSN                // the stream LSN the last checkpoint before Redo's began at (Spacing's carried state)
}

func newCheckpointer(set CheckpointSettings, in *WhatIfInput, replay bool) *checkpointer {
	c := &checkpointer{set: set, segSize: uint64(in.SegSize), drop: map[xlog.LSN]bool{}, ckLen: 114, replay: replay,
		cps: set.CheckpointSegments(in.SegSize, in.Version)}
	for _, cy := range in.Cycles {
		switch {
		case cy.Checkpoint == 0:
		case cy.Cause.Spread() && !replay:
			c.drop[cy.Checkpoint] = true
		case cy.Redo >= in.Start:
			c.fixed = append(c.fixed, cy)
		}
	}
	c.redo = in.Start
	c.first = uint64(in.Start) / c.segSize
	c.top = c.first
	c.cycle = 0
	return c
}

// begin starts a checkpoint before the stream record at, at scenario
// position pos.
func (c *checkpointer) begin(at, pos xlog.LSN, now time.Time, cause stats.CheckpointCause) {
	c.prior, c.redo = c.redo, pos
	c.cycle++
	c.started = now
	c.running, c.spread, c.pending, c.wrote = true, cause.Spread() && !c.replay, false, false
	c.Redo = append(c.Redo, at)
	c.Causes = append(c.Causes, cause)
}

// finish ends the running checkpoint at scenario position pos: pg_wal as
// the removal finds it, then what it removes and recycles (CreateCheckPoint:
// UpdateCheckPointDistanceEstimate, KeepLogSeg, RemoveOldXlogFiles).
func (c *checkpointer) finish(pos xlog.LSN) {
	c.running = false
	c.account(pos)
	seg := c.segSize
	cur := uint64(pos) / seg
	// UpdateCheckPointDistanceEstimate
	if n := float64(c.redo - c.prior); c.estim < n {
		c.estim = n
	} else {
		c.estim = 0.9*c.estim + 0.1*n
	}
	keepFrom := uint64(c.redo) / seg
	if ks := c.set.WALKeepSize / seg; ks > 0 && cur >= ks && cur-ks < keepFrom {
		keepFrom = cur - ks
	}
	if keepFrom <= c.first {
		return
	}
	removed := keepFrom - c.first
	c.first = keepFrom
	// XLOGfileslop: recycle up to a horizon from the redo point
	redoSeg := uint64(c.redo) / seg
	minSeg := redoSeg + max(c.set.MinWALSize/seg, 1) - 1
	maxSeg := redoSeg + max(c.set.MaxWALSize/seg, 1) - 1
	horizon := uint64(math.Ceil((float64(c.redo) + (1+c.set.CompletionTarget)*c.estim*1.10) / float64(seg)))
	horizon = min(max(horizon, minSeg), maxSeg)
	if c.top < horizon {
		c.top = min(horizon, c.top+removed)
	}
}

// account notes pg_wal's size with the insert position at pos.
func (c *checkpointer) account(pos xlog.LSN) {
	cur := uint64(pos) / c.segSize
	c.top = max(c.top, cur)
	if cur >= c.first {
		c.keep = max(c.keep, uint64(pos)-c.first*c.segSize)
	}
	c.disk = max(c.disk, (c.top-c.first+1)*c.segSize)
}

// before runs the triggers due before the stream record rec is placed at
// scenario position pos, at time now (the last the WAL told), and reports
// whether the record is a checkpoint record the scenario does not write.
func (c *checkpointer) before(rec *SpacingRecord, pos xlog.LSN, now time.Time) (skip bool) {
	c.lastPos = pos
	if c.running && c.spread {
		frac := float64(pos-c.redo) / float64(c.segSize) / float64(c.cps)
		if frac >= c.set.CompletionTarget || !now.IsZero() && !c.started.IsZero() &&
			now.Sub(c.started).Seconds() >= c.set.CompletionTarget*c.set.Timeout.Seconds() {
			c.finish(pos)
			c.endRecord = true
		}
	}
	if c.next < len(c.fixed) && rec.LSN >= c.fixed[c.next].Redo {
		f := c.fixed[c.next]
		c.next++
		if c.running {
			c.finish(pos)
			c.endRecord = c.spread
		}
		c.begin(rec.LSN, pos, f.Time, f.Cause)
		c.fixedAt = f.Checkpoint
	}
	if c.running && !c.spread && rec.LSN >= c.fixedAt {
		c.finish(pos)
	}
	if !c.running && !now.IsZero() && !c.replay {
		if c.started.IsZero() {
			c.started = now
		} else if el := now.Sub(c.started); c.set.Timeout > 0 && el >= c.set.Timeout {
			k := el / c.set.Timeout
			if c.wrote {
				c.begin(rec.LSN, pos, c.started.Add(k*c.set.Timeout), stats.CauseTime)
			} else {
				c.started = c.started.Add(k * c.set.Timeout)
			}
		}
	}
	if c.pending && !c.running {
		c.begin(rec.LSN, pos, now, stats.CauseWAL)
	}
	if rec.Rmid == xlog.RmgrXLOG && c.drop[rec.LSN] {
		return true
	}
	if rec.Rmid == xlog.RmgrXLOG && rec.Info&0xE0 == 0x00 { // CHECKPOINT_SHUTDOWN, _ONLINE
		c.ckLen = rec.TotLen
	}
	return false
}

// after notes the record placed, ending at scenario position pos: a
// segment it finished may request a checkpoint.
func (c *checkpointer) after(pos xlog.LSN) {
	c.wrote = true
	seg := c.segSize
	if uint64(pos)/seg == uint64(c.lastPos)/seg {
		return
	}
	filled := uint64(pos)/seg - 1
	if filled+1 >= uint64(c.redo)/seg+uint64(c.cps) && !c.replay {
		c.pending = true
	}
	c.account(pos)
}

// byCause counts causes by name.
func byCause(causes []stats.CheckpointCause) map[string]int {
	m := map[string]int{}
	for _, c := range causes {
		m[c.String()]++
	}
	return m
}

// streamCheckpoints counts the stream's redo points at or after where the
// results count.
func (w *WhatIf) streamCheckpoints() int {
	n := 0
	if w.in.Cycles != nil {
		for _, c := range w.in.Cycles {
			if c.Checkpoint != 0 && c.Redo >= w.in.CountFrom {
				n++
			}
		}
		return n
	}
	for _, r := range w.in.Redo {
		if r > w.in.Start && r >= w.in.CountFrom {
			n++
		}
	}
	return n
}

// Span returns the first and last times the WAL read told (commit and
// checkpoint timestamps; zero if none).
func (w *WhatIf) Span() (first, last time.Time) { return w.first, w.now }

// placeSettings places rec in a checkpoint settings scenario: the
// simulated checkpointer first (a checkpoint that ends writes its record
// before rec; the stream's time and WAL checkpoint records are not
// written), then rec with the images its simulated cycle asks for.
func (w *WhatIf) placeSettings(s *Scenario, rec *SpacingRecord) {
	c := s.ck
	skip := c.before(rec, s.layout.Pos(), w.now)
	if c.endRecord {
		c.endRecord = false
		before := s.layout.Pos()
		s.layout.Add(c.ckLen, false, true) // XLogFlush of the checkpoint record
		s.RecordBytes += uint64(c.ckLen)
		s.WALBytes += uint64(s.layout.Pos() - before)
	}
	if !skip {
		w.placeInCycle(s, rec, c.cycle)
	}
	c.after(s.layout.Pos())
}

// addSettingsScenarios adds the max_wal_size and checkpoint_timeout
// scenarios: the values asked for, or values around the stream's own (half,
// the same, double, four times; and the max_wal_size that the busiest
// checkpoint_timeout interval of the stream needs), and the pairs when both
// lists are given. The stream's own settings are inferred from its
// checkpoints where they show them, PostgreSQL's defaults otherwise.
func (w *WhatIf) addSettingsScenarios(add func(setting, value string, pageSize uint32) *Scenario) {
	in := &w.in
	cur, assumed := CurrentSettings(stats.InferSettings(in.Cycles), in.SegSize, in.Version, in.Given)
	w.Settings, w.Assumed = cur, assumed
	// The spacing alone tells a cause where it repeats; settings the user
	// gave tell it for a single checkpoint too (one WAL-triggered
	// checkpoint in a short range is kept fixed otherwise, as if
	// requested, in every scenario).
	segs, timeout := 0, time.Duration(0)
	if in.Given.MaxWALSize != 0 {
		segs = cur.CheckpointSegments(in.SegSize, in.Version)
	}
	if in.Given.Timeout != 0 {
		timeout = cur.Timeout
	}
	if segs != 0 || timeout != 0 {
		in.Cycles = append([]stats.CycleInfo(nil), in.Cycles...)
		stats.ApplySettings(in.Cycles, segs, timeout)
	}
	w.actualCk = newCheckpointer(cur, in, true)
	roundSize := func(b uint64) uint64 { return roundMaxWALSize(b, in.SegSize) }
	sizes := in.MaxWALSizes
	if sizes == nil {
		sizes = []uint64{cur.MaxWALSize / 2, cur.MaxWALSize, 2 * cur.MaxWALSize, 4 * cur.MaxWALSize}
		if need := NeededMaxWALSize(in.timePoints(), cur, cur.Timeout, in.SegSize, in.Version); need > 0 {
			sizes = append(sizes, need)
		}
	}
	times := in.Timeouts
	if times == nil {
		for _, k := range []float64{0.5, 1, 2, 6} {
			times = append(times, scaledTimeout(cur.Timeout, k))
		}
	}
	sizes, times = uniqueSorted(sizes, roundSize), uniqueSorted(times, func(d time.Duration) time.Duration { return d })
	mk := func(setting, value string, set CheckpointSettings) {
		sc := add(setting, value, in.PageSize)
		w.trackTouches(sc)
		sc.ck = newCheckpointer(set, in, false)
		sc.MaxWALSize, sc.CheckpointTimeout, sc.CompletionTarget = FormatSize(set.MaxWALSize), FormatTimeout(set.Timeout), set.CompletionTarget
	}
	for _, m := range sizes {
		set := cur
		set.MaxWALSize = m
		mk("max_wal_size", FormatSize(m), set)
	}
	for _, t := range times {
		set := cur
		set.Timeout = t
		mk("checkpoint_timeout", FormatTimeout(t), set)
	}
	switch {
	case in.MaxWALSizes != nil && in.Timeouts != nil:
		for _, m := range sizes {
			for _, t := range times {
				set := cur
				set.MaxWALSize, set.Timeout = m, t
				mk("max_wal_size+checkpoint_timeout", FormatSize(m)+","+FormatTimeout(t), set)
			}
		}
	case in.MaxWALSizes == nil && in.Timeouts == nil:
		// What advise weighs: longer timeouts with the max_wal_size they need.
		for _, t := range []time.Duration{15 * time.Minute, 30 * time.Minute} {
			if t <= cur.Timeout {
				continue
			}
			need := NeededMaxWALSize(in.timePoints(), cur, t, in.SegSize, in.Version)
			if need == 0 {
				continue
			}
			set := cur
			set.MaxWALSize, set.Timeout = max(roundSize(need), cur.MaxWALSize), t
			mk("max_wal_size+checkpoint_timeout", FormatSize(set.MaxWALSize)+","+FormatTimeout(t), set)
		}
	}
}

// roundMaxWALSize rounds a max_wal_size scenario up to whole segments,
// two at least.
func roundMaxWALSize(b uint64, segSize uint32) uint64 {
	seg := uint64(segSize)
	return max((b+seg-1)/seg*seg, 2*seg)
}

// scaledTimeout is checkpoint_timeout d times k, in whole seconds, within
// PostgreSQL's bounds (30 s to 1 day).
func scaledTimeout(d time.Duration, k float64) time.Duration {
	return min(max(time.Duration(float64(d)*k).Round(time.Second), 30*time.Second), 24*time.Hour)
}

// NeededMaxWALSize returns the smallest round max_wal_size whose checkpoint
// distance exceeds the most WAL the stream wrote in any timeout interval
// (WALPerInterval): the value at which checkpoints come from
// checkpoint_timeout and no longer from WAL volume. 0 if the cycles carry no
// rate.
func NeededMaxWALSize(points []TimePoint, cur CheckpointSettings, timeout time.Duration, segSize uint32, v xlog.Version) uint64 {
	wal := WALPerInterval(points, timeout)
	if wal == 0 {
		return 0
	}
	cps := int(math.Ceil(wal/float64(segSize))) + 1
	return roundUpMaxWALSize(cps, segSize, cur.CompletionTarget, v)
}

// TimePoint is a position of the stream and the time the WAL told there.
type TimePoint struct {
	LSN  xlog.LSN
	Time time.Time
}

// timePoints are the stream's TimePoints, or else its checkpoints' (the
// redo points and start times).
func (in *WhatIfInput) timePoints() []TimePoint {
	if len(in.Times) > 0 {
		return in.Times
	}
	var out []TimePoint
	for _, c := range in.Cycles {
		if c.Checkpoint != 0 && !c.Time.IsZero() {
			out = append(out, TimePoint{c.Redo, c.Time})
		}
	}
	return out
}

// WALPerInterval returns the most WAL (bytes) the stream wrote in any
// interval of length d, from points in WAL order (the LSN taken as linear
// in time between them); where the points span less than d, their mean rate
// over d. 0 without two points apart in time.
func WALPerInterval(points []TimePoint, d time.Duration) float64 {
	type pt struct {
		t   float64 // seconds
		lsn float64
	}
	var pts []pt
	for _, c := range points {
		t := float64(c.Time.UnixNano()) / 1e9
		if len(pts) > 0 && t < pts[len(pts)-1].t {
			continue
		}
		pts = append(pts, pt{t, float64(c.LSN)})
	}
	if len(pts) < 2 || pts[len(pts)-1].t <= pts[0].t {
		return 0
	}
	first, last := pts[0], pts[len(pts)-1]
	w := d.Seconds()
	if last.t-first.t < w {
		return (last.lsn - first.lsn) * w / (last.t - first.t)
	}
	pos := func(t float64) float64 {
		k := sort.Search(len(pts), func(k int) bool { return pts[k].t >= t })
		switch {
		case k == 0:
			return first.lsn
		case k == len(pts):
			return last.lsn
		case pts[k].t == pts[k-1].t:
			return pts[k].lsn
		}
		a, b := pts[k-1], pts[k]
		return a.lsn + (b.lsn-a.lsn)*(t-a.t)/(b.t-a.t)
	}
	most := 0.0
	for _, p := range pts {
		// the extremes of a piecewise linear difference are at the breakpoints
		if p.t+w <= last.t {
			most = max(most, pos(p.t+w)-p.lsn)
		}
		if p.t-w >= first.t {
			most = max(most, p.lsn-pos(p.t-w))
		}
	}
	return most
}

// roundUpMaxWALSize returns a round max_wal_size (in steps of a quarter of
// its power of two, whole segments) whose checkpoint distance is at least
// cps segments.
func roundUpMaxWALSize(cps int, segSize uint32, target float64, v xlog.Version) uint64 {
	m := maxWALSizeFor(cps, segSize, target, v)
	unit := max(uint64(1)<<max(bits.Len64(m)-3, 0), uint64(segSize))
	r := (m + unit - 1) / unit * unit
	for (CheckpointSettings{MaxWALSize: r, CompletionTarget: target}).CheckpointSegments(segSize, v) < cps {
		r += unit
	}
	return r
}

func uniqueSorted[T uint64 | time.Duration](v []T, norm func(T) T) []T {
	var out []T
	for _, x := range v {
		if x == 0 {
			continue
		}
		x = norm(x)
		i := 0
		for i < len(out) && out[i] < x {
			i++
		}
		if i < len(out) && out[i] == x {
			continue
		}
		out = append(out[:i], append([]T{x}, out[i:]...)...)
	}
	return out
}

// WhatIfPass gathers, in a first pass over one span of the stream, what
// WhatIfInput needs ahead: block data lengths, the wal_level, the
// checkpoints. Spans' passes are joined in WAL order with Fill.
type WhatIfPass struct {
	learner DataLenLearner
	level   LevelGuesser
	finder  stats.RedoFinder
	redo    []xlog.LSN
	times   []TimePoint // the first time the WAL tells in each MB of LSN
	last    TimePoint   // the last it told
}

// Add looks at one record.
func (p *WhatIfPass) Add(rec *decode.Record) {
	if t, ok := stats.RecordTime(rec); ok {
		p.last = TimePoint{rec.LSN, t}
		// on a grid of LSN, so that passes over spans join into what one
		// pass finds
		if n := len(p.times); n == 0 || p.times[n-1].LSN>>20 != rec.LSN>>20 {
			p.times = append(p.times, p.last)
		}
	}
	p.learner.Add(rec)
	p.level.Add(rec)
	n := len(p.finder.Points)
	p.finder.Add(rec)
	if n < len(p.finder.Points) && !p.finder.Points[n].IsMark() {
		p.redo = append(p.redo, p.finder.Points[n].Redo)
	}
}

// FillWhatIfInput sets in's DataLen, WalLevel, Redo, Cycles and Times from the
// passes over the stream's spans, in WAL order.
func FillWhatIfInput(in *WhatIfInput, parts []WhatIfPass) {
	var learner DataLenLearner
	var level LevelGuesser
	var finder stats.RedoFinder
	in.Redo, in.Times = nil, nil
	var last TimePoint
	for i := range parts {
		learner.Merge(&parts[i].learner)
		level.Merge(&parts[i].level)
		finder.Append(&parts[i].finder)
		in.Redo = append(in.Redo, parts[i].redo...)
		for _, tp := range parts[i].times {
			if n := len(in.Times); n == 0 || in.Times[n-1].LSN>>20 != tp.LSN>>20 {
				in.Times = append(in.Times, tp)
			}
		}
		if !parts[i].last.Time.IsZero() {
			last = parts[i].last
		}
	}
	if n := len(in.Times); n > 0 && in.Times[n-1] != last {
		in.Times = append(in.Times, last) // the stream's last time
	}
	in.WalLevel = level.Level()
	in.DataLen = learner.Means()
	in.Cycles = finder.Cycles(in.Start)
}

// PriorRedo returns where a what-if over opts' range (opts.Start inside the
// WAL) must begin reading: the redo point of the last checkpoint record
// before opts.Start, found by reading back from it, a segment, then four,
// sixteen, ... until one is found or the start of the WAL is reached. It
// returns opts.Start when the WAL holds no checkpoint before it, or when
// that checkpoint's redo point is before the first WAL available (the
// simulation then begins at the range itself, as without a prior redo
// point).
func PriorRedo(src xlog.Source, opts xlog.Options, blockSize int) (xlog.LSN, error) {
	want := opts.Start
	if want == 0 {
		return 0, nil
	}
	all := opts
	all.Start, all.End = 0, 0
	s, err := stream.Open(src, stream.Config{Reader: all})
	if err != nil {
		return 0, err
	}
	first, segSize := s.Start(), xlog.LSN(s.SegmentSize())
	if want <= first {
		return want, nil
	}
	for back := xlog.LSN(1); ; back *= 4 {
		from := first
		if seg := want - want%segSize; seg > first+back*segSize {
			from = seg - back*segSize
		}
		win := opts
		win.Start, win.End = from, want
		parts, _, _, err := pass.XLOGPass(src, win, blockSize, 1, 0, true, func(last *rmgr.CheckpointInfo, d *decode.Record) {
			if c, ok := rmgr.Checkpoint(d); ok && d.LSN < want {
				*last = c
			}
		})
		if err != nil {
			return 0, err
		}
		for i := len(parts) - 1; i >= 0; i-- {
			if r := parts[i].Redo; r != 0 {
				if r < first || r >= want {
					return want, nil
				}
				return r, nil
			}
		}
		if from == first {
			return want, nil
		}
	}
}
