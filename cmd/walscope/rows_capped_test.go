package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
)

// TestRowsProblemsCapped: issue 27's bad input end to end, on a real
// damaged backup. A PostgreSQL 15 table of 170 rows, 150 of them with an
// external TOAST value (STORAGE EXTERNAL), an online base backup, then one
// transaction updating another column of every row (the TOAST values are
// carried over: the TOAST table's pages are not written again, so no
// full-page image repairs them); the backup's TOAST file is then zeroed.
// walscope rows: exit 1, the 20 rows without a TOAST value written, the
// message naming the first 100 changes that cannot be decoded (each by its
// ctid) and counting the other 50; --format sql: the script names the
// first 100 in "-- MISSING:" comments, counts the rest and ends in
// ROLLBACK, exit 1 too.
func TestRowsProblemsCapped(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "walscope-rows-capped-", "WALSCOPE_KEEP")
	arch, archiving := pgtest.ArchiveDir(t, work)
	p := pgtest.New(t, work, "primary", 15, bin, client)
	p.InitDB(t, "", archiving+"autovacuum = off\n")
	p.Start(t)
	p.Query(t, `CREATE TABLE t (id int PRIMARY KEY, v int, big text);
ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL;
INSERT INTO t SELECT g, g, CASE WHEN g <= 150 THEN repeat(md5(g::text), 100) END FROM generate_series(1, 170) g;
CHECKPOINT;`)
	toastFile := p.Query(t, "SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 't'")[0]
	if n := p.Query(t, "SELECT count(*) FROM pg_class c JOIN pg_class x ON x.oid = c.reltoastrelid WHERE c.relname = 't' AND pg_relation_size(x.oid) > 150 * 3000")[0]; n != "1" {
		t.Fatalf("the TOAST table does not hold the 150 values: %s", n)
	}
	base := filepath.Join(work, "base")
	p.BaseBackup(t, base)
	a := p.Session(t, "a")
	a.Exec("BEGIN")
	a.Exec("UPDATE t SET v = v + 1")
	xid := a.One("SELECT txid_current()")
	a.Exec("COMMIT")
	p.Query(t, "SELECT pg_switch_wal()")
	p.Stop("fast")

	// the damage: the backup's TOAST file, zeroed (its size kept)
	path := filepath.Join(base, toastFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, st.Size()), 0o600); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", xid, arch)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %.500s", code, stderr)
	}
	if lines := pgtest.Lines(out); len(lines) != 20 || !strings.Contains(lines[0], `"old":{"id":151,"v":151,"big":null}`) {
		t.Errorf("%d lines written, want the 20 rows without a TOAST value: %.300s", len(lines), out)
	}
	named := strings.Count(stderr, "update at ")
	if !strings.Contains(stderr, "150 changes could not be decoded") || named != 100 || strings.Count(stderr, "column big:") != 100 ||
		!strings.Contains(stderr, "; and 50 more (the first 100 are listed; all of them by kind: update of public.t: 150)") {
		t.Errorf("message (%d changes named): %.300s ... %s", named, stderr, stderr[max(0, len(stderr)-300):])
	}

	script, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", xid, "--format", "sql", arch)
	if code != 1 || !strings.Contains(stderr, "could not be decoded") {
		t.Fatalf("--format sql: exit %d, want 1: %.500s", code, stderr)
	}
	missing := strings.Count(script, "\n-- MISSING: update at ")
	if missing != 100 || !strings.Contains(script, "\n-- MISSING: 50 more changes that could not be decoded (150 in all; the first 100 are named above)\n") ||
		!strings.HasSuffix(script, "\nROLLBACK;\n") || strings.Contains(script, "COMMIT;") {
		t.Errorf("script: %d changes named missing, end %q", missing, script[max(0, len(script)-300):])
	}
	if n := strings.Count(script, "\nUPDATE public.t SET v = "); n != 20 {
		t.Errorf("script: %d rows set back, want the 20 decoded", n)
	}
	t.Logf("xid %s: 150 changes undecodable, 100 named, 50 counted; 20 written (jsonl and the script's UPDATEs)", xid)
}
