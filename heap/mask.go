package heap

// maskMarker is MASK_MARKER (src/include/access/bufmask.h).
const maskMarker = 0

// Mask is heap_mask (src/backend/access/heap/heapam.c up to 16, heapam_xlog.c
// from 17; the same in 10 to 18) with bufmask.c's helpers, in place: it
// blanks what may differ between a primary's page and its replay without
// WAL saying so, the way wal_consistency_checking compares pages.
//
//   - mask_page_lsn_and_checksum: pd_lsn and pd_checksum;
//   - mask_page_hint_bits: pd_prune_xid, and PD_PAGE_FULL,
//     PD_HAS_FREE_LINES and PD_ALL_VISIBLE in pd_flags;
//   - mask_unused_space: the bytes from pd_lower to pd_upper;
//   - per normal tuple: t_infomask's HEAP_XACT_MASK bits (only the xmax hint
//     bits when xmin is frozen), t_cid, and t_ctid of a speculative insertion
//     (set to this block and offset);
//   - per item with storage: the padding after it up to MAXALIGN.
//
// Where the server would ERROR (pointers outside the page), Mask skips that
// step and never touches bytes outside page.
func Mask(pg []byte, blkno uint32) {
	p := page(pg)
	if len(p) < SizeOfPageHeaderData {
		return
	}
	// mask_page_lsn_and_checksum
	p.put32(offLSN, maskMarker)
	p.put32(offLSN+4, maskMarker)
	p.put16(offChecksum, maskMarker)
	// mask_page_hint_bits
	p.put32(offPruneXID, maskMarker)
	p.clearFlag(PageFull | PageHasFreeLines | PageAllVisible)
	// mask_unused_space
	lower, upper, special := p.lower(), p.upper(), p.special()
	if lower <= upper && upper <= special && lower >= SizeOfPageHeaderData && special <= len(p) {
		for i := lower; i < upper; i++ {
			p[i] = maskMarker
		}
	}
	maxoff := p.maxOffset()
	if SizeOfPageHeaderData+maxoff*sizeOfItemID > len(p) {
		maxoff = (len(p) - SizeOfPageHeaderData) / sizeOfItemID
	}
	for off := 1; off <= maxoff; off++ {
		lpOff, flags, lpLen := p.itemID(off)
		if flags == LPNormal && lpOff+SizeofHeapTupleHeader <= len(p) {
			t := lpOff
			im := p.u16(t + tupInfomask)
			if im&HeapXminFrozen != HeapXminFrozen {
				im &^= HeapXactMask
			} else {
				im &^= HeapXmaxInvalid | HeapXmaxCommitted
			}
			p.put16(t+tupInfomask, im)
			p.put32(t+tupField3, maskMarker)
			if p.u16(t+tupCtid+4) == specTokenOffsetNumber {
				p.setCtid(t, blkno, uint16(off))
			}
		}
		if lpLen != 0 { // ItemIdHasStorage
			end := min(lpOff+maxAlign(lpLen), len(p))
			for i := lpOff + lpLen; i < end; i++ {
				p[i] = maskMarker
			}
		}
	}
}
