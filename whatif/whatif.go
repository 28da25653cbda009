package whatif

import (
	"strconv"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/xlog"
)

// Scenario is the WAL a stream would have been under one setting.
type Scenario struct {
	Setting         string `json:"setting"` // wal_compression, full_page_writes, checkpoint_distance, xlog_blcksz, wal_level
	Value           string `json:"value"`   // as PostgreSQL spells it: lz4, off, 4096, replica; 2x for checkpoint distance
	RecordBytes     uint64 `json:"record_bytes"`
	WALBytes        uint64 `json:"wal_bytes"`
	ImageBytes      uint64 `json:"image_bytes"`
	FlushWriteBytes uint64 `json:"flush_write_bytes"`
	// Checkpoints is the number of checkpoints (redo points) in the WAL
	// read: the stream's own, or, for the checkpoint settings scenarios,
	// the simulated ones, by cause in CheckpointsByCause.
	Checkpoints        int            `json:"checkpoints"`
	CheckpointsByCause map[string]int `json:"checkpoints_by_cause,omitempty"`
	// For the checkpoint settings scenarios (and the actual stream, under
	// the settings assumed for it): the settings, and the most WAL pg_wal
	// would have held: kept (from the oldest segment needed through the
	// insert position) and on disk (segment files, recycled ones included).
	MaxWALSize        string  `json:"max_wal_size,omitempty"`
	CheckpointTimeout string  `json:"checkpoint_timeout,omitempty"`
	CompletionTarget  float64 `json:"checkpoint_completion_target,omitempty"`
	WALKeptBytes      uint64  `json:"wal_kept_bytes,omitempty"`
	PgWALBytes        uint64  `json:"pg_wal_bytes,omitempty"`
	// Redo are the stream LSNs before which the scenario's checkpoints
	// began (checkpoint settings scenarios only).
	Redo   []xlog.LSN              `json:"-"`
	Causes []stats.CheckpointCause `json:"-"` // why each of Redo began
	layout *verify.Layout
	ck     *checkpointer
	// touchCol, for checkpoint spacing, is the scenario's column in
	// WhatIf.touched (-1: none).
	touchCol int
	redo     []xlog.LSN
	cycle    int
	// noData counts, when set (Spacing), the images placeInCycle dropped
	// from blocks without data, by rmgr, record type and block id, and
	// dataGiven the mean data lengths it gave them.
	noData    map[[3]uint8]uint64
	dataGiven uint64
	skipXID   map[xlog.XID]bool // wal_level minimal: transactions bulk-loading new relations
	newRels   map[xlog.XID]map[decode.RelFileLocator]bool
}

// ImageSizer tells the image length PostgreSQL would store for a page under
// a wal_compression method, and whether it would be compressed
// (XLogCompressBackupBlock); page is the full page, holes included.
type ImageSizer func(page []byte, holeOffset, holeLength int, method decode.Compression) (stored int, compressed bool)

// WhatIfInput is what a first pass over the stream learnt.
type WhatIfInput struct {
	PageSize, SegSize uint32
	BlockSize         int
	Start             xlog.LSN
	// CountFrom is where the results begin (0: Start). The records from
	// Start to it only warm the simulation up: with a --start inside the
	// WAL, the reading begins at the redo point of the checkpoint before
	// it, so that every scenario's checkpoint schedule and the blocks each
	// has imaged since its last redo point are those the server had at
	// CountFrom, not a checkpoint assumed there.
	CountFrom xlog.LSN
	Redo      []xlog.LSN    // the stream's redo points, in order
	WalLevel  xlog.WalLevel // the stream's wal_level, WalLevelUnknown if unknown
	// DataLen is the mean block data length of image-less block references,
	// by rmgr, record type and block id: what a block carries when no image
	// replaces its data.
	DataLen map[[3]uint8]uint32
	Sizer   ImageSizer
	// Images, if set, sizes the stream's images ahead on other cores
	// (images it does not have are sized here with Sizer).
	Images *ImagePipeline
	// Cycles are the stream's checkpoints with their causes
	// (RedoFinder.Sorted): the checkpoint settings scenarios (max_wal_size,
	// checkpoint_timeout) need them, and are left out without.
	Cycles  []stats.CycleInfo
	Times   []TimePoint  // times the WAL tells, in WAL order (FillWhatIfInput); nil: the checkpoints'
	Version xlog.Version // the server's, 0 if unknown (PostgreSQL 10 spaced checkpoints otherwise)
	// Given are the checkpoint settings known of the stream; the others are
	// inferred from the spacing of Cycles, or PostgreSQL's defaults
	// (CurrentSettings).
	Given GivenSettings
	// MaxWALSizes and Timeouts are the max_wal_size and checkpoint_timeout
	// scenarios (nil: values around Settings); with both given, every pair
	// is a scenario as well.
	MaxWALSizes []uint64
	Timeouts    []time.Duration
}

// WhatIf estimates, record by record, the WAL of the same stream under other
// settings (issue 6; see why-wal-grows.md). Records are fed in WAL order.
type WhatIf struct {
	in        WhatIfInput
	Actual    Scenario
	Scenarios []*Scenario
	dec       *decode.Decoder
	page      []byte
	est       []*imageEstimate // the record's images' sizes, by block index (sizeImages)
	own       []imageEstimate  // those sized here, not by in.Images
	meanImage float64          // running mean of stored image bytes, for images a scenario adds
	images    uint64
	// Settings are the checkpoint settings assumed for the stream, and
	// Assumed the names of those the WAL does not show.
	Settings CheckpointSettings
	Assumed  []string
	actualCk *checkpointer // the stream's own checkpoints, for pg_wal under Settings
	now      time.Time     // the last time the WAL told
	first    time.Time
	methods  [4]uint64    // images by compression method
	version  xlog.Version // of the first record
	fpwOff   bool         // the last checkpoint read says full_page_writes=off
	// For the checkpoint spacing scenarios, the simulated cycle of each
	// block's last change, by scenario: the row touch[block] of touched,
	// touchCols wide, column Scenario.touchCol (untouched: never changed).
	// One map lookup per block serves every such scenario.
	touch     blockIndex
	touched   []int32
	touchCols int
	rows      []int32       // the record's blocks' rows, by block index
	sr        SpacingRecord // the record, as the spacing scenarios read it
	counting  bool          // the records are counted (at or after CountFrom)
}

// untouched marks a block a scenario has not seen change.
const untouched = -1 << 31

// trackTouches gives s a column in w.touched.
func (w *WhatIf) trackTouches(s *Scenario) {
	s.touchCol = w.touchCols
	w.touchCols++
}

// touchRows sets w.rows to the rows in w.touched of r's blocks, adding
// those of blocks not seen before.
func (w *WhatIf) touchRows(r *SpacingRecord) {
	w.rows = w.rows[:0]
	for i := range r.Blocks {
		k := r.Blocks[i].Key
		rows := w.touch.rel(k.RelKey)
		row, ok := rows[k.Block]
		if !ok {
			row = int32(len(w.touched) / w.touchCols)
			rows[k.Block] = row
			w.touch.n++
			w.touch.keys = append(w.touch.keys, k)
			for range w.touchCols {
				w.touched = append(w.touched, untouched)
			}
		}
		w.rows = append(w.rows, row)
	}
}

// blockIndex maps blocks to their rows in WhatIf.touched: per relation
// fork a map of block numbers, the last relation forks looked up cached
// (one lookup on a 20-byte key per block reference was 2% of an append's
// CPU with the growth aggregate's spacing estimate).
type blockIndex struct {
	rels   map[stats.RelKey]map[uint32]int32
	recent [4]struct {
		rel  stats.RelKey
		rows map[uint32]int32
	}
	next int
	n    int // blocks
	// keys are the blocks by row, for Spacing.State (iterating the maps
	// to find them was most of writing a state).
	keys []stats.BlockKey
}

// rel returns the rows of rk's blocks (an empty map added if none).
func (x *blockIndex) rel(rk stats.RelKey) map[uint32]int32 {
	for i := range x.recent {
		if c := &x.recent[i]; c.rows != nil && c.rel == rk {
			return c.rows
		}
	}
	rows := x.rels[rk]
	if rows == nil {
		if x.rels == nil {
			x.rels = map[stats.RelKey]map[uint32]int32{}
		}
		rows = map[uint32]int32{}
		x.rels[rk] = rows
	}
	c := &x.recent[x.next%len(x.recent)]
	c.rel, c.rows = rk, rows
	x.next++
	return rows
}

// Compression methods the wal_compression scenarios try.
var whatIfMethods = []struct {
	name string
	c    decode.Compression
}{{"off", decode.CompressNone}, {"pglz", decode.CompressPGLZ}, {"lz4", decode.CompressLZ4}, {"zstd", decode.CompressZstd}}

// NewWhatIf prepares the scenarios.
func NewWhatIf(in WhatIfInput) *WhatIf {
	// The stream's start counts as a redo point: the WAL read begins in a
	// checkpoint cycle whose redo point it does not see (and usually, for a
	// measured run, right after a checkpoint), which keeps the simulated
	// spacing in phase with the real one.
	if len(in.Redo) == 0 || in.Redo[0] > in.Start {
		in.Redo = append([]xlog.LSN{in.Start}, in.Redo...)
	}
	if in.CountFrom < in.Start {
		in.CountFrom = in.Start
	}
	w := &WhatIf{in: in, dec: decode.NewDecoder(in.BlockSize), counting: in.CountFrom == in.Start}
	w.Actual = Scenario{Setting: "actual", layout: verify.NewLayout(in.PageSize, in.SegSize, in.Start)}
	add := func(setting, value string, pageSize uint32) *Scenario {
		s := &Scenario{Setting: setting, Value: value, layout: verify.NewLayout(pageSize, in.SegSize, in.Start), touchCol: -1}
		w.Scenarios = append(w.Scenarios, s)
		return s
	}
	if in.Sizer != nil {
		for _, m := range whatIfMethods {
			add("wal_compression", m.name, in.PageSize)
		}
	}
	add("full_page_writes", "off", in.PageSize)
	for _, k := range []int{2, 4, 8} {
		s := add("checkpoint_distance", strconv.Itoa(k)+"x", in.PageSize)
		w.trackTouches(s)
		for i := 0; i < len(in.Redo); i += k {
			s.redo = append(s.redo, in.Redo[i])
		}
	}
	if len(in.Redo) > 1 {
		s := add("checkpoint_distance", "0.5x", in.PageSize)
		w.trackTouches(s)
		for i, r := range in.Redo {
			s.redo = append(s.redo, r)
			if i+1 < len(in.Redo) {
				s.redo = append(s.redo, r+(in.Redo[i+1]-r)/2)
			}
		}
	}
	for _, p := range []uint32{4096, 8192, 16384, 32768} {
		add("xlog_blcksz", strconv.Itoa(int(p)), p)
	}
	if in.Cycles != nil {
		w.addSettingsScenarios(add)
		for _, c := range in.Cycles {
			if c.Checkpoint != 0 {
				w.fpwOff = !c.FullPage
			}
		}
	}
	if in.WalLevel >= xlog.WalLevelLogical {
		add("wal_level", "replica", in.PageSize)
	}
	if in.WalLevel >= xlog.WalLevelReplica {
		s := add("wal_level", "minimal", in.PageSize)
		s.skipXID = map[xlog.XID]bool{}
		s.newRels = map[xlog.XID]map[decode.RelFileLocator]bool{}
	}
	return w
}

func (s *Scenario) place(totLen uint32, rec *decode.Record, images uint64) {
	s.placeAt(totLen, rec.LSN, rec.Header.Rmid, rec.Header.Info, rec.Aborted != 0, rec.PageSize, images)
}

// placeAt lays out a record of totLen bytes (of resource manager id and
// xl_info info, at stream LSN lsn, after an aborted contrecord if aborted,
// read from WAL of pageSize pages) carrying images bytes of images.
func (s *Scenario) placeAt(totLen uint32, lsn xlog.LSN, id xlog.RmgrID, info uint8, aborted bool, pageSize uint32, images uint64) {
	sw := id == xlog.RmgrXLOG && info&0xF0 == 0x40
	commit := id == xlog.RmgrTransaction && (info&0x70 == 0x00 || info&0x70 == 0x30)
	if aborted && s.layout.PageSize == uint64(pageSize) {
		s.layout.Restart(lsn)
	}
	before := s.layout.Pos()
	s.layout.Add(totLen, sw, commit)
	s.RecordBytes += uint64(totLen)
	s.WALBytes += uint64(s.layout.Pos() - before)
	s.ImageBytes += images
}

// forcedImage reports images written whatever full_page_writes says: whole
// pages logged by XLOG FPI (index builds, log_newpage) and hint-bit images
// (XLOG FPI_FOR_HINT, REGBUF_FORCE_IMAGE), and images for
// wal_consistency_checking (no BKPIMAGE_APPLY).
func forcedImage(rec *decode.Record, b *decode.BlockRef) bool {
	if rec.Header.Rmid == xlog.RmgrXLOG {
		return true
	}
	return !b.Apply
}

// imageHeader is the block header bytes an image adds: the 5-byte
// XLogRecordBlockImageHeader, and the 2-byte compress header when a
// compressed image has a hole.
func imageHeader(compressed, hole bool) uint32 {
	if compressed && hole {
		return 7
	}
	return 5
}

// Add feeds one record.
func (w *WhatIf) Add(rec *decode.Record) {
	if !w.counting && rec.LSN >= w.in.CountFrom {
		w.startCounting()
	}
	w.noteRecord(rec)
	if t, ok := stats.RecordTime(rec); ok {
		if w.first.IsZero() {
			w.first = t
		}
		if t.After(w.now) {
			w.now = t
		}
	}
	tot := rec.Header.TotLen
	if w.touchCols > 0 || w.actualCk != nil {
		w.sr.Set(rec)
	}
	if w.actualCk != nil {
		w.actualCk.before(&w.sr, w.Actual.layout.Pos(), w.now)
	}
	w.Actual.place(tot, rec, uint64(rec.FPILen))
	if w.actualCk != nil {
		w.actualCk.after(w.Actual.layout.Pos())
	}
	w.sizeImages(rec)
	if w.touchCols > 0 {
		w.touchRows(&w.sr)
	}
	for _, s := range w.Scenarios {
		switch s.Setting {
		case "wal_compression":
			w.placeCompressed(s, rec)
		case "full_page_writes":
			w.placeWithout(s, rec, func(b *decode.BlockRef) bool { return !forcedImage(rec, b) })
		case "checkpoint_distance":
			w.placeCheckpoint(s, &w.sr)
		case "max_wal_size", "checkpoint_timeout", "max_wal_size+checkpoint_timeout":
			w.placeSettings(s, &w.sr)
		case "xlog_blcksz":
			s.place(tot, rec, uint64(rec.FPILen))
		case "wal_level":
			w.placeLevel(s, rec)
		}
	}
	for i := range rec.Blocks {
		if b := &rec.Blocks[i]; b.HasImage {
			w.images++
			w.meanImage += (float64(b.ImageLen) - w.meanImage) / float64(w.images)
		}
	}
}

// startCounting ends the warm-up: what every scenario counted so far is
// dropped, its state (layout position, checkpoint schedule, blocks imaged)
// kept.
func (w *WhatIf) startCounting() {
	w.counting = true
	w.first = time.Time{}
	reset := func(s *Scenario) {
		s.RecordBytes, s.WALBytes, s.ImageBytes = 0, 0, 0
		s.layout.ResetCounts()
		if c := s.ck; c != nil {
			c.countFrom = len(c.Redo)
			c.keep, c.disk = 0, 0
			c.account(s.layout.Pos())
		}
	}
	reset(&w.Actual)
	if c := w.actualCk; c != nil {
		c.countFrom = len(c.Redo)
		c.keep, c.disk = 0, 0
		c.account(w.Actual.layout.Pos())
	}
	for _, s := range w.Scenarios {
		reset(s)
	}
}

func (w *WhatIf) placeCompressed(s *Scenario, rec *decode.Record) {
	tot := rec.Header.TotLen
	var images uint64
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if !b.HasImage {
			continue
		}
		mi := 0
		for k, m := range whatIfMethods {
			if m.name == s.Value {
				mi = k
			}
		}
		var stored int
		var compressed bool
		if m := whatIfMethods[mi].c; m != decode.CompressNone && b.Compression == m {
			// stored with this very method: what PostgreSQL wrote is the
			// answer (and recompressing it would only approximate zstd)
			stored, compressed = int(b.ImageLen), true
		} else if i < len(w.est) && w.est[i] != nil {
			stored, compressed = w.est[i].stored[mi], w.est[i].compressed[mi]
		} else { // the page could not be rebuilt: the image as it is
			images += uint64(b.ImageLen)
			continue
		}
		hole := b.HoleLength > 0
		oldHdr := imageHeader(b.Compression != decode.CompressNone, hole)
		newHdr := imageHeader(compressed, hole)
		tot = tot - uint32(b.ImageLen) - oldHdr + uint32(stored) + newHdr
		images += uint64(stored)
	}
	s.place(tot, rec, images)
}

// withoutImage returns the record length tot once block b's image is gone:
// its image header and bytes out, the block data such a block carries
// without an image in (learnt from the stream) where it carried none.
func (w *WhatIf) withoutImage(tot uint32, rec *decode.Record, b *decode.BlockRef) uint32 {
	tot, _ = w.dropImage(tot, rec.Header.Rmid, rec.Header.Info, b.ID, b.ImageLen, imageHeader(b.Compression != decode.CompressNone, b.HoleLength > 0), b.DataLen)
	return tot
}

// dropImage returns the record length tot without an image of imageLen
// bytes and hdr header bytes, of block id of a record of resource manager
// rmid and xl_info info, whose block carried dataLen bytes of data beside
// it; and the data it gives the block (the mean of the stream's image-less
// references of that key, where it carried none).
func (w *WhatIf) dropImage(tot uint32, rmid xlog.RmgrID, info uint8, id uint8, imageLen uint16, hdr uint32, dataLen uint16) (uint32, uint32) {
	data := uint32(0)
	if dataLen == 0 {
		data = w.in.DataLen[[3]uint8{uint8(rmid), info & 0xF0, id}]
	}
	return tot - uint32(imageLen) - hdr + data, data
}

// placeWithout places the record with the images drop says go, each replaced
// by the block data such a block carries without an image.
func (w *WhatIf) placeWithout(s *Scenario, rec *decode.Record, drop func(*decode.BlockRef) bool) {
	tot := rec.Header.TotLen
	images := uint64(rec.FPILen)
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if !b.HasImage || !drop(b) {
			continue
		}
		tot = w.withoutImage(tot, rec, b)
		images -= uint64(b.ImageLen)
	}
	s.place(tot, rec, images)
}

// placeCheckpoint: an image is needed at the first change of each block
// after each simulated redo point, and only then.
func (w *WhatIf) placeCheckpoint(s *Scenario, r *SpacingRecord) {
	for s.cycle+1 < len(s.redo) && r.LSN >= s.redo[s.cycle+1] {
		s.cycle++
	}
	cyc := s.cycle
	if len(s.redo) == 0 || r.LSN < s.redo[0] {
		cyc = -1
	}
	w.placeInCycle(s, r, cyc)
}

// placeInCycle places r with the images a redo point starting simulated
// cycle cyc (-1: before the first) asks for.
func (w *WhatIf) placeInCycle(s *Scenario, r *SpacingRecord, cyc int) {
	tot := r.TotLen
	images := uint64(r.FPILen)
	for i := range r.Blocks {
		b := &r.Blocks[i]
		t := &w.touched[int(w.rows[i])*w.touchCols+s.touchCol]
		last := *t
		*t = int32(cyc)
		seen := last != untouched
		first := !seen || last != int32(cyc)
		// Whole pages logged on purpose (XLOG FPI) and consistency-check
		// images do not depend on checkpoints; hint-bit images do.
		wholePage := r.Rmid == xlog.RmgrXLOG && r.Info&0xF0 == 0xB0
		if b.WillInit || b.HasImage && (wholePage || !b.Apply) {
			continue
		}
		switch {
		case b.HasImage && !first:
			// The simulated checkpoints are further apart: no image.
			var data uint32
			tot, data = w.dropImage(tot, r.Rmid, r.Info, b.ID, b.ImageLen, imageHeader(b.Compressed, b.Hole), b.DataLen)
			images -= uint64(b.ImageLen)
			if s.noData != nil && b.DataLen == 0 {
				s.noData[[3]uint8{uint8(r.Rmid), r.Info & 0xF0, b.ID}]++
				s.dataGiven += uint64(data)
			}
		case !b.HasImage && first && seen && cyc >= 0:
			// A closer redo point: this change needs an image, of the mean
			// size, its data then omitted.
			add := uint32(w.meanImage + 0.5)
			if add == 0 {
				add = uint32(w.in.BlockSize / 2)
			}
			tot = tot + add + 5 - uint32(b.DataLen)
			images += uint64(add)
		}
	}
	s.placeAt(tot, r.LSN, r.Rmid, r.Info, r.Aborted, r.PageSize, images)
}

// placeLevel drops what only a higher wal_level writes. For replica (from
// logical): NEW_CID records, transaction INVALIDATION records and the
// top-level xid header. For minimal (from replica or logical): also
// hot-standby records (Standby LOCK and RUNNING_XACTS) and the WAL of
// relations created in the same transaction (bulk loads, CREATE INDEX, CREATE
// TABLE AS), which minimal replaces by an fsync at commit.
func (w *WhatIf) placeLevel(s *Scenario, rec *decode.Record) {
	id, info := rec.Header.Rmid, rec.Header.Info
	if id == xlog.RmgrHeap2 && info&0x70 == 0x70 || id == xlog.RmgrTransaction && info&0x70 == 0x60 {
		return // NEW_CID, INVALIDATION: logical only
	}
	tot := rec.Header.TotLen
	if rec.ToplevelXID != 0 {
		tot -= 5
	}
	if w.in.WalLevel >= xlog.WalLevelLogical && id == xlog.RmgrTransaction && info&0x80 != 0 && (info&0x70 == 0x00 || info&0x70 == 0x20) {
		// A commit or abort carries its database at logical
		// (XactLogCommitRecord: XACT_XINFO_HAS_DBINFO when
		// XLogLogicalInfoActive); below, only with dropped relations or
		// invalidations. With nothing else in xinfo, xinfo goes too.
		if md := rec.MainData; len(md) >= 12 && le32(md[8:])&0x0D == 0x01 {
			tot -= 8
			if le32(md[8:]) == 0x01 {
				tot -= 4
			}
		}
	}
	if s.Value == "minimal" {
		if id == xlog.RmgrStandby && (info&0xF0 == 0x00 || info&0xF0 == 0x10) {
			return
		}
		xid := rec.Header.XID
		if rec.ToplevelXID != 0 {
			xid = rec.ToplevelXID
		}
		if id == xlog.RmgrStorage && info&0xF0 == 0x10 && xid != 0 && len(rec.MainData) >= 16 {
			// smgr CREATE: xl_smgr_create { RelFileLocator rlocator; ForkNumber forkNum }.
			rel := decode.RelFileLocator{SpcOID: le32(rec.MainData[0:]), DBOID: le32(rec.MainData[4:]), RelNumber: le32(rec.MainData[8:])}
			if s.newRels[xid] == nil {
				s.newRels[xid] = map[decode.RelFileLocator]bool{}
			}
			s.newRels[xid][rel] = true
		}
		if rels := s.newRels[xid]; rels != nil && len(rec.Blocks) > 0 {
			all := true
			for i := range rec.Blocks {
				all = all && rels[rec.Blocks[i].Rel]
			}
			if all {
				return
			}
		}
		if _, ok := rmgr.XactEnd(rec); ok {
			delete(s.newRels, xid)
		}
	}
	s.place(tot, rec, uint64(rec.FPILen))
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Results returns the actual stream's figures and every scenario's.
func (w *WhatIf) Results() (Scenario, []Scenario) {
	out := make([]Scenario, len(w.Scenarios))
	for i, s := range w.Scenarios {
		s.FlushWriteBytes = s.layout.FlushWriteBytes()
		out[i] = *s
		if c := s.ck; c != nil {
			c.account(s.layout.Pos())
			out[i].Checkpoints, out[i].CheckpointsByCause = len(c.Redo)-c.countFrom, byCause(c.Causes[c.countFrom:])
			out[i].WALKeptBytes, out[i].PgWALBytes = c.keep, c.disk
			out[i].Redo = append([]xlog.LSN(nil), c.Redo[c.countFrom:]...)
			out[i].Causes = append([]stats.CheckpointCause(nil), c.Causes[c.countFrom:]...)
		} else if s.Setting != "checkpoint_distance" {
			out[i].Checkpoints = w.streamCheckpoints()
		} else if w.in.CountFrom > w.in.Start {
			for _, r := range s.redo {
				if r >= w.in.CountFrom {
					out[i].Checkpoints++
				}
			}
		} else {
			out[i].Checkpoints = len(s.redo) - 1 // the stream's start is not one
		}
		out[i].layout, out[i].skipXID, out[i].newRels, out[i].ck = nil, nil, nil, nil
	}
	a := w.Actual
	a.FlushWriteBytes = a.layout.FlushWriteBytes()
	a.Checkpoints = w.streamCheckpoints()
	if c := w.actualCk; c != nil {
		c.account(a.layout.Pos())
		a.CheckpointsByCause = byCause(c.Causes[c.countFrom:])
		a.WALKeptBytes, a.PgWALBytes = c.keep, c.disk
		a.MaxWALSize, a.CheckpointTimeout, a.CompletionTarget = FormatSize(w.Settings.MaxWALSize), FormatTimeout(w.Settings.Timeout), w.Settings.CompletionTarget
	}
	a.layout, a.ck = nil, nil
	return a, out
}

// DataLenLearner gathers WhatIfInput.DataLen in a first pass.
type DataLenLearner struct {
	sum map[[3]uint8][2]uint64
}

// Add learns from one record's image-less block references.
func (l *DataLenLearner) Add(rec *decode.Record) {
	if l.sum == nil {
		l.sum = map[[3]uint8][2]uint64{}
	}
	for i := range rec.Blocks {
		b := &rec.Blocks[i]
		if b.HasImage {
			continue
		}
		k := [3]uint8{uint8(rec.Header.Rmid), rec.Header.Info & 0xF0, b.ID}
		v := l.sum[k]
		l.sum[k] = [2]uint64{v[0] + uint64(b.DataLen), v[1] + 1}
	}
}

// Merge adds what o learnt (over another part of the stream).
func (l *DataLenLearner) Merge(o *DataLenLearner) {
	if l.sum == nil {
		l.sum = map[[3]uint8][2]uint64{}
	}
	for k, v := range o.sum {
		w := l.sum[k]
		l.sum[k] = [2]uint64{w[0] + v[0], w[1] + v[1]}
	}
}

// Means returns the mean data length per key.
func (l *DataLenLearner) Means() map[[3]uint8]uint32 {
	out := map[[3]uint8]uint32{}
	for k, v := range l.sum {
		out[k] = uint32(v[0] / v[1])
	}
	return out
}

// LevelGuesser infers the wal_level that wrote a stream when no record states
// it (PARAMETER_CHANGE, or checkpoints from 17 on): records or fields only
// logical writes (NEW_CID, transaction INVALIDATION, top-level xid headers,
// heap records flagged as carrying the whole new tuple) mean logical; hot-standby records (Standby RUNNING_XACTS, LOCK) mean at least
// replica; neither means minimal.
type LevelGuesser struct {
	stated, logical, replica bool
	level                    xlog.WalLevel
}

// Add looks at one record.
func (g *LevelGuesser) Add(rec *decode.Record) {
	if cp, ok := rmgr.Checkpoint(rec); ok && cp.WalLevel >= xlog.WalLevelMinimal {
		g.stated, g.level = true, cp.WalLevel
	}
	if pc, ok := rmgr.ParameterChange(rec); ok {
		g.stated, g.level = true, pc.WalLevel
	}
	id, info := rec.Header.Rmid, rec.Header.Info
	md := rec.MainData
	switch {
	case id == xlog.RmgrHeap2 && info&0x70 == 0x70, id == xlog.RmgrTransaction && info&0x70 == 0x60, rec.ToplevelXID != 0:
		g.logical = true
	// Logical decoding needs the new tuple whole (heapam.c, need_tuple_data):
	// XLH_INSERT_CONTAINS_NEW_TUPLE (0x08) in xl_heap_insert.flags (offset
	// 2), XLH_UPDATE_CONTAINS_NEW_TUPLE (0x10) in xl_heap_update.flags
	// (offset 7).
	case id == xlog.RmgrHeap && info&0x70 == 0x00 && len(md) >= 3 && md[2]&0x08 != 0,
		id == xlog.RmgrHeap && (info&0x70 == 0x20 || info&0x70 == 0x40) && len(md) >= 8 && md[7]&0x10 != 0:
		g.logical = true
	case id == xlog.RmgrStandby && (info&0xF0 == 0x00 || info&0xF0 == 0x10):
		g.replica = true
	}
}

// Merge adds what o saw in the part of the stream that follows g's: a
// level it found stated is the later one.
func (g *LevelGuesser) Merge(o *LevelGuesser) {
	if o.stated {
		g.stated, g.level = true, o.level
	}
	g.logical = g.logical || o.logical
	g.replica = g.replica || o.replica
}

// Level returns the stated level, else the inferred one.
func (g *LevelGuesser) Level() xlog.WalLevel {
	switch {
	case g.stated:
		return g.level
	case g.logical:
		return xlog.WalLevelLogical
	case g.replica:
		return xlog.WalLevelReplica
	}
	return xlog.WalLevelMinimal
}
