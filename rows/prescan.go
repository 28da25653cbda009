package rows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// prescan reads the WAL from the backup's start to the transaction's end
// record, decoding record headers only, and returns the relation files the
// replay must hold for Changes: those the transaction's heap records (and
// those of its subtransactions that committed with it) change, those its
// commit drops (a truncated or dropped table's old file, read as of just
// before), and the backup's TOAST files; the catalogs and the files the
// WAL makes are held by replay.Config.HoldCatalogs. The TOAST files of a
// backup still being opened (replay.PendingBackup) are looked at after the
// replay instead (Open: replayed again holding those it left records of
// out). Holding only these
// spares the replay the pages of every other table (issue 27's speed
// goal). It also returns the subtransactions the commit lists, so that
// the replay watches only those, and where the record after the end
// record starts (the replay need read no further). ok is false when the end record was not
// found: the caller holds everything and lets the replay say why. checked
// says that it read (and so CRC-checked) every record from the backup's
// start to the end record, which the replay reads again.
func prescan(cfg Config, toastLater bool) (hold map[decode.RelFileLocator]bool, subxacts []xlog.XID, endAt xlog.LSN, checked, ok bool, err error) {
	opts := cfg.Options
	opts.Start = cfg.Backup.StartLSN()
	var found *prescanFound
	if p := cfg.Prescan; p != nil && p.wait() && p.opts == opts && p.xid == cfg.XID && p.blockSize == cfg.Backup.BlockSize() {
		found, err = p.found, p.err
		if found != nil {
			found = &prescanFound{hold: maps.Clone(found.hold), subxacts: found.subxacts, version: found.version, from: found.from, endAt: found.endAt}
		}
	} else {
		prescanReadings.Add(1)
		found, err = prescanWAL(cfg.WAL, opts, int(cfg.Backup.BlockSize()), cfg.XID, prescanSpanBytes, nil, nil)
	}
	if err != nil || found == nil {
		return nil, nil, 0, false, false, err
	}
	if !toastLater {
		// the backup is open: its TOAST files held from the start (a
		// backup still being opened is not waited for: Open looks at
		// them after the replay)
		toast, err := replay.ToastFiles(cfg.Backup, found.version)
		if err != nil {
			return nil, nil, 0, false, false, err
		}
		for _, f := range toast {
			found.hold[f] = true
		}
	}
	return found.hold, found.subxacts, found.endAt, found.from == opts.Start, true, nil
}

// Prescan is Open's first reading of the WAL started ahead of it
// (StartPrescan), while the caller opens the backup.
type Prescan struct {
	opts      xlog.Options // Start: the backup's start
	xid       xlog.XID
	blockSize uint32
	stop      atomic.Bool
	done      chan struct{}
	found     *prescanFound
	err       error
}

// StartPrescan starts, on other goroutines, the reading of the WAL that
// Open does first with a backup (the files the transaction changes, see
// Config.HoldAll), from start with pages of blockSize bytes (0: 8192),
// before the backup is open: backup.ReadLabel gives its start ahead of
// backup.Open, which inflates a compressed tar to its end (pg_control,
// which gives BLCKSZ, is the last member). Open, given it as
// Config.Prescan, waits for it and uses its answer if the opened backup
// starts at start with pages of blockSize bytes and Config's Options and
// XID are opts and x (Config.WAL must be wal), else reads again. Stop
// ends it early; it must be called when Open is not (an error before).
// Its spans share cores (nil: none) with the run's other work
// (replay.OpenBackupAhead).
func StartPrescan(wal xlog.Source, opts xlog.Options, x xlog.XID, start xlog.LSN, blockSize uint32, cores stream.Cores) *Prescan {
	if blockSize == 0 {
		blockSize = 8192
	}
	opts.Start = start
	p := &Prescan{opts: opts, xid: x, blockSize: blockSize, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.found, p.err = prescanWAL(wal, opts, int(blockSize), x, prescanSpanBytes, cores, &p.stop)
	}()
	return p
}

// Stop ends the reading and waits for its goroutines to end. A nil
// Prescan's Stop does nothing.
func (p *Prescan) Stop() {
	if p != nil {
		p.stop.Store(true)
		<-p.done
	}
}

// wait waits for the reading's end and tells whether it read to its end
// (it was not stopped).
func (p *Prescan) wait() bool {
	<-p.done
	return !p.stop.Load()
}

// prescanSpanBytes is the WAL one span of the prescan's parallel reading
// covers (0: the engine's default); the tests cut the fixtures' few
// segments into spans of one.
var prescanSpanBytes = 0

// prescanFound is what the prescan found at the transaction's end record.
type prescanFound struct {
	hold     map[decode.RelFileLocator]bool // its files, its committed subtransactions' and those it drops
	subxacts []xlog.XID
	version  xlog.Version
	from     xlog.LSN // where the reading began: the backup's start, or later (prescanStart)
	endAt    xlog.LSN // where the record after the transaction's end starts
}

// prescanWAL is the prescan's reading, on every core (xlog/stream): each
// span gathers, for the heap records of transactions x or later, the
// files per xid, and forgets those of the transactions whose end it reads;
// the spans are merged in WAL order into the same sets one reader going
// through the whole stream keeps (prescan_test.go's reference), up to x's
// end record, after which nothing more is read. Memory: per span, the
// files of the transactions x or later still open at its end and the xids
// of those it saw end. It returns nil, nil when x's end was not read (the
// end of the WAL, a gap, damage: the replay reads the same WAL and says
// what it is, positioned), and ErrSubtransaction when a commit lists x as
// a subtransaction before any end of x.
//
// A stop set ends the reading early (nil, nil).
func prescanWAL(wal xlog.Source, opts xlog.Options, blockSize int, x xlog.XID, spanBytes int, cores stream.Cores, stop *atomic.Bool) (*prescanFound, error) {
	if opts.Index == nil {
		opts.Index = xlog.NewSegmentIndex() // one for every reader here
	}
	s, err := stream.Open(wal, stream.Config{Reader: opts, SpanBytes: spanBytes, Cores: cores})
	if err != nil {
		return nil, nil // the replay reports it, positioned
	}
	from := s.Start()
	if later := prescanStart(wal, opts, s.Spans(), x, stop); later != 0 {
		opts.Start, from = later, later
		if s, err = stream.Open(wal, stream.Config{Reader: opts, SpanBytes: spanBytes, Cores: cores}); err != nil {
			return nil, nil
		}
	}
	open := map[xlog.XID]map[decode.RelFileLocator]bool{} // the merged spans' files of transactions still open
	var last *prescanPart                                 // the part that read x's end (or its commit as a subtransaction)
	res, err := stream.Run(s, stream.Job[*prescanPart]{
		NewPart: func(stream.SpanInfo) *prescanPart {
			return &prescanPart{x: x, dec: decode.NewDecoder(blockSize), files: map[xlog.XID]map[decode.RelFileLocator]bool{}, stop: stop}
		},
		Record: (*prescanPart).record,
		Merge: func(p *prescanPart) error {
			for _, y := range p.ended {
				delete(open, y)
			}
			for y, m := range p.files {
				if have := open[y]; have != nil {
					for f := range m {
						have[f] = true
					}
				} else {
					open[y] = m
				}
			}
			if p.subErr != nil || p.end != nil {
				last = p
			}
			return nil
		},
	})
	if err != nil || last == nil || res.Err != nil {
		return nil, nil
	}
	if last.subErr != nil {
		return nil, last.subErr
	}
	hold := map[decode.RelFileLocator]bool{}
	for _, id := range append([]xlog.XID{x}, last.end.Subxacts...) {
		for f := range open[id] {
			hold[f] = true
		}
	}
	for _, f := range last.end.DroppedRels {
		hold[f] = true
	}
	return &prescanFound{hold: hold, subxacts: append([]xlog.XID{}, last.end.Subxacts...), version: s.Version(), from: from, endAt: last.endAt}, nil
}

// prescanProbeSpans is how many spans at the end of the stream
// prescanStart reads at most, prescanProbeAtOnce at a time, from the last
// one back: 4 spans of 64 MiB, a fifth of issue 27's 1.3 GB benchmark,
// whose transaction's RUNNING_XACTS record lies in the third.
const (
	prescanProbeSpans  = 4
	prescanProbeAtOnce = 2
)

// prescanStart looks in the last spans of the stream (not the first) for
// a later place than its start where the prescan finds exactly what it
// finds from the start: the last RUNNING_XACTS record whose nextXid is x
// or earlier. LogStandbySnapshot (standby.c) writes it holding XidGenLock
// (GetRunningTransactionData takes it and the caller releases it after the
// record is inserted), so x and every later xid were assigned after it,
// and every record of theirs, every end of theirs and every commit listing
// x comes after it: before it the prescan gathers nothing (it gathers only
// xids x or later) and meets no end that matters. The transaction asked
// for is usually one near the end of the WAL (an incident just seen), and
// the prescan then reads the last seconds of WAL instead of all of it.
// Without such a record (wal_level minimal writes none; x older than the
// probed spans) it returns 0: the prescan reads from the start. The
// records probed are not CRC-checked: the prescan reads from the record
// found again, checking it.
func prescanStart(wal xlog.Source, opts xlog.Options, spans []xlog.Span, x xlog.XID, stop *atomic.Bool) xlog.LSN {
	last := len(spans) - 1 // spans[0] is where the prescan starts anyway
	for done := 0; done < min(prescanProbeSpans, last); {
		n := min(prescanProbeAtOnce, min(prescanProbeSpans, last)-done)
		found := make([]xlog.LSN, n)
		var wg sync.WaitGroup
		for i := range n {
			sp := spans[last-done-i]
			wg.Add(1)
			go func() {
				defer wg.Done()
				found[i] = lastRunningXactsBefore(wal, opts, sp, x, stop)
			}()
		}
		wg.Wait()
		for _, lsn := range found { // the later span first
			if lsn != 0 {
				return lsn
			}
		}
		if stop != nil && stop.Load() {
			return 0
		}
		done += n
	}
	return 0
}

// standbyRunningXacts is XLOG_RUNNING_XACTS (standbydefs.h), the
// RM_STANDBY_ID record whose xl_running_xacts gives nextXid at offset 12
// (after xcnt, subxcnt and subxid_overflow), the same in 10 to 18.
const standbyRunningXacts = 0x10

// lastRunningXactsBefore reads span sp and returns the start of its last
// RUNNING_XACTS record whose nextXid is x or earlier (0: none).
func lastRunningXactsBefore(wal xlog.Source, opts xlog.Options, sp xlog.Span, x xlog.XID, stop *atomic.Bool) xlog.LSN {
	opts.Start, opts.SkipCRC = sp.Start, true
	if sp.Stop != 0 {
		opts.End = sp.Stop
	}
	rd, err := xlog.NewReader(wal, opts)
	if err != nil {
		return 0
	}
	defer rd.Close()
	dec := decode.NewDecoder(0)
	var found xlog.LSN
	for n := 0; ; n++ {
		if n&1023 == 1023 && stop != nil && stop.Load() {
			return 0
		}
		rec, err := rd.Next()
		if err != nil {
			return found
		}
		if rec.Header.Rmid != xlog.RmgrStandby || rec.Header.Info&0xF0 != standbyRunningXacts {
			continue
		}
		d, err := dec.Decode(rec)
		if err != nil || len(d.MainData) < 16 {
			continue
		}
		next := xlog.XID(binary.LittleEndian.Uint32(d.MainData[12:]))
		if atOrAfter(x, next) {
			found = rec.LSN
		}
	}
}

// prescanPart is one span's part of the prescan.
type prescanPart struct {
	x     xlog.XID
	dec   *decode.Decoder
	stop  *atomic.Bool                                // Prescan.Stop's
	files map[xlog.XID]map[decode.RelFileLocator]bool // per xid x or later, the main-fork files its heap records in this span change, since its end if the span read one
	ended []xlog.XID                                  // the xids x or later whose end (or whose top-level transaction's) the span read, in WAL order
	// x's end record, or the error naming the commit that lists x as a
	// subtransaction: the span stopped there
	end    *rmgr.XactEndInfo
	endAt  xlog.LSN // where the record after x's end starts
	subErr error
}

// record is a Job's Record. Only the records that can matter are
// decoded (heap records of transactions x or later, transaction
// records): in WAL read for a transaction near its end, nearly none is.
// A record that does not decode ends the reading, as the end of the WAL
// does (the replay, which decodes every record, says what it is).
func (p *prescanPart) record(rec *xlog.Record) error {
	if p.stop != nil && p.stop.Load() {
		return errPrescanStopped
	}
	switch rec.Header.Rmid {
	case xlog.RmgrHeap, xlog.RmgrHeap2:
		if xid := rec.Header.XID; xid == 0 || !atOrAfter(xid, p.x) {
			return nil
		}
	case xlog.RmgrTransaction:
	default:
		return nil
	}
	d, err := p.dec.Decode(rec)
	if err != nil {
		return err
	}
	x := p.x
	switch d.Header.Rmid {
	case xlog.RmgrHeap, xlog.RmgrHeap2:
		xid := d.Header.XID
		for i := range d.Blocks {
			b := &d.Blocks[i]
			if b.Fork() != decode.ForkMain {
				continue
			}
			m := p.files[xid]
			if m == nil {
				m = map[decode.RelFileLocator]bool{}
				p.files[xid] = m
			}
			m[b.Rel] = true
		}
	case xlog.RmgrTransaction:
		e, isEnd := rmgr.XactEnd(d)
		if !isEnd {
			return nil
		}
		if e.XID == x {
			p.end, p.endAt = &e, d.EndLSN
			return stream.ErrStop
		}
		if e.Commit && slices.Contains(e.Subxacts, x) {
			p.subErr = fmt.Errorf("transaction %d is a subtransaction of %d, which committed at %s: %w (give --xid %d)", x, e.XID, d.LSN, ErrSubtransaction, e.XID)
			return stream.ErrStop
		}
		p.forget(e.XID)
		for _, s := range e.Subxacts {
			p.forget(s)
		}
	}
	return nil
}

// prescanReadings counts the readings prescan does itself (not a
// Prescan's), for the tests.
var prescanReadings atomic.Int64

// toastReplays counts the replays run again for a TOAST file the first
// one left records of out (tests).
var toastReplays atomic.Int64

// errPrescanStopped ends a reading Prescan.Stop stopped.
var errPrescanStopped = errors.New("prescan stopped")

// forget drops an ended transaction's files: it can change no more rows.
// An earlier span may hold some too: the merge drops them there.
func (p *prescanPart) forget(xid xlog.XID) {
	if !atOrAfter(xid, p.x) {
		return // never gathered
	}
	delete(p.files, xid)
	p.ended = append(p.ended, xid)
}

// atOrAfter says whether xid is x or later, modulo 2^32 as
// TransactionIdFollowsOrEquals (transam.c) compares normal xids.
func atOrAfter(xid, x xlog.XID) bool { return int32(uint32(xid)-uint32(x)) >= 0 }
