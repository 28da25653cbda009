package heap

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Outcome says what Redo did to a page: PostgreSQL's XLogRedoAction
// (src/include/access/xlogutils.h) for the block.
type Outcome uint8

const (
	// Skipped is BLK_DONE: the page LSN is at or past the record's end, so
	// redo leaves the page as it is.
	Skipped Outcome = iota
	// Applied is BLK_NEEDS_REDO: the record's change was made to the page
	// and its LSN set to the record's end.
	Applied
	// Restored is BLK_RESTORED: the block's image (BKPIMAGE_APPLY) replaced
	// the page, and that is all the redo of this block.
	Restored
	// NotFound is BLK_NOTFOUND: the page is new (all zeros) and the record
	// does not initialize it. The server leaves it and remembers an invalid
	// page, which fails recovery at consistency unless a later drop or
	// truncation forgets it.
	NotFound
)

func (o Outcome) String() string {
	switch o {
	case Skipped:
		return "skipped"
	case Applied:
		return "applied"
	case Restored:
		return "restored"
	case NotFound:
		return "not found"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// ErrRedo is the sentinel of every error Redo returns.
var ErrRedo = errors.New("heap redo failed")

// ErrUnsupported is wrapped (with ErrRedo) when the record is not one whose
// redo this package knows for that block (another resource manager, another
// fork).
var ErrUnsupported = errors.New("unsupported record for heap redo")

// RedoError is a failed redo, positioned: the record (its LSN and type) and
// the block reference (its id, relation, fork and block number).
type RedoError struct {
	LSN     xlog.LSN
	Type    string // e.g. "Heap/UPDATE"
	BlockID uint8
	Rel     decode.RelFileLocator
	Fork    decode.ForkNumber
	Block   uint32
	Reason  string
	Err     error // a cause besides ErrRedo (decode.ErrImage, ErrUnsupported), or nil
}

func (e *RedoError) Error() string {
	return fmt.Sprintf("heap redo of %s at %s, block ref %d (rel %d/%d/%d, fork %s, blk %d): %s",
		e.Type, e.LSN, e.BlockID, e.Rel.SpcOID, e.Rel.DBOID, e.Rel.RelNumber, e.Fork.Name(), e.Block, e.Reason)
}

func (e *RedoError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrRedo, e.Err}
	}
	return []error{ErrRedo}
}

// Resource manager record types (src/include/access/heapam_xlog.h,
// src/include/catalog/pg_control.h).
const (
	opMask   = 0x70 // XLOG_HEAP_OPMASK
	initPage = 0x80 // XLOG_HEAP_INIT_PAGE

	heapInsert    = 0x00 // XLOG_HEAP_INSERT
	heapDelete    = 0x10 // XLOG_HEAP_DELETE
	heapUpdate    = 0x20 // XLOG_HEAP_UPDATE
	heapTruncate  = 0x30 // XLOG_HEAP_TRUNCATE (11+), logical decoding only
	heapHotUpdate = 0x40 // XLOG_HEAP_HOT_UPDATE
	heapConfirm   = 0x50 // XLOG_HEAP_CONFIRM
	heapLock      = 0x60 // XLOG_HEAP_LOCK
	heapInplace   = 0x70 // XLOG_HEAP_INPLACE

	heap2Rewrite     = 0x00 // XLOG_HEAP2_REWRITE
	heap2Prune       = 0x10 // CLEAN (10-13), PRUNE (14-16), PRUNE_ON_ACCESS (17+)
	heap2Vacuum      = 0x20 // FREEZE_PAGE (10-13), VACUUM (14-16), PRUNE_VACUUM_SCAN (17+)
	heap2Freeze      = 0x30 // CLEANUP_INFO (10-13), FREEZE_PAGE (14-16), PRUNE_VACUUM_CLEANUP (17+)
	heap2Visible     = 0x40 // XLOG_HEAP2_VISIBLE
	heap2MultiInsert = 0x50 // XLOG_HEAP2_MULTI_INSERT
	heap2LockUpdated = 0x60 // XLOG_HEAP2_LOCK_UPDATED
	heap2NewCID      = 0x70 // XLOG_HEAP2_NEW_CID

	xlogFPIForHint = 0xA0 // XLOG_FPI_FOR_HINT
	xlogFPI        = 0xB0 // XLOG_FPI
)

// XLH_* and XLHL_* flags (heapam_xlog.h; the same bits in 10 to 18, a bit
// unused by a version is never set by it).
const (
	xlhInsertAllVisibleCleared = 1 << 0 // XLH_INSERT_ALL_VISIBLE_CLEARED
	xlhInsertAllFrozenSet      = 1 << 5 // XLH_INSERT_ALL_FROZEN_SET (14+)

	xlhUpdateOldAllVisibleCleared = 1 << 0 // XLH_UPDATE_OLD_ALL_VISIBLE_CLEARED
	xlhUpdateNewAllVisibleCleared = 1 << 1 // XLH_UPDATE_NEW_ALL_VISIBLE_CLEARED
	xlhUpdatePrefixFromOld        = 1 << 5 // XLH_UPDATE_PREFIX_FROM_OLD
	xlhUpdateSuffixFromOld        = 1 << 6 // XLH_UPDATE_SUFFIX_FROM_OLD

	xlhDeleteAllVisibleCleared = 1 << 0 // XLH_DELETE_ALL_VISIBLE_CLEARED
	xlhDeleteIsSuper           = 1 << 3 // XLH_DELETE_IS_SUPER
	xlhDeleteIsPartitionMove   = 1 << 4 // XLH_DELETE_IS_PARTITION_MOVE (11+)

	xlhLockAllFrozenCleared = 0x01 // XLH_LOCK_ALL_FROZEN_CLEARED

	xlhlXmaxIsMulti    = 0x01 // XLHL_XMAX_IS_MULTI
	xlhlXmaxLockOnly   = 0x02 // XLHL_XMAX_LOCK_ONLY
	xlhlXmaxExclLock   = 0x04 // XLHL_XMAX_EXCL_LOCK
	xlhlXmaxKeyshrLock = 0x08 // XLHL_XMAX_KEYSHR_LOCK
	xlhlKeysUpdated    = 0x10 // XLHL_KEYS_UPDATED

	xlhFreezeXvac  = 0x02 // XLH_FREEZE_XVAC
	xlhInvalidXvac = 0x04 // XLH_INVALID_XVAC

	xlhpCleanupLock     = 1 << 2 // XLHP_CLEANUP_LOCK (17+)
	xlhpHasHorizon      = 1 << 3 // XLHP_HAS_CONFLICT_HORIZON
	xlhpHasFreezePlans  = 1 << 4 // XLHP_HAS_FREEZE_PLANS
	xlhpHasRedirections = 1 << 5 // XLHP_HAS_REDIRECTIONS
	xlhpHasDead         = 1 << 6 // XLHP_HAS_DEAD_ITEMS
	xlhpHasUnused       = 1 << 7 // XLHP_HAS_NOW_UNUSED_ITEMS

	vmAllVisible = 0x01 // VISIBILITYMAP_ALL_VISIBLE
	vmAllFrozen  = 0x02 // VISIBILITYMAP_ALL_FROZEN
	vmValidBits  = 0x03 // VISIBILITYMAP_VALID_BITS
)

// Record payload sizes (heapam_xlog.h's SizeOf* macros).
const (
	sizeOfHeapInsert      = 3  // xl_heap_insert: offnum u16, flags u8
	sizeOfHeapDelete      = 8  // xl_heap_delete: xmax u32, offnum u16, infobits_set u8, flags u8
	sizeOfHeapUpdate      = 14 // xl_heap_update: old_xmax, old_offnum, old_infobits_set, flags, new_xmax, new_offnum
	sizeOfHeapConfirm     = 2  // xl_heap_confirm: offnum u16
	sizeOfHeapLock        = 8  // xl_heap_lock / xl_heap_lock_updated: xmax u32, offnum u16, infobits_set u8, flags u8
	sizeOfHeapInplace     = 2  // xl_heap_inplace: offnum u16 (18 adds invalidations after it)
	sizeOfHeapMultiInsert = 4  // xl_heap_multi_insert: flags u8, (pad), ntuples u16, offsets[]
	sizeOfHeapVisible     = 5  // xl_heap_visible: cutoff_xid u32, flags u8
	sizeOfHeapClean       = 8  // xl_heap_clean (10-13), xl_heap_prune (14-16): xid u32, nredirected u16, ndead u16
	sizeOfHeapVacuum      = 2  // xl_heap_vacuum (14-16): nunused u16
	sizeOfHeapFreezePage  = 6  // xl_heap_freeze_page: cutoff_xid u32, ntuples u16 (10-15); xid, nplans (16)
	sizeOfHeapPrune17     = 2  // xl_heap_prune (17+): reason u8, flags u8 [, conflict horizon u32]
	sizeOfHeapHeader      = 5  // xl_heap_header: t_infomask2 u16, t_infomask u16, t_hoff u8
	sizeOfMultiInsertTup  = 7  // xl_multi_insert_tuple: datalen u16, t_infomask2, t_infomask, t_hoff u8
	sizeOfFreezeTuple     = 12 // xl_heap_freeze_tuple (10-15): xmax u32, offset u16, t_infomask2, t_infomask, frzflags u8 (+pad)
)

// Redo applies block reference blockID of the decoded Heap, Heap2 or XLOG
// record rec to pg (len(pg) = BLCKSZ), as the redo of the PostgreSQL version
// that wrote it does: heap_xlog_* in src/backend/access/heap/heapam.c (10 to
// 16) or heapam_xlog.c (17 and later), and xlog_redo's FPI and FPI_FOR_HINT.
// pg holds the block as it was (all zeros for a block that does not exist
// yet).
//
// A block image the server applies (BlockRef.Apply) replaces the page through
// dec (which decompresses it and fills its hole) whatever the record, and is
// the whole redo of that block (Restored). An image without Apply (for
// wal_consistency_checking only) is ignored. Otherwise, when the page LSN is
// at or past the record's end, the page is left alone (Skipped); else the
// change is made and the page LSN set to the record's end (Applied).
//
// Blocks of the visibility map fork (VISIBLE's block 0; the map pages
// 18.6's heap records register) get visibilitymap_set / _clear_locked.
// Record types that change no page (Heap TRUNCATE, Heap2 NEW_CID, REWRITE,
// CLEANUP_INFO) carry no block reference, so Redo is never asked for them.
//
// An error wraps ErrRedo and names the record's LSN and type, the block and
// the reason; pg may then be partly changed, as a server would PANIC there.
// Redo never panics and never writes outside pg.
//
// Not knowable from the record: the server also sets the page LSN of a heap
// page VISIBLE marks all-visible when checksums or wal_log_hints are on;
// Redo does so when the page carries a checksum (pd_checksum != 0), which a
// page of a cluster without checksums never does. heap_mask masks the LSN.
func Redo(rec *decode.Record, blockID uint8, pg []byte, dec *decode.Decoder) (Outcome, error) {
	r := redoer{rec: rec, p: page(pg)}
	r.b = rec.Block(blockID)
	if r.b == nil {
		return 0, r.fail(blockID, nil, "the record has no block reference %d", blockID)
	}
	if n := len(pg); n < 1024 || n > 32768 || n&(n-1) != 0 {
		return 0, r.fail(blockID, nil, "page of %d bytes: BLCKSZ is a power of 2 from 1 kB to 32 kB", n)
	}
	r.lsn = uint64(rec.EndLSN)
	if r.b.HasImage && r.b.Apply {
		return r.restore(dec)
	}
	switch rec.Header.Rmid {
	case xlog.RmgrHeap:
		return r.heap()
	case xlog.RmgrHeap2:
		return r.heap2()
	case xlog.RmgrXLOG:
		if t := rec.Header.Info & 0xF0; t == xlogFPI || t == xlogFPIForHint {
			// xlog_redo: an FPI record's blocks must all restore.
			return 0, r.fail(blockID, nil, "XLOG FPI record did not contain a full-page image to apply")
		}
	}
	return 0, r.fail(blockID, ErrUnsupported, "no heap redo for this record type and block")
}

// redoer is one Redo call.
type redoer struct {
	rec *decode.Record
	b   *decode.BlockRef
	p   page
	lsn uint64 // the record's EndRecPtr: redo's "lsn"
}

func (r *redoer) fail(blockID uint8, cause error, format string, args ...any) error {
	e := &RedoError{LSN: r.rec.LSN, BlockID: blockID, Reason: fmt.Sprintf(format, args...), Err: cause}
	e.Type = rmgr.Name(r.rec.Header.Rmid) + "/" + string(rmgr.AppendRecordType(nil, r.rec.Version, r.rec.Header.Rmid, r.rec.Header.Info))
	if r.b != nil {
		e.Rel, e.Fork, e.Block = r.b.Rel, r.b.Fork(), r.b.Block
	}
	return e
}

func (r *redoer) failf(format string, args ...any) error {
	return r.fail(r.b.ID, nil, format, args...)
}

// restore is RestoreBlockImage plus what XLogReadBufferForRedoExtended does
// after it: the page LSN becomes the record's end unless the image is of a
// new page.
func (r *redoer) restore(dec *decode.Decoder) (Outcome, error) {
	if dec == nil {
		return 0, r.failf("a block image to restore and no decoder")
	}
	if dec.BlockSize != len(r.p) {
		return 0, r.failf("decoder BLCKSZ %d for a page of %d bytes", dec.BlockSize, len(r.p))
	}
	// A full slice expression: the image can only land in the page itself.
	out, err := dec.AppendPage(r.p[:0:len(r.p)], r.rec, r.b)
	if err != nil {
		return 0, r.fail(r.b.ID, err, "%v", err)
	}
	if len(out) != len(r.p) {
		return 0, r.failf("image restored to %d bytes, want %d", len(out), len(r.p))
	}
	if &out[0] != &r.p[0] {
		copy(r.p, out)
	}
	if !r.p.isNew() {
		r.p.setLSN(r.lsn)
	}
	return Restored, nil
}

// action is XLogReadBufferForRedo's answer for a page that exists (mode
// RBM_NORMAL): NotFound for a new page, Skipped when the page is already at
// or past the record, else Applied (BLK_NEEDS_REDO).
func (r *redoer) action() Outcome {
	if r.p.isNew() {
		return NotFound
	}
	if r.lsn <= r.p.lsn() {
		return Skipped
	}
	return Applied
}

// done ends a redo that changed the page: PageSetLSN.
func (r *redoer) done() (Outcome, error) {
	r.p.setLSN(r.lsn)
	return Applied, nil
}

func (r *redoer) mainData(n int) error {
	if len(r.rec.MainData) < n {
		return r.failf("main data of %d bytes, want at least %d", len(r.rec.MainData), n)
	}
	return nil
}

func (r *redoer) forkIs(f decode.ForkNumber) bool { return r.b.Fork() == f }

func le16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// heap is heap_redo.
func (r *redoer) heap() (Outcome, error) {
	info := r.rec.Header.Info
	if r.forkIs(decode.ForkVisibilityMap) {
		return r.vmClearForHeapRecord()
	}
	if !r.forkIs(decode.ForkMain) {
		return 0, r.fail(r.b.ID, ErrUnsupported, "heap record on fork %s", r.b.Fork().Name())
	}
	switch info & opMask {
	case heapInsert:
		return r.insert(info&initPage != 0)
	case heapDelete:
		return r.delete()
	case heapUpdate:
		return r.update(false)
	case heapHotUpdate:
		return r.update(true)
	case heapConfirm:
		return r.confirm()
	case heapLock:
		return r.lock(false)
	case heapInplace:
		return r.inplace()
	}
	return 0, r.fail(r.b.ID, ErrUnsupported, "Heap record type 0x%02X changes no heap page", info&0xF0)
}

// heap2 is heap2_redo.
func (r *redoer) heap2() (Outcome, error) {
	info := r.rec.Header.Info
	op := info & opMask
	v := r.rec.Version
	if r.forkIs(decode.ForkVisibilityMap) {
		switch op {
		case heap2Visible:
			return r.visibleVM()
		case heap2MultiInsert, heap2LockUpdated:
			return r.vmClearForHeapRecord()
		}
		return 0, r.fail(r.b.ID, ErrUnsupported, "no visibility map redo for Heap2 type 0x%02X", info&0xF0)
	}
	if !r.forkIs(decode.ForkMain) {
		return 0, r.fail(r.b.ID, ErrUnsupported, "heap record on fork %s", r.b.Fork().Name())
	}
	switch op {
	case heap2Prune, heap2Vacuum, heap2Freeze:
		switch {
		case v >= xlog.V17:
			return r.pruneFreeze17()
		case op == heap2Prune:
			return r.prune() // CLEAN 10-13, PRUNE 14-16
		case v >= xlog.V14 && op == heap2Vacuum:
			return r.vacuum()
		case v <= xlog.V13 && op == heap2Vacuum, v >= xlog.V14 && op == heap2Freeze:
			if v == xlog.V16 {
				return r.freezePlans16()
			}
			return r.freezeTuples()
		}
		// CLEANUP_INFO (10-13) has no block reference.
	case heap2Visible:
		return r.visibleHeap()
	case heap2MultiInsert:
		return r.multiInsert(info&initPage != 0)
	case heap2LockUpdated:
		return r.lock(true)
	}
	return 0, r.fail(r.b.ID, ErrUnsupported, "Heap2 record type 0x%02X changes no heap page", info&0xF0)
}

// item returns the normal line pointer off's tuple: its offset and length,
// checked to hold a whole tuple header inside the page ("invalid lp"
// otherwise, as the server says before it PANICs).
func (r *redoer) item(off int) (int, int, error) {
	if off < 1 || off > r.p.maxOffset() {
		return 0, 0, r.failf("invalid lp: offset %d, page has %d", off, r.p.maxOffset())
	}
	lpOff, flags, lpLen := r.p.itemID(off)
	if flags != LPNormal {
		return 0, 0, r.failf("invalid lp: offset %d is not LP_NORMAL (flags %d)", off, flags)
	}
	if lpLen < SizeofHeapTupleHeader || lpOff+lpLen > len(r.p) {
		return 0, 0, r.failf("invalid lp: offset %d: tuple at %d of %d bytes", off, lpOff, lpLen)
	}
	return lpOff, lpLen, nil
}

// fixInfomaskFromInfobits is fix_infomask_from_infobits.
func fixInfomaskFromInfobits(infobits uint8, infomask, infomask2 uint16) (uint16, uint16) {
	infomask &^= HeapXmaxIsMulti | HeapXmaxLockOnly | HeapXmaxKeyshrLock | HeapXmaxExclLock
	infomask2 &^= HeapKeysUpdated
	if infobits&xlhlXmaxIsMulti != 0 {
		infomask |= HeapXmaxIsMulti
	}
	if infobits&xlhlXmaxLockOnly != 0 {
		infomask |= HeapXmaxLockOnly
	}
	if infobits&xlhlXmaxExclLock != 0 {
		infomask |= HeapXmaxExclLock
	}
	if infobits&xlhlXmaxKeyshrLock != 0 {
		infomask |= HeapXmaxKeyshrLock
	}
	if infobits&xlhlKeysUpdated != 0 {
		infomask2 |= HeapKeysUpdated
	}
	return infomask, infomask2
}

// setCtid is ItemPointerSet on the tuple at t.
func (p page) setCtid(t int, blk uint32, off uint16) {
	p.put16(t+tupCtid, uint16(blk>>16))
	p.put16(t+tupCtid+2, uint16(blk))
	p.put16(t+tupCtid+4, off)
}

// markXmax is what DELETE, UPDATE (old tuple), LOCK and LOCK_UPDATED do to
// a tuple's infomask: xmax bits and HEAP_MOVED cleared, HEAP_KEYS_UPDATED
// cleared, then fix_infomask_from_infobits. hot is -1 to clear
// HEAP_HOT_UPDATED, 1 to set it, 0 to leave it.
func (p page) markXmax(t int, infobits uint8, hot int) {
	im, im2 := p.u16(t+tupInfomask), p.u16(t+tupInfomask2)
	im &^= heapXmaxBits | HeapMoved
	im2 &^= HeapKeysUpdated
	switch hot {
	case -1:
		im2 &^= HeapHotUpdated
	case 1:
		im2 |= HeapHotUpdated
	}
	im, im2 = fixInfomaskFromInfobits(infobits, im, im2)
	p.put16(t+tupInfomask, im)
	p.put16(t+tupInfomask2, im2)
}

// setCmaxFirst is HeapTupleHeaderSetCmax(htup, FirstCommandId, false).
func (p page) setCmaxFirst(t int) {
	p.put32(t+tupField3, 0)
	p.put16(t+tupInfomask, p.u16(t+tupInfomask)&^HeapComboCID)
}

// targetTuple is the start of the redos that change one tuple in place:
// main data of at least size bytes whose OffsetNumber at offAt names the
// tuple; when the page needs redo (Applied), the tuple's offset and length.
func (r *redoer) targetTuple(size, offAt int) (offnum, t, n int, a Outcome, err error) {
	if err = r.mainData(size); err != nil {
		return
	}
	offnum = int(le16(r.rec.MainData, offAt))
	if a = r.action(); a != Applied {
		return
	}
	t, n, err = r.item(offnum)
	return
}

// delete is heap_xlog_delete.
func (r *redoer) delete() (Outcome, error) {
	offnum, t, _, a, err := r.targetTuple(sizeOfHeapDelete, 4)
	if err != nil || a != Applied {
		return a, err
	}
	md := r.rec.MainData
	xmax, infobits, flags := le32(md, 0), md[6], md[7]
	p := r.p
	p.markXmax(t, infobits, -1)
	if flags&xlhDeleteIsSuper == 0 {
		p.put32(t+tupXmax, xmax)
	} else {
		p.put32(t+tupXmin, 0)
	}
	p.setCmaxFirst(t)
	p.setPrunable(uint32(r.rec.Header.XID))
	if flags&xlhDeleteAllVisibleCleared != 0 {
		p.clearFlag(PageAllVisible)
	}
	if flags&xlhDeleteIsPartitionMove != 0 && r.rec.Version >= xlog.V11 {
		p.setCtid(t, invalidBlockNumber, movedPartitionsOffsetNumber)
	} else {
		p.setCtid(t, r.b.Block, uint16(offnum))
	}
	return r.done()
}

// initOrRead is the start of a redo that may initialize the page
// (XLOG_HEAP_INIT_PAGE: XLogInitBufferForRedo and PageInit, always redone).
func (r *redoer) initOrRead(init bool) Outcome {
	if init {
		r.p.init()
		return Applied
	}
	return r.action()
}

// newTuple writes a tuple made by redo at offnum: a zeroed header with the
// given infomask2, infomask, t_hoff, t_xmin = the record's xid, t_cid =
// FirstCommandId, t_xmax = xmax and t_ctid = (this block, offnum), then the
// parts of its bitmap and data in turn (PageAddItem with overwrite).
func (r *redoer) newTuple(offnum int, infomask2, infomask uint16, hoff uint8, xmax uint32, parts ...[]byte) error {
	if r.p.maxOffset()+1 < offnum {
		return r.failf("invalid max offset number: %d for a page of %d", offnum, r.p.maxOffset())
	}
	size := SizeofHeapTupleHeader
	for _, b := range parts {
		size += len(b)
	}
	if size > len(r.p) {
		return r.failf("tuple of %d bytes", size)
	}
	t, err := r.p.addItem(size, offnum)
	if err != nil {
		return r.failf("failed to add tuple: %v", err)
	}
	p := r.p
	clear(p[t : t+SizeofHeapTupleHeader])
	p.put32(t+tupXmin, uint32(r.rec.Header.XID))
	p.put32(t+tupXmax, xmax)
	p.setCtid(t, r.b.Block, uint16(offnum))
	p.put16(t+tupInfomask2, infomask2)
	p.put16(t+tupInfomask, infomask&^HeapComboCID) // HeapTupleHeaderSetCmin
	p[t+tupHoff] = hoff
	at := t + SizeofHeapTupleHeader
	for _, b := range parts {
		at += copy(p[at:], b)
	}
	return nil
}

// insert is heap_xlog_insert.
func (r *redoer) insert(init bool) (Outcome, error) {
	if err := r.mainData(sizeOfHeapInsert); err != nil {
		return 0, err
	}
	md := r.rec.MainData
	offnum, flags := int(le16(md, 0)), md[2]
	if a := r.initOrRead(init); a != Applied {
		return a, nil
	}
	data := r.b.Data
	if len(data) <= sizeOfHeapHeader {
		return 0, r.failf("tuple data of %d bytes", len(data))
	}
	if err := r.newTuple(offnum, le16(data, 0), le16(data, 2), data[4], 0, data[sizeOfHeapHeader:]); err != nil {
		return 0, err
	}
	if flags&xlhInsertAllVisibleCleared != 0 {
		r.p.clearFlag(PageAllVisible)
	}
	return r.done()
}

// multiInsert is heap_xlog_multi_insert.
func (r *redoer) multiInsert(init bool) (Outcome, error) {
	if err := r.mainData(sizeOfHeapMultiInsert); err != nil {
		return 0, err
	}
	md := r.rec.MainData
	flags, ntuples := md[0], int(le16(md, 2))
	if !init {
		if err := r.mainData(sizeOfHeapMultiInsert + 2*ntuples); err != nil {
			return 0, err
		}
	}
	if a := r.initOrRead(init); a != Applied {
		return a, nil
	}
	data := r.b.Data
	cur := 0
	for i := range ntuples {
		offnum := 1 + i
		if !init {
			offnum = int(le16(md, sizeOfHeapMultiInsert+2*i))
		}
		cur += cur & 1 // SHORTALIGN
		if cur+sizeOfMultiInsertTup > len(data) {
			return 0, r.failf("tuple %d of %d: data ends at %d", i+1, ntuples, len(data))
		}
		h := data[cur:]
		datalen := int(le16(h, 0))
		cur += sizeOfMultiInsertTup
		if cur+datalen > len(data) {
			return 0, r.failf("tuple %d of %d: %d bytes past the data's %d", i+1, ntuples, cur+datalen, len(data))
		}
		if err := r.newTuple(offnum, le16(h, 2), le16(h, 4), h[6], 0, data[cur:cur+datalen]); err != nil {
			return 0, err
		}
		cur += datalen
	}
	if cur != len(data) {
		return 0, r.failf("total tuple length mismatch: %d of %d bytes used", cur, len(data))
	}
	if flags&xlhInsertAllVisibleCleared != 0 {
		r.p.clearFlag(PageAllVisible)
	}
	if flags&xlhInsertAllFrozenSet != 0 && r.rec.Version >= xlog.V14 {
		r.p.setFlag(PageAllVisible)
	}
	return r.done()
}

// update is heap_xlog_update for this block: the old tuple's page (block 1,
// or block 0 when both tuples are on one page) and the new tuple's (block 0).
func (r *redoer) update(hot bool) (Outcome, error) {
	if err := r.mainData(sizeOfHeapUpdate); err != nil {
		return 0, err
	}
	md := r.rec.MainData
	oldXmax, oldOff, infobits, flags := le32(md, 0), int(le16(md, 4)), md[6], md[7]
	newXmax, newOff := le32(md, 8), int(le16(md, 12))
	b0 := r.rec.Block(0)
	if b0 == nil {
		return 0, r.failf("update without block reference 0")
	}
	var b1 *decode.BlockRef
	if b := r.rec.Block(1); b != nil && b.Fork() == decode.ForkMain {
		b1 = b // 18.6's map pages are blocks 2 and 3
	}
	samePage := b1 == nil
	isOld := r.b.ID == 1 || samePage
	isNew := r.b.ID == 0
	if !isOld && !isNew {
		return 0, r.fail(r.b.ID, ErrUnsupported, "block reference %d of an update is not a heap page", r.b.ID)
	}
	newBlk := b0.Block
	var oldT, oldLen int
	action := Applied
	if isOld {
		action = r.action()
		if action == Applied {
			t, n, err := r.item(oldOff)
			if err != nil {
				return 0, err
			}
			oldT, oldLen = t, n
			hotFlag := -1
			if hot {
				hotFlag = 1
			}
			p := r.p
			p.markXmax(t, infobits, hotFlag)
			p.put32(t+tupXmax, oldXmax)
			p.setCmaxFirst(t)
			p.setCtid(t, newBlk, uint16(newOff))
			p.setPrunable(uint32(r.rec.Header.XID))
			if flags&xlhUpdateOldAllVisibleCleared != 0 {
				p.clearFlag(PageAllVisible)
			}
			p.setLSN(r.lsn)
		}
		if !isNew {
			return action, nil
		}
	} else {
		action = r.initOrRead(r.rec.Header.Info&initPage != 0)
	}
	if action != Applied {
		return action, nil
	}
	// The new tuple.
	data := r.b.Data
	cur := 0
	prefix, suffix := 0, 0
	if flags&(xlhUpdatePrefixFromOld|xlhUpdateSuffixFromOld) != 0 && !samePage {
		return 0, r.failf("prefix or suffix from an old tuple on another page")
	}
	if flags&xlhUpdatePrefixFromOld != 0 {
		if len(data) < cur+2 {
			return 0, r.failf("update data of %d bytes", len(data))
		}
		prefix = int(le16(data, cur))
		cur += 2
	}
	if flags&xlhUpdateSuffixFromOld != 0 {
		if len(data) < cur+2 {
			return 0, r.failf("update data of %d bytes", len(data))
		}
		suffix = int(le16(data, cur))
		cur += 2
	}
	if len(data) < cur+sizeOfHeapHeader {
		return 0, r.failf("update data of %d bytes", len(data))
	}
	infomask2, infomask, hoff := le16(data, cur), le16(data, cur+2), data[cur+4]
	cur += sizeOfHeapHeader
	rest := data[cur:]
	var parts [4][]byte
	n := 0
	if prefix > 0 || suffix > 0 {
		oldHoff := int(r.p[oldT+tupHoff])
		if oldHoff+prefix > oldLen || suffix > oldLen {
			return 0, r.failf("prefix %d and suffix %d of an old tuple of %d bytes (t_hoff %d)", prefix, suffix, oldLen, oldHoff)
		}
		if prefix > 0 {
			// bitmap [+ padding] [+ oid] from the record, the prefix from the
			// old tuple, then the rest of the record.
			bm := int(hoff) - SizeofHeapTupleHeader
			if bm < 0 || bm > len(rest) {
				return 0, r.failf("t_hoff %d with %d bytes of tuple data", hoff, len(rest))
			}
			parts[0], parts[1], parts[2] = rest[:bm], r.p[oldT+oldHoff:oldT+oldHoff+prefix], rest[bm:]
			n = 3
		} else {
			parts[0] = rest
			n = 1
		}
		if suffix > 0 {
			parts[n] = r.p[oldT+oldLen-suffix : oldT+oldLen]
			n++
		}
	} else {
		parts[0] = rest
		n = 1
	}
	// The old tuple's bytes are read before the new one is placed below
	// pd_upper, where they cannot be.
	if err := r.newTuple(newOff, infomask2, infomask, hoff, newXmax, parts[:n]...); err != nil {
		return 0, err
	}
	if flags&xlhUpdateNewAllVisibleCleared != 0 {
		r.p.clearFlag(PageAllVisible)
	}
	return r.done()
}

// confirm is heap_xlog_confirm.
func (r *redoer) confirm() (Outcome, error) {
	offnum, t, _, a, err := r.targetTuple(sizeOfHeapConfirm, 0)
	if err != nil || a != Applied {
		return a, err
	}
	r.p.setCtid(t, r.b.Block, uint16(offnum))
	return r.done()
}

// lock is heap_xlog_lock, or heap_xlog_lock_updated when updated.
func (r *redoer) lock(updated bool) (Outcome, error) {
	offnum, t, _, a, err := r.targetTuple(sizeOfHeapLock, 4)
	if err != nil || a != Applied {
		return a, err
	}
	md := r.rec.MainData
	xmax, infobits := le32(md, 0), md[6]
	p := r.p
	p.markXmax(t, infobits, 0)
	if !updated {
		// HEAP_XMAX_IS_LOCKED_ONLY: no update, so no HOT chain and no
		// forward link.
		im := p.u16(t + tupInfomask)
		if im&HeapXmaxLockOnly != 0 || im&(HeapXmaxIsMulti|heapLockMask) == HeapXmaxExclLock {
			p.put16(t+tupInfomask2, p.u16(t+tupInfomask2)&^HeapHotUpdated)
			p.setCtid(t, r.b.Block, uint16(offnum))
		}
	}
	p.put32(t+tupXmax, xmax)
	if !updated {
		p.setCmaxFirst(t)
	}
	return r.done()
}

// inplace is heap_xlog_inplace: the tuple's data after t_hoff replaced by
// block 0's data, of the same length.
func (r *redoer) inplace() (Outcome, error) {
	_, t, n, a, err := r.targetTuple(sizeOfHeapInplace, 0)
	if err != nil || a != Applied {
		return a, err
	}
	hoff := int(r.p[t+tupHoff])
	if hoff > n || n-hoff != len(r.b.Data) {
		return 0, r.failf("wrong tuple length: %d bytes after t_hoff, %d in the record", n-hoff, len(r.b.Data))
	}
	copy(r.p[t+hoff:t+n], r.b.Data)
	return r.done()
}

// offsets reads count OffsetNumbers at off in b, failing when b is short.
func (r *redoer) offsets(b []byte, off, count int, what string) ([]byte, error) {
	if count < 0 || off < 0 || off+2*count > len(b) {
		return nil, r.failf("%d %s offsets at %d: the data has %d bytes", count, what, off, len(b))
	}
	return b[off : off+2*count], nil
}

// pruneExecute is heap_page_prune_execute: redirects, dead and unused line
// pointers set, then PageRepairFragmentation, or (17+, VACUUM's second pass,
// without a cleanup lock) only PageTruncateLinePointerArray.
func (r *redoer) pruneExecute(redirected, dead, unused []byte, truncateOnly bool) error {
	p := r.p
	maxoff := p.maxOffset()
	check := func(off int) error {
		if off < 1 || off > maxoff {
			return r.failf("line pointer %d outside the page's %d", off, maxoff)
		}
		return nil
	}
	for i := 0; i+4 <= len(redirected); i += 4 {
		from, to := int(le16(redirected, i)), int(le16(redirected, i+2))
		if err := check(from); err != nil {
			return err
		}
		p.setItemID(from, to, LPRedirect, 0) // ItemIdSetRedirect
	}
	for i := 0; i+2 <= len(dead); i += 2 {
		off := int(le16(dead, i))
		if err := check(off); err != nil {
			return err
		}
		p.setItemID(off, 0, LPDead, 0) // ItemIdSetDead
	}
	for i := 0; i+2 <= len(unused); i += 2 {
		off := int(le16(unused, i))
		if err := check(off); err != nil {
			return err
		}
		p.setItemID(off, 0, LPUnused, 0) // ItemIdSetUnused
	}
	if truncateOnly {
		p.truncateLinePointerArray()
		return nil
	}
	if err := p.repairFragmentation(r.rec.Version); err != nil {
		return r.failf("%v", err)
	}
	return nil
}

// prune is heap_xlog_clean (10-13) and heap_xlog_prune (14-16): block 0
// holds the redirected pairs, the dead offsets, then the unused ones to its
// end.
func (r *redoer) prune() (Outcome, error) {
	if err := r.mainData(sizeOfHeapClean); err != nil {
		return 0, err
	}
	md := r.rec.MainData
	nredirected, ndead := int(le16(md, 4)), int(le16(md, 6))
	if a := r.action(); a != Applied {
		return a, nil
	}
	data := r.b.Data
	redirected, err := r.offsets(data, 0, 2*nredirected, "redirected")
	if err != nil {
		return 0, err
	}
	dead, err := r.offsets(data, 4*nredirected, ndead, "dead")
	if err != nil {
		return 0, err
	}
	unused := data[4*nredirected+2*ndead:]
	if err := r.pruneExecute(redirected, dead, unused, false); err != nil {
		return 0, err
	}
	return r.done()
}

// vacuum is heap_xlog_vacuum (14-16): the dead line pointers of block 0's
// list become unused and the array is truncated.
func (r *redoer) vacuum() (Outcome, error) {
	if err := r.mainData(sizeOfHeapVacuum); err != nil {
		return 0, err
	}
	nunused := int(le16(r.rec.MainData, 0))
	if a := r.action(); a != Applied {
		return a, nil
	}
	unused, err := r.offsets(r.b.Data, 0, nunused, "unused")
	if err != nil {
		return 0, err
	}
	if !r.p.pointersValid() {
		// (PostgreSQL trusts the page here; a damaged one is refused as
		// PageAddItemExtended and PageRepairFragmentation refuse it)
		return 0, r.failf("%v", r.p.corruptPointers())
	}
	maxoff := r.p.maxOffset()
	for i := 0; i+2 <= len(unused); i += 2 {
		off := int(le16(unused, i))
		if off < 1 || off > maxoff {
			return 0, r.failf("line pointer %d outside the page's %d", off, maxoff)
		}
		r.p.setItemID(off, 0, LPUnused, 0)
	}
	r.p.truncateLinePointerArray()
	return r.done()
}

// freezeTuple is heap_execute_freeze_tuple on the tuple of line pointer off.
func (r *redoer) freezeTuple(off int, xmax uint32, infomask2, infomask uint16, frzflags uint8) error {
	if off < 1 || off > r.p.maxOffset() {
		return r.failf("freeze of line pointer %d outside the page's %d", off, r.p.maxOffset())
	}
	// PageGetItem does not look at lp_flags.
	t, _, n := r.p.itemID(off)
	if t+SizeofHeapTupleHeader > len(r.p) || n < SizeofHeapTupleHeader {
		return r.failf("freeze of line pointer %d: tuple at %d of %d bytes", off, t, n)
	}
	p := r.p
	p.put32(t+tupXmax, xmax)
	if frzflags&xlhFreezeXvac != 0 {
		p.put32(t+tupField3, frozenTransactionID)
	}
	if frzflags&xlhInvalidXvac != 0 {
		p.put32(t+tupField3, 0)
	}
	p.put16(t+tupInfomask, infomask)
	p.put16(t+tupInfomask2, infomask2)
	return nil
}

// freezeTuples is heap_xlog_freeze_page of 10 to 15: block 0 holds ntuples
// xl_heap_freeze_tuple.
func (r *redoer) freezeTuples() (Outcome, error) {
	if err := r.mainData(sizeOfHeapFreezePage); err != nil {
		return 0, err
	}
	ntuples := int(le16(r.rec.MainData, 4))
	if a := r.action(); a != Applied {
		return a, nil
	}
	data := r.b.Data
	if ntuples*sizeOfFreezeTuple > len(data) {
		return 0, r.failf("%d frozen tuples in %d bytes", ntuples, len(data))
	}
	for i := range ntuples {
		f := data[i*sizeOfFreezeTuple:]
		if err := r.freezeTuple(int(le16(f, 4)), le32(f, 0), le16(f, 6), le16(f, 8), f[10]); err != nil {
			return 0, err
		}
	}
	return r.done()
}

// executePlans runs freeze plans (xl_heap_freeze_plan, xlhp_freeze_plan):
// each plan's ntuples offsets come from offsets in turn. It returns the
// bytes of offsets used.
func (r *redoer) executePlans(plans []byte, nplans int, offsets []byte) (int, error) {
	if nplans*rmgr.HeapFreezePlanSize > len(plans) {
		return 0, r.failf("%d freeze plans in %d bytes", nplans, len(plans))
	}
	used := 0
	for i := range nplans {
		pl := plans[i*rmgr.HeapFreezePlanSize:]
		ntuples := int(le16(pl, 10))
		if used+2*ntuples > len(offsets) {
			return 0, r.failf("freeze plan %d: %d offsets past the data", i+1, ntuples)
		}
		for j := range ntuples {
			off := int(le16(offsets, used+2*j))
			if err := r.freezeTuple(off, le32(pl, 0), le16(pl, 4), le16(pl, 6), pl[8]); err != nil {
				return 0, err
			}
		}
		used += 2 * ntuples
	}
	return used, nil
}

// freezePlans16 is heap_xlog_freeze_page of 16: block 0 holds nplans
// xl_heap_freeze_plan, then the offsets of every plan in turn.
func (r *redoer) freezePlans16() (Outcome, error) {
	if err := r.mainData(sizeOfHeapFreezePage); err != nil {
		return 0, err
	}
	nplans := int(le16(r.rec.MainData, 4))
	if a := r.action(); a != Applied {
		return a, nil
	}
	data := r.b.Data
	size := nplans * rmgr.HeapFreezePlanSize
	if size > len(data) {
		return 0, r.failf("%d freeze plans in %d bytes", nplans, len(data))
	}
	if _, err := r.executePlans(data[:size], nplans, data[size:]); err != nil {
		return 0, err
	}
	return r.done()
}

// pruneFreeze17 is heap_xlog_prune_freeze (17+): one record for pruning,
// freezing and VACUUM's second pass, its parts in block 0
// (heap_xlog_deserialize_prune_and_freeze).
func (r *redoer) pruneFreeze17() (Outcome, error) {
	if err := r.mainData(sizeOfHeapPrune17); err != nil {
		return 0, err
	}
	flags := r.rec.MainData[1]
	if a := r.action(); a != Applied {
		return a, nil
	}
	it := rmgr.HeapDeserializePrune(r.b.Data, flags)
	if len(it.Plans) != it.NPlans*rmgr.HeapFreezePlanSize || len(it.Redirected) != 4*it.NRedirected ||
		len(it.Dead) != 2*it.NDead || len(it.Unused) != 2*it.NUnused {
		return 0, r.failf("prune data of %d bytes is shorter than its counts (%d plans, %d redirected, %d dead, %d unused)",
			len(r.b.Data), it.NPlans, it.NRedirected, it.NDead, it.NUnused)
	}
	if it.NRedirected > 0 || it.NDead > 0 || it.NUnused > 0 {
		if err := r.pruneExecute(it.Redirected, it.Dead, it.Unused, flags&xlhpCleanupLock == 0); err != nil {
			return 0, err
		}
	}
	used, err := r.executePlans(it.Plans, it.NPlans, it.FreezeOffsets)
	if err != nil {
		return 0, err
	}
	if used != len(it.FreezeOffsets) {
		return 0, r.failf("%d bytes left after the freeze plans' offsets", len(it.FreezeOffsets)-used)
	}
	return r.done()
}

// visibleHeap is heap_xlog_visible's heap page (block 1): PD_ALL_VISIBLE
// set; the LSN too when hint bits are WAL-logged (see Redo).
func (r *redoer) visibleHeap() (Outcome, error) {
	if err := r.mainData(sizeOfHeapVisible); err != nil {
		return 0, err
	}
	if a := r.action(); a != Applied {
		return a, nil
	}
	r.p.setFlag(PageAllVisible)
	if r.p.u16(offChecksum) != 0 {
		r.p.setLSN(r.lsn)
	}
	return Applied, nil
}

// vmPosition is HEAPBLK_TO_MAPBLOCK, _MAPBYTE and _OFFSET (visibilitymap.c)
// for pages of blcksz bytes: two bits per heap block after the page header.
func vmPosition(heapBlk uint32, blcksz int) (mapBlock uint32, mapByte int, mapShift uint) {
	mapSize := blcksz - maxAlign(SizeOfPageHeaderData)
	perPage := uint32(mapSize * 4)
	return heapBlk / perPage, int(heapBlk%perPage) / 4, uint(heapBlk%4) * 2
}

// visibleVM is heap_xlog_visible's map page (block 0, read with
// RBM_ZERO_ON_ERROR): a new page is initialized, then visibilitymap_set
// sets the record's bits for the heap block of block 1 and the page LSN when
// they change.
func (r *redoer) visibleVM() (Outcome, error) {
	if err := r.mainData(sizeOfHeapVisible); err != nil {
		return 0, err
	}
	heapRef := r.rec.Block(1)
	if heapRef == nil {
		return 0, r.failf("VISIBLE without its heap block reference 1")
	}
	if !r.p.isNew() && r.lsn <= r.p.lsn() {
		return Skipped, nil
	}
	if r.p.isNew() {
		r.p.init()
	}
	bits := r.rec.MainData[4] & vmValidBits
	mapBlock, mapByte, shift := vmPosition(heapRef.Block, len(r.p))
	if mapBlock != r.b.Block {
		return 0, r.failf("wrong VM buffer passed to visibilitymap_set: heap block %d is on map block %d", heapRef.Block, mapBlock)
	}
	m := r.p[maxAlign(SizeOfPageHeaderData)+mapByte:]
	if (m[0]>>shift)&vmValidBits != bits {
		m[0] |= bits << shift
		r.p.setLSN(r.lsn)
	}
	return Applied, nil
}

// vmClearForHeapRecord is heap_xlog_vm_clear (18.6 and later minor releases
// register the map page of a heap record that clears its bits):
// visibilitymap_clear_locked for the heap block(s) the record clears, the
// page LSN set when a bit changed.
func (r *redoer) vmClearForHeapRecord() (Outcome, error) {
	md := r.rec.MainData
	b0 := r.rec.Block(0)
	if b0 == nil || b0.Fork() != decode.ForkMain {
		return 0, r.failf("map page without its heap block reference 0")
	}
	type clearing struct {
		blk  uint32
		bits uint8
	}
	var todo [2]clearing
	n := 0
	op := r.rec.Header.Info & opMask
	switch {
	case r.rec.Header.Rmid == xlog.RmgrHeap && (op == heapInsert || op == heapDelete):
		if err := r.mainData(3); err != nil {
			return 0, err
		}
		flag := md[2] // xl_heap_insert.flags
		if op == heapDelete {
			if err := r.mainData(sizeOfHeapDelete); err != nil {
				return 0, err
			}
			flag = md[7]
		}
		if flag&xlhInsertAllVisibleCleared != 0 { // == XLH_DELETE_ALL_VISIBLE_CLEARED
			todo[0], n = clearing{b0.Block, vmValidBits}, 1
		}
	case r.rec.Header.Rmid == xlog.RmgrHeap2 && op == heap2MultiInsert:
		if err := r.mainData(sizeOfHeapMultiInsert); err != nil {
			return 0, err
		}
		if md[0]&xlhInsertAllVisibleCleared != 0 {
			todo[0], n = clearing{b0.Block, vmValidBits}, 1
		}
	case r.rec.Header.Rmid == xlog.RmgrHeap && op == heapLock, r.rec.Header.Rmid == xlog.RmgrHeap2 && op == heap2LockUpdated:
		if err := r.mainData(sizeOfHeapLock); err != nil {
			return 0, err
		}
		if md[7]&xlhLockAllFrozenCleared != 0 {
			todo[0], n = clearing{b0.Block, vmAllFrozen}, 1
		}
	case r.rec.Header.Rmid == xlog.RmgrHeap && (op == heapUpdate || op == heapHotUpdate):
		if err := r.mainData(sizeOfHeapUpdate); err != nil {
			return 0, err
		}
		flags := md[7]
		oldBlk := b0.Block
		if b1 := r.rec.Block(1); b1 != nil && b1.Fork() == decode.ForkMain {
			oldBlk = b1.Block
		}
		switch r.b.ID {
		case 2: // HEAP_UPDATE_BLKREF_VM_NEW
			if flags&xlhUpdateOldAllVisibleCleared != 0 {
				if mb, _, _ := vmPosition(oldBlk, len(r.p)); mb == r.b.Block {
					todo[n] = clearing{oldBlk, vmValidBits}
					n++
				}
			}
			todo[n] = clearing{b0.Block, vmValidBits}
			n++
		case 3: // HEAP_UPDATE_BLKREF_VM_OLD
			todo[0], n = clearing{oldBlk, vmValidBits}, 1
		default:
			return 0, r.fail(r.b.ID, ErrUnsupported, "map page as block reference %d of an update", r.b.ID)
		}
	default:
		return 0, r.fail(r.b.ID, ErrUnsupported, "no visibility map redo for this record type")
	}
	if a := r.action(); a != Applied {
		return a, nil
	}
	cleared := false
	for _, c := range todo[:n] {
		mapBlock, mapByte, shift := vmPosition(c.blk, len(r.p))
		if mapBlock != r.b.Block {
			return 0, r.failf("wrong buffer passed to visibilitymap_clear: heap block %d is on map block %d", c.blk, mapBlock)
		}
		m := r.p[maxAlign(SizeOfPageHeaderData)+mapByte:]
		if mask := c.bits << shift; m[0]&mask != 0 {
			m[0] &^= mask
			cleared = true
		}
	}
	if cleared {
		r.p.setLSN(r.lsn)
	}
	return Applied, nil
}
