package stats

import (
	"sort"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// CycleInfo is a checkpoint cycle's identity: the redo point that starts it
// and the checkpoint record that named it.
type CycleInfo struct {
	Redo       xlog.LSN
	Checkpoint xlog.LSN // the checkpoint record; 0 for the WAL before the first redo point
	Time       time.Time
	Online     bool
	FullPage   bool
	// WalLevel is the checkpoint record's (17+), or else that of the last
	// PARAMETER_CHANGE read before it (WalLevelUnknown if none).
	WalLevel xlog.WalLevel
	// Cause is why the checkpoint began, from its record and the spacing of
	// the redo points (RedoFinder.Sorted sets it; see classify).
	Cause   CheckpointCause
	segSize uint32 // of the segment holding the record
	newTLI  bool   // the checkpoint begins a timeline (ThisTimeLineID != PrevTimeLineID)
	mark    uint8  // a BACKUP_END or END_OF_RECOVERY the finder keeps among its points
}

// Cycle is one checkpoint cycle: the WAL from one redo point to the next.
type Cycle struct {
	CycleInfo
	End xlog.LSN // the next redo point, or the end of the WAL read
	Volume
	DistinctBlocks int        // blocks imaged at least once in the cycle
	Tenths         [10]uint64 // image bytes in each tenth of the cycle, by LSN
	blocks         map[BlockKey]struct{}
	images         []imageAt // images of the last cycle while its end is not known
}

type BlockKey struct {
	RelKey
	Block uint32
}

type imageAt struct {
	lsn xlog.LSN
	len uint32
}

// RedoFinder finds the checkpoint cycles in a first pass over the stream:
// call Add for every record in WAL order (only XLOG's checkpoint and
// PARAMETER_CHANGE records matter). A stream read in spans takes a finder
// per span, joined in WAL order with Append.
type RedoFinder struct {
	// Points are the checkpoint records read, in WAL order, and the
	// BACKUP_END and END_OF_RECOVERY records that tell why some began.
	Points []CycleInfo
	// Inferred is what Sorted learnt of the settings from the spacing of
	// the checkpoints.
	Inferred Inferred
	walLevel xlog.WalLevel // of the last PARAMETER_CHANGE read, if haveWL
	haveWL   bool
}

// Add notes a checkpoint or PARAMETER_CHANGE record.
func (f *RedoFinder) Add(rec *decode.Record) {
	if p, ok := rmgr.ParameterChange(rec); ok {
		f.walLevel, f.haveWL = p.WalLevel, true
		return
	}
	if start, ok := rmgr.BackupEnd(rec); ok {
		f.Points = append(f.Points, CycleInfo{Redo: start, Checkpoint: rec.LSN, mark: markBackupEnd})
		return
	}
	if _, ok := rmgr.EndOfRecovery(rec); ok {
		f.Points = append(f.Points, CycleInfo{Redo: rec.LSN, Checkpoint: rec.LSN, mark: markEndOfRecovery})
		return
	}
	c, ok := rmgr.Checkpoint(rec)
	if !ok {
		return
	}
	wl := c.WalLevel
	if wl < xlog.WalLevelMinimal && f.haveWL {
		wl = f.walLevel
	}
	f.Points = append(f.Points, CycleInfo{Redo: c.Redo, Checkpoint: rec.LSN, Time: c.Time, Online: c.Online,
		FullPage: c.FullPageWrites, WalLevel: wl, segSize: rec.SegSize, newTLI: c.ThisTLI != c.PrevTLI})
}

// Append adds the points another finder found in the part of the stream
// that follows f's (the last wal_level f saw carries on into that part, up
// to its first PARAMETER_CHANGE).
func (f *RedoFinder) Append(o *RedoFinder) {
	for _, p := range o.Points {
		if p.WalLevel < xlog.WalLevelMinimal && f.haveWL {
			p.WalLevel = f.walLevel
		}
		f.Points = append(f.Points, p)
	}
	if o.haveWL {
		f.walLevel, f.haveWL = o.walLevel, true
	}
}

// Sorted returns the distinct redo points in LSN order (of the checkpoints
// naming one redo point, the first read), each with its Cause, and sets
// Inferred.
func (f *RedoFinder) Sorted() []CycleInfo {
	sort.SliceStable(f.Points, func(i, j int) bool { return f.Points[i].Redo < f.Points[j].Redo })
	var out, marks []CycleInfo
	for _, p := range f.Points {
		if p.mark != markNone {
			marks = append(marks, p)
			continue
		}
		if len(out) > 0 && out[len(out)-1].Redo == p.Redo {
			continue
		}
		out = append(out, p)
	}
	f.Inferred = classify(out, marks)
	return out
}

// Cycles returns the cycles of the stream whose first record is at start:
// the WAL before the first redo point at or after start (Checkpoint 0),
// then one cycle per redo point.
func (f *RedoFinder) Cycles(start xlog.LSN) []CycleInfo { return cyclesFrom(f.Sorted(), start) }

// Before returns the checkpoints read whose redo point lies before start
// (a checkpoint record near the start of the WAL read whose cycle began
// before it), in LSN order, classified as Cycles classifies them: the
// history a later reading of the stream from start on takes as its
// earlier checkpoints (Reclassify).
func (f *RedoFinder) Before(start xlog.LSN) []CycleInfo {
	var out []CycleInfo
	for _, p := range f.Sorted() {
		if p.Redo < start {
			out = append(out, p)
		}
	}
	return out
}

// cyclesFrom returns the cycles from start of the redo points (in LSN order).
func cyclesFrom(points []CycleInfo, start xlog.LSN) []CycleInfo {
	out := []CycleInfo{{Redo: start, WalLevel: xlog.WalLevelUnknown}}
	for _, p := range points {
		if p.Redo < start {
			continue
		}
		if last := &out[len(out)-1]; p.Redo == last.Redo {
			if last.Checkpoint == 0 {
				*last = p
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// CycleCounter counts the WAL of each checkpoint cycle: volumes, the blocks
// imaged and the image bytes of each tenth of the cycle. A stream read in
// spans takes a part per span (NewPart), filled concurrently and merged in
// WAL order.
type CycleCounter struct {
	bounds  []cycleBounds // each cycle's redo point and end: shared, read-only
	openEnd bool          // the last cycle's end is given to Finish
	cycles  []*Cycle      // the root's cycles
	part    bool
	parts   map[int]*Cycle // a part's sums, of the cycles it read
	cur     int            // the cycle of the last record
	acc     *Cycle         // its sums
	accAt   int
}

type cycleBounds struct{ redo, end xlog.LSN }

// NewCycleCounter returns a counter of the cycles (RedoFinder.Cycles; none:
// one cycle from LSN 0) of a stream whose reading ends at end. Where that
// end is not known before reading (openEnd), the last cycle's images wait
// for Finish to be given it before they go to their tenths.
func NewCycleCounter(cycles []CycleInfo, end xlog.LSN, openEnd bool) *CycleCounter {
	if len(cycles) == 0 {
		cycles = []CycleInfo{{WalLevel: xlog.WalLevelUnknown}}
	}
	c := &CycleCounter{openEnd: openEnd, bounds: make([]cycleBounds, len(cycles)), cycles: make([]*Cycle, len(cycles)), accAt: -1}
	for i, info := range cycles {
		cy := &Cycle{CycleInfo: info}
		if i+1 < len(cycles) {
			cy.End = cycles[i+1].Redo
		} else if !openEnd {
			cy.End = end
		}
		c.cycles[i] = cy
		c.bounds[i] = cycleBounds{cy.Redo, cy.End}
	}
	return c
}

// NewPart returns an empty counter for one span of c's stream, to be merged
// into c with Merge.
func (c *CycleCounter) NewPart() *CycleCounter {
	return &CycleCounter{bounds: c.bounds, openEnd: c.openEnd, part: true, parts: map[int]*Cycle{}, accAt: -1}
}

// All returns the root's cycles, every one, as counted so far.
func (c *CycleCounter) All() []*Cycle { return c.cycles }

// Index returns the cycle holding lsn (the first one for WAL before it).
func (c *CycleCounter) Index(lsn xlog.LSN) int {
	b, i := c.bounds, c.cur
	if lsn >= b[i].redo && (i+1 == len(b) || lsn < b[i+1].redo) {
		return i
	}
	i = sort.Search(len(b), func(i int) bool { return b[i].redo > lsn }) - 1
	c.cur = max(i, 0)
	return c.cur
}

// Redo returns the redo point of cycle i.
func (c *CycleCounter) Redo(i int) xlog.LSN { return c.bounds[i].redo }

// Add counts one record holding images full-page images in its cycle.
func (c *CycleCounter) Add(rec *decode.Record, images uint64) {
	i := c.Index(rec.LSN)
	a := c.acc
	if i != c.accAt {
		a = c.sums(i)
		c.acc, c.accAt = a, i
	}
	a.add(rec, images)
	if images == 0 {
		return
	}
	if a.blocks == nil {
		a.blocks = map[BlockKey]struct{}{}
	}
	// A cycle's images go to its tenths at once where its end is known; the
	// last cycle's wait for Finish where it is not, so that memory does not
	// grow with the archive.
	bd := c.bounds[i]
	wait := c.openEnd && i+1 == len(c.bounds)
	for k := range rec.Blocks {
		bl := &rec.Blocks[k]
		if !bl.HasImage {
			continue
		}
		a.blocks[BlockKey{RelKey{bl.Rel, bl.Fork()}, bl.Block}] = struct{}{}
		switch {
		case wait:
			a.images = append(a.images, imageAt{rec.LSN, uint32(bl.ImageLen)})
		case bd.end > bd.redo:
			a.Tenths[tenth(rec.LSN, bd.redo, bd.end)] += uint64(bl.ImageLen)
		}
	}
}

// sums returns where cycle i's records are counted.
func (c *CycleCounter) sums(i int) *Cycle {
	if !c.part {
		return c.cycles[i]
	}
	a := c.parts[i]
	if a == nil {
		a = &Cycle{}
		c.parts[i] = a
	}
	return a
}

// tenth returns which tenth of the cycle from redo to end lsn is in.
func tenth(lsn, redo, end xlog.LSN) int {
	if lsn < redo {
		return 0
	}
	return min(int(uint64(lsn-redo)*10/uint64(end-redo)), 9)
}

// Merge adds part p, the span of the stream that follows what c holds.
func (c *CycleCounter) Merge(p *CycleCounter) {
	for i, pc := range p.parts {
		cy := c.cycles[i]
		cy.plus(pc.Volume)
		for k, v := range pc.Tenths {
			cy.Tenths[k] += v
		}
		if len(pc.blocks) > 0 && cy.blocks == nil {
			cy.blocks = make(map[BlockKey]struct{}, len(pc.blocks))
		}
		for k := range pc.blocks {
			cy.blocks[k] = struct{}{}
		}
		cy.images = append(cy.images, pc.images...)

	}
}

// Finish completes the cycles, the last ending at end where it was not
// known before (openEnd), and returns those holding WAL.
func (c *CycleCounter) Finish(end xlog.LSN) []*Cycle {
	var out []*Cycle
	for i, cy := range c.cycles {
		if c.openEnd && i+1 == len(c.cycles) {
			cy.End = end
			for _, im := range cy.images {
				if end > cy.Redo {
					cy.Tenths[tenth(im.lsn, cy.Redo, end)] += uint64(im.len)
				}
			}
			cy.images = nil
		}
		cy.DistinctBlocks = len(cy.blocks)
		cy.blocks = nil
		if cy.Records > 0 {
			out = append(out, cy)
		}
	}
	return out
}

// IsMark reports whether the point is a BACKUP_END or END_OF_RECOVERY mark
// the finder keeps among its points, not a checkpoint's redo point.
func (c CycleInfo) IsMark() bool { return c.mark != markNone }
