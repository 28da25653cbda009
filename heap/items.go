package heap

import (
	"errors"
	"fmt"
)

// Page is a heap page read as pageinspect reads it: page_header() and
// heap_page_items() (contrib/pageinspect/rawpage.c and heapfuncs.c).
type Page struct {
	Header Header
	Items  []Item
}

// Header is page_header()'s row: PageHeaderData's fields.
type Header struct {
	LSN      uint64 // pd_lsn as one 64-bit LSN
	Checksum uint16
	Flags    uint16
	Lower    uint16
	Upper    uint16
	Special  uint16
	PageSize uint16 // pd_pagesize_version & 0xFF00
	Version  uint8  // pd_pagesize_version & 0x00FF
	PruneXID uint32
}

// Item is heap_page_items()'s row for one line pointer. HasTuple is false
// where pageinspect returns NULL for t_xmin to t_data (unused, redirect and
// dead line pointers, or ones pointing outside the page); HasData is false
// where t_bits, t_oid and t_data are NULL because t_hoff is out of range.
type Item struct {
	LP      uint16 // lp: the line pointer's number, from 1
	LPOff   uint16 // lp_off
	LPFlags uint8  // lp_flags: LPUnused, LPNormal, LPRedirect, LPDead
	LPLen   uint16 // lp_len

	HasTuple   bool
	Xmin       uint32 // t_xmin
	Xmax       uint32 // t_xmax
	Field3     uint32 // t_field3: t_cid, or t_xvac
	CtidBlock  uint32 // t_ctid's block
	CtidOffset uint16 // t_ctid's offset
	Infomask2  uint16 // t_infomask2
	Infomask   uint16 // t_infomask
	Hoff       uint8  // t_hoff

	HasData bool
	Bits    string // t_bits as pageinspect prints it ("01..."), "" when NULL
	HasOID  bool
	OID     uint32 // t_oid (HEAP_HASOID_OLD: 10 and 11's WITH OIDS tables)
	Data    []byte // t_data: the tuple after t_hoff; a view of the page
}

// ErrPage is the sentinel of ReadPage's errors.
var ErrPage = errors.New("not a readable heap page")

// ReadPage lists a page's header and line pointers with their tuple headers
// as pageinspect's page_header() and heap_page_items() do, with the same
// checks: a tuple is read only when its line pointer has storage, is at least
// MinHeapTupleSize long, MAXALIGNed and inside the page, and t_bits, t_oid and
// t_data only when t_hoff is in range. Item.Data is a view of pg. The error
// (ErrPage) is for a slice that cannot be a page (shorter than its header or
// than pd_lower says); a new (all-zero) page has no items.
func ReadPage(pg []byte) (Page, error) {
	p := page(pg)
	if len(p) < SizeOfPageHeaderData {
		return Page{}, fmt.Errorf("%w: %d bytes", ErrPage, len(p))
	}
	psv := p.u16(offPageSizeVersion)
	out := Page{Header: Header{
		LSN: p.lsn(), Checksum: p.u16(offChecksum), Flags: p.flags(),
		Lower: uint16(p.lower()), Upper: uint16(p.upper()), Special: uint16(p.special()),
		PageSize: psv & 0xFF00, Version: uint8(psv), PruneXID: p.u32(offPruneXID),
	}}
	maxoff := p.maxOffset()
	if SizeOfPageHeaderData+maxoff*sizeOfItemID > len(p) {
		return out, fmt.Errorf("%w: pd_lower %d past the page's %d bytes", ErrPage, p.lower(), len(p))
	}
	out.Items = make([]Item, 0, maxoff)
	for off := 1; off <= maxoff; off++ {
		lpOff, flags, lpLen := p.itemID(off)
		it := Item{LP: uint16(off), LPOff: uint16(lpOff), LPFlags: uint8(flags), LPLen: uint16(lpLen)}
		if lpLen != 0 && lpLen >= SizeofHeapTupleHeader && lpOff == maxAlign(lpOff) && lpOff+lpLen <= len(p) {
			t := lpOff
			it.HasTuple = true
			it.Xmin, it.Xmax, it.Field3 = p.u32(t+tupXmin), p.u32(t+tupXmax), p.u32(t+tupField3)
			it.CtidBlock = uint32(p.u16(t+tupCtid))<<16 | uint32(p.u16(t+tupCtid+2))
			it.CtidOffset = p.u16(t + tupCtid + 4)
			it.Infomask2, it.Infomask, it.Hoff = p.u16(t+tupInfomask2), p.u16(t+tupInfomask), p[t+tupHoff]
			hoff := int(it.Hoff)
			if hoff >= SizeofHeapTupleHeader && hoff <= lpLen && hoff == maxAlign(hoff) {
				it.HasData = true
				if it.Infomask&HeapHasNull != 0 {
					bitmapLen := (int(it.Infomask2&HeapNattsMask) + 7) / 8 // BITMAPLEN
					if bitmapLen <= hoff-SizeofHeapTupleHeader {
						bits := make([]byte, bitmapLen*8)
						for i := range bits {
							bits[i] = '0' + (p[t+SizeofHeapTupleHeader+i/8]>>(i%8))&1
						}
						it.Bits = string(bits)
					}
				}
				if it.Infomask&HeapHasOIDOld != 0 {
					it.HasOID, it.OID = true, p.u32(t+hoff-4) // HeapTupleHeaderGetOidOld
				}
				it.Data = pg[t+hoff : t+lpLen : t+lpLen]
			}
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}
