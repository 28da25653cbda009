package heap_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/xlog"
)

// fuzzRecord builds a decoded record by hand: one block reference of the
// given fork (id 0, or 1 when id1), main data and block data, and
// optionally an uncompressed image of the block.
func fuzzRecord(version uint8, rmid xlog.RmgrID, info uint8, fork uint8, id uint8, main, data, image []byte, apply bool) *decode.Record {
	rec := &decode.Record{Record: &xlog.Record{
		LSN: 0x1000000, EndLSN: 0x1000100,
		Header:  xlog.RecordHeader{XID: 1234, Info: info, Rmid: rmid},
		Version: xlog.Version(10 + version%9),
	}}
	rec.MainData = main
	b := decode.BlockRef{ID: id % 4, ForkFlags: fork % 4, Rel: decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16384},
		Block: 7, DataLen: uint16(len(data)), Data: data}
	if image != nil {
		b.HasImage, b.Apply, b.Image, b.ImageLen = true, apply, image, uint16(len(image))
	}
	rec.Blocks = []decode.BlockRef{b}
	if b.ID != 0 {
		// A heap block 0 beside it (UPDATE's new page, VISIBLE's heap page).
		rec.Blocks = append([]decode.BlockRef{{ID: 0, Rel: b.Rel, Block: 9}}, rec.Blocks...)
	}
	return rec
}

// fuzzPage is a real-looking heap page of 8 kB: two tuples inserted by
// INSERT+INIT redo.
func fuzzPage(tb testing.TB) []byte {
	pg := make([]byte, 8192)
	for i, off := range []uint16{1, 2} {
		main := binary.LittleEndian.AppendUint16(nil, off)
		main = append(main, 0)
		data := []byte{2, 0, 0x02, 0x08, 24, 0, 'h', 'e', 'l', 'l', 'o'}
		info := uint8(0x00)
		if i == 0 {
			info = 0x80
		}
		rec := fuzzRecord(5, xlog.RmgrHeap, info, 0, 0, main, data, nil, false)
		// Before the records built by fuzzRecord (0x1000000).
		rec.Record.LSN = xlog.LSN(0x100000 + i*0x200)
		rec.Record.EndLSN = rec.Record.LSN + 0x100
		if _, err := heap.Redo(rec, 0, pg, decode.NewDecoder(8192)); err != nil {
			tb.Fatal(err)
		}
	}
	return pg
}

// FuzzRedo: Redo on any record and any page never panics, writes nothing
// outside the page, and every error wraps ErrRedo; Mask and ReadPage take
// whatever page it leaves.
func FuzzRedo(f *testing.F) {
	pg := fuzzPage(f)
	u16 := func(v ...uint16) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
		return b
	}
	// version, rmid (0: Heap, 1: Heap2, 2: XLOG), info, fork, id, main, data, image, apply, page
	f.Add(uint8(5), uint8(0), uint8(0x10), uint8(0), uint8(0), append([]byte{9, 0, 0, 0}, 1, 0, 0, 0), []byte{}, []byte{}, false, pg)                                                    // DELETE
	f.Add(uint8(5), uint8(0), uint8(0x20), uint8(0), uint8(0), append([]byte{9, 0, 0, 0, 1, 0, 0, 0x60, 0, 0, 0, 0}, 3, 0), append(u16(2, 1), 2, 0, 2, 8, 24, 'x'), []byte{}, false, pg) // UPDATE with prefix+suffix
	f.Add(uint8(5), uint8(1), uint8(0x10), uint8(0), uint8(0), []byte{0, 0, 0, 0, 1, 0, 0, 0}, u16(1, 2), []byte{}, false, pg)                                                           // PRUNE
	f.Add(uint8(8), uint8(1), uint8(0x10), uint8(0), uint8(0), []byte{1, 0xE4}, append(u16(1, 0, 9, 0, 0, 0x300, 0, 1), u16(1, 1, 2, 1, 2, 1, 1, 1)...), []byte{}, false, pg)            // 17+ prune
	f.Add(uint8(5), uint8(1), uint8(0x40), uint8(2), uint8(0), []byte{1, 0, 0, 0, 3}, []byte{}, []byte{}, false, make([]byte, 8192))                                                     // VISIBLE map page
	f.Add(uint8(5), uint8(1), uint8(0x50), uint8(0), uint8(0), append([]byte{0, 0}, u16(1, 3)...), append(u16(5, 2, 0x802), 24, 0, 'a', 'b', 'c', 'd', 'e'), []byte{}, false, pg)        // MULTI_INSERT
	f.Add(uint8(5), uint8(2), uint8(0xB0), uint8(0), uint8(0), []byte{}, []byte{}, pg[:4000], true, pg)                                                                                  // XLOG FPI, bad image length
	f.Fuzz(func(t *testing.T, version, rm, info, fork, id uint8, main, data, image []byte, apply bool, page []byte) {
		sizes := []int{1024, 4096, 8192}
		size := sizes[len(page)%3]
		buf := make([]byte, size+64)
		copy(buf, page)
		for i := size; i < len(buf); i++ {
			buf[i] = 0xA5
		}
		rmid := []xlog.RmgrID{xlog.RmgrHeap, xlog.RmgrHeap2, xlog.RmgrXLOG}[rm%3]
		var img []byte
		if len(image) > 0 {
			img = image
		}
		rec := fuzzRecord(version, rmid, info, fork, id, main, data, img, apply)
		out, err := heap.Redo(rec, id%4, buf[:size], decode.NewDecoder(size))
		if err != nil && !errors.Is(err, heap.ErrRedo) {
			t.Fatalf("error not wrapping ErrRedo: %v", err)
		}
		if err == nil && out > heap.NotFound {
			t.Fatalf("outcome %v", out)
		}
		heap.Mask(buf[:size], 7)
		_, _ = heap.ReadPage(buf[:size])
		for i := size; i < len(buf); i++ {
			if buf[i] != 0xA5 {
				t.Fatalf("byte %d past the %d-byte page written", i, size)
			}
		}
	})
}
