package heap

import (
	"fmt"
	"slices"
	"sync"

	"github.com/walscope/walscope/xlog"
)

// Page surgery as src/backend/storage/page/bufpage.c does it. Each function
// checks what it reads against the page first and returns a reason instead
// of writing outside it; the server PANICs or ERRORs in the same places.

// addItem is PageAddItemExtended(page, item, size, offnum, PAI_OVERWRITE |
// PAI_IS_HEAP), the call heap redo makes through PageAddItem(..., true,
// true): it places a line pointer at offnum (shuffling later ones up when
// offnum is inside the array and the slot is taken... which PAI_OVERWRITE
// refuses) and reserves MAXALIGN(size) bytes below pd_upper. It returns the
// offset of the item's storage; the caller copies the item there (size
// bytes; the alignment padding keeps whatever the free space held, as on the
// server).
func (p page) addItem(size, offnum int) (int, error) {
	if !p.pointersValid() {
		return 0, p.corruptPointers()
	}
	limit := p.maxOffset() + 1
	maxOffsetNumber := len(p) / sizeOfItemID // MaxOffsetNumber
	if offnum != 0 && offnum <= maxOffsetNumber {
		// PAI_OVERWRITE: the slot must be unused and without storage.
		if offnum < limit {
			_, flags, lpLen := p.itemID(offnum)
			if flags != LPUnused || lpLen != 0 {
				return 0, fmt.Errorf("will not overwrite a used ItemId (offset %d)", offnum)
			}
		}
	} else {
		// No offset given: the first unused slot if the hint says there is one.
		offnum = limit
		if p.flags()&PageHasFreeLines != 0 {
			for o := 1; o < limit; o++ {
				if _, flags, lpLen := p.itemID(o); flags == LPUnused && lpLen == 0 {
					offnum = o
					break
				}
			}
			if offnum == limit {
				p.clearFlag(PageHasFreeLines)
			}
		}
	}
	if offnum > limit {
		return 0, fmt.Errorf("specified item offset %d is too large (max %d)", offnum, limit-1)
	}
	if offnum > maxHeapTuplesPerPage(len(p)) {
		return 0, fmt.Errorf("can't put more than MaxHeapTuplesPerPage items in a heap page (offset %d)", offnum)
	}
	lower := p.lower()
	if offnum == limit {
		lower += sizeOfItemID
	}
	upper := p.upper() - maxAlign(size)
	if lower > upper || size > 0x7FFF {
		return 0, fmt.Errorf("no room for an item of %d bytes (lower %d, upper %d)", size, p.lower(), p.upper())
	}
	p.setItemID(offnum, upper, LPNormal, size)
	p.put16(offLower, uint16(lower))
	p.put16(offUpper, uint16(upper))
	return upper, nil
}

func (p page) corruptPointers() error {
	return fmt.Errorf("corrupted page pointers: lower = %d, upper = %d, special = %d", p.lower(), p.upper(), p.special())
}

// compactItem is itemIdCompactData / itemIdSortData: a line pointer with
// storage, where its tuple is and how much room it takes.
type compactItem struct {
	index   uint16 // offsetindex: line pointer number - 1
	itemoff uint16
	alen    uint16 // MAXALIGN(lp_len)
}

// scratchPages holds copies of pages while their tuples move
// (compactify_tuples' PGAlignedBlock scratch).
var scratchPages sync.Pool

// repairFragmentation is PageRepairFragmentation of version v: line pointers
// without LP_USED are reset, the tuples are packed against pd_special and
// PD_HAS_FREE_LINES is set when unused line pointers remain.
//
// Where the tuples land differs by version: up to 13, compactify_tuples
// sorts them by decreasing itemoff and packs them in that order (their order
// on the page stays); from 14 on it packs them in line pointer order (the
// first line pointer's tuple ends at pd_special), and also truncates
// trailing unused line pointers from the array.
func (p page) repairFragmentation(v xlog.Version) error {
	lower, upper, special := p.lower(), p.upper(), p.special()
	if !p.pointersValid() || special != maxAlign(special) {
		return p.corruptPointers()
	}
	var buf [8192 / sizeOfItemID]compactItem
	items := buf[:0]
	nline := p.maxOffset()
	nunused, totallen, finalUsed := 0, 0, 0
	presorted, last := true, special
	for i := 1; i <= nline; i++ {
		off, flags, lpLen := p.itemID(i)
		if flags == LPUnused {
			p.setItemID(i, 0, LPUnused, 0)
			nunused++
			continue
		}
		finalUsed = i
		if lpLen == 0 {
			continue
		}
		if off < upper || off >= special {
			return fmt.Errorf("corrupted line pointer: %d", off)
		}
		if last > off {
			last = off
		} else {
			presorted = false
		}
		alen := maxAlign(lpLen)
		if off+alen > len(p) {
			return fmt.Errorf("corrupted line pointer: %d, length %d", off, lpLen)
		}
		totallen += alen
		items = append(items, compactItem{uint16(i - 1), uint16(off), uint16(alen)})
	}
	if len(items) == 0 {
		p.put16(offUpper, uint16(special))
	} else {
		if totallen > special-lower {
			return fmt.Errorf("corrupted item lengths: total %d, available space %d", totallen, special-lower)
		}
		if v <= xlog.V13 {
			slices.SortFunc(items, func(a, b compactItem) int { return int(b.itemoff) - int(a.itemoff) })
			presorted = true
		}
		p.compactify(items, special, presorted)
	}
	if v >= xlog.V14 && finalUsed != nline {
		// Truncate the line pointer array after the last used one.
		nunusedEnd := nline - finalUsed
		nunused -= nunusedEnd
		p.put16(offLower, uint16(p.lower()-sizeOfItemID*nunusedEnd))
	}
	if nunused > 0 {
		p.setFlag(PageHasFreeLines)
	} else {
		p.clearFlag(PageHasFreeLines)
	}
	return nil
}

// compactify is compactify_tuples: the items' tuples are placed one below
// the other from pd_special down, in the order of items, and their line
// pointers and pd_upper follow. In decreasing itemoff order every tuple moves
// towards the end of the page past tuples already moved, so moving in place
// is safe (memmove); any other order copies from a scratch copy of the page.
func (p page) compactify(items []compactItem, special int, presorted bool) {
	src := []byte(p)
	if !presorted {
		bp, _ := scratchPages.Get().(*[]byte)
		if bp == nil || cap(*bp) < len(p) {
			b := make([]byte, len(p))
			bp = &b
		}
		src = (*bp)[:len(p)]
		copy(src, p)
		defer scratchPages.Put(bp)
	}
	upper := special
	for _, it := range items {
		upper -= int(it.alen)
		copy(p[upper:upper+int(it.alen)], src[it.itemoff:int(it.itemoff)+int(it.alen)])
		_, flags, lpLen := p.itemID(int(it.index) + 1)
		p.setItemID(int(it.index)+1, upper, flags, lpLen)
	}
	p.put16(offUpper, uint16(upper))
}

// truncateLinePointerArray is PageTruncateLinePointerArray (14 and later):
// trailing unused line pointers leave the array (all but the first one), and
// PD_HAS_FREE_LINES says whether unused ones remain before them.
func (p page) truncateLinePointerArray() {
	countDone, setHint := false, false
	nunusedEnd := 0
	for i := p.maxOffset(); i >= 1; i-- {
		_, flags, _ := p.itemID(i)
		if !countDone && i > 1 {
			if flags == LPUnused {
				nunusedEnd++
			} else {
				countDone = true
			}
		} else if flags == LPUnused {
			setHint = true
			break
		}
	}
	if nunusedEnd > 0 {
		p.put16(offLower, uint16(p.lower()-sizeOfItemID*nunusedEnd))
	}
	if setHint {
		p.setFlag(PageHasFreeLines)
	} else {
		p.clearFlag(PageHasFreeLines)
	}
}
