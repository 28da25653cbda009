package replay

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"sort"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// A replay without a base backup (Config.NoBackup) knows a page only from
// the WAL read: from a full-page image of it, or from a record that
// initialises it (XLOG_HEAP_INIT_PAGE, BKPBLOCK_WILL_INIT); it then keeps
// it current by redo. A record changing a page not known so is not
// replayed, and the page stays unknown: after each checkpoint the first
// change of a page logs its image (full_page_writes), so most pages a
// transaction changes are known when it changes them.

// noBackup is the Backup of a replay without one: no files, no blocks.
type noBackup struct {
	start     xlog.LSN
	blockSize uint32
}

func (b noBackup) StartLSN() xlog.LSN { return b.start }
func (b noBackup) SystemID() uint64   { return 0 }
func (b noBackup) BlockSize() uint32  { return b.blockSize }
func (noBackup) ReadFile(name string) ([]byte, error) {
	return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
}
func (noBackup) ReadDir(name string) ([]string, error) {
	return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
}
func (noBackup) NBlocks(loc decode.RelFileLocator, fork decode.ForkNumber) (uint32, error) {
	return 0, &fs.PathError{Op: "open", Path: fmt.Sprintf("%d/%d/%d", loc.SpcOID, loc.DBOID, loc.RelNumber), Err: fs.ErrNotExist}
}
func (noBackup) ReadBlock(loc decode.RelFileLocator, fork decode.ForkNumber, blk uint32, dst []byte) error {
	return &fs.PathError{Op: "read", Path: fmt.Sprintf("%d/%d/%d", loc.SpcOID, loc.DBOID, loc.RelNumber), Err: fs.ErrNotExist}
}

// Known reports whether block blk of a relation's main fork is known at the
// target (always, with a backup; without one, when the WAL read gave its
// image or initialised it).
func (r *Replay) Known(rel decode.RelFileLocator, blk uint32) bool {
	if !r.cfg.NoBackup {
		return true
	}
	return r.store.blocks[blockKey{rel, decode.ForkMain, blk}] != nil
}

// KnownTuples calls each with every tuple (LP_NORMAL line pointer, live
// or dead) of the known pages of a relation's main fork, in block then
// line pointer order. Without a backup, it is what the WAL read shows of
// a relation (a TOAST table's chunks, for instance).
func (r *Replay) KnownTuples(rel decode.RelFileLocator, each func(blk uint32, off uint16, tup []byte) error) error {
	var blks []uint32
	for k := range r.store.blocks {
		if k.rel == rel && k.fork == decode.ForkMain {
			blks = append(blks, k.blk)
		}
	}
	sort.Slice(blks, func(i, j int) bool { return blks[i] < blks[j] })
	for _, blk := range blks {
		h, err := r.store.get(blockKey{rel, decode.ForkMain, blk})
		if err != nil {
			return err
		}
		if h == nil || isZero(h.page) {
			continue
		}
		n := (int(binary.LittleEndian.Uint16(h.page[12:])) - 24) / 4
		for off := 1; off <= n; off++ {
			if t := itemAt(h.page, uint16(off)); t != nil {
				if err := each(blk, uint16(off), t); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Logged is what a heap record itself carries of the row it changes, for
// a replay without a backup: the new tuple (INSERT, MULTI_INSERT, UPDATE)
// and, with wal_level = logical, the old one (the replica identity: the
// whole row with REPLICA IDENTITY FULL, else the key columns only, the
// others NULL). Tuples are whole, with a HeapTupleHeaderData made from the
// logged xl_heap_header (t_infomask2, t_infomask, t_hoff; xmin, xmax and
// ctid zero), so that they deform as page tuples do.
type Logged struct {
	New []byte
	// NewPartial: the update logged its new tuple without the prefix or
	// suffix it shares with the old one (XLH_UPDATE_PREFIX_FROM_OLD,
	// XLH_UPDATE_SUFFIX_FROM_OLD); New is then nil, NewPrefix and
	// NewSuffix say how much, NewMiddle holds the rest (from t_hoff) and
	// newHeader the header.
	NewPartial           bool
	NewPrefix, NewSuffix uint16
	NewMiddle            []byte
	newHeader            []byte

	Old []byte
	// OldKeyOnly: Old holds the replica identity's key columns only
	// (XLH_*_CONTAINS_OLD_KEY); its other columns are NULL in the tuple
	// and not known.
	OldKeyOnly bool
	// Logical: the record is an update logged for logical decoding
	// (XLH_UPDATE_CONTAINS_NEW_TUPLE, wal_level logical): one that logs no
	// old key left the key unchanged (ExtractReplicaIdentity logs it only
	// when it changed or is stored externally).
	Logical bool
}

// XLH_* flags of xl_heap_delete and xl_heap_update (heapam_xlog.h, the same
// from 10 to 18).
const (
	xlhDeleteContainsOldTuple = 1 << 1 // XLH_DELETE_CONTAINS_OLD_TUPLE
	xlhDeleteContainsOldKey   = 1 << 2 // XLH_DELETE_CONTAINS_OLD_KEY
	xlhUpdateContainsOldTuple = 1 << 2 // XLH_UPDATE_CONTAINS_OLD_TUPLE
	xlhUpdateContainsOldKey   = 1 << 3 // XLH_UPDATE_CONTAINS_OLD_KEY
	xlhUpdateContainsNewTuple = 1 << 4 // XLH_UPDATE_CONTAINS_NEW_TUPLE: wal_level logical
	sizeOfHeapDelete          = 8      // SizeOfHeapDelete
	sizeOfHeapUpdate          = 14     // SizeOfHeapUpdate
	sizeOfHeapHeader          = 5      // SizeOfHeapHeader
	sizeofHeapTupleHeader     = 23     // SizeofHeapTupleHeader
)

// wholeTuple makes a tuple from a logged xl_heap_header (infomask2,
// infomask, hoff) and what follows t_bits (bitmap, padding, data).
func wholeTuple(infomask2, infomask uint16, hoff uint8, fromBits []byte) []byte {
	t := make([]byte, sizeofHeapTupleHeader, sizeofHeapTupleHeader+len(fromBits))
	binary.LittleEndian.PutUint16(t[18:], infomask2)
	binary.LittleEndian.PutUint16(t[20:], infomask)
	t[22] = hoff
	return append(t, fromBits...)
}

// loggedOld reads the old tuple a DELETE or UPDATE logs in its main data
// after its xl_heap_delete or xl_heap_update (log_heap_delete,
// log_heap_update: xl_heap_header, then the tuple from t_bits).
func loggedOld(m []byte, at int, tuple, key bool, lg *Logged) {
	if !tuple && !key || len(m) < at+sizeOfHeapHeader {
		return
	}
	h := m[at:]
	lg.Old = wholeTuple(binary.LittleEndian.Uint16(h), binary.LittleEndian.Uint16(h[2:]), h[4], h[sizeOfHeapHeader:])
	lg.OldKeyOnly = !tuple
}

// logged reads what a watched heap record carries of its rows (in WAL
// order, as watchBefore makes its changes).
func (r *Replay) logged(d *decode.Record) []Logged {
	m := d.MainData
	switch {
	case d.Header.Rmid == xlog.RmgrHeap && d.Header.Info&heapOpMask == heapDeleteOp:
		if len(m) < sizeOfHeapDelete {
			return nil
		}
		var lg Logged
		loggedOld(m, sizeOfHeapDelete, m[7]&xlhDeleteContainsOldTuple != 0, m[7]&xlhDeleteContainsOldKey != 0, &lg)
		return []Logged{lg}
	case d.Header.Rmid == xlog.RmgrHeap && (d.Header.Info&heapOpMask == heapUpdateOp || d.Header.Info&heapOpMask == heapHotUpdateOp):
		if len(m) < sizeOfHeapUpdate {
			return nil
		}
		var lg Logged
		loggedOld(m, sizeOfHeapUpdate, m[7]&xlhUpdateContainsOldTuple != 0, m[7]&xlhUpdateContainsOldKey != 0, &lg)
		lg.Logical = m[7]&xlhUpdateContainsNewTuple != 0
		r.tuples = rmgr.RecordTuples(r.tuples[:0], d)
		if len(r.tuples) == 1 {
			t := &r.tuples[0]
			hdr := wholeTuple(t.Infomask2, t.Infomask, t.Hoff, nil)
			pre := fromBits(t)
			if t.Partial {
				lg.NewPartial, lg.NewPrefix, lg.NewSuffix = true, t.PrefixLen, t.SuffixLen
				lg.NewMiddle = append([]byte(nil), t.Data...)
				lg.newHeader = append(hdr, pre...)
			} else {
				lg.New = append(append(hdr, pre...), t.Data...)
			}
		}
		return []Logged{lg}
	case d.Header.Rmid == xlog.RmgrHeap && d.Header.Info&heapOpMask == heapInsertOp,
		d.Header.Rmid == xlog.RmgrHeap2 && d.Header.Info&heapOpMask == heap2MultiOp:
		r.tuples = rmgr.RecordTuples(r.tuples[:0], d)
		out := make([]Logged, 0, len(r.tuples))
		for i := range r.tuples {
			t := &r.tuples[i]
			out = append(out, Logged{New: append(append(wholeTuple(t.Infomask2, t.Infomask, t.Hoff, nil), fromBits(t)...), t.Data...)})
		}
		return out
	}
	return nil
}

// fromBits is what lies between SizeofHeapTupleHeader and t_hoff: the null
// bitmap, padding, and in 10 and 11 the oid. RecordTuples keeps the
// bitmap and the oid; the padding is zeros.
func fromBits(t *rmgr.HeapTuple) []byte {
	n := int(t.Hoff) - sizeofHeapTupleHeader
	if n <= 0 {
		return nil
	}
	b := make([]byte, n)
	copy(b, t.Bits)
	if t.HasOID && n >= 4 {
		binary.LittleEndian.PutUint32(b[n-4:], t.OID)
	}
	return b
}

// CompleteNew rebuilds a prefix- or suffix-compressed new tuple from the
// old tuple (whole, header included) as heap_xlog_update does; nil when
// the old one is too short.
func (lg *Logged) CompleteNew(old []byte) []byte {
	if !lg.NewPartial || len(old) < sizeofHeapTupleHeader {
		return lg.New
	}
	hoff := int(old[22])
	if hoff > len(old) {
		return nil
	}
	od := old[hoff:]
	p, s := int(lg.NewPrefix), int(lg.NewSuffix)
	if p+s > len(od) {
		return nil
	}
	out := append([]byte(nil), lg.newHeader...)
	out = append(out, od[:p]...)
	out = append(out, lg.NewMiddle...)
	return append(out, od[len(od)-s:]...)
}

// noteEnd keeps, without a backup, the fate of the transactions (and
// subtransactions) whose end record the WAL read gives.
func (r *Replay) noteEnd(d *decode.Record) {
	e, ok := rmgr.XactEnd(d)
	if !ok {
		return
	}
	if r.ended == nil {
		r.ended = map[xlog.XID]bool{}
	}
	r.ended[e.XID] = e.Commit
	for _, x := range e.Subxacts {
		r.ended[x] = e.Commit
	}
}

// EndedInWAL tells, for a replay without a backup, whether the WAL read
// (up to the target) ended transaction xid, and whether it committed: the
// commit state there is of those alone (no pg_xact).
func (r *Replay) EndedInWAL(xid xlog.XID) (committed, ended bool) {
	committed, ended = r.ended[xid]
	return committed, ended
}
