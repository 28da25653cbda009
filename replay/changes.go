package replay

import (
	"encoding/binary"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// ChangeOp is what a heap record did to a row.
type ChangeOp uint8

// Change operations.
const (
	ChangeInsert   ChangeOp = iota + 1 // Heap INSERT, Heap2 MULTI_INSERT: New
	ChangeUpdate                       // Heap UPDATE and HOT_UPDATE: Old and New
	ChangeDelete                       // Heap DELETE: Old
	ChangeTruncate                     // Heap TRUNCATE (wal_level logical): DB and RelIDs
	// ChangeCut: a Storage TRUNCATE of a file the watched transaction
	// writes (ChangeList.WithCuts only): Rel cut to NewBlock blocks; one
	// Change per block cut, OldBlock and Old its page as it was just
	// before (one with Old nil if no block was cut), all at the record's
	// LSN
	ChangeCut
)

func (o ChangeOp) String() string {
	switch o {
	case ChangeInsert:
		return "insert"
	case ChangeUpdate:
		return "update"
	case ChangeDelete:
		return "delete"
	case ChangeTruncate:
		return "truncate"
	case ChangeCut:
		return "cut"
	}
	return "unknown"
}

// Change is one row changed by a heap record of the watched transaction
// (Config.WatchXID) or one of its subtransactions: the old tuple as the
// page held it just before the record was redone, the new one as it held
// it just after. Tuples are whole (HeapTupleHeaderData included) and the
// Change's own copies.
type Change struct {
	LSN xlog.LSN
	XID xlog.XID // the record's xl_xid: the transaction or the subtransaction
	Op  ChangeOp
	HOT bool                  // a HOT_UPDATE
	Rel decode.RelFileLocator // the relation file changed (an update's old and new tuples are in the same file)

	OldBlock  uint32
	OldOffset uint16
	Old       []byte // nil where the page did not hold the tuple
	NewBlock  uint32
	NewOffset uint16
	New       []byte

	// Heap TRUNCATE (logged with wal_level = logical only, xl_heap_truncate
	// in heapam_xlog.h): the database and the relations' oids.
	DB     uint32
	RelIDs []uint32

	// Without a backup (Config.NoBackup): whether the old tuple's page was
	// known just before the record and the new tuple's just after
	// (Replay.Known), and what the record itself logs of the row.
	// OldFromImage: the old tuple was read from the record's own image
	// of its page (the page was not known before it).
	OldKnown, NewKnown bool
	OldFromImage       bool
	Logged             *Logged

	seq int // WAL order (a MULTI_INSERT gives several changes at one LSN)
}

// xl_heap_* layouts (heapam_xlog.h, the same from 10 to 18 for the fields
// read): xl_heap_insert {offnum u16 @0, flags u8 @2}; xl_heap_delete {xmax
// u32 @0, offnum u16 @4, infobits_set u8 @6, flags u8 @7}; xl_heap_update
// {old_xmax u32 @0, old_offnum u16 @4, old_infobits_set u8 @6, flags u8 @7,
// new_xmax u32 @8, new_offnum u16 @12}; xl_heap_truncate {dbId u32 @0,
// nrelids u32 @4, flags u8 @8, relids Oid[] @12}.
const (
	heapOpMask      = 0x70
	heapInsertOp    = 0x00
	heapDeleteOp    = 0x10
	heapUpdateOp    = 0x20
	heapTruncateOp  = 0x30
	heapHotUpdateOp = 0x40
	heapConfirmOp   = 0x50 // XLOG_HEAP_CONFIRM: a speculative insertion confirmed (xl_heap_confirm {offnum u16 @0})
	heap2MultiOp    = 0x50
	// XLH_INSERT_IS_SPECULATIVE (xl_heap_insert's flags): an INSERT ...
	// ON CONFLICT's tuple, confirmed or super-deleted after
	xlhInsertIsSpeculative = 1 << 2
	// XLOG_HEAP_INIT_PAGE (heapam_xlog.h): the record initialises the page
	heapInitPageFlag = 0x80
	// XLH_DELETE_IS_SUPER: a speculative insertion (INSERT ... ON CONFLICT)
	// taken back: the row never existed.
	xlhDeleteIsSuper = 1 << 3
)

// watching says whether a record's transaction may be the watched one or
// one of its subtransactions: a subtransaction's xid is assigned after its
// parent's (AssignTransactionId assigns the parent first), so only xids
// from the watched one on are kept until their fate is known.
func (r *Replay) watching(xid xlog.XID) bool {
	w := r.cfg.WatchXID
	if w == 0 || xid == 0 {
		return false
	}
	if r.cfg.WatchSubxacts != nil {
		if r.watchSet == nil {
			r.watchSet = map[xlog.XID]bool{w: true}
			for _, s := range r.cfg.WatchSubxacts {
				r.watchSet[s] = true
			}
		}
		return r.watchSet[xid]
	}
	return int32(uint32(xid)-uint32(w)) >= 0
}

// pendingChange is a change read before its record is redone, completed
// after.
type pendingChange struct {
	c        *Change
	newBlock uint32
	newOff   uint16
	wantNew  bool
}

// watchBefore reads, before d is redone, the old tuples of the rows d
// changes (for a watched transaction's heap record).
func (r *Replay) watchBefore(d *decode.Record) []pendingChange {
	if !r.watching(d.Header.XID) {
		return nil
	}
	m := d.MainData
	info := d.Header.Info
	var out []pendingChange
	mk := func(op ChangeOp, rel decode.RelFileLocator) *Change {
		r.watchSeq++
		return &Change{LSN: d.LSN, XID: d.Header.XID, Op: op, Rel: rel, seq: r.watchSeq}
	}
	switch d.Header.Rmid {
	case xlog.RmgrHeap:
		switch info & heapOpMask {
		case heapInsertOp:
			b := d.Block(0)
			if b == nil || len(m) < 2 || !r.holds(b.Rel) {
				return nil
			}
			c := mk(ChangeInsert, b.Rel)
			off := binary.LittleEndian.Uint16(m)
			if len(m) >= 3 && m[2]&xlhInsertIsSpeculative != 0 {
				r.watchLog().spec[specKey{d.Header.XID, b.Rel, b.Block, off}] = c.seq
			}
			out = append(out, pendingChange{c: c, newBlock: b.Block, newOff: off, wantNew: true})
		case heapConfirmOp:
			if b := d.Block(0); b != nil && len(m) >= 2 && r.changes != nil {
				delete(r.changes.spec, specKey{d.Header.XID, b.Rel, b.Block, binary.LittleEndian.Uint16(m)})
			}
			return nil
		case heapDeleteOp:
			b := d.Block(0)
			if b == nil || len(m) < 8 || !r.holds(b.Rel) {
				return nil
			}
			off := binary.LittleEndian.Uint16(m[4:])
			if m[7]&xlhDeleteIsSuper != 0 {
				r.forgetInsert(d.Header.XID, b.Rel, b.Block, off)
				return nil
			}
			c := mk(ChangeDelete, b.Rel)
			c.OldBlock, c.OldOffset = b.Block, off
			c.Old = r.oldTupleAt(b.Rel, b.Block, off)
			out = append(out, pendingChange{c: c})
		case heapUpdateOp, heapHotUpdateOp:
			b := d.Block(0)
			if b == nil || len(m) < 14 || !r.holds(b.Rel) {
				return nil
			}
			c := mk(ChangeUpdate, b.Rel)
			c.HOT = info&heapOpMask == heapHotUpdateOp
			c.OldBlock, c.OldOffset = b.Block, binary.LittleEndian.Uint16(m[4:])
			if ob := d.Block(1); ob != nil {
				c.OldBlock = ob.Block
			}
			c.Old = r.oldTupleAt(b.Rel, c.OldBlock, c.OldOffset)
			out = append(out, pendingChange{c: c, newBlock: b.Block, newOff: binary.LittleEndian.Uint16(m[12:]), wantNew: true})
		case heapTruncateOp:
			if len(m) < 12 {
				return nil
			}
			n := int(binary.LittleEndian.Uint32(m[4:]))
			if n < 0 || 12+4*n > len(m) {
				return nil
			}
			c := mk(ChangeTruncate, decode.RelFileLocator{})
			c.DB = binary.LittleEndian.Uint32(m)
			for i := 0; i < n; i++ {
				c.RelIDs = append(c.RelIDs, binary.LittleEndian.Uint32(m[12+4*i:]))
			}
			out = append(out, pendingChange{c: c})
		}
	case xlog.RmgrHeap2:
		if info&heapOpMask != heap2MultiOp {
			return nil
		}
		b := d.Block(0)
		if b == nil || !r.holds(b.Rel) {
			return nil
		}
		// the offsets, as RecordTuples reads them (implied by
		// XLOG_HEAP_INIT_PAGE, else listed)
		r.tuples = rmgr.RecordTuples(r.tuples[:0], d)
		for _, t := range r.tuples {
			c := mk(ChangeInsert, b.Rel)
			out = append(out, pendingChange{c: c, newBlock: t.Block, newOff: t.Offset, wantNew: true})
		}
		if len(r.tuples) == 0 && b.HasImage && len(m) >= 4 {
			// the tuples' data left out for the page's image (below
			// wal_level logical): the offsets are in the main data
			// (xl_heap_multi_insert {flags u8, ntuples u16 @2, offsets
			// u16[] @4}, left out with XLOG_HEAP_INIT_PAGE: 1..ntuples),
			// the tuples on the page after redo
			n := int(binary.LittleEndian.Uint16(m[2:]))
			for i := 0; i < n; i++ {
				off := uint16(i + 1)
				if info&heapInitPageFlag == 0 {
					if 4+2*i+2 > len(m) {
						break
					}
					off = binary.LittleEndian.Uint16(m[4+2*i:])
				}
				out = append(out, pendingChange{c: mk(ChangeInsert, b.Rel), newBlock: b.Block, newOff: off, wantNew: true})
			}
		}
	}
	if r.cfg.NoBackup && len(out) > 0 {
		lg := r.logged(d)
		for i, p := range out {
			c := p.c
			if c.Op == ChangeDelete || c.Op == ChangeUpdate {
				c.OldKnown = r.Known(c.Rel, c.OldBlock)
			}
			if len(lg) == len(out) {
				c.Logged = &lg[i]
			}
		}
	}
	return out
}

// watchAfter completes, after d was redone, the changes watchBefore began
// with the new tuples, and keeps them (changeLog) until their
// transaction's fate is known.
func (r *Replay) watchAfter(pend []pendingChange) {
	for _, p := range pend {
		c := p.c
		if p.wantNew {
			c.NewBlock, c.NewOffset = p.newBlock, p.newOff
			c.New = r.tupleAt(c.Rel, p.newBlock, p.newOff)
			c.NewKnown = r.Known(c.Rel, p.newBlock)
		}
		if r.cfg.NoBackup && c.Old == nil && (c.Op == ChangeDelete || c.Op == ChangeUpdate) && r.Known(c.Rel, c.OldBlock) {
			// the page became known by this record's own image, taken
			// after the change: the old tuple is still there, its data
			// untouched (the record set its xmax)
			c.Old = r.tupleAt(c.Rel, c.OldBlock, c.OldOffset)
			c.OldKnown, c.OldFromImage = c.Old != nil, c.Old != nil
		}
		r.watchLog().add(c)
	}
}

// watchLog is where the watched changes are kept.
func (r *Replay) watchLog() *changeLog {
	if r.changes == nil {
		r.changes = newChangeLog(r.cfg.ChangeMemoryBytes, r.cfg.TempDir)
	}
	return r.changes
}

// watchTruncate follows a Storage TRUNCATE of the watched transaction,
// before it is redone: a file it made itself (TRUNCATE twice, of a table
// it created or rewrote: heap_truncate_one_rel, from PostgreSQL 13 without
// a new relfilenode) loses the rows it had written beyond the new end.
// The pages cut are kept as they were, as ChangeCut changes (a TRUNCATE
// gives the rows as of just before it: ChangeList.WithCuts), and the
// truncation is noted for the readers that leave out what it cut
// (ChangeList).
func (r *Replay) watchTruncate(d *decode.Record) {
	if !r.watching(d.Header.XID) {
		return
	}
	rel, blocks, ok := rmgr.SmgrTruncate(d)
	if !ok {
		return
	}
	l := r.watchLog()
	cut := func(blk uint32, page []byte) {
		r.watchSeq++
		l.add(&Change{LSN: d.LSN, XID: d.Header.XID, Op: ChangeCut, Rel: rel, NewBlock: blocks, OldBlock: blk, Old: page, seq: r.watchSeq})
	}
	n, err := r.NBlocks(rel, decode.ForkMain)
	if err != nil || n <= blocks {
		cut(blocks, nil)
	} else {
		for blk := blocks; blk < n; blk++ {
			page, _, err := r.Page(nil, rel, decode.ForkMain, blk)
			if err != nil {
				page = nil
			}
			cut(blk, page)
		}
	}
	// the changes kept may be in the file: the truncation is applied when
	// they are read back (ChangeList)
	l.truncs = append(l.truncs, truncation{seq: r.watchSeq, rel: rel, blocks: blocks})
}

// PageVisibleTuples calls each for the tuples of a heap page (a
// ChangeCut's) visible as of the replay's end (with Xacts' assumptions),
// in their order on the page.
func (r *Replay) PageVisibleTuples(page []byte, each func(off uint16, tup []byte) error) error {
	if len(page) == 0 || isZero(page) {
		return nil
	}
	items, err := tuple.PageItems(nil, page)
	if err != nil {
		return err
	}
	for _, it := range items {
		h, ok := xactstate.ParseTupleHeader(it.Tuple)
		if !ok || !r.xacts.TupleVisible(h) {
			continue
		}
		if err := each(it.Offset, it.Tuple); err != nil {
			return err
		}
	}
	return nil
}

// forgetInsert drops a speculative insertion taken back (super-delete):
// noted, and left out when the changes are read back (ChangeList).
func (r *Replay) forgetInsert(xid xlog.XID, rel decode.RelFileLocator, blk uint32, off uint16) {
	if r.changes == nil {
		return
	}
	k := specKey{xid, rel, blk, off}
	if seq, ok := r.changes.spec[k]; ok {
		r.changes.killed[seq] = true
		delete(r.changes.spec, k)
	}
}

// watchEnd follows transaction ends: the watched transaction's end record
// tells which subtransactions committed with it; the changes of any other
// xid (another transaction's, or one of the watched one's subtransactions
// rolled back) are left out when the changes are read back (ChangeList).
func (r *Replay) watchEnd(d *decode.Record, e *rmgr.XactEndInfo) {
	if r.cfg.WatchXID == 0 || e == nil {
		return
	}
	if e.XID == r.cfg.WatchXID {
		if r.watchedEnd == nil {
			c := *e
			r.watchedEnd = &c
			r.watchedEndLSN = d.LSN
		}
	}
}

// tupleAt copies the tuple at line pointer off of a block as held now
// (nil if there is none: a line pointer that is not LP_NORMAL, a block
// beyond the file).
func (r *Replay) tupleAt(rel decode.RelFileLocator, blk uint32, off uint16) []byte {
	var err error
	r.watchPage, _, err = r.Page(r.watchPage[:0], rel, decode.ForkMain, blk)
	if err != nil {
		return nil
	}
	if t := itemAt(r.watchPage, off); t != nil {
		return append([]byte(nil), t...)
	}
	return nil
}

// oldTupleAt is tupleAt for the page a record is about to change: the
// block is held first (read from the backup if it was not), so that the
// redo that follows finds it instead of reading it again.
func (r *Replay) oldTupleAt(rel decode.RelFileLocator, blk uint32, off uint16) []byte {
	if r.cfg.NoBackup {
		h, err := r.store.get(blockKey{rel, decode.ForkMain, blk})
		if err != nil || h == nil {
			return nil
		}
		if t := itemAt(h.page, off); t != nil {
			return append([]byte(nil), t...)
		}
		return nil
	}
	if n, err := r.NBlocks(rel, decode.ForkMain); err != nil || blk >= n {
		return nil
	}
	h, err := r.block(blockKey{rel, decode.ForkMain, blk}, false)
	if err != nil || h == nil {
		return nil
	}
	if t := itemAt(h.page, off); t != nil {
		return append([]byte(nil), t...)
	}
	return nil
}

// itemAt returns the tuple at line pointer off (from 1) of a heap page
// (ItemIdData, itemid.h: lp_off:15, lp_flags:2, lp_len:15 after the
// 24-byte PageHeaderData, up to pd_lower), a view into page; nil when the
// line pointer is not there, not LP_NORMAL, or points outside the page.
func itemAt(page []byte, off uint16) []byte {
	if off == 0 || len(page) < 24 {
		return nil
	}
	lp := 24 + 4*int(off-1)
	if lp+4 > len(page) || lp+4 > int(binary.LittleEndian.Uint16(page[12:])) {
		return nil
	}
	v := binary.LittleEndian.Uint32(page[lp:])
	start, flags, n := int(v&0x7FFF), (v>>15)&3, int(v>>17)
	if flags != 1 || n == 0 || start < 24 || start+n > len(page) {
		return nil
	}
	return page[start : start+n : start+n]
}

// WatchedEnd is the end record (COMMIT, ABORT, or their _PREPARED forms)
// of Config.WatchXID, if the replay read it (a replay stopping just before
// it, recovery_target_xid with recovery_target_inclusive off, reads it
// without applying it), and its LSN.
func (r *Replay) WatchedEnd() (rmgr.XactEndInfo, xlog.LSN, bool) {
	if r.watchedEnd == nil {
		return rmgr.XactEndInfo{}, 0, false
	}
	return *r.watchedEnd, r.watchedEndLSN, true
}

// ToastFiles returns the files the TOAST relations of every database have
// in the backup, read from the backup's own pg_class pages as FilesNamed
// reads them (every tuple, dead ones included). A replay holding only the
// files a transaction changed (with HoldCatalogs) also needs these: a row
// it changed may point to a TOAST value it did not touch. TOAST files made
// since the backup are held anyway (the WAL makes them).
func ToastFiles(b Backup, v xlog.Version) ([]decode.RelFileLocator, error) {
	var out []decode.RelFileLocator
	seen := map[decode.RelFileLocator]bool{}
	err := backupClasses(b, v, func(d catalog.Database, spc uint32, classes []catalog.Class) {
		for _, c := range classes {
			if c.Kind != 't' || c.RelFileNode == 0 {
				continue
			}
			if loc := classFile(d.OID, spc, c); !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
	})
	return out, err
}
