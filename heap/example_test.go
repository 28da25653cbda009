package heap_test

import (
	"fmt"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Follow one heap block through the sample WAL (block 0 of the table whose
// file is 1663/16384/16385): from its first full-page image on, redo every
// record that touches it, then list the page as pageinspect's
// heap_page_items would.
func ExampleRedo() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	page := make([]byte, 8192)
	rel, blk := decode.RelFileLocator{SpcOID: 1663, DBOID: 16384, RelNumber: 16385}, uint32(0)
	following := false
	types := map[string]int{}
	outcomes := map[heap.Outcome]int{}
	for {
		xr, err := r.Next()
		if err != nil {
			break // the end of the sample (io.EOF)
		}
		rec, err := dec.Decode(xr)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := range rec.Blocks {
			b := &rec.Blocks[i]
			if b.Fork() != decode.ForkMain || b.Rel != rel || b.Block != blk {
				continue
			}
			if !following && !(b.HasImage && b.Apply) {
				continue // its content is not known before an image
			}
			following = true
			out, err := heap.Redo(rec, b.ID, page, dec)
			if err != nil {
				fmt.Println(err)
				return
			}
			outcomes[out]++
			if out == heap.Applied {
				types[string(rmgr.AppendRecordType(nil, rec.Version, rec.Header.Rmid, rec.Header.Info))]++
			}
		}
	}
	p, err := heap.ReadPage(page)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("block %d of %d/%d/%d: %d restored, %d applied, %d skipped\n",
		blk, rel.SpcOID, rel.DBOID, rel.RelNumber, outcomes[heap.Restored], outcomes[heap.Applied], outcomes[heap.Skipped])
	fmt.Println("redone:", types)
	fmt.Printf("page: lsn %s, lower %d, upper %d, %d line pointers\n", xlog.LSN(p.Header.LSN), p.Header.Lower, p.Header.Upper, len(p.Items))
	for _, it := range p.Items[:3] {
		fmt.Printf("lp %d: flags %d, off %d, len %d, xmin %d, xmax %d, ctid (%d,%d)\n",
			it.LP, it.LPFlags, it.LPOff, it.LPLen, it.Xmin, it.Xmax, it.CtidBlock, it.CtidOffset)
	}
	// Output:
	// block 0 of 1663/16384/16385: 1 restored, 37 applied, 0 skipped
	// redone: map[HOT_UPDATE:13 LOCK:21 PRUNE:3]
	// page: lsn 0/68A508, lower 420, upper 2104, 99 line pointers
	// lp 1: flags 2, off 99, len 0, xmin 0, xmax 0, ctid (0,0)
	// lp 2: flags 1, off 8120, len 66, xmin 726, xmax 733, ctid (0,2)
	// lp 3: flags 1, off 8048, len 66, xmin 726, xmax 733, ctid (0,3)
}

// Mask blanks what heap_mask blanks, so that two pages of the same block,
// one from redo and one from the server, compare byte for byte: here the
// server's copy has a checksum, a later LSN and a hint bit set by a reader.
func ExampleMask() {
	// A page holding one tuple, as the redo of an INSERT+INIT leaves it.
	rec := &decode.Record{Record: &xlog.Record{
		LSN: 0x1000000, EndLSN: 0x1000040, Version: xlog.V15,
		Header: xlog.RecordHeader{XID: 750, Rmid: xlog.RmgrHeap, Info: 0x80},
	}}
	rec.MainData = []byte{1, 0, 0} // xl_heap_insert: offnum 1, flags 0
	tuple := []byte{1, 0, 0x02, 0x08, 24, 0, 0, 0, 0, 0, 0, 0, 0}
	rec.Blocks = []decode.BlockRef{{ID: 0, Block: 7, Data: tuple, DataLen: uint16(len(tuple))}}
	redone := make([]byte, 8192)
	if _, err := heap.Redo(rec, 0, redone, nil); err != nil {
		fmt.Println(err)
		return
	}
	server := append([]byte(nil), redone...)
	server[8], server[9] = 0x5A, 0xC3 // pd_checksum
	server[4] = 0x80                  // pd_lsn
	p, _ := heap.ReadPage(server)
	server[int(p.Items[0].LPOff)+21] |= 0x01 // t_infomask (@20, little-endian) |= HEAP_XMIN_COMMITTED (0x0100)
	fmt.Println("equal before masking:", string(redone) == string(server))
	heap.Mask(redone, 7)
	heap.Mask(server, 7)
	fmt.Println("equal after masking:", string(redone) == string(server))
	// Output:
	// equal before masking: false
	// equal after masking: true
}
