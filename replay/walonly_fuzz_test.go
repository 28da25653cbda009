package replay

import (
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// FuzzLogged: what a heap record logs of its rows (Logged, without a
// backup) is read from any bytes without panicking; every tuple made has
// a whole header whose t_hoff is the logged one, and CompleteNew of a
// compressed update gives header, old prefix, logged middle and old suffix.
func FuzzLogged(f *testing.F) {
	upd := make([]byte, 14)
	upd[7] = xlhUpdateContainsOldTuple | xlhUpdateContainsNewTuple
	upd = append(upd, 2, 0, 0, 0, 24, 1, 0, 0, 0)
	f.Add(uint8(0), uint8(heapUpdateOp), upd, []byte{2, 0, 0, 0, 24, 0, 5, 0, 0, 0})
	del := make([]byte, 8)
	del[7] = xlhDeleteContainsOldKey
	del = append(del, 1, 0, 0, 0, 24, 7, 0, 0, 0)
	f.Add(uint8(0), uint8(heapDeleteOp), del, []byte(nil))
	f.Add(uint8(0), uint8(heapUpdateOp), []byte{0, 0, 0, 0, 1, 0, 0, 0x60, 0, 0, 0, 0, 2, 0}, []byte{3, 0, 1, 0, 2, 0, 0, 0, 24, 'x', 'y'})
	f.Add(uint8(1), uint8(heap2MultiOp|0x80), []byte{0, 0, 2, 0}, []byte{2, 0, 2, 0, 0, 0, 24, 1, 2, 0, 0, 2, 0, 0, 0, 24, 3, 4})
	f.Fuzz(func(t *testing.T, rm uint8, info uint8, main, data []byte) {
		rmid := xlog.RmgrHeap
		if rm%2 == 1 {
			rmid = xlog.RmgrHeap2
		}
		rec := &decode.Record{Record: &xlog.Record{LSN: 0x1000000, EndLSN: 0x1000100,
			Header: xlog.RecordHeader{XID: 1234, Info: info, Rmid: rmid}, Version: xlog.V15}}
		rec.MainData = main
		rec.Blocks = []decode.BlockRef{{ID: 0, Rel: decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16384}, Block: 3, Data: data, DataLen: uint16(len(data))}}
		r := &Replay{}
		for _, lg := range r.logged(rec) {
			for _, tup := range [][]byte{lg.New, lg.Old} {
				if tup != nil && len(tup) < sizeofHeapTupleHeader {
					t.Fatalf("tuple of %d bytes: shorter than its header", len(tup))
				}
			}
			if lg.NewPartial {
				old := wholeTuple(0, 0, sizeofHeapTupleHeader+1, make([]byte, 1+int(lg.NewPrefix)+int(lg.NewSuffix)))
				got := lg.CompleteNew(old)
				if want := len(lg.newHeader) + int(lg.NewPrefix) + len(lg.NewMiddle) + int(lg.NewSuffix); len(got) != want {
					t.Fatalf("CompleteNew: %d bytes, want %d", len(got), want)
				}
				if lg.CompleteNew(old[:sizeofHeapTupleHeader+1]) != nil && lg.NewPrefix+lg.NewSuffix > 0 {
					t.Fatal("CompleteNew of an old tuple shorter than the prefix and suffix")
				}
			}
		}
	})
}
