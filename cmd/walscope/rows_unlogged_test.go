package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
)

// TestRowsUnloggedExit: exit 7 with a backup, end to end on a real
// PostgreSQL 15. After an online base backup, one transaction updates a
// logged table (kept), makes a second one unlogged (ALTER TABLE SET
// UNLOGGED) and updates it, and updates a third that was created
// UNLOGGED. walscope rows: the logged table's change written, exit 7, the
// message saying the unlogged changes are not in the WAL, the table made
// unlogged counted as missing and the one unlogged from its creation
// named in a warning; --relation of the latter: nothing written, exit 7
// naming it; --relation of the logged table: its change alone, the
// warnings of the others not given, exit 0.
func TestRowsUnloggedExit(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "walscope-rows-unlogged-", "WALSCOPE_KEEP")
	arch, archiving := pgtest.ArchiveDir(t, work)
	p := pgtest.New(t, work, "primary", 15, bin, client)
	p.InitDB(t, "", archiving+"autovacuum = off\n")
	p.Start(t)
	p.Query(t, `CREATE TABLE kept (id int PRIMARY KEY, v text);
INSERT INTO kept SELECT g, 'k' || g FROM generate_series(1, 10) g;
CREATE TABLE goes (id int PRIMARY KEY, v text);
INSERT INTO goes SELECT g, 'g' || g FROM generate_series(1, 10) g;
CREATE UNLOGGED TABLE stage (id int PRIMARY KEY, v text);
INSERT INTO stage SELECT g, 's' || g FROM generate_series(1, 10) g;
CHECKPOINT;`)
	base := filepath.Join(work, "base")
	p.BaseBackup(t, base)
	a := p.Session(t, "a")
	a.Exec("BEGIN")
	a.Exec("UPDATE kept SET v = 'changed' WHERE id = 1")
	a.Exec("ALTER TABLE goes SET UNLOGGED")
	a.Exec("UPDATE goes SET v = 'lost' WHERE id IN (2, 3)")
	a.Exec("UPDATE stage SET v = 'lost' WHERE id = 4")
	xid := a.One("SELECT txid_current()")
	a.Exec("COMMIT")
	p.Query(t, "SELECT pg_switch_wal()")
	p.Stop("fast")

	out, stderr, code := walscope(t, "", "rows", "--backup", base, "--xid", xid, arch)
	if code != exitNotInWAL {
		t.Fatalf("exit %d, want %d: %s", code, exitNotInWAL, stderr)
	}
	var rels []string
	for _, l := range pgtest.Lines(out) {
		var c struct {
			Relation string `json:"relation"`
			Op       string `json:"op"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		rels = append(rels, c.Relation+" "+c.Op)
	}
	if !slices.Equal(rels, []string{"public.kept update"}) {
		t.Errorf("changes %q, want the update of kept alone", rels)
	}
	for _, want := range []string{"table public.stage is unlogged: none of its changes is in the WAL",
		"table public.goes: made unlogged at", "are not in the WAL"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("standard error does not say %q: %s", want, stderr)
		}
	}

	out, stderr, code = walscope(t, "", "rows", "--backup", base, "--xid", xid, "--relation", "stage", arch)
	if code != exitNotInWAL || out != "" || !strings.Contains(stderr, "table public.stage is unlogged: its changes are not in the WAL, none can be given") {
		t.Errorf("--relation stage: exit %d, %q: %s", code, out, stderr)
	}
	out, stderr, code = walscope(t, "", "rows", "--backup", base, "--xid", xid, "--relation", "kept", arch)
	if code != 0 || len(pgtest.Lines(out)) != 1 || strings.Contains(stderr, "unlogged") {
		t.Errorf("--relation kept: exit %d, %d lines: %s", code, len(pgtest.Lines(out)), stderr)
	}
}
