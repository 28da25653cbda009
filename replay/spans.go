package replay

import (
	"errors"
	"io"
	"runtime"
	"unsafe"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// A replay that holds a few files (Config.Hold: rows, page) redoes few of
// the records it reads: on a pgbench archive most are of tables and indexes
// it does not hold. Its reading is then cut into spans (xlog/stream) read on
// every core, where each record is decoded and kept only if the replay may
// need it; the kept ones are replayed in WAL order by run's goroutine
// (step), as one reader would hand them on. What a left-out record could
// have done is nothing: it is of an access method apply ignores (an index,
// a sequence), or a heap or full-page-image record whose blocks are all of
// files not held. A file becomes held during the replay when the WAL makes
// it (HoldCatalogs: SmgrCreate, CREATE DATABASE); a span's reader knows of
// those made in its own span only, so a span that left out records of a
// file an earlier span made is read again whole (rereadSpan).

// parallel tells whether run reads in spans.
func (r *Replay) parallel() bool {
	return r.cfg.Hold != nil && !r.cfg.NoBackup && r.cfg.Workers != 1 && (r.cfg.Workers > 1 || runtime.GOMAXPROCS(0) > 1)
}

// XLOG_FPI_FOR_HINT and XLOG_FPI (pg_control.h): apply's full-page images.
const (
	xlogFPIForHint = 0xA0
	xlogFPI        = 0xB0
)

// maxKeptBytes bounds the records one span keeps (their bytes and their
// keptRecord): beyond, it keeps none, and the replay reads the rest of
// the WAL from the span's first record with one reader, every record in
// turn (readAll), as it would without spans. The parts read ahead (at
// most Workers+1) then hold at most this much each, whatever the WAL: a
// transaction of the busiest table, or of one that makes most of the WAL
// (a DELETE of every row), keeps most records, and reading in spans then
// only costs (bench-rows-memory.sh: twice the peak RSS and 50% more time
// before this bound).
const maxKeptBytes = 16 << 20

// errSequential ends the spans' reading where a span kept too much: the
// rest is read by one reader.
var errSequential = errors.New("replay: on with one reader")

// errReached ends the spans' reading at the target.
var errReached = errors.New("replay: target reached")

// keptRecord is one record a span's reader kept: its header fields, its
// bytes in the part's buf, and how many records of the span came before it.
// No pointers (the segment's name is an index in the part's segments): a
// span keeps tens of thousands, which the garbage collector then need not
// scan.
type keptRecord struct {
	lsn, end, aborted, prevRead xlog.LSN
	header                      xlog.RecordHeader
	tli                         xlog.TimeLineID
	seg                         int32
	off, n                      int
	ordinal                     int64
}

// spanPart is what a span's reader kept of its records.
type spanPart struct {
	info    stream.SpanInfo
	recs    []keptRecord
	buf     []byte
	records int64
	first   xlog.LSN // the span's first record
	// overflow: the span's kept records grew beyond the part's bound
	// (maxKeptBytes): none kept, the span is read again whole
	overflow bool
	// skipped are the files of the heap and image records left out, with
	// the first such record's LSN
	skipped map[decode.RelFileLocator]xlog.LSN
	// made and madeDB are the files and databases made in the span
	// (held from there on, as the replay will hold them)
	made madeSet
	dec  *decode.Decoder
	// what every record of the span shares
	segments          []string
	version           xlog.Version
	pageSize, segSize uint32
}

func (p *spanPart) reset(info stream.SpanInfo) {
	p.info, p.recs, p.buf, p.records, p.segments = info, p.recs[:0], p.buf[:0], 0, p.segments[:0]
	p.overflow, p.first = false, 0
	clear(p.skipped)
	clear(p.made.files)
	clear(p.made.dbs)
}

// spanFilter decides which records a span's reader keeps; it is read by
// every reader at once and not changed while they read.
type spanFilter struct {
	hold         func(decode.RelFileLocator) bool
	holdCatalogs bool
	watchAll     xlog.XID // WatchXID when its subtransactions are not known: every xid from it on is watched
	watch        map[xlog.XID]bool
	fromLSN      xlog.LSN // an LSN target: every record from it on is kept (where the target stops)
}

func (r *Replay) newSpanFilter() *spanFilter {
	f := &spanFilter{hold: r.cfg.Hold, holdCatalogs: r.cfg.HoldCatalogs, fromLSN: r.cfg.Target.LSN}
	if w := r.cfg.WatchXID; w != 0 {
		if r.cfg.WatchSubxacts != nil {
			f.watch = map[xlog.XID]bool{w: true}
			for _, s := range r.cfg.WatchSubxacts {
				f.watch[s] = true
			}
		} else {
			f.watchAll = w
		}
	}
	return f
}

// mayHold tells whether the replay may hold rel's blocks when it replays a
// record of part p: holds' answer, with the files made in the span (not
// those made before it: misses).
func (f *spanFilter) mayHold(p *spanPart, rel decode.RelFileLocator) bool {
	if f.holdCatalogs && (rel.DBOID == 0 || rel.RelNumber < firstNormalObjectID ||
		p.made.has(rel)) {
		return true
	}
	return f.hold(rel)
}

func (f *spanFilter) watching(xid xlog.XID) bool {
	if xid == 0 {
		return false
	}
	if f.watch != nil {
		return f.watch[xid]
	}
	return f.watchAll != 0 && int32(uint32(xid)-uint32(f.watchAll)) >= 0
}

// keep tells whether the replay needs rec, read in part p.
func (f *spanFilter) keep(p *spanPart, rec *xlog.Record) bool {
	if f.fromLSN != 0 && rec.LSN >= f.fromLSN {
		return true
	}
	h := rec.Header
	switch h.Rmid {
	case xlog.RmgrHeap, xlog.RmgrHeap2, xlog.RmgrBtree, xlog.RmgrHash, xlog.RmgrGin, xlog.RmgrGist,
		xlog.RmgrSequence, xlog.RmgrSPGist, xlog.RmgrBRIN, xlog.RmgrGeneric:
	case xlog.RmgrXLOG:
		if i := h.Info & xlog.RmgrInfoMask; i != xlogFPI && i != xlogFPIForHint {
			return true
		}
	case xlog.RmgrStorage, xlog.RmgrDatabase:
		p.made.note(p.dec, rec)
		return true
	default:
		return true
	}
	d, err := p.dec.Decode(rec)
	if err != nil {
		return true // the replay says what is wrong with it
	}
	if d.ToplevelXID != 0 {
		return true // its subtransaction's parent (xactstate)
	}
	heapish := h.Rmid == xlog.RmgrHeap || h.Rmid == xlog.RmgrHeap2 || h.Rmid == xlog.RmgrXLOG
	if !heapish {
		return false // apply does nothing with it
	}
	if h.Rmid != xlog.RmgrXLOG && f.watching(h.XID) {
		return true
	}
	for i := range d.Blocks {
		b := &d.Blocks[i]
		if b.Fork() == decode.ForkMain && f.mayHold(p, b.Rel) {
			return true
		}
	}
	for i := range d.Blocks {
		if b := &d.Blocks[i]; b.Fork() == decode.ForkMain {
			if _, ok := p.skipped[b.Rel]; !ok {
				p.skipped[b.Rel] = rec.LSN
			}
		}
	}
	return false
}

// madeSet is the files and databases records made: the files a replay
// with HoldCatalogs holds from there on (and a CREATE DATABASE's files).
type madeSet struct {
	files map[decode.RelFileLocator]bool
	dbs   map[uint32]bool
}

func newMadeSet() madeSet {
	return madeSet{files: map[decode.RelFileLocator]bool{}, dbs: map[uint32]bool{}}
}

// note adds the file or database rec makes (SmgrCreate, CREATE DATABASE),
// if it is such a record.
func (m madeSet) note(dec *decode.Decoder, rec *xlog.Record) {
	switch rec.Header.Rmid {
	case xlog.RmgrStorage, xlog.RmgrDatabase:
	default:
		return
	}
	d, err := dec.Decode(rec)
	if err != nil {
		return
	}
	if rel, _, ok := rmgr.SmgrCreate(d); ok {
		m.files[rel] = true
	} else if db, ok := createdDatabase(d); ok {
		m.dbs[db] = true
	}
}

// has tells whether rel was made (itself, or with its database).
func (m madeSet) has(rel decode.RelFileLocator) bool {
	return len(m.files) > 0 && m.files[rel] || len(m.dbs) > 0 && m.dbs[rel.DBOID]
}

// createdDatabase is the database a CREATE DATABASE record (file copy)
// makes, as applyDatabase reads it.
func createdDatabase(d *decode.Record) (uint32, bool) {
	if d.Header.Rmid != xlog.RmgrDatabase || d.Header.Info&0xF0 != 0x00 || len(d.MainData) < 16 {
		return 0, false
	}
	m := d.MainData
	return uint32(m[0]) | uint32(m[1])<<8 | uint32(m[2])<<16 | uint32(m[3])<<24, true
}

func (p *spanPart) add(rec *xlog.Record) {
	if n := len(p.segments); n == 0 || p.segments[n-1] != rec.Segment {
		p.segments = append(p.segments, rec.Segment)
		p.version, p.pageSize, p.segSize = rec.Version, rec.PageSize, rec.SegSize
	}
	p.recs = append(p.recs, keptRecord{lsn: rec.LSN, end: rec.EndLSN, aborted: rec.Aborted, prevRead: rec.PrevRead, header: rec.Header,
		tli: rec.TLI, seg: int32(len(p.segments) - 1), off: len(p.buf), n: len(rec.Raw), ordinal: p.records})
	p.buf = append(p.buf, rec.Raw...)
}

// record gives kept record i back as the reader gave it.
func (p *spanPart) record(i int, rec *xlog.Record) {
	k := &p.recs[i]
	*rec = xlog.Record{LSN: k.lsn, EndLSN: k.end, Header: k.header, Raw: p.buf[k.off : k.off+k.n], TLI: k.tli, Version: p.version,
		PageSize: p.pageSize, SegSize: p.segSize, Segment: p.segments[k.seg], Aborted: k.aborted, PrevRead: k.prevRead}
}

// runSpans is run's reading in spans, from the backup's start.
func (r *Replay) runSpans(start xlog.LSN) error {
	opts := r.cfg.Options
	opts.Start = start
	workers := r.cfg.Workers
	var cores stream.Cores // shared with a backup still being opened (OpenBackupAhead)
	if p, ok := r.cfg.Backup.(*PendingBackup); ok {
		cores = p.cores
	}
	st, err := stream.Open(r.cfg.WAL, stream.Config{Reader: opts, Workers: workers, SpanBytes: r.cfg.spanBytes, Cores: cores})
	if err != nil {
		return err
	}
	f := r.newSpanFilter()
	keptBound := maxKeptBytes
	if r.cfg.maxKept > 0 {
		keptBound = r.cfg.maxKept
	}
	// the files and databases made so far, by the parts merged
	made := newMadeSet()
	var base int64 // records of the parts merged
	var sequentialFrom xlog.LSN
	first := true
	newPart := func(info stream.SpanInfo) *spanPart {
		// room for what a span of dense WAL keeps (pgbench, rows held: a
		// third of 50,000 records, 1 MB), so that it does not grow
		// record by record
		return &spanPart{info: info, skipped: map[decode.RelFileLocator]xlog.LSN{}, recs: make([]keptRecord, 0, 1<<15), buf: make([]byte, 0, 2<<20),
			made: newMadeSet(), dec: decode.NewDecoder(r.blockSize)}
	}
	res, err := stream.Run(st, stream.Job[*spanPart]{
		NewPart: newPart,
		Reuse: func(p *spanPart, info stream.SpanInfo) (*spanPart, bool) {
			p.reset(info)
			return p, true
		},
		Record: func(p *spanPart, rec *xlog.Record) error {
			if p.records == 0 {
				p.first = rec.LSN
			}
			if f.keep(p, rec) && !p.overflow {
				if len(p.buf)+len(rec.Raw)+(len(p.recs)+1)*int(unsafe.Sizeof(keptRecord{})) > keptBound {
					p.overflow = true
					p.recs, p.buf = p.recs[:0], p.buf[:0]
				} else {
					p.add(rec)
				}
			}
			p.records++
			return nil
		},
		Merge: func(p *spanPart) error {
			var rec xlog.Record
			if p.records > 0 && first {
				first = false
				if err := r.firstRecord(&xlog.Record{LSN: p.first}, start, xlog.LSN(st.PageSize())); err != nil {
					return err
				}
			}
			if p.overflow {
				// on from this span with one reader
				sequentialFrom = p.first
				return errSequential
			}
			if p.records > 0 && (p.misses(made) || r.cfg.forceReread && p.info.Index > 0) {
				r.rereads++
				n, err := r.rereadSpan(p, opts, base, made)
				base += n
				return err
			}
			for i := range p.recs {
				p.record(i, &rec)
				r.stop.Records = base + p.recs[i].ordinal
				stop, err := r.step(&rec)
				if err != nil || stop {
					if err == nil {
						for rel, lsn := range p.skipped {
							if lsn < r.stop.LSN {
								r.leftOut[rel] = true
							}
						}
						err = errReached
					}
					return err
				}
				made.note(r.dec, &rec)
			}
			base += p.records
			r.stop.Records = base
			for rel := range p.skipped {
				r.leftOut[rel] = true
			}
			return nil
		},
	})
	if errors.Is(err, errReached) {
		return nil
	}
	if errors.Is(err, errSequential) {
		r.sequential = sequentialFrom
		o := opts
		o.Start, o.Continues = sequentialFrom, true
		rd, err := xlog.NewReader(r.cfg.WAL, o)
		if err != nil {
			return err
		}
		defer rd.Close()
		r.stop.Records = base
		return r.readAll(rd, start, false)
	}
	if err != nil {
		return err
	}
	rerr := res.Err
	if rerr == nil {
		rerr = io.EOF
	}
	return r.readEnd(rerr, res.End, res.Records == 0, start)
}

// misses tells whether p left out records of a file made in an earlier
// span (made, madeDB), which its reader did not know to keep.
func (p *spanPart) misses(made madeSet) bool {
	if len(made.files) == 0 && len(made.dbs) == 0 {
		return false
	}
	for rel := range p.skipped {
		if made.has(rel) {
			return true
		}
	}
	return false
}

// rereadSpan replays part p's span again from its first record, every
// record of it (as readAll): p left out records of a file an earlier span
// made. It returns the records read.
func (r *Replay) rereadSpan(p *spanPart, opts xlog.Options, base int64, made madeSet) (int64, error) {
	o := opts
	o.Start = p.first
	o.Continues = true
	if s := p.info.Span.Stop; s != 0 && (o.StopAt == 0 || s < o.StopAt) {
		o.StopAt = s
	}
	rd, err := xlog.NewReader(r.cfg.WAL, o)
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	var n int64
	for n < p.records {
		rec, err := rd.Next()
		if err != nil {
			return n, err
		}
		r.stop.Records = base + n
		stop, err := r.step(rec)
		if err != nil || stop {
			if err == nil {
				err = errReached
			}
			return n, err
		}
		made.note(r.dec, rec)
		n++
	}
	r.stop.Records = base + n
	return n, nil
}
