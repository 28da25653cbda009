package replay

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/walscope/walscope/tuple"
)

// FuzzItemAt: itemAt never panics nor returns bytes outside the page, and
// on a page tuple.PageItems accepts it gives exactly the LP_NORMAL items
// PageItems gives (nil for the other line pointers).
func FuzzItemAt(f *testing.F) {
	page := make([]byte, 256)
	binary.LittleEndian.PutUint16(page[12:], 24+2*4) // pd_lower: two line pointers
	binary.LittleEndian.PutUint16(page[14:], 200)    // pd_upper
	binary.LittleEndian.PutUint16(page[16:], 256)    // pd_special
	binary.LittleEndian.PutUint16(page[18:], 256&0xFF00|4)
	binary.LittleEndian.PutUint32(page[24:], 200|1<<15|30<<17) // (200, 30) LP_NORMAL
	binary.LittleEndian.PutUint32(page[28:], 230|3<<15|20<<17) // LP_DEAD
	f.Add(page, uint16(1))
	f.Add(page, uint16(2))
	f.Add(page, uint16(3))
	f.Add([]byte{}, uint16(1))
	f.Fuzz(func(t *testing.T, page []byte, off uint16) {
		got := itemAt(page, off)
		if got != nil {
			lp := 24 + 4*int(off-1)
			v := binary.LittleEndian.Uint32(page[lp:])
			start := int(v & 0x7FFF)
			if start < 24 || start+len(got) > len(page) || !bytes.Equal(page[start:start+len(got)], got) {
				t.Fatalf("item at %d: not the page's bytes at its line pointer", off)
			}
		}
		items, err := tuple.PageItems(nil, page)
		if err != nil {
			return
		}
		// a page PageItems accepts: every LP_NORMAL item is listed, inside
		// the page
		var want []byte
		for _, it := range items {
			if it.Offset == off {
				want = it.Tuple
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("item %d: itemAt %x, PageItems %x", off, got, want)
		}
	})
}
