package heap_test

import (
	"encoding/binary"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/xlog"
)

// BenchmarkRedoInsert redoes INSERTs filling a page, then starts over with an
// INSERT+INIT: the most common heap record, allocation-free.
func BenchmarkRedoInsert(b *testing.B) {
	page := make([]byte, 8192)
	tuple := []byte{2, 0, 0x02, 0x08, 24, 0, 0, 0, 0, 0, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0}
	rec := &decode.Record{Record: &xlog.Record{Version: xlog.V15, Header: xlog.RecordHeader{XID: 800, Rmid: xlog.RmgrHeap}}}
	main := make([]byte, 3)
	rec.MainData = main
	rec.Blocks = []decode.BlockRef{{ID: 0, Block: 3, Data: tuple, DataLen: uint16(len(tuple))}}
	lsn, off := xlog.LSN(0x1000000), 0
	b.ReportAllocs()
	for b.Loop() {
		off++
		rec.Header.Info = 0
		if off == 1 || off > 150 {
			off, rec.Header.Info = 1, 0x80
		}
		binary.LittleEndian.PutUint16(main, uint16(off))
		lsn += 0x40
		rec.Record.LSN, rec.Record.EndLSN = lsn, lsn+0x40
		if out, err := heap.Redo(rec, 0, page, nil); err != nil || out != heap.Applied {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkRedoPrune redoes a 14-16 PRUNE of a full page (line pointers set,
// PageRepairFragmentation compacting the tuples), allocation-free.
func BenchmarkRedoPrune(b *testing.B) {
	full := make([]byte, 8192)
	tuple := []byte{2, 0, 0x02, 0x08, 24, 0, 0, 0, 0, 0, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0}
	rec := &decode.Record{Record: &xlog.Record{Version: xlog.V15, Header: xlog.RecordHeader{XID: 800, Rmid: xlog.RmgrHeap}}}
	rec.MainData = make([]byte, 3)
	rec.Blocks = []decode.BlockRef{{ID: 0, Block: 3, Data: tuple, DataLen: uint16(len(tuple))}}
	for off := 1; off <= 150; off++ {
		rec.Header.Info = 0
		if off == 1 {
			rec.Header.Info = 0x80
		}
		binary.LittleEndian.PutUint16(rec.MainData, uint16(off))
		rec.Record.LSN, rec.Record.EndLSN = xlog.LSN(off)<<8, xlog.LSN(off)<<8+0x40
		if _, err := heap.Redo(rec, 0, full, nil); err != nil {
			b.Fatal(err)
		}
	}
	// PRUNE: every third tuple dead, the next one unused.
	var data []byte
	ndead := 0
	for off := 1; off <= 150; off += 3 {
		data = binary.LittleEndian.AppendUint16(data, uint16(off))
		ndead++
	}
	for off := 2; off <= 150; off += 3 {
		data = binary.LittleEndian.AppendUint16(data, uint16(off))
	}
	prune := &decode.Record{Record: &xlog.Record{Version: xlog.V15, LSN: 0x100000, EndLSN: 0x100100,
		Header: xlog.RecordHeader{XID: 0, Rmid: xlog.RmgrHeap2, Info: 0x10}}}
	prune.MainData = []byte{0, 0, 0, 0, 0, 0, byte(ndead), 0}
	prune.Blocks = []decode.BlockRef{{ID: 0, Block: 3, Data: data, DataLen: uint16(len(data))}}
	page := make([]byte, 8192)
	b.ReportAllocs()
	for b.Loop() {
		copy(page, full)
		if out, err := heap.Redo(prune, 0, page, nil); err != nil || out != heap.Applied {
			b.Fatal(out, err)
		}
	}
}
