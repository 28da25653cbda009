package replay

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestSpansEqualSequential: a replay holding some files, its WAL read in
// spans on two cores with the records it does not need left out
// (spans.go), gives what one reader replaying every record gives: where it
// stopped and how many records it replayed, the watched changes, every
// page and size of the files held, the catalog and the commit states. Over
// fixtures/rows (1 MB segments, one span each), for each incident's
// transaction with the files of its tables held, as rows holds them; and
// again with every span after the first read again whole (rereadSpan, what
// a span that left out records of a file an earlier span made does); and
// with the backup given while the replay runs (PendingBackup); and with
// spans keeping at most 16 KB of records (beyond, one reader reads on:
// maxKeptBytes bounds the memory of the parts read ahead).
func TestSpansEqualSequential(t *testing.T) {
	d := filepath.Join(testwal.Root(t), "fixtures", "rows")
	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	var facts []struct {
		Name   string   `json:"name"`
		XID    uint32   `json:"xid"`
		Tables []string `json:"tables"`
	}
	raw, err := os.ReadFile(filepath.Join(d, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	bk, err := backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	wal, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer wal.Close()
	b := OpenBackup(bk)
	const segBytes = 1 << 20
	pages, rereads, later := 0, 0, 0
	for _, f := range facts {
		hold := map[decode.RelFileLocator]bool{}
		for _, tab := range f.Tables {
			files, err := FilesNamed(b, xlog.Version(bk.MajorVersion()), tab)
			if err != nil {
				t.Fatalf("%s: %s: %v", f.Name, tab, err)
			}
			for _, l := range files {
				hold[l] = true
			}
		}
		var got [6][]string
		for i, c := range []struct {
			workers int
			reread  bool
			pending bool
			maxKept int
		}{{1, false, false, 0}, {2, false, false, 0}, {2, true, false, 0}, {2, false, true, 0}, {2, false, false, 16 << 10}, {2, false, false, 160 << 10}} {
			var src Backup = b
			if c.pending {
				// the backup given while the replay runs (a compressed
				// tar still being opened)
				p := NewPendingBackup(b.StartLSN(), b.BlockSize())
				go func() {
					time.Sleep(20 * time.Millisecond)
					p.Set(b, nil)
				}()
				src = p
			}
			cfg := Config{Backup: src, WAL: wal, Options: xlog.Options{FollowHistory: true}, Target: Target{XID: xlog.XID(f.XID)},
				Hold: func(l decode.RelFileLocator) bool { return hold[l] }, HoldCatalogs: true, WatchXID: xlog.XID(f.XID),
				Workers: c.workers, spanBytes: segBytes, forceReread: c.reread, maxKept: c.maxKept}
			r, err := Run(cfg)
			if err != nil {
				t.Fatalf("%s (workers %d, re-read %v): %v", f.Name, c.workers, c.reread, err)
			}
			if c.workers > 1 && !r.parallel() {
				t.Fatalf("%s: not read in spans", f.Name)
			}
			if c.maxKept > 0 {
				if r.sequential == 0 && c.maxKept == 16<<10 {
					t.Fatalf("%s: no span kept more than %d bytes", f.Name, c.maxKept)
				}
				if r.sequential > r.start {
					later++ // one reader on from a span after the first
				}
			}
			if c.reread {
				if r.rereads == 0 {
					t.Fatalf("%s: no span read again", f.Name)
				}
				rereads += r.rereads
			}
			var n int
			got[i], n = replayState(t, r, hold)
			if i == 0 {
				pages += n
			}
			r.Close()
		}
		if d := firstDiff(got[0], got[1]); d != "" {
			t.Errorf("%s: one reader and spans differ at %s", f.Name, d)
		}
		if d := firstDiff(got[0], got[2]); d != "" {
			t.Errorf("%s: one reader and spans read again differ at %s", f.Name, d)
		}
		if d := firstDiff(got[0], got[3]); d != "" {
			t.Errorf("%s: one reader and spans with the backup given late differ at %s", f.Name, d)
		}
		if d := firstDiff(got[0], got[4]); d != "" {
			t.Errorf("%s: one reader and spans keeping at most 16 KB differ at %s", f.Name, d)
		}
		if d := firstDiff(got[0], got[5]); d != "" {
			t.Errorf("%s: one reader and spans keeping at most 160 KB differ at %s", f.Name, d)
		}
	}
	if later == 0 {
		t.Errorf("no reading went on with one reader from a span after the first")
	}
	t.Logf("%d transactions, %d pages identical; %d spans read again, %d readings on with one reader from a later span", len(facts), pages, rereads, later)
}

// replayState renders what a replay gives, and counts the pages.
func replayState(t *testing.T, r *Replay, hold map[decode.RelFileLocator]bool) ([]string, int) {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("stop %+v", r.Stop())
	for c, err := range r.WatchedChanges().WithCuts().All() {
		if err != nil {
			t.Fatal(err)
		}
		add("change %s %d %d %v %d %d %x %d %d %x", c.LSN, c.XID, c.Op, c.Rel, c.OldBlock, c.OldOffset, c.Old, c.NewBlock, c.NewOffset, c.New)
	}
	n := 0
	for _, l := range sortedFiles(hold) {
		nb, err := r.NBlocks(l, decode.ForkMain)
		add("file %v %d %v", l, nb, err)
		for blk := range nb {
			p, lsn, err := r.Page(nil, l, decode.ForkMain, blk)
			add("page %d %s %v %x", blk, lsn, err, sha256.Sum256(p))
			n++
		}
	}
	// every page held (the catalogs' too) and every file's state
	keys := slices.Collect(maps.Keys(r.store.blocks))
	slices.SortFunc(keys, func(a, b blockKey) int {
		return cmp.Or(cmp.Compare(a.rel.DBOID, b.rel.DBOID), cmp.Compare(a.rel.RelNumber, b.rel.RelNumber), cmp.Compare(a.fork, b.fork), cmp.Compare(a.blk, b.blk))
	})
	for _, k := range keys {
		h, err := r.store.get(k)
		if err != nil {
			t.Fatal(err)
		}
		add("held %v %s %x", k, h.lastLSN, sha256.Sum256(h.page))
	}
	rels := slices.Collect(maps.Keys(r.rels))
	slices.SortFunc(rels, func(a, b relKey) int {
		return cmp.Or(cmp.Compare(a.rel.DBOID, b.rel.DBOID), cmp.Compare(a.rel.RelNumber, b.rel.RelNumber), cmp.Compare(a.fork, b.fork))
	})
	for _, k := range rels {
		s := *r.rels[k]
		s.copyFrom = nil
		add("rel %v %+v", k, s)
	}
	add("left out %v", sortedFiles(r.leftOut))
	if _, err := r.RelMap(0); err != nil { // read when asked for, with a PendingBackup
		t.Fatal(err)
	}
	for _, db := range slices.Sorted(maps.Keys(r.relmaps)) {
		add("relmap %d %+v", db, *r.relmaps[db])
	}
	for x := xlog.XID(3); x < 2000; x++ {
		add("xid %d %d %d", x, r.Xacts().Status(x), r.Xacts().Parent(x))
	}
	return out, n
}

func sortedFiles(m map[decode.RelFileLocator]bool) []decode.RelFileLocator {
	l := slices.Collect(maps.Keys(m))
	slices.SortFunc(l, func(a, b decode.RelFileLocator) int {
		return cmp.Or(cmp.Compare(a.DBOID, b.DBOID), cmp.Compare(a.RelNumber, b.RelNumber))
	})
	return l
}

// firstDiff is the first line where a and b differ.
func firstDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			x, y := "(none)", "(none)"
			if i < len(a) {
				x = a[i]
			}
			if i < len(b) {
				y = b[i]
			}
			return fmt.Sprintf("line %d:\n  %s\n  %s", i, x, y)
		}
	}
	return ""
}
