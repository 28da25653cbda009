package whatif

import (
	"slices"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/xlog"
)

// SpacingRecord is what the checkpoint spacing scenarios (checkpoint
// distance, max_wal_size, checkpoint_timeout) read of a record: WhatIf
// reads every record through it, and Spacing is fed it by a reader that
// kept only this of its records (export --append's growth aggregate,
// which reads in parallel spans and replays them in WAL order).
type SpacingRecord struct {
	LSN            xlog.LSN
	TotLen, FPILen uint32
	Rmid           xlog.RmgrID
	Info           uint8
	Aborted        bool   // after an aborted contrecord (xlog.Record.Aborted)
	PageSize       uint32 // of the WAL read
	// Time is the time the record tells (stats.RecordTime: commits,
	// aborts, checkpoints), if HasTime.
	Time    time.Time
	HasTime bool
	Blocks  []SpacingBlock
}

// SpacingBlock is a block reference as the spacing scenarios read it.
type SpacingBlock struct {
	Key      stats.BlockKey
	ID       uint8
	WillInit bool
	HasImage bool
	Apply    bool // BKPIMAGE_APPLY
	// Compressed and Hole give the image header's length (imageHeader).
	Compressed, Hole  bool
	ImageLen, DataLen uint16
}

// Set makes r rec's (its Blocks reused), without its time: HasTime is
// false (the reader sets Time from stats.RecordTime where it keeps it).
func (r *SpacingRecord) Set(rec *decode.Record) {
	*r = SpacingRecord{LSN: rec.LSN, TotLen: rec.Header.TotLen, FPILen: rec.FPILen, Rmid: rec.Header.Rmid, Info: rec.Header.Info,
		Aborted: rec.Aborted != 0, PageSize: rec.PageSize, Blocks: r.Blocks[:0]}
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		r.Blocks = append(r.Blocks, SpacingBlock{
			Key: stats.BlockKey{RelKey: stats.RelKey{RelFileLocator: b.Rel, Fork: b.Fork()}, Block: b.Block},
			ID:  b.ID, WillInit: b.WillInit(), HasImage: b.HasImage, Apply: b.Apply,
			Compressed: b.Compression != decode.CompressNone, Hole: b.HoleLength > 0, ImageLen: b.ImageLen, DataLen: b.DataLen})
	}
}

// Spacing runs WhatIf's checkpoint settings scenarios alone (each a
// simulated checkpointer, placeSettings), on records fed in WAL order,
// and can stop and resume later where it stopped (State, NewSpacing's
// st): the nightly batches of an incremental dataset carry it from one
// night to the next. Fed a whole stream in one go with the WhatIfInput
// WhatIf has, a scenario's RecordBytes are those of WhatIf's scenario of
// the same settings.
type Spacing struct {
	w *WhatIf
	// Dropped are the blocks the state carried into this run did not
	// hold (State's bound; 0 when it carried every block seen).
	Dropped int
}

// SpacingState is what Spacing carries from one run to the next: the
// time, the running mean image, each scenario's simulated checkpointer
// and position, and the blocks touched with the simulated cycle each last
// changed in, by scenario.
type SpacingState struct {
	Now       time.Time              `json:"now"`
	Images    uint64                 `json:"images"`
	MeanImage float64                `json:"mean_image"`
	Scenarios []SpacingScenarioState `json:"scenarios"`
	// Blocks are the blocks seen, and Cycles, len(Scenarios) a block, the
	// simulated cycle each last changed in, by scenario (SpacingUntouched:
	// not since the scenario began). Pointer-free: a batch carries tens
	// of thousands.
	Blocks []stats.BlockKey `json:"-"`
	Cycles []int32          `json:"-"`
	// DroppedBlocks are the blocks seen before that State left out to
	// stay within its bound (they are then taken as never seen).
	DroppedBlocks int `json:"dropped_blocks,omitempty"`
}

// SpacingScenarioState is a scenario's checkpointer (checkpointer's
// fields) and its insert position.
type SpacingScenarioState struct {
	Pos       xlog.LSN  `json:"pos"`
	Cycle     int       `json:"cycle"`
	Redo      xlog.LSN  `json:"redo"`
	Prior     xlog.LSN  `json:"prior"`
	LastAt    xlog.LSN  `json:"last_at"` // the stream LSN the last checkpoint began at
	Started   time.Time `json:"started"`
	Running   bool      `json:"running,omitempty"`
	Spread    bool      `json:"spread,omitempty"`
	Pending   bool      `json:"pending,omitempty"`
	Wrote     bool      `json:"wrote,omitempty"`
	EndRecord bool      `json:"end_record,omitempty"`
	FixedAt   xlog.LSN  `json:"fixed_at,omitempty"`
	Estim     float64   `json:"estim"`
	First     uint64    `json:"first"`
	Top       uint64    `json:"top"`
	CkLen     uint32    `json:"ck_len"`
}

// SpacingUntouched marks a block a scenario has not seen change.
const SpacingUntouched = untouched

// NewSpacing prepares the scenarios of sets, reading from in.Start (the
// first record fed) with in's Cycles (the stream's checkpoints there, with
// their causes), DataLen, SegSize, PageSize, BlockSize and Version; st, if
// not nil, is the state a run over the WAL just before in.Start ended in.
// The checkpoints requested in the WAL (Cycles' causes other than time and
// WAL) that began before in.Start and were not met then (their checkpoint
// record is after in.Start) begin at the first record.
func NewSpacing(in WhatIfInput, sets []CheckpointSettings, st *SpacingState) *Spacing {
	w := &WhatIf{in: in, counting: true}
	for _, set := range sets {
		s := &Scenario{Setting: "spacing", layout: verify.NewLayout(in.PageSize, in.SegSize, in.Start), touchCol: -1, noData: map[[3]uint8]uint64{}}
		w.Scenarios = append(w.Scenarios, s)
		w.trackTouches(s)
		s.ck = newCheckpointer(set, &in, false)
		s.MaxWALSize, s.CheckpointTimeout, s.CompletionTarget = FormatSize(set.MaxWALSize), FormatTimeout(set.Timeout), set.CompletionTarget
	}
	sp := &Spacing{w: w}
	if st == nil || len(st.Scenarios) != len(sets) {
		return sp
	}
	w.now, w.images, w.meanImage = st.Now, st.Images, st.MeanImage
	for i, s := range w.Scenarios {
		x, c := &st.Scenarios[i], s.ck
		s.layout = verify.NewLayout(in.PageSize, in.SegSize, x.Pos)
		c.cycle, c.redo, c.prior, c.started = x.Cycle, x.Redo, x.Prior, x.Started
		c.running, c.spread, c.pending, c.wrote, c.endRecord, c.fixedAt = x.Running, x.Spread, x.Pending, x.Wrote, x.EndRecord, x.FixedAt
		c.estim, c.first, c.top, c.ckLen = x.Estim, x.First, x.Top, x.CkLen
		var missed []stats.CycleInfo
		for _, cy := range in.Cycles {
			if cy.Checkpoint >= in.Start && cy.Redo < in.Start && cy.Redo > x.LastAt && !cy.Cause.Spread() {
				missed = append(missed, cy)
			}
		}
		c.fixed = append(missed, c.fixed...)
		c.lastAt = x.LastAt
	}
	if len(st.Cycles) == len(st.Blocks)*w.touchCols {
		// The blocks come sorted by relation fork (the export's encoding):
		// each run of one relation fork's blocks gets its map sized once
		// (filling maps grown by rehashing was most of reading a state).
		if w.touch.rels == nil {
			w.touch.rels = make(map[stats.RelKey]map[uint32]int32)
		}
		for i := 0; i < len(st.Blocks); {
			rk := st.Blocks[i].RelKey
			j := i + 1
			for j < len(st.Blocks) && st.Blocks[j].RelKey == rk {
				j++
			}
			rows := w.touch.rels[rk]
			if rows == nil {
				rows = make(map[uint32]int32, j-i)
				w.touch.rels[rk] = rows
			}
			for ; i < j; i++ {
				rows[st.Blocks[i].Block] = int32(i)
			}
		}
		w.touch.n = len(st.Blocks)
		w.touch.keys = slices.Clip(st.Blocks) // (st's, taken over; appended to as a copy)
		w.touched = st.Cycles                 // (st's, taken over)
	}
	sp.Dropped = st.DroppedBlocks
	return sp
}

// Add feeds one record.
func (sp *Spacing) Add(r *SpacingRecord) {
	w := sp.w
	if r.HasTime && r.Time.After(w.now) {
		w.now = r.Time
	}
	w.touchRows(r)
	for _, s := range w.Scenarios {
		w.placeSettings(s, r)
	}
	for i := range r.Blocks {
		if b := &r.Blocks[i]; b.HasImage {
			w.images++
			w.meanImage += (float64(b.ImageLen) - w.meanImage) / float64(w.images)
		}
	}
}

// DropCheckpoint takes the stream's checkpoint record at lsn as one of a
// checkpoint spread over its interval (time or WAL): the scenarios do not
// write it (their own checkpointers write theirs). For a checkpoint record
// whose cycle is not in WhatIfInput.Cycles (begun before Start).
func (sp *Spacing) DropCheckpoint(lsn xlog.LSN) {
	for _, s := range sp.w.Scenarios {
		s.ck.drop[lsn] = true
	}
}

// SpacingTotals are what a scenario counted so far.
type SpacingTotals struct {
	// RecordBytes are the scenario's record bytes, of which DataGiven
	// the mean data lengths given to blocks whose image it dropped and
	// which carried no data (WhatIfInput.DataLen); NoData counts those
	// blocks by rmgr, record type and block id since the last
	// TakeNoData.
	RecordBytes, DataGiven uint64
	// Checkpoints are the simulated checkpoints begun.
	Checkpoints int
}

// Totals returns scenario i's totals.
func (sp *Spacing) Totals(i int) SpacingTotals {
	s := sp.w.Scenarios[i]
	return SpacingTotals{RecordBytes: s.RecordBytes, DataGiven: s.dataGiven, Checkpoints: len(s.ck.Redo)}
}

// TakeNoData returns scenario i's counts of blocks given a mean data
// length since the last call, and starts them again.
func (sp *Spacing) TakeNoData(i int) map[[3]uint8]uint64 {
	s := sp.w.Scenarios[i]
	m := s.noData
	s.noData = map[[3]uint8]uint64{}
	return m
}

// Settings returns scenario i's settings as whatif names them: its
// max_wal_size and checkpoint_timeout.
func (sp *Spacing) Settings(i int) (maxWALSize, timeout string) {
	s := sp.w.Scenarios[i]
	return s.MaxWALSize, s.CheckpointTimeout
}

// State returns what the next run needs to go on where this one stopped.
// It carries at most maxBlocks blocks: beyond, only the blocks that
// changed in a scenario's current cycle (those decide which images the
// next changes drop), counted in DroppedBlocks otherwise: a dropped block
// is taken as never seen, so that a first change of it without an image
// in a later cycle gets none added (an under-estimate of what closer
// checkpoints cost, at most one mean image per dropped block).
func (sp *Spacing) State(maxBlocks int) *SpacingState {
	w := sp.w
	st := &SpacingState{Now: w.now, Images: w.images, MeanImage: w.meanImage, DroppedBlocks: sp.Dropped}
	for _, s := range w.Scenarios {
		c := s.ck
		lastAt := c.lastAt
		if n := len(c.Redo); n > 0 {
			lastAt = c.Redo[n-1]
		}
		st.Scenarios = append(st.Scenarios, SpacingScenarioState{Pos: s.layout.Pos(), Cycle: c.cycle, Redo: c.redo, Prior: c.prior, LastAt: lastAt,
			Started: c.started, Running: c.running, Spread: c.spread, Pending: c.pending, Wrote: c.wrote, EndRecord: c.endRecord, FixedAt: c.fixedAt,
			Estim: c.estim, First: c.first, Top: c.top, CkLen: c.ckLen})
	}
	all := w.touch.n <= maxBlocks
	// In the order the blocks were first seen (rows), the carried ones
	// first: a state read back and written again keeps its order.
	keys := w.touch.keys
	if all {
		// Every block kept: copies, not a row at a time.
		st.Blocks = slices.Clone(keys[:w.touch.n])
		st.Cycles = slices.Clone(w.touched[:w.touch.n*w.touchCols])
		return st
	}
	st.Blocks = make([]stats.BlockKey, 0, w.touch.n)
	st.Cycles = make([]int32, 0, w.touch.n*w.touchCols)
	for row, k := range keys {
		cycles := w.touched[row*w.touchCols : (row+1)*w.touchCols]
		keep := all
		for i, s := range w.Scenarios {
			keep = keep || cycles[i] == int32(s.ck.cycle)
		}
		if !keep {
			st.DroppedBlocks++
			continue
		}
		st.Blocks = append(st.Blocks, k)
		st.Cycles = append(st.Cycles, cycles...)
	}
	return st
}

// SpacingScenario is a checkpoint settings scenario relative to the
// stream's settings, named as growth reports it.
type SpacingScenario struct {
	Name     string // max_wal_size=2x, max_wal_size=4x, checkpoint_timeout=2x
	Settings CheckpointSettings
}

// SpacingScenarios are the scenarios of checkpoint spacing the growth
// aggregate estimates, from the stream's settings cur: max_wal_size twice
// and four times, checkpoint_timeout twice, rounded as WhatIf's default
// scenarios of those values are (so that `walscope whatif` over the same
// stream, with the same current settings, has each of them).
func SpacingScenarios(cur CheckpointSettings, segSize uint32) []SpacingScenario {
	m2, m4, t2 := cur, cur, cur
	m2.MaxWALSize = roundMaxWALSize(2*cur.MaxWALSize, segSize)
	m4.MaxWALSize = roundMaxWALSize(4*cur.MaxWALSize, segSize)
	t2.Timeout = scaledTimeout(cur.Timeout, 2)
	return []SpacingScenario{{"max_wal_size=2x", m2}, {"max_wal_size=4x", m4}, {"checkpoint_timeout=2x", t2}}
}
