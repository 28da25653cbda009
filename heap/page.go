package heap

import (
	"encoding/binary"

	"github.com/walscope/walscope/rmgr"
)

// The layouts below are the same in PostgreSQL 10 to 18 (checked in the
// 13.16, 15.18 and 18.6 headers; 10, 11, 12, 14, 16 and 17 did not change
// them: src/include/storage/bufpage.h, itemid.h, itemptr.h and
// src/include/access/htup_details.h).

// PageHeaderData (bufpage.h), SizeOfPageHeaderData = 24 bytes:
//
//	pd_lsn              PageXLogRecPtr {xlogid u32, xrecoff u32} @0
//	pd_checksum         u16 @8
//	pd_flags            u16 @10
//	pd_lower            LocationIndex (u16) @12
//	pd_upper            LocationIndex (u16) @14
//	pd_special          LocationIndex (u16) @16
//	pd_pagesize_version u16 @18
//	pd_prune_xid        TransactionId (u32) @20
//	pd_linp[]           ItemIdData @24
const (
	offLSN             = 0
	offChecksum        = 8
	offFlags           = 10
	offLower           = 12
	offUpper           = 14
	offSpecial         = 16
	offPageSizeVersion = 18
	offPruneXID        = 20

	// SizeOfPageHeaderData is offsetof(PageHeaderData, pd_linp).
	SizeOfPageHeaderData = 24
	sizeOfItemID         = 4 // sizeof(ItemIdData)
	pageLayoutVersion    = 4 // PG_PAGE_LAYOUT_VERSION
)

// pd_flags bits (bufpage.h).
const (
	PageHasFreeLines = 0x0001 // PD_HAS_FREE_LINES
	PageFull         = 0x0002 // PD_PAGE_FULL
	PageAllVisible   = 0x0004 // PD_ALL_VISIBLE
)

// ItemIdData lp_flags (itemid.h). ItemIdData is one little-endian u32 of bit
// fields: lp_off:15 (bits 0-14), lp_flags:2 (15-16), lp_len:15 (17-31).
const (
	LPUnused   = 0 // LP_UNUSED
	LPNormal   = 1 // LP_NORMAL
	LPRedirect = 2 // LP_REDIRECT
	LPDead     = 3 // LP_DEAD
)

// HeapTupleHeaderData (htup_details.h):
//
//	t_xmin u32 @0, t_xmax u32 @4, t_field3 (t_cid or t_xvac) u32 @8,
//	t_ctid ItemPointerData {bi_hi u16, bi_lo u16, ip_posid u16} @12,
//	t_infomask2 u16 @18, t_infomask u16 @20, t_hoff u8 @22, t_bits[] @23.
const (
	tupXmin      = 0
	tupXmax      = 4
	tupField3    = 8
	tupCtid      = 12
	tupInfomask2 = 18
	tupInfomask  = 20
	tupHoff      = 22

	// SizeofHeapTupleHeader is offsetof(HeapTupleHeaderData, t_bits).
	SizeofHeapTupleHeader = rmgr.SizeofHeapTupleHeader // 23
)

// t_infomask bits (htup_details.h); those rmgr already names (for the
// tuples WAL carries) are its constants.
const (
	HeapHasNull        = rmgr.HeapHasNull       // HEAP_HASNULL 0x0001
	HeapHasVarWidth    = rmgr.HeapHasVarWidth   // HEAP_HASVARWIDTH 0x0002
	HeapHasExternal    = rmgr.HeapHasExternal   // HEAP_HASEXTERNAL 0x0004
	HeapHasOIDOld      = rmgr.HeapHasOIDOld     // HEAP_HASOID_OLD 0x0008 (HEAP_HASOID in 10 and 11)
	HeapXmaxKeyshrLock = 0x0010                 // HEAP_XMAX_KEYSHR_LOCK
	HeapComboCID       = 0x0020                 // HEAP_COMBOCID
	HeapXmaxExclLock   = 0x0040                 // HEAP_XMAX_EXCL_LOCK
	HeapXmaxLockOnly   = rmgr.HeapXmaxLockOnly  // HEAP_XMAX_LOCK_ONLY 0x0080
	HeapXminCommitted  = rmgr.HeapXminCommitted // HEAP_XMIN_COMMITTED 0x0100
	HeapXminInvalid    = rmgr.HeapXminInvalid   // HEAP_XMIN_INVALID 0x0200
	HeapXminFrozen     = HeapXminCommitted | HeapXminInvalid
	HeapXmaxCommitted  = rmgr.HeapXmaxCommitted // HEAP_XMAX_COMMITTED 0x0400
	HeapXmaxInvalid    = rmgr.HeapXmaxInvalid   // HEAP_XMAX_INVALID 0x0800
	HeapXmaxIsMulti    = rmgr.HeapXmaxIsMulti   // HEAP_XMAX_IS_MULTI 0x1000
	HeapUpdated        = 0x2000                 // HEAP_UPDATED
	HeapMovedOff       = 0x4000                 // HEAP_MOVED_OFF
	HeapMovedIn        = 0x8000                 // HEAP_MOVED_IN
	HeapMoved          = HeapMovedOff | HeapMovedIn
	HeapXactMask       = 0xFFF0 // HEAP_XACT_MASK: visibility-related bits

	heapLockMask = HeapXmaxExclLock | HeapXmaxKeyshrLock // HEAP_LOCK_MASK
	// HEAP_XMAX_BITS
	heapXmaxBits = HeapXmaxCommitted | HeapXmaxInvalid | HeapXmaxIsMulti | heapLockMask | HeapXmaxLockOnly
)

// t_infomask2 bits (htup_details.h).
const (
	HeapNattsMask   = rmgr.HeapNattsMask // HEAP_NATTS_MASK 0x07FF
	HeapKeysUpdated = 0x2000             // HEAP_KEYS_UPDATED
	HeapHotUpdated  = 0x4000             // HEAP_HOT_UPDATED
	HeapOnlyTuple   = 0x8000             // HEAP_ONLY_TUPLE
)

// Special item pointer values (itemptr.h) and transaction ids (transam.h).
const (
	specTokenOffsetNumber       = 0xFFFE // SpecTokenOffsetNumber
	movedPartitionsOffsetNumber = 0xFFFD // MovedPartitionsOffsetNumber
	invalidBlockNumber          = 0xFFFFFFFF
	frozenTransactionID         = 2 // FrozenTransactionId
	firstNormalTransactionID    = 3 // FirstNormalTransactionId
)

// maxAlign is MAXALIGN for the 64-bit platforms PostgreSQL's WAL here comes
// from (MAXIMUM_ALIGNOF 8).
func maxAlign(n int) int { return (n + 7) &^ 7 }

// maxHeapTuplesPerPage is MaxHeapTuplesPerPage (htup_details.h) for a page
// of blcksz bytes.
func maxHeapTuplesPerPage(blcksz int) int {
	return (blcksz - SizeOfPageHeaderData) / (maxAlign(SizeofHeapTupleHeader) + sizeOfItemID)
}

// page is a heap page of BLCKSZ bytes; every accessor stays inside it.
type page []byte

func (p page) u16(off int) uint16      { return binary.LittleEndian.Uint16(p[off:]) }
func (p page) u32(off int) uint32      { return binary.LittleEndian.Uint32(p[off:]) }
func (p page) put16(off int, v uint16) { binary.LittleEndian.PutUint16(p[off:], v) }
func (p page) put32(off int, v uint32) { binary.LittleEndian.PutUint32(p[off:], v) }

func (p page) lower() int   { return int(p.u16(offLower)) }
func (p page) upper() int   { return int(p.u16(offUpper)) }
func (p page) special() int { return int(p.u16(offSpecial)) }
func (p page) flags() uint16 {
	return p.u16(offFlags)
}
func (p page) setFlag(f uint16)   { p.put16(offFlags, p.flags()|f) }
func (p page) clearFlag(f uint16) { p.put16(offFlags, p.flags()&^f) }

// lsn is PageGetLSN.
func (p page) lsn() uint64 { return uint64(p.u32(offLSN))<<32 | uint64(p.u32(offLSN+4)) }

// setLSN is PageSetLSN.
func (p page) setLSN(lsn uint64) {
	p.put32(offLSN, uint32(lsn>>32))
	p.put32(offLSN+4, uint32(lsn))
}

// isNew is PageIsNew: pd_upper == 0, a page never initialized.
func (p page) isNew() bool { return p.upper() == 0 }

// maxOffset is PageGetMaxOffsetNumber, but of a damaged page whose pd_lower
// lies past its end only the line pointers inside it: every caller may read
// line pointers 1 to maxOffset.
func (p page) maxOffset() int {
	l := min(p.lower(), len(p))
	if l <= SizeOfPageHeaderData {
		return 0
	}
	return (l - SizeOfPageHeaderData) / sizeOfItemID
}

// pointersValid is the check PageAddItemExtended and PageRepairFragmentation
// make of pd_lower, pd_upper and pd_special before they touch a page.
func (p page) pointersValid() bool {
	lo, up, sp := p.lower(), p.upper(), p.special()
	return lo >= SizeOfPageHeaderData && lo <= up && up <= sp && sp <= len(p)
}

// itemID returns line pointer off (1-based): its offset, flags and length.
// The caller has checked off against maxOffset.
func (p page) itemID(off int) (lpOff, lpFlags, lpLen int) {
	v := p.u32(SizeOfPageHeaderData + (off-1)*sizeOfItemID)
	return int(v & 0x7FFF), int(v>>15) & 3, int(v >> 17)
}

func (p page) setItemID(off, lpOff, lpFlags, lpLen int) {
	p.put32(SizeOfPageHeaderData+(off-1)*sizeOfItemID, uint32(lpOff&0x7FFF)|uint32(lpFlags&3)<<15|uint32(lpLen&0x7FFF)<<17)
}

// pageInit is PageInit(page, BLCKSZ, 0).
func (p page) init() {
	clear(p)
	p.put16(offLower, SizeOfPageHeaderData)
	p.put16(offUpper, uint16(len(p)))
	p.put16(offSpecial, uint16(len(p)))
	// PageSetPageSizeAndVersion: size | version; a 32 kB page keeps its size
	// bits (32768 | 4).
	p.put16(offPageSizeVersion, uint16(len(p))|pageLayoutVersion)
}

// transactionIDPrecedes is TransactionIdPrecedes (transam.c): modulo-2^32
// comparison of normal xids, plain comparison otherwise.
func transactionIDPrecedes(a, b uint32) bool {
	if a < firstNormalTransactionID || b < firstNormalTransactionID {
		return a < b
	}
	return int32(a-b) < 0
}

// setPrunable is PageSetPrunable.
func (p page) setPrunable(xid uint32) {
	if xid < firstNormalTransactionID {
		return // PageSetPrunable asserts a normal xid; nothing a server would do
	}
	cur := p.u32(offPruneXID)
	if cur == 0 || transactionIDPrecedes(xid, cur) {
		p.put32(offPruneXID, xid)
	}
}
