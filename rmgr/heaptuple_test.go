package rmgr

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestHeapTuplesAgainstImages replays, on every fixture and corpus, the
// tuple data of every heap page: each tuple a Heap or Heap2 record carries
// (INSERT, MULTI_INSERT, UPDATE, HOT_UPDATE, INPLACE; prefix- and
// suffix-compressed UPDATEs rebuilt from the old tuple an earlier image or
// record showed) must be what the next image of its page (PageTuples, the
// server's own page) holds at its offset: same t_hoff, natts, null bitmap
// and data. Tuples pruned away before the next image are not compared.
func TestHeapTuplesAgainstImages(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every fixture and corpus")
	}
	t.Cleanup(testwal.Cleanup)
	type slot struct {
		rel   decode.RelFileLocator
		block uint32
		off   uint16
	}
	type seen struct {
		hoff  uint8
		natts int
		bits  []byte
		data  []byte
		src   TupleSource
		lsn   xlog.LSN
		whole bool // t_hoff, natts and bitmap known (not INPLACE)
	}
	var compared [6]int
	rebuilt, unresolved := 0, 0
	for _, set := range testwal.Sets(t) {
		src, err := xlog.OpenDir(filepath.Join(testwal.Extract(t, set), "archive"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		dec := decode.NewDecoder(8192)
		state := map[slot][]byte{} // tuple data by slot, for rebuilding
		pending := map[slot]seen{} // record tuples not yet checked against an image
		heapRels := map[decode.RelFileLocator]bool{}
		var tups, ptups []HeapTuple
		var page []byte
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !xlog.IsEndOfWAL(err) {
					t.Fatalf("%s: %v", set.Name, err)
				}
				break
			}
			d, err := dec.Decode(rec)
			if err != nil {
				t.Fatal(err)
			}
			isHeap := rec.Header.Rmid == xlog.RmgrHeap || rec.Header.Rmid == xlog.RmgrHeap2
			if isHeap {
				for _, b := range d.Blocks {
					heapRels[b.Rel] = true
				}
				// A record whose block 0 has an image left out the tuple it
				// writes there: the image shows that tuple, not an earlier
				// one at the same offset.
				if b := d.Block(0); b != nil && b.HasImage {
					for _, off := range heapWrittenOffsets(d) {
						delete(pending, slot{b.Rel, b.Block, off})
					}
				}
				if b := d.Block(0); b != nil && rec.Header.Info&heapInitPage != 0 {
					for s := range pending {
						if s.rel == b.Rel && s.block == b.Block {
							delete(pending, s)
						}
					}
				}
			}
			tups = RecordTuples(tups[:0], d)
			for i := range tups {
				tp := &tups[i]
				data := tp.Data
				if tp.Partial {
					old, ok := state[slot{tp.Rel, tp.OldBlock, tp.OldOffset}]
					if !ok {
						unresolved++
						delete(state, slot{tp.Rel, tp.Block, tp.Offset})
						delete(pending, slot{tp.Rel, tp.Block, tp.Offset})
						continue
					}
					if data, err = tp.Reconstruct(old); err != nil {
						t.Errorf("%s %s: %v", set.Name, rec.LSN, err)
						continue
					}
					rebuilt++
				}
				s := slot{tp.Rel, tp.Block, tp.Offset}
				data = append([]byte(nil), data...)
				state[s] = data
				pending[s] = seen{hoff: tp.Hoff, natts: tp.Natts(), bits: append([]byte(nil), tp.Bits...), data: data,
					src: tp.Source, lsn: rec.LSN, whole: tp.HasHeader}
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if !b.HasImage || b.Fork() != decode.ForkMain || !heapRels[b.Rel] || !(isHeap || rec.Header.Rmid == xlog.RmgrXLOG) {
					continue
				}
				page, err = dec.AppendPage(page[:0], d, b)
				if err != nil {
					t.Fatalf("%s %s: %v", set.Name, rec.LSN, err)
				}
				ptups, err = PageTuples(ptups[:0], rec.Version, page, b.Rel, b.Fork(), b.Block)
				if err != nil {
					t.Fatalf("%s %s: block %d: %v", set.Name, rec.LSN, b.ID, err)
				}
				onPage := map[uint16]bool{}
				for j := range ptups {
					pt := &ptups[j]
					s := slot{b.Rel, b.Block, pt.Offset}
					onPage[pt.Offset] = true
					if p, ok := pending[s]; ok {
						switch {
						case !bytes.Equal(p.data, pt.Data):
							t.Errorf("%s: %s tuple of %s (%v block %d off %d): data differs from the image at %s:\n record %x\n image  %x",
								set.Name, p.src, p.lsn, b.Rel, b.Block, pt.Offset, rec.LSN, p.data, pt.Data)
						case p.whole && (p.hoff != pt.Hoff || p.natts != pt.Natts() || !bytes.Equal(p.bits, pt.Bits)):
							t.Errorf("%s: %s tuple of %s (%v block %d off %d): header differs from the image at %s", set.Name, p.src, p.lsn, b.Rel, b.Block, pt.Offset, rec.LSN)
						default:
							compared[p.src]++
						}
						delete(pending, s)
					}
					state[s] = append([]byte(nil), pt.Data...)
				}
				for s := range pending {
					if s.rel == b.Rel && s.block == b.Block && !onPage[s.off] {
						delete(pending, s) // pruned before the image
					}
				}
			}
		}
	}
	t.Logf("checked against images: insert %d, multi-insert %d, update %d (%d rebuilt from the old tuple, %d whose old tuple the WAL did not show), inplace %d",
		compared[FromInsert], compared[FromMultiInsert], compared[FromUpdate], rebuilt, unresolved, compared[FromInplace])
	for _, s := range []TupleSource{FromInsert, FromMultiInsert, FromUpdate, FromInplace} {
		if compared[s] == 0 {
			t.Errorf("no %s tuple checked against an image", s)
		}
	}
	if rebuilt == 0 {
		t.Error("no compressed update rebuilt")
	}
}

// heapWrittenOffsets lists the offsets on block 0 whose tuple data a Heap or
// Heap2 record writes.
func heapWrittenOffsets(d *decode.Record) []uint16 {
	s, _ := HeapSummarize(d)
	switch d.Header.Rmid {
	case xlog.RmgrHeap:
		switch d.Header.Info & heapOpMask {
		case heapInsert, heapInplace:
			return []uint16{s.Offset}
		case heapUpdate, heapHotUpdate:
			return []uint16{s.NewOffset}
		}
	case xlog.RmgrHeap2:
		if d.Header.Info&heapOpMask == heap2MultiInsert && d.Header.Info&heapInitPage == 0 {
			var out []uint16
			for i := 0; i < s.NTuples; i++ {
				out = append(out, heapU16(d.MainData, 4+2*i))
			}
			return out
		}
	}
	return nil
}
