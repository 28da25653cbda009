package tuple

import (
	"encoding/binary"
	"fmt"
)

// Page layout (src/include/storage/bufpage.h, itemid.h), the same from 10
// to 18: PageHeaderData is pd_lsn u64 @0, pd_checksum u16 @8, pd_flags u16
// @10, pd_lower u16 @12, pd_upper u16 @14, pd_special u16 @16,
// pd_pagesize_version u16 @18, pd_prune_xid u32 @20; then ItemIdData line
// pointers, 4 bytes each: lp_off:15, lp_flags:2, lp_len:15.
const (
	sizeOfPageHeader  = 24 // SizeOfPageHeaderData
	pageLayoutVersion = 4  // PG_PAGE_LAYOUT_VERSION
	lpNormal          = 1  // LP_NORMAL
)

// Item is one LP_NORMAL line pointer of a heap page and its tuple.
type Item struct {
	Offset uint16 // OffsetNumber, from 1
	Tuple  []byte // the tuple's bytes, a view into the page
}

// PageItems appends the page's LP_NORMAL items to dst[:0]. A new (all
// zero) page has none; a page whose header or line pointers do not fit is
// an error wrapping ErrCorrupt.
func PageItems(dst []Item, page []byte) ([]Item, error) {
	dst = dst[:0]
	if len(page) < sizeOfPageHeader {
		return dst, fmt.Errorf("page of %d bytes: %w", len(page), ErrCorrupt)
	}
	le := binary.LittleEndian
	lower, upper, special, psv := int(le.Uint16(page[12:])), int(le.Uint16(page[14:])), int(le.Uint16(page[16:])), le.Uint16(page[18:])
	if lower == 0 && upper == 0 && psv == 0 {
		return dst, nil // PageIsNew
	}
	if int(psv&0xFF00) != len(page)&0xFF00 || psv&0xFF != pageLayoutVersion ||
		lower < sizeOfPageHeader || lower > upper || upper > special || special > len(page) {
		return dst, fmt.Errorf("page header (lower %d, upper %d, special %d, size and version %#04x) of a %d-byte page: %w", lower, upper, special, psv, len(page), ErrCorrupt)
	}
	for i, off := 0, sizeOfPageHeader; off+4 <= lower; i, off = i+1, off+4 {
		lp := le.Uint32(page[off:])
		lpOff, flags, lpLen := int(lp&0x7FFF), (lp>>15)&3, int(lp>>17)
		if flags != lpNormal {
			continue
		}
		if lpOff < upper || lpOff+lpLen > special {
			return dst, fmt.Errorf("line pointer %d (offset %d, length %d) outside the page's tuples (%d..%d): %w", i+1, lpOff, lpLen, upper, special, ErrCorrupt)
		}
		dst = append(dst, Item{Offset: uint16(i + 1), Tuple: page[lpOff : lpOff+lpLen : lpOff+lpLen]})
	}
	return dst, nil
}

// ItemAt returns the tuple at line pointer off (from 1) of a heap page
// (ItemIdData, itemid.h: lp_off:15, lp_flags:2, lp_len:15 after the
// PageHeaderData), a view into page; an error wrapping ErrCorrupt when
// the line pointer is outside the page, not LP_NORMAL, or points outside
// it.
func ItemAt(page []byte, off uint16) ([]byte, error) {
	at := sizeOfPageHeader + 4*(int(off)-1)
	if off == 0 || at+4 > len(page) {
		return nil, fmt.Errorf("line pointer %d outside the page: %w", off, ErrCorrupt)
	}
	lp := binary.LittleEndian.Uint32(page[at:])
	start, flags, n := int(lp&0x7FFF), (lp>>15)&3, int(lp>>17)
	if flags != lpNormal || start+n > len(page) {
		return nil, fmt.Errorf("line pointer %d is not a tuple in the page: %w", off, ErrCorrupt)
	}
	return page[start : start+n : start+n], nil
}
