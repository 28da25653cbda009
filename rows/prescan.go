package rows

import (
	"fmt"
	"slices"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// prescan reads the WAL from the backup's start to the transaction's end
// record, decoding record headers only, and returns the relation files the
// replay must hold for Changes: those the transaction's heap records (and
// those of its subtransactions that committed with it) change, those its
// commit drops (a truncated or dropped table's old file, read as of just
// before), and the backup's TOAST files; the catalogs and the files the
// WAL makes are held by replay.Config.HoldCatalogs. Holding only these
// spares the replay the pages of every other table (issue 27's speed
// goal). It also returns the subtransactions the commit lists, so that
// the replay watches only those. ok is false when the end record was not
// found: the caller holds everything and lets the replay say why.
func prescan(cfg Config) (hold map[decode.RelFileLocator]bool, subxacts []xlog.XID, ok bool, err error) {
	opts := cfg.Options
	opts.Start = cfg.Backup.StartLSN()
	rd, err := xlog.NewReader(cfg.WAL, opts)
	if err != nil {
		return nil, nil, false, nil // the replay reports it, positioned
	}
	defer rd.Close()
	dec := decode.NewDecoder(int(cfg.Backup.BlockSize()))
	files := map[xlog.XID]map[decode.RelFileLocator]bool{}
	x := cfg.XID
	for {
		rec, err := rd.Next()
		if err != nil {
			// the end of the WAL, a gap, damage: the replay reads the same
			// WAL and says what it is, positioned
			return nil, nil, false, nil
		}
		d, err := dec.Decode(rec)
		if err != nil {
			return nil, nil, false, nil
		}
		switch d.Header.Rmid {
		case xlog.RmgrHeap, xlog.RmgrHeap2:
			xid := d.Header.XID
			if xid == 0 || int32(uint32(xid)-uint32(x)) < 0 {
				continue
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if b.Fork() != decode.ForkMain {
					continue
				}
				m := files[xid]
				if m == nil {
					m = map[decode.RelFileLocator]bool{}
					files[xid] = m
				}
				m[b.Rel] = true
			}
		case xlog.RmgrTransaction:
			e, isEnd := rmgr.XactEnd(d)
			if !isEnd {
				continue
			}
			if e.XID != x {
				if e.Commit && slices.Contains(e.Subxacts, x) {
					return nil, nil, false, fmt.Errorf("transaction %d is a subtransaction of %d, which committed at %s: %w (give --xid %d)", x, e.XID, d.LSN, ErrSubtransaction, e.XID)
				}
				delete(files, e.XID)
				for _, s := range e.Subxacts {
					delete(files, s)
				}
				continue
			}
			hold = map[decode.RelFileLocator]bool{}
			for _, id := range append([]xlog.XID{x}, e.Subxacts...) {
				for f := range files[id] {
					hold[f] = true
				}
			}
			for _, f := range e.DroppedRels {
				hold[f] = true
			}
			toast, err := replay.ToastFiles(cfg.Backup, xlog.Version(rd.Version()))
			if err != nil {
				return nil, nil, false, err
			}
			for _, f := range toast {
				hold[f] = true
			}
			return hold, append([]xlog.XID{}, e.Subxacts...), true, nil
		}
	}
}
