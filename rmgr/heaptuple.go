package rmgr

import (
	"encoding/binary"
	"errors"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Heap tuples carried by WAL: the new tuple of Heap INSERT, Heap2
// MULTI_INSERT, Heap UPDATE and HOT_UPDATE, the data of Heap INPLACE, and
// every tuple on a heap page a full-page image shows. Layouts from
// src/include/access/htup_details.h (HeapTupleHeaderData), heapam_xlog.h
// (xl_heap_header, xl_heap_insert, xl_multi_insert_tuple,
// xl_heap_multi_insert, xl_heap_update, xl_heap_inplace), bufpage.h
// (PageHeaderData) and itemid.h (ItemIdData); the same from 10 to 18 for
// what is read here (checked against the 13.16, 15.18, 17.12 and 18.6
// headers and heap_xlog_insert/multi_insert/update/inplace; 10, 11, 12, 14
// and 16 read from heap_desc's layouts, which walscope checks against their
// pg_waldump output).

// HeapTupleHeaderData (htup_details.h):
//
//	t_xmin u32 @0, t_xmax u32 @4, t_field3 (t_cid / t_xvac) u32 @8,
//	t_ctid ItemPointerData (6 bytes) @12, t_infomask2 u16 @18,
//	t_infomask u16 @20, t_hoff u8 @22, t_bits[] @23 (SizeofHeapTupleHeader).
const (
	SizeofHeapTupleHeader = 23 // offsetof(HeapTupleHeaderData, t_bits)
	sizeOfHeapHeader      = 5  // SizeOfHeapHeader: xl_heap_header {t_infomask2, t_infomask, t_hoff}
	sizeOfMultiInsertTup  = 7  // SizeOfMultiInsertTuple: {datalen, t_infomask2, t_infomask, t_hoff}
	sizeOfHeapUpdate      = 14 // SizeOfHeapUpdate
	sizeOfPageHeader      = 24 // SizeOfPageHeaderData
	pageLayoutVersion     = 4  // PG_PAGE_LAYOUT_VERSION, 8.3 and later
)

// t_infomask and t_infomask2 bits (htup_details.h).
const (
	HeapHasNull       = 0x0001 // HEAP_HASNULL
	HeapHasVarWidth   = 0x0002 // HEAP_HASVARWIDTH
	HeapHasExternal   = 0x0004 // HEAP_HASEXTERNAL
	HeapHasOIDOld     = 0x0008 // HEAP_HASOID_OLD (HEAP_HASOID in 10 and 11)
	HeapXmaxLockOnly  = 0x0080 // HEAP_XMAX_LOCK_ONLY
	HeapXminCommitted = 0x0100 // HEAP_XMIN_COMMITTED
	HeapXminInvalid   = 0x0200 // HEAP_XMIN_INVALID
	HeapXmaxCommitted = 0x0400 // HEAP_XMAX_COMMITTED
	HeapXmaxInvalid   = 0x0800 // HEAP_XMAX_INVALID
	HeapXmaxIsMulti   = 0x1000 // HEAP_XMAX_IS_MULTI

	HeapNattsMask = 0x07FF // HEAP_NATTS_MASK, in t_infomask2
)

// XLH_UPDATE_* flags of xl_heap_update (heapam_xlog.h, 10 to 18).
const (
	xlhUpdatePrefixFromOld = 1 << 5 // XLH_UPDATE_PREFIX_FROM_OLD
	xlhUpdateSuffixFromOld = 1 << 6 // XLH_UPDATE_SUFFIX_FROM_OLD
)

// ItemIdData lp_flags (itemid.h).
const (
	lpUnused   = 0 // LP_UNUSED
	lpNormal   = 1 // LP_NORMAL
	lpRedirect = 2 // LP_REDIRECT
	lpDead     = 3 // LP_DEAD
)

// TupleSource says where a HeapTuple was read.
type TupleSource uint8

// Tuple sources.
const (
	FromInsert      TupleSource = iota + 1 // Heap INSERT's new tuple
	FromMultiInsert                        // one of Heap2 MULTI_INSERT's tuples
	FromUpdate                             // the new tuple of UPDATE or HOT_UPDATE
	FromInplace                            // Heap INPLACE: the tuple's data only, no header
	FromImage                              // a tuple on a full-page image
)

func (s TupleSource) String() string {
	switch s {
	case FromInsert:
		return "insert"
	case FromMultiInsert:
		return "multi-insert"
	case FromUpdate:
		return "update"
	case FromInplace:
		return "inplace"
	case FromImage:
		return "image"
	}
	return "unknown"
}

// HeapTuple is one heap tuple: its place, the header fields the WAL gives,
// the null bitmap and the user data (from t_hoff). Slices point into the
// record or page they were read from.
type HeapTuple struct {
	Source TupleSource
	Rel    decode.RelFileLocator
	Fork   decode.ForkNumber
	Block  uint32
	Offset uint16 // OffsetNumber, from 1

	// HasHeader is false for INPLACE, which logs the data alone: Infomask,
	// Infomask2, Hoff, Bits and OID are then unknown.
	HasHeader  bool
	Infomask2  uint16 // t_infomask2
	Infomask   uint16 // t_infomask
	Hoff       uint8  // t_hoff
	Bits       []byte // t_bits, the null bitmap: nil without HEAP_HASNULL
	OID        uint32 // the tuple's oid in 10 and 11 (HEAP_HASOID), else 0
	HasOID     bool
	Xmin, Xmax uint32 // t_xmin, t_xmax: images only (records do not log them)

	// Data is the user data, from t_hoff to the end of the tuple.
	Data []byte

	// An UPDATE logged with its common prefix or suffix left out
	// (XLH_UPDATE_PREFIX_FROM_OLD, XLH_UPDATE_SUFFIX_FROM_OLD) cannot be
	// read alone: Partial is set, Data holds the logged middle, and
	// Reconstruct rebuilds the tuple from the old one, which lies on the same
	// page at OldOffset.
	Partial   bool
	PrefixLen uint16
	SuffixLen uint16
	OldBlock  uint32
	OldOffset uint16
}

// Natts is the number of attributes the tuple holds (HeapTupleHeaderGetNatts).
func (t *HeapTuple) Natts() int { return int(t.Infomask2 & HeapNattsMask) }

// IsNull reports whether attribute att (0-based) is null, as att_isnull
// does: never without a null bitmap.
func (t *HeapTuple) IsNull(att int) bool {
	if t.Bits == nil || t.Infomask&HeapHasNull == 0 {
		return false
	}
	if att/8 >= len(t.Bits) {
		return true
	}
	return t.Bits[att/8]&(1<<(att%8)) == 0
}

// Deleted reports whether the image shows the tuple deleted or updated by a
// transaction (t_xmax valid and not a mere lock): a version that was
// replaced, or a dropped row.
func (t *HeapTuple) Deleted() bool {
	if t.Source != FromImage {
		return false
	}
	if t.Infomask&HeapXmaxInvalid != 0 || t.Xmax == 0 {
		return false
	}
	return t.Infomask&HeapXmaxLockOnly == 0
}

// Aborted reports whether the image shows the inserting transaction aborted
// (HEAP_XMIN_INVALID without HEAP_XMIN_COMMITTED: a frozen tuple has both).
func (t *HeapTuple) Aborted() bool {
	return t.Source == FromImage && t.Infomask&(HeapXminInvalid|HeapXminCommitted) == HeapXminInvalid
}

// ErrPartialTuple is Reconstruct's error when the old tuple does not fit
// the logged prefix and suffix.
var ErrPartialTuple = errors.New("update's prefix or suffix longer than the old tuple")

// Reconstruct rebuilds a prefix- or suffix-compressed UPDATE's new tuple
// data from the old tuple's data (from its t_hoff), as heap_xlog_update
// does: old prefix, logged middle, old suffix. It returns a new slice.
func (t *HeapTuple) Reconstruct(oldData []byte) ([]byte, error) {
	p, s := int(t.PrefixLen), int(t.SuffixLen)
	if p+s > len(oldData) {
		return nil, ErrPartialTuple
	}
	out := make([]byte, 0, p+len(t.Data)+s)
	out = append(out, oldData[:p]...)
	out = append(out, t.Data...)
	return append(out, oldData[len(oldData)-s:]...), nil
}

// headerPart splits what a record logs from t_bits on (bitmap, padding, the
// 10/11 oid, data) given t_hoff, filling Bits, OID and Data.
func (t *HeapTuple) headerPart(v xlog.Version, fromBits []byte) bool {
	pre := int(t.Hoff) - SizeofHeapTupleHeader
	if pre < 0 || pre > len(fromBits) {
		return false
	}
	if t.Infomask&HeapHasNull != 0 {
		n := (t.Natts() + 7) / 8 // BITMAPLEN
		if n > pre {
			return false
		}
		t.Bits = fromBits[:n:n]
	}
	if v <= xlog.V11 && t.Infomask&HeapHasOIDOld != 0 {
		// HeapTupleHeaderGetOid: the Oid just before t_hoff.
		if pre < 4 {
			return false
		}
		t.OID, t.HasOID = binary.LittleEndian.Uint32(fromBits[pre-4:]), true
	}
	t.Data = fromBits[pre:len(fromBits):len(fromBits)]
	return true
}

// RecordTuples appends the tuples rec carries in its block data to dst:
// INSERT's, MULTI_INSERT's, UPDATE's and HOT_UPDATE's new tuple, INPLACE's
// data. Tuples left out of the record because a full-page image of their
// block stands for them are not returned (read them with PageTuples).
// Prefix- or suffix-compressed UPDATE tuples come back Partial. Malformed
// data yields no tuple.
func RecordTuples(dst []HeapTuple, rec *decode.Record) []HeapTuple {
	info := rec.Header.Info
	op := info & heapOpMask
	v := rec.Version
	main := rec.MainData
	switch rec.Header.Rmid {
	case xlog.RmgrHeap:
		switch op {
		case heapInsert:
			// xl_heap_insert {offnum u16, flags u8}; block 0: xl_heap_header + tuple from t_bits.
			b := rec.Block(0)
			if b == nil || len(b.Data) < sizeOfHeapHeader || len(main) < 2 {
				return dst
			}
			t := HeapTuple{Source: FromInsert, Rel: b.Rel, Fork: b.Fork(), Block: b.Block, Offset: heapU16(main, 0), HasHeader: true}
			t.Infomask2, t.Infomask, t.Hoff = heapU16(b.Data, 0), heapU16(b.Data, 2), b.Data[4]
			if t.headerPart(v, b.Data[sizeOfHeapHeader:]) {
				dst = append(dst, t)
			}
		case heapUpdate, heapHotUpdate:
			// xl_heap_update {old_xmax u32, old_offnum u16, old_infobits_set u8,
			// flags u8, new_xmax u32, new_offnum u16}; block 0 (the new page):
			// [prefixlen u16] [suffixlen u16] xl_heap_header, then from t_bits
			// the bitmap, padding and oid, then the data without the prefix
			// and suffix. Block 1 is the old page when it differs.
			b := rec.Block(0)
			if b == nil || len(b.Data) == 0 || len(main) < sizeOfHeapUpdate {
				return dst
			}
			flags := main[7]
			t := HeapTuple{Source: FromUpdate, Rel: b.Rel, Fork: b.Fork(), Block: b.Block, Offset: heapU16(main, 12), HasHeader: true,
				OldBlock: b.Block, OldOffset: heapU16(main, 4)}
			if ob := rec.Block(1); ob != nil {
				t.OldBlock = ob.Block
			}
			d := b.Data
			if flags&xlhUpdatePrefixFromOld != 0 {
				if len(d) < 2 {
					return dst
				}
				t.PrefixLen, d = heapU16(d, 0), d[2:]
			}
			if flags&xlhUpdateSuffixFromOld != 0 {
				if len(d) < 2 {
					return dst
				}
				t.SuffixLen, d = heapU16(d, 0), d[2:]
			}
			t.Partial = t.PrefixLen > 0 || t.SuffixLen > 0
			if len(d) < sizeOfHeapHeader {
				return dst
			}
			t.Infomask2, t.Infomask, t.Hoff = heapU16(d, 0), heapU16(d, 2), d[4]
			if t.headerPart(v, d[sizeOfHeapHeader:]) {
				dst = append(dst, t)
			}
		case heapInplace:
			// xl_heap_inplace {offnum u16, ...}; block 0: the tuple's data
			// from t_hoff (heap_inplace_update: no header is logged).
			b := rec.Block(0)
			if b == nil || len(b.Data) == 0 || len(main) < 2 {
				return dst
			}
			dst = append(dst, HeapTuple{Source: FromInplace, Rel: b.Rel, Fork: b.Fork(), Block: b.Block, Offset: heapU16(main, 0), Data: b.Data})
		}
	case xlog.RmgrHeap2:
		if op != heap2MultiInsert {
			return dst
		}
		// xl_heap_multi_insert {flags u8, ntuples u16 @2, offsets u16[] @4,
		// left out with XLOG_HEAP_INIT_PAGE: the tuples then take offsets
		// 1..ntuples}; block 0: per tuple, SHORTALIGNed, xl_multi_insert_tuple
		// {datalen u16, t_infomask2 u16, t_infomask u16, t_hoff u8} and datalen
		// bytes from t_bits.
		b := rec.Block(0)
		if b == nil || len(b.Data) == 0 || len(main) < 4 {
			return dst
		}
		n := int(heapU16(main, 2))
		init := info&heapInitPage != 0
		if !init && len(main) < 4+2*n {
			return dst
		}
		d := b.Data
		p := 0
		for i := 0; i < n; i++ {
			p = (p + 1) &^ 1 // SHORTALIGN
			if p+sizeOfMultiInsertTup > len(d) {
				break
			}
			dlen := int(heapU16(d, p))
			t := HeapTuple{Source: FromMultiInsert, Rel: b.Rel, Fork: b.Fork(), Block: b.Block, HasHeader: true}
			t.Infomask2, t.Infomask, t.Hoff = heapU16(d, p+2), heapU16(d, p+4), d[p+6]
			p += sizeOfMultiInsertTup
			if p+dlen > len(d) {
				break
			}
			if init {
				t.Offset = uint16(i + 1)
			} else {
				t.Offset = heapU16(main, 4+2*i)
			}
			if t.headerPart(v, d[p:p+dlen:p+dlen]) {
				dst = append(dst, t)
			}
			p += dlen
		}
	}
	return dst
}

// ErrNotHeapPage is PageTuples' error for a page whose header is not a heap
// page's of this size.
var ErrNotHeapPage = errors.New("not a heap page")

// PageTuples appends the tuples of a heap page (a restored full-page image,
// decode.AppendPage) to dst: every LP_NORMAL line pointer's tuple, live or
// dead. A zeroed (new) page has none.
//
// PageHeaderData (bufpage.h): pd_lsn @0, pd_checksum @8, pd_flags @10,
// pd_lower @12, pd_upper @14, pd_special @16, pd_pagesize_version @18,
// pd_prune_xid @20, pd_linp[] @24. ItemIdData (itemid.h) is one 32-bit word:
// lp_off bits 0-14, lp_flags bits 15-16, lp_len bits 17-31.
func PageTuples(dst []HeapTuple, v xlog.Version, page []byte, rel decode.RelFileLocator, fork decode.ForkNumber, block uint32) ([]HeapTuple, error) {
	if len(page) < sizeOfPageHeader {
		return dst, ErrNotHeapPage
	}
	lower, upper := int(heapU16(page, 12)), int(heapU16(page, 14))
	special, psv := int(heapU16(page, 16)), heapU16(page, 18)
	if lower == 0 && upper == 0 && psv == 0 {
		return dst, nil // PageIsNew
	}
	if int(psv&0xFF00) != len(page)&0xFF00 || psv&0x00FF != pageLayoutVersion ||
		lower < sizeOfPageHeader || lower > upper || upper > special || special != len(page) {
		return dst, ErrNotHeapPage
	}
	for i, off := 0, sizeOfPageHeader; off+4 <= lower; i, off = i+1, off+4 {
		lp := binary.LittleEndian.Uint32(page[off:])
		lpOff, flags, lpLen := int(lp&0x7FFF), (lp>>15)&3, int(lp>>17)
		if flags != lpNormal || lpLen < SizeofHeapTupleHeader || lpOff+lpLen > len(page) || lpOff < upper {
			continue
		}
		tup := page[lpOff : lpOff+lpLen : lpOff+lpLen]
		t := HeapTuple{Source: FromImage, Rel: rel, Fork: fork, Block: block, Offset: uint16(i + 1), HasHeader: true,
			Xmin: heapU32(tup, 0), Xmax: heapU32(tup, 4),
			Infomask2: heapU16(tup, 18), Infomask: heapU16(tup, 20), Hoff: tup[22]}
		if int(t.Hoff) > lpLen || t.Hoff < SizeofHeapTupleHeader {
			continue
		}
		if t.headerPart(v, tup[SizeofHeapTupleHeader:]) {
			dst = append(dst, t)
		}
	}
	return dst, nil
}
