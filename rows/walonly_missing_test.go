package rows_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestWALOnlyAddedColumn: without a backup, with a catalog file (which
// gives attmissingval as text only) and the WAL from the cluster's start
// (which shows pg_attribute's rows), the rows stored before two columns
// were added with a default (an int and a text, atthasmissing) read their
// defaults from the datum stored in pg_attribute: on a real PostgreSQL 15
// the old rows of a transaction's UPDATE and DELETE are the server's rows
// before it (row_to_json), complete, and none is counted missing for an
// added column. Read from after a checkpoint (pg_attribute's pages not in
// the WAL read), they are counted missing (rows.WhyAdded), as before.
func TestWALOnlyAddedColumn(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "rows-added-", "WALSCOPE_KEEP")
	p := pgtest.New(t, work, "p", 15, bin, client)
	p.InitDB(t, "", "wal_level = replica\nwal_keep_size = '1GB'\nmax_wal_size = '1GB'\ncheckpoint_timeout = '1h'\nautovacuum = off")
	p.Start(t)
	p.Query(t, `CREATE TABLE late (id int PRIMARY KEY, v text);
INSERT INTO late SELECT g, 'v' || g FROM generate_series(1, 40) g;
ALTER TABLE late ADD COLUMN n int DEFAULT 7, ADD COLUMN s text DEFAULT 'later';
INSERT INTO late VALUES (41, 'after', 1, 'own');
CHECKPOINT;`)
	start := p.Query(t, "SELECT pg_current_wal_lsn()")[0]
	before := serverRows(t, p, "late")
	var xid uint64
	for _, l := range p.Query(t, "BEGIN; UPDATE late SET v = v || '!' WHERE id <= 3 OR id = 41; DELETE FROM late WHERE id = 10; SELECT 'XID|' || txid_current(); COMMIT;") {
		if v, ok := strings.CutPrefix(l, "XID|"); ok {
			xid, _ = strconv.ParseUint(v, 10, 32)
		}
	}
	if xid == 0 {
		t.Fatal("no xid")
	}
	catPath := filepath.Join(work, "catalog.json")
	if err := os.WriteFile(catPath, []byte(strings.Join(p.Query(t, rows.CatalogQuery), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	walDir := filepath.Join(work, "wal")
	if out, err := exec.Command("cp", "-a", filepath.Join(p.Dir, "pg_wal"), walDir).CombinedOutput(); err != nil {
		t.Fatalf("cp pg_wal: %v\n%s", err, out)
	}
	wal, err := archive.Open(walDir)
	if err != nil {
		t.Fatal(err)
	}
	read := func(from xlog.LSN) *rows.Result {
		cf, err := os.Open(catPath)
		if err != nil {
			t.Fatal(err)
		}
		defer cf.Close()
		cat, err := rows.ReadCatalog(cf, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(xid), Start: from, Catalog: cat})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	byJSON := map[string]bool{}
	for _, js := range before {
		byJSON[js] = true
	}

	res := read(0)
	defer res.Close()
	old := 0
	for i := range res.Changes {
		c := &res.Changes[i]
		if c.Old == nil {
			t.Errorf("%s at %s: no old row (%s)", c.Op, c.LSN, c.OldMissing)
			continue
		}
		if !c.Old.Complete() {
			t.Errorf("%s at %s: old row incomplete (%s)", c.Op, c.LSN, c.OldMissing)
			continue
		}
		js, err := serverFormat(c.Rel, 15).AppendRowJSON(nil, c.Rel, c.Old)
		if err != nil {
			t.Fatal(err)
		}
		if !byJSON[string(js)] {
			t.Errorf("%s at %s: old row %s is not among the server's rows before", c.Op, c.LSN, js)
		}
		old++
	}
	for _, m := range res.Missing {
		if m.Reason == rows.WhyAdded {
			t.Errorf("counted missing: %+v", m)
		}
	}
	if old != 5 {
		t.Errorf("%d old rows read, want the 4 updated and the 1 deleted", old)
	}

	// from after the checkpoint: pg_attribute's rows are not in the WAL read
	ls, err := xlog.ParseLSN(start)
	if err != nil {
		t.Fatal(err)
	}
	late := read(ls)
	defer late.Close()
	added := 0
	for _, m := range late.Missing {
		if m.Reason == rows.WhyAdded {
			added += m.Rows
		}
	}
	if added != 4 {
		t.Errorf("from after the checkpoint: %d rows counted missing for an added column (%+v), want the 4 stored before it", added, late.Missing)
	}
	t.Logf("PostgreSQL 15: %d old rows complete and equal to the server's, the added columns' values from pg_attribute's rows in the WAL read; from after the checkpoint, %d rows counted missing (%s)", old, added, rows.WhyAdded)
}
