package rows_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// fact is one incident of fixtures/rows/facts.json: the transaction, and
// per table and operation the rows its statements that were not rolled
// back changed, as the server counted them.
type fact struct {
	Name   string                    `json:"name"`
	XID    uint32                    `json:"xid"`
	Tables []string                  `json:"tables"`
	Ops    map[string]map[string]int `json:"ops"`
}

func fixture(t testing.TB) (b *backup.Backup, wal xlog.Source, facts []fact) {
	t.Helper()
	d := filepath.Join(testwal.Root(t), "fixtures", "rows")
	dir := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(d, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	b, err = backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	wal, err = archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	return b, wal, facts
}

// TestChangesCounts: for each incident of fixtures/rows, the changes
// Changes gives, counted per table and operation, are exactly the rows the
// server said its statements changed (rolled-back savepoints and the
// concurrent session's inserts excluded; TRUNCATE and DROP as every row
// the table had just before).
func TestChangesCounts(t *testing.T) {
	b, wal, facts := fixture(t)
	total := 0
	for _, f := range facts {
		res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID)})
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		got := map[string]map[string]int{}
		for _, c := range res.Changes {
			if c.Err != nil {
				t.Errorf("%s: %s at %s: %v", f.Name, c.Rel.Class.Name, c.LSN, c.Err)
			}
			n := c.Rel.Class.Name
			if got[n] == nil {
				got[n] = map[string]int{}
			}
			got[n][string(c.Op)]++
		}
		for _, s := range res.Skipped {
			t.Errorf("%s: skipped: %s", f.Name, s)
		}
		res.Close()
		if g, w := mustJSON(got), mustJSON(f.Ops); g != w {
			t.Errorf("%s (xid %d): changes per table and operation\n got %s\nwant %s", f.Name, f.XID, g, w)
			continue
		}
		for _, ops := range f.Ops {
			for _, n := range ops {
				total += n
			}
		}
	}
	if total == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d changed rows of %d transactions, counted as the server did", total, len(facts))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestHoldOnlyNeeded: the replay holding only the files the prescan names
// (the transaction's, the dropped ones, the TOAST ones, the catalogs and
// the files the WAL makes) gives every change exactly as the replay
// holding every page does.
func TestHoldOnlyNeeded(t *testing.T) {
	b, wal, facts := fixture(t)
	compared := 0
	for _, f := range facts {
		var got [2][]string
		for i, all := range []bool{false, true} {
			res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(f.XID), HoldAll: all})
			if err != nil {
				t.Fatalf("%s (hold all %v): %v", f.Name, all, err)
			}
			for _, c := range res.Changes {
				got[i] = append(got[i], fmt.Sprintf("%s %d %s %s %v %v %v", c.LSN, c.XID, c.Op, c.Rel.Name(), rowText(c.Old), rowText(c.New), c.Err))
			}
			res.Close()
		}
		if len(got[0]) == 0 || !slices.Equal(got[0], got[1]) {
			t.Errorf("%s: %d changes holding what is needed, %d holding all, or they differ", f.Name, len(got[0]), len(got[1]))
		}
		compared += len(got[0])
	}
	t.Logf("%d changes identical", compared)
}

func rowText(r *rows.Row) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("(%d,%d)%x%v", r.Block, r.Offset, r.Values, r.Nulls)
}
