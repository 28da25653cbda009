package rows_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// TestAlterNotExact: what the undo of an ALTER TABLE cannot put back
// exactly is said, and what it cannot put back at all fails the script,
// on a real PostgreSQL 15. A middle column dropped (NOT NULL, with a
// default), rows updated and deleted after: Skipped says it comes back
// last and without its default; the script, run on the server, gives
// every row its values of before (compared by name) and the column its
// type and NOT NULL, last. A generated column dropped: Skipped names it,
// the script ends in ROLLBACK and WriteUndo returns the error. A Parquet
// file refuses the altered table's versions in two layouts.
func TestAlterNotExact(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "rows-alter-", "WALSCOPE_KEEP")
	arch, archiving := pgtest.ArchiveDir(t, work)
	base := filepath.Join(work, "base")
	p := pgtest.New(t, work, "p", 15, bin, client)
	p.InitDB(t, "", archiving+"autovacuum = off")
	p.Start(t)
	p.Query(t, `CREATE TABLE mid (id int PRIMARY KEY, a text, b int NOT NULL DEFAULT 5, c text);
INSERT INTO mid SELECT g, 'a' || g, g * 10, 'c' || g FROM generate_series(1, 10) g;
CREATE TABLE gen (id int PRIMARY KEY, v int, g int GENERATED ALWAYS AS (v * 2) STORED);
INSERT INTO gen SELECT g, g FROM generate_series(1, 5) g;
CHECKPOINT;`)
	p.BaseBackup(t, base)
	byName := "SELECT row_to_json(x) FROM (SELECT id, a, b, c FROM mid) x"
	before := p.Query(t, byName)
	xidOf := func(sql string) xlog.XID {
		var x uint32
		for _, l := range p.Query(t, "BEGIN; "+sql+" SELECT 'XID|' || txid_current(); COMMIT;") {
			if v, ok := strings.CutPrefix(l, "XID|"); ok {
				fmt.Sscan(v, &x)
			}
		}
		if x == 0 {
			t.Fatalf("%s: no xid", sql)
		}
		return xlog.XID(x)
	}
	dropMid := xidOf("ALTER TABLE mid DROP COLUMN b; UPDATE mid SET a = a || '!' WHERE id <= 2; DELETE FROM mid WHERE id = 9;")
	dropGen := xidOf("ALTER TABLE gen DROP COLUMN g; UPDATE gen SET v = 0 WHERE id = 1;")
	p.Query(t, "SELECT pg_switch_wal()")
	p.Stop("fast")

	b, err := backup.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wal, err := archive.Open(arch)
	if err != nil {
		t.Fatal(err)
	}
	undo := func(xid xlog.XID) (*rows.Result, string, error) {
		res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xid})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		err = undoFormat(res.Relations[0], 15).WriteUndo(&sb, res)
		return res, sb.String(), err
	}

	res, script, err := undo(dropMid)
	if err != nil {
		t.Fatalf("undo of the DROP COLUMN: %v", err)
	}
	skipped := strings.Join(res.Skipped, "; ")
	if !strings.Contains(skipped, "column b, dropped by the transaction, is added back as the last column") || !strings.Contains(skipped, "without its default") {
		t.Errorf("skipped: %q", skipped)
	}
	for _, s := range res.Skipped {
		if !strings.Contains(script, "-- not undone: "+s) {
			t.Errorf("the script does not say %q", s)
		}
	}
	twoLayouts := false
	pq := rows.NewParquet(res.Relations[0])
	for i := range res.Changes {
		c := &res.Changes[i]
		if c.Rel.Before == nil || c.Old == nil || c.Old.Rel == nil {
			continue
		}
		twoLayouts = true
		if _, err := pq.Append(nil, c, serverFormat(c.Rel, 15).Text); err == nil || !strings.Contains(err.Error(), "one set of columns") {
			t.Errorf("Parquet took %s at %s in two layouts: %v", c.Op, c.LSN, err)
		}
	}
	if !twoLayouts {
		t.Error("no old version in the columns of before")
	}
	res.Close()

	res, gscript, gerr := undo(dropGen)
	if gerr == nil || !strings.Contains(gerr.Error(), "generated column g") || !strings.HasSuffix(gscript, "ROLLBACK;\n") ||
		!strings.Contains(strings.Join(res.Skipped, "; "), "generated column g was dropped") {
		t.Errorf("undo of a dropped generated column: %v, skipped %q, script ends %q", gerr, res.Skipped, gscript[max(0, len(gscript)-40):])
	}
	res.Close()

	p.Start(t)
	path := filepath.Join(work, "mid.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, path)
	if out, err := pgtest.AsPostgres(p.PsqlLine("postgres") + " -f " + pgtest.Shq(path)).CombinedOutput(); err != nil {
		t.Fatalf("undo script: %v\n%s\n%s", err, out, script)
	}
	if now := p.Query(t, byName); !sameRows(now, before) {
		t.Errorf("after the undo script: %q, before: %q", now, before)
	}
	cols := strings.Join(p.Query(t, "SELECT attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END FROM pg_attribute WHERE attrelid = 'mid'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"), ", ")
	if cols != "id integer not null, a text, c text, b integer not null" {
		t.Errorf("columns after the undo script: %s", cols)
	}
	p.Stop("fast")
	t.Logf("a middle column dropped: %d rows back by name, columns %s (said: %s); a generated column dropped: %v", len(before), cols, skipped, gerr)
}
