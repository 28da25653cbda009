package stats

import (
	"container/heap"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Volume is what a group of records costs in WAL.
type Volume struct {
	Records     uint64 `json:"records"`
	RecordBytes uint64 `json:"record_bytes"` // sum of xl_tot_len (pg_waldump's combined size)
	WALBytes    uint64 `json:"wal_bytes"`    // LSN distance: page headers and alignment included
	Images      uint64 `json:"images"`
	ImageBytes  uint64 `json:"image_bytes"` // stored (maybe compressed) image bytes
}

func (v *Volume) add(rec *decode.Record, images uint64) {
	v.Records++
	v.RecordBytes += uint64(rec.Header.TotLen)
	v.WALBytes += uint64(rec.EndLSN - rec.LSN)
	v.Images += images
	v.ImageBytes += uint64(rec.FPILen)
}

func (v *Volume) plus(o Volume) {
	v.Records += o.Records
	v.RecordBytes += o.RecordBytes
	v.WALBytes += o.WALBytes
	v.Images += o.Images
	v.ImageBytes += o.ImageBytes
}

// RelKey names a relation fork.
type RelKey struct {
	decode.RelFileLocator
	Fork decode.ForkNumber
}

// RelVolume is one relation fork's row. A record is counted once, for the
// relation of its first block reference (its records and record bytes), while
// each image counts for the relation it shows: the rows add up to the stream.
type RelVolume struct {
	Rel RelKey
	Volume
}

// TimeBucket is the WAL written in one interval, dated by the commit and
// checkpoint timestamps the WAL carries (a record belongs to the bucket of
// the last timestamp at or before it).
type TimeBucket struct {
	Start   time.Time
	Commits uint64
	Volume
}

// Breakdown aggregates a stream by relation, segment, timeline, transaction,
// time and checkpoint cycle. Feed records in WAL order with Add; checkpoint
// cycles need the redo points up front (RedoFinder).
type Breakdown struct {
	Total     Volume
	Relations map[RelKey]*RelVolume
	NoRel     Volume // records without block references
	Segments  map[string]*Volume
	Timelines map[xlog.TimeLineID]*Volume
	Xids      map[xlog.XID]*XidVolume
	Buckets   map[int64]*TimeBucket
	Cycles    []*Cycle
	Bucket    time.Duration
	undated   Volume // records before the first timestamp
	lastTime  time.Time
	// the counters of the cycles, transactions and segments (whose volumes
	// Segments shows), which the export's tables share
	cycles *CycleCounter
	xacts  *XactCounter
	segs   *SegmentCounter
	// created holds, per transaction, the main-fork relation files it
	// created; Renamed maps a relation file that replaced another in one
	// transaction (TRUNCATE, CLUSTER, VACUUM FULL: one file created, one
	// dropped at commit) to the file it replaced.
	created map[xlog.XID][]decode.RelFileLocator
	Renamed map[decode.RelFileLocator]decode.RelFileLocator
	// KeepXids bounds the transactions Xids keeps once they have ended: -1
	// all (NewBreakdown's default), 0 none, N the N that wrote the most
	// record bytes (then the lowest xids), as XidTable orders them. Without
	// a bound, Xids grows with every transaction of the archive.
	KeepXids int
	kept     xidHeap
	// the segment and the timeline's volume of the last record
	seg    *SegmentVolume
	tliVol *Volume
	// A part (NewPart) reads one span of the stream; what needs the WAL
	// before it is kept for Merge: the records before its first timestamp
	// (lead, and the bucket that timestamp opened), and the files created
	// and the transaction ends in order (relEvents).
	part      bool
	lead      Volume
	firstKey  int64
	dated     bool
	relEvents []relEvent
}

// xidHeap is a min-heap of ended transactions, the least first: fewer
// record bytes, then the higher xid.
type xidHeap []*XidVolume

func (h xidHeap) Len() int { return len(h) }
func (h xidHeap) Less(i, j int) bool {
	if h[i].RecordBytes != h[j].RecordBytes {
		return h[i].RecordBytes < h[j].RecordBytes
	}
	return h[i].XID > h[j].XID
}
func (h xidHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *xidHeap) Push(x any)   { *h = append(*h, x.(*XidVolume)) }
func (h *xidHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// endXid keeps a transaction that ended as KeepXids says.
func (b *Breakdown) endXid(xv *XidVolume) {
	switch {
	case b.KeepXids < 0:
		if o := b.Xids[xv.XID]; o != nil {
			// the xid again (after a wraparound): one row, as before
			xv.plus(o.Volume)
		}
		b.Xids[xv.XID] = xv
	case b.KeepXids > 0:
		heap.Push(&b.kept, xv)
		if b.kept.Len() > b.KeepXids {
			heap.Pop(&b.kept)
		}
	}
}

// relEvent is a main-fork file created by a transaction, or a transaction's
// commit (end set), in WAL order.
type relEvent struct {
	xid       xlog.XID
	created   decode.RelFileLocator
	end       *rmgr.XactEndInfo
	closeOnly bool // an end that pairs nothing (an abort, or no file dropped)
	version   xlog.Version
}

// NewBreakdown returns an empty breakdown with time buckets of the given width
// and the checkpoint cycles starting at the given redo points (in LSN order:
// RedoFinder.Sorted), for a stream that runs from start to end (both known
// from a first pass).
func NewBreakdown(bucket time.Duration, redo []CycleInfo, start, end xlog.LSN) *Breakdown {
	b := newBreakdown(bucket)
	b.KeepXids = -1
	// The WAL before the first redo point read is a cycle of its own, whose
	// checkpoint is not in the stream (Checkpoint 0).
	b.cycles = NewCycleCounter(cyclesFrom(redo, start), end, false)
	b.Cycles = b.cycles.All()
	b.xacts = NewXactCounter(b.endXid)
	// the pairing of replaced files asks for the top levels of
	// subtransactions that ended
	b.xacts.KeepTops = true
	return b
}

func newBreakdown(bucket time.Duration) *Breakdown {
	return &Breakdown{
		Relations: map[RelKey]*RelVolume{}, Segments: map[string]*Volume{}, Timelines: map[xlog.TimeLineID]*Volume{},
		Xids: map[xlog.XID]*XidVolume{}, Buckets: map[int64]*TimeBucket{}, Bucket: bucket, segs: NewSegmentCounter(),
		created: map[xlog.XID][]decode.RelFileLocator{}, Renamed: map[decode.RelFileLocator]decode.RelFileLocator{},
	}
}

// NewPart returns an empty breakdown for one span of b's stream, with b's
// cycles and time buckets, to be merged into b with Merge, span after span
// in WAL order. Parts may be filled concurrently.
func (b *Breakdown) NewPart() *Breakdown {
	p := newBreakdown(b.Bucket)
	p.part = true
	p.cycles, p.xacts = b.cycles.NewPart(), b.xacts.NewPart()
	return p
}

// Merge adds part p, the span of the stream that follows what b holds.
func (b *Breakdown) Merge(p *Breakdown) {
	b.Total.plus(p.Total)
	b.NoRel.plus(p.NoRel)
	for k, v := range p.Relations {
		b.rel(k).plus(v.Volume)
	}
	b.segs.Merge(p.segs)
	for name := range p.segs.Segments {
		if b.Segments[name] == nil {
			b.Segments[name] = &b.segs.Segments[name].Volume
		}
	}
	for k, v := range p.Timelines {
		if b.Timelines[k] == nil {
			b.Timelines[k] = &Volume{}
		}
		b.Timelines[k].plus(*v)
	}
	b.seg = nil
	b.cycles.Merge(p.cycles)
	// Transactions: the part's records of a subtransaction whose top level
	// only an earlier part named go to the top level; the part's ends fold
	// the earlier parts' subtransactions in.
	b.xacts.Merge(p.xacts)
	// Relation files replaced: creations and commits in order.
	for _, e := range p.relEvents {
		if top, ok := b.xacts.TopOf(e.xid); ok && top != e.xid {
			// a subtransaction an earlier part named: its files are the
			// top level's, and its end (an abort) ends nothing
			if e.end != nil || e.closeOnly {
				continue
			}
			e.xid = top
		}
		b.relEvent(e)
	}
	// Time: the part's records before its first timestamp belong to the
	// bucket of the last timestamp before the part.
	if !b.lastTime.IsZero() {
		b.Buckets[b.lastTime.Truncate(b.Bucket).Unix()].plus(p.lead)
	} else {
		b.undated.plus(p.lead)
	}
	for k, tb := range p.Buckets {
		bt := b.Buckets[k]
		if bt == nil {
			bt = &TimeBucket{Start: tb.Start}
			b.Buckets[k] = bt
		}
		bt.plus(tb.Volume)
		bt.Commits += tb.Commits
	}
	if p.dated && b.undated.Records > 0 {
		// WAL before the first timestamp belongs to the first bucket.
		b.Buckets[p.firstKey].plus(b.undated)
		b.undated = Volume{}
	}
	if !p.lastTime.IsZero() {
		b.lastTime = p.lastTime
	}
}

// relEvent applies a creation or a commit to the pairing of replaced files.
func (b *Breakdown) relEvent(e relEvent) {
	if e.closeOnly {
		delete(b.created, e.xid)
		return
	}
	if e.end == nil {
		b.created[e.xid] = append(b.created[e.xid], e.created)
		return
	}
	if e.end.Commit {
		for nw, old := range PairRewrites(b.created[e.xid], *e.end, e.version) {
			b.Renamed[nw] = old
		}
	}
	delete(b.created, e.xid)
}

// Add counts one record.
func (b *Breakdown) Add(rec *decode.Record) {
	var images uint64
	for i := range rec.Blocks {
		if rec.Blocks[i].HasImage {
			images++
		}
	}
	b.Total.add(rec, images)
	// Relations.
	if len(rec.Blocks) == 0 {
		b.NoRel.add(rec, 0)
	} else {
		first := &rec.Blocks[0]
		rv := b.rel(RelKey{first.Rel, first.Fork()})
		rv.Records++
		rv.RecordBytes += uint64(rec.Header.TotLen - rec.FPILen)
		rv.WALBytes += uint64(rec.EndLSN-rec.LSN) - uint64(rec.FPILen)
		for i := range rec.Blocks {
			bl := &rec.Blocks[i]
			if bl.HasImage {
				iv := b.rel(RelKey{bl.Rel, bl.Fork()})
				iv.Images++
				iv.ImageBytes += uint64(bl.ImageLen)
				iv.RecordBytes += uint64(bl.ImageLen)
				iv.WALBytes += uint64(bl.ImageLen)
			}
		}
	}
	// Segments and timelines (the volumes of the last record's are kept at
	// hand).
	if sv := b.segs.Add(rec, images); sv != b.seg {
		b.seg = sv
		if b.Segments[sv.Name] == nil {
			b.Segments[sv.Name] = &sv.Volume
		}
		if b.Timelines[rec.TLI] == nil {
			b.Timelines[rec.TLI] = &Volume{}
		}
		b.tliVol = b.Timelines[rec.TLI]
	}
	b.tliVol.add(rec, images)
	// Transactions.
	end, isEnd := rmgr.XactEnd(rec)
	var endp *rmgr.XactEndInfo
	if isEnd {
		endp = &end
	}
	xid, subEnd := b.xacts.Add(rec, images, endp)
	if rel, fork, ok := rmgr.SmgrCreate(rec); ok && fork == decode.ForkMain && xid != 0 {
		e := relEvent{xid: xid, created: rel}
		if b.part {
			b.relEvents = append(b.relEvents, e)
		} else {
			b.relEvent(e)
		}
	}
	if isEnd && !subEnd {
		e := relEvent{xid: xid, closeOnly: true, version: rec.Version}
		if end.Commit && len(end.DroppedRels) > 0 {
			ec := end
			e.end, e.closeOnly = &ec, false
		}
		if b.part {
			b.relEvents = append(b.relEvents, e)
		} else {
			b.relEvent(e)
		}
	}
	// Time.
	var ts time.Time
	if isEnd {
		ts = end.Time
	} else if c, ok := rmgr.Checkpoint(rec); ok {
		ts = c.Time
	}
	if !ts.IsZero() {
		b.lastTime = ts
	}
	if b.lastTime.IsZero() {
		if b.part {
			b.lead.add(rec, images)
		} else {
			b.undated.add(rec, images)
		}
	} else {
		k := b.lastTime.Truncate(b.Bucket).Unix()
		tb := b.Buckets[k]
		if tb == nil {
			tb = &TimeBucket{Start: time.Unix(k, 0).UTC()}
			b.Buckets[k] = tb
			if !b.dated {
				b.dated, b.firstKey = true, k
			}
			if b.undated.Records > 0 {
				// WAL before the first timestamp belongs to the first bucket.
				tb.Volume = b.undated
				b.undated = Volume{}
			}
		}
		tb.add(rec, images)
		if isEnd && end.Commit {
			tb.Commits++
		}
	}
	// Checkpoint cycles.
	b.cycles.Add(rec, images)
}

func (b *Breakdown) rel(k RelKey) *RelVolume {
	rv := b.Relations[k]
	if rv == nil {
		rv = &RelVolume{Rel: k}
		b.Relations[k] = rv
	}
	return rv
}

// PairRewrites pairs the main-fork files a committed transaction created
// with those its commit dropped, where the order PostgreSQL does things in
// tells which replaced which (real PostgreSQL 15 WAL, fixtures/rewrite):
//
//   - one file created and one dropped: a rewrite of one relation;
//   - TRUNCATE, REINDEX, and any mix of them (RelationSetNewRelfilenumber
//     for each relation, in turn): the commit lists the dropped files in the
//     reverse order of the drops (smgr's pendingDeletes is a stack), so the
//     reversed list pairs with the creations in order;
//   - VACUUM FULL and CLUSTER: the new heap and its TOAST table and index are
//     a transient relation, created first and named by OID in the commit's
//     dropped statistics (15+); its deletion drops the old heap, TOAST table
//     and index last, so they head the commit's list, in the creation order
//     of the new ones; the indexes rebuilt between follow the TRUNCATE rule.
//
// Before 15, commits name no dropped statistics, and several files are not
// paired (a VACUUM FULL would be mistaken for a TRUNCATE). Files of
// different databases, or counts that differ, are not paired either.
func PairRewrites(created []decode.RelFileLocator, end rmgr.XactEndInfo, v xlog.Version) map[decode.RelFileLocator]decode.RelFileLocator {
	dropped := end.DroppedRels
	if len(created) == 0 || len(created) != len(dropped) || len(created) > 1 && v < xlog.V15 {
		return nil
	}
	transient := map[uint64]bool{}
	for _, st := range end.DroppedStats {
		if st.Kind == rmgr.StatsKindRelation {
			transient[st.ObjID] = true
		}
	}
	var group, rest []decode.RelFileLocator
	for _, c := range created {
		if transient[uint64(c.RelNumber)] && len(created) > 1 {
			group = append(group, c)
		} else {
			rest = append(rest, c)
		}
	}
	pairs := make(map[decode.RelFileLocator]decode.RelFileLocator, len(created))
	for i, c := range group {
		pairs[c] = dropped[i]
	}
	tail := dropped[len(group):]
	for i, c := range rest {
		pairs[c] = tail[len(tail)-1-i]
	}
	for nw, old := range pairs {
		if nw.DBOID != old.DBOID {
			return nil
		}
	}
	return pairs
}

// Original follows Renamed back to the relation file a catalog export may
// know: the file this one replaced, and so on.
func (b *Breakdown) Original(r decode.RelFileLocator) (decode.RelFileLocator, bool) {
	orig, changed := r, false
	for i := 0; i < 64; i++ {
		o, ok := b.Renamed[orig]
		if !ok {
			break
		}
		orig, changed = o, true
	}
	return orig, changed
}

// Finish adds the transactions whose end was not read to Xids, counts the
// distinct blocks imaged per cycle, drops empty cycles and gives the WAL
// before the first timestamp a bucket of its own if no bucket took it.
func (b *Breakdown) Finish() {
	// The transactions whose end was not read.
	for _, xv := range b.xacts.Open() {
		if o := b.Xids[xv.XID]; o != nil {
			o.plus(xv.Volume)
			continue
		}
		b.Xids[xv.XID] = xv
	}
	for _, xv := range b.kept {
		b.Xids[xv.XID] = xv
	}
	b.kept = nil
	b.Cycles = b.cycles.Finish(0)
	if b.undated.Records > 0 {
		b.Buckets[undatedBucket] = &TimeBucket{Volume: b.undated}
		b.undated = Volume{}
	}
}

// undatedBucket keys the WAL of a stream with no timestamp at all.
const undatedBucket = -1 << 62
