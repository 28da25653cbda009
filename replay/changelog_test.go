package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// TestChangeLogReadBack: changes of every shape (tuples of 0 bytes to
// 3 MiB, more than the 1 MiB the backward reader reads at a time; nil
// tuples; a TRUNCATE's relids; what a record logs without a backup) kept
// with budgets from nothing in memory to everything in memory come back
// identical, forward and backward; the changes of xids not kept, of a
// super-deleted speculative insertion and of a file cut off by a
// truncation are left out, the others kept; the truncations' ChangeCut
// pages are given only by WithCuts, which keeps the changes they cut.
func TestChangeLogReadBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	rel := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16384}
	other := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16390}
	tup := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var all []*Change
	for i := range 300 {
		c := &Change{seq: i + 1, LSN: xlog.LSN(0x1000000 + 64*i), XID: xlog.XID(700 + i%3), Op: ChangeOp(1 + i%5), Rel: rel,
			OldBlock: uint32(i), OldOffset: uint16(i % 7), NewBlock: uint32(i / 2), NewOffset: uint16(1 + i%5), HOT: i%5 == 0, OldKnown: i%2 == 0}
		if i%6 == 1 {
			c.Rel = other
		}
		switch {
		case i == 17:
			c.Old = tup(3 << 20)
		case i == 120:
			c.New = tup(1<<20 + 5)
		case i%4 == 0:
			c.Old, c.New = tup(rng.IntN(300)), tup(rng.IntN(300))
		case i%4 == 1:
			c.New = []byte{} // empty, not nil
		}
		if c.Op == ChangeTruncate {
			c.DB, c.RelIDs = 5, []uint32{16384, uint32(16400 + i)}
		}
		if i%9 == 0 {
			c.Logged = &Logged{New: tup(40), NewPartial: i%2 == 0, NewPrefix: 3, NewSuffix: 4, NewMiddle: tup(10), newHeader: tup(23), Old: tup(20), OldKeyOnly: true, Logical: i%3 == 0}
		}
		all = append(all, c)
	}
	text := func(c *Change) string {
		return fmt.Sprintf("%d %s %d %d %v %v %d/%d %x %d/%d %x %d %v %v %v %v %+v", c.seq, c.LSN, c.XID, c.Op, c.HOT, c.Rel, c.OldBlock, c.OldOffset, c.Old, c.NewBlock, c.NewOffset, c.New, c.DB, c.RelIDs, c.OldKnown, c.NewKnown, c.Old == nil, c.Logged)
	}
	for _, budget := range []int64{1, 1000, 64 << 10, 1 << 30} {
		l := newChangeLog(budget, t.TempDir())
		for _, c := range all {
			l.add(c)
		}
		// taken back: a super-deleted insertion, a file cut at block 40
		// after the 200th change
		l.killed[all[8].seq] = true
		l.truncs = append(l.truncs, truncation{seq: 200, rel: rel, blocks: 40})
		cl := &ChangeList{l: l, keep: map[xlog.XID]bool{700: true, 702: true}}
		var want, wantCuts []string
		for _, c := range all {
			gone := c.seq == all[8].seq || c.XID == 701
			if !gone {
				wantCuts = append(wantCuts, text(c))
			}
			gone = gone || c.Op == ChangeCut ||
				(c.Op == ChangeInsert || c.Op == ChangeUpdate) && c.seq <= 200 && c.Rel == rel && c.NewBlock >= 40
			if !gone {
				want = append(want, text(c))
			}
		}
		var cuts, cutsBack []string
		for c, err := range cl.WithCuts().All() {
			if err != nil {
				t.Fatal(err)
			}
			cuts = append(cuts, text(c))
		}
		for c, err := range cl.WithCuts().Backward() {
			if err != nil {
				t.Fatal(err)
			}
			cutsBack = append(cutsBack, text(c))
		}
		slices.Reverse(cutsBack)
		if len(wantCuts) == len(want) || !slices.Equal(cuts, wantCuts) || !slices.Equal(cutsBack, wantCuts) {
			t.Errorf("budget %d, WithCuts: %d changes forward, %d backward, want %d (%d without cuts), or they differ", budget, len(cuts), len(cutsBack), len(wantCuts), len(want))
		}
		var fwd, back []string
		for c, err := range cl.All() {
			if err != nil {
				t.Fatal(err)
			}
			fwd = append(fwd, text(c))
		}
		for c, err := range cl.Backward() {
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, text(c))
		}
		slices.Reverse(back)
		if !slices.Equal(fwd, want) || !slices.Equal(back, want) {
			t.Errorf("budget %d: %d changes forward, %d backward, want %d, or they differ", budget, len(fwd), len(back), len(want))
		}
		spilled := l.written
		if budget < 1<<30 && spilled == 0 || budget == 1<<30 && spilled != 0 {
			t.Errorf("budget %d: %d bytes spilled", budget, spilled)
		}
		// stopping early stops the reading
		n := 0
		for range cl.Backward() {
			if n++; n == 3 {
				break
			}
		}
		if n != 3 {
			t.Errorf("budget %d: stopped after %d", budget, n)
		}
		// an empty tuple stays empty, a nil one nil
		for c := range cl.All() {
			if c.seq == 2 && (c.New == nil || len(c.New) != 0) || c.seq == 3 && c.New != nil {
				t.Errorf("budget %d: change %d: new tuple %v (nil %v)", budget, c.seq, c.New, c.New == nil)
			}
		}
		if err := l.close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("budget %d: %d of %d changes kept, identical forward and backward (%d bytes in the file)", budget, len(want), len(all), spilled)
	}
	if bytes.Equal(all[17].Old, nil) {
		t.Fatal("no large tuple")
	}
}
