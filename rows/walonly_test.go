package rows_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// walOnlySetup makes the tables: t_full with REPLICA IDENTITY FULL (and
// two TOASTed values), t_pk with a primary key and the DEFAULT identity,
// t_nokey with no key, t_far (a primary key, fillfactor 50 so that updates
// stay on their page) whose first page the WAL read will not show.
const walOnlySetup = `
CREATE TABLE t_full (id int PRIMARY KEY, a text, b int);
ALTER TABLE t_full REPLICA IDENTITY FULL;
INSERT INTO t_full SELECT g, repeat('full-' || g, 1 + g % 7), g * 3 FROM generate_series(1, 300) g;
UPDATE t_full SET a = (SELECT string_agg(md5(id::text || 'x' || i::text), '') FROM generate_series(1, 200) i) WHERE id IN (11, 291);
CREATE TABLE t_pk (id int PRIMARY KEY, a text, b numeric);
INSERT INTO t_pk SELECT g, 'pk row ' || g, g / 7.0 FROM generate_series(1, 300) g;
UPDATE t_pk SET a = (SELECT string_agg(md5(id::text || 'y' || i::text), '') FROM generate_series(1, 200) i) WHERE id = 10;
CREATE TABLE t_nokey (a int, b text);
INSERT INTO t_nokey SELECT g, 'no key ' || g FROM generate_series(1, 300) g;
CREATE TABLE t_far (id int PRIMARY KEY, v text) WITH (fillfactor = 50);
INSERT INTO t_far SELECT g, 'far ' || g FROM generate_series(1, 200) g;
CREATE TABLE t_trunc (id int, v text);
INSERT INTO t_trunc SELECT g, 'gone ' || g FROM generate_series(1, 10) g;
VACUUM FREEZE;
`

// walOnlyTouch changes, after the checkpoint and before the WAL read
// starts, the first page of t_full and of t_far: their images are logged
// then, before the read, so that the incident's changes on them find
// them unknown.
const walOnlyTouch = `
UPDATE t_full SET b = b WHERE id = 2;
UPDATE t_far SET v = v WHERE id = 20;
`

// walOnlyIncident is the transaction: deletes, updates and inserts in
// subtransactions, one rolled back.
const walOnlyIncident = `
BEGIN;
SELECT 'XID', txid_current();
COPY t_pk (id, a, b) FROM stdin;
2003	copied 1	1.5
2004	copied 2	2.5
2005	copied 3	\N
\.
DELETE FROM t_full WHERE id % 10 = 1;
SAVEPOINT s1;
UPDATE t_pk SET b = b + 1, a = a || ' changed' WHERE id % 7 = 0;
SELECT 'SUBXID', xmin FROM t_pk WHERE id = 7;
INSERT INTO t_nokey SELECT g, 'new ' || g FROM generate_series(1001, 1040) g;
SAVEPOINT s2;
DELETE FROM t_nokey WHERE a < 50;
ROLLBACK TO s2;
UPDATE t_nokey SET b = b || ' upd' WHERE a % 9 = 0 AND a < 1000;
RELEASE s1;
TRUNCATE t_trunc;
DELETE FROM t_far WHERE id <= 5;
UPDATE t_far SET v = v || 'z' WHERE id IN (6, 7, 150);
UPDATE t_pk SET id = id + 1000 WHERE id IN (3, 4);
UPDATE t_pk SET b = -1 WHERE id = 10;
COMMIT;
`

var walOnlyTables = []string{"t_full", "t_pk", "t_nokey", "t_far"}

// serverRows is a table's visible rows by ctid, as row_to_json prints them.
func serverRows(t *testing.T, p *pgtest.Server, table string) map[string]string {
	out := map[string]string{}
	for _, l := range p.Query(t, fmt.Sprintf("SELECT ctid, row_to_json(x) FROM %s x", table)) {
		ctid, js, _ := strings.Cut(l, "|")
		out[ctid] = js
	}
	return out
}

func ctidPage(ctid string) uint32 {
	s := strings.TrimPrefix(ctid, "(")
	s, _, _ = strings.Cut(s, ",")
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}

// TestWALOnlyAgainstServer: at wal_level replica and logical, the rows
// Changes gives without a backup for a real PostgreSQL 15 transaction are
// exactly the server's (each old version by its ctid as row_to_json
// prints it before the transaction, each new one after it), the same as
// with a backup where both give them, and the rows counted missing are
// exactly those on the pages whose image was logged before the WAL read
// (replica: all of them; logical: none of the FULL identity table, the
// key columns of the others). The partial undo script (the same from
// Open, every change spilled and read back), run on the server,
// brings every table back to its state before, except the rows it lists
// as not undone, which stay as the transaction left them.
//
// PostgreSQL 15 and 18 by default; with WALSCOPE_ROWS_VERSIONS=all, 10 to
// 18 (the embedded builds of scripts/embedded-pg.sh).
func TestWALOnlyAgainstServer(t *testing.T) {
	pgtest.Need(t, 15)
	for major := 10; major <= 18; major++ {
		always := major == 15 || major == 18
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			if !always && os.Getenv("WALSCOPE_ROWS_VERSIONS") != "all" {
				t.Skip("WALSCOPE_ROWS_VERSIONS=all runs this version too")
			}
			if _, why := pgtest.Bin(major); why != "" {
				if always {
					pgtest.SkipOrFail(t, why)
				}
				t.Skip(why)
			}
			bin, client := pgtest.Need(t, major)
			for _, level := range []string{"replica", "logical"} {
				t.Run(level, func(t *testing.T) { walOnlyLevel(t, major, level, bin, client) })
			}
		})
	}
}

func walOnlyLevel(t *testing.T, major int, level, bin, client string) {
	work := pgtest.WorkDir(t, "rows-walonly-", "WALSCOPE_KEEP")
	p := pgtest.New(t, work, "p", major, bin, client)
	keep := "wal_keep_size = '1GB'"
	if major < 13 {
		keep = "wal_keep_segments = 64"
	}
	p.InitDB(t, "", "wal_level = "+level+"\n"+keep+"\nmax_wal_size = '1GB'\ncheckpoint_timeout = '1h'\nautovacuum = off")
	p.Start(t)
	p.Query(t, walOnlySetup)
	base := filepath.Join(work, "base")
	p.BaseBackup(t, base) // its checkpoint: the first change of each page after it logs the page's image

	// the pages the touch changes: their images come before the read
	before0 := map[string]map[string]string{}
	for _, tb := range []string{"t_full", "t_far"} {
		before0[tb] = serverRows(t, p, tb)
	}
	p.Query(t, walOnlyTouch)
	unknown := map[string]map[uint32]bool{"t_full": {}, "t_far": {}}
	for _, tb := range []string{"t_full", "t_far"} {
		after := serverRows(t, p, tb)
		for c := range before0[tb] {
			if _, ok := after[c]; !ok {
				unknown[tb][ctidPage(c)] = true
			}
		}
		for c := range after {
			if _, ok := before0[tb][c]; !ok {
				unknown[tb][ctidPage(c)] = true
			}
		}
	}
	start, err := xlog.ParseLSN(p.Query(t, "SELECT pg_current_wal_lsn()")[0])
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]map[string]string{}
	for _, tb := range walOnlyTables {
		before[tb] = serverRows(t, p, tb)
	}
	var xid, subxid uint64
	for _, l := range p.Query(t, walOnlyIncident) {
		if v, ok := strings.CutPrefix(l, "XID|"); ok {
			xid, _ = strconv.ParseUint(v, 10, 32)
		}
		if v, ok := strings.CutPrefix(l, "SUBXID|"); ok {
			subxid, _ = strconv.ParseUint(v, 10, 32)
		}
	}
	if xid == 0 {
		t.Fatal("no xid")
	}
	t.Logf("PostgreSQL %d, wal_level %s: transaction %d, the WAL read from %s", major, level, xid, start)
	after := map[string]map[string]string{}
	for _, tb := range walOnlyTables {
		after[tb] = serverRows(t, p, tb)
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
	cf, err := os.Open(catPath)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := rows.ReadCatalog(cf, 0)
	cf.Close()
	if err != nil {
		t.Fatal(err)
	}
	res, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(xid), Start: start, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()

	// without the catalog file: from the start of the WAL (the tables made
	// in it), the catalog pages the WAL shows give the same rows; from
	// after the checkpoint, pg_attribute's pages are not there
	walCat, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(xid)})
	if err != nil {
		t.Fatalf("without a catalog file, from the WAL's start: %v", err)
	}
	withCat, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(xid), Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if !walCat.CatalogFromWAL || len(walCat.Changes) != len(withCat.Changes) || len(walCat.Changes) == 0 {
		t.Errorf("catalog from the WAL: %d changes, with the file %d", len(walCat.Changes), len(withCat.Changes))
	} else {
		same := 0
		for i := range walCat.Changes {
			a, b := &walCat.Changes[i], &withCat.Changes[i]
			fa, fb := serverFormat(a.Rel, major), serverFormat(b.Rel, major)
			ja, ea := fa.AppendJSON(nil, a)
			jb, eb := fb.AppendJSON(nil, b)
			if ea != nil || eb != nil || string(ja) != string(jb) {
				t.Errorf("change %d: catalog from the WAL\n %s (%v)\nfrom the file\n %s (%v)", i, ja, ea, jb, eb)
				continue
			}
			same++
		}
		t.Logf("PostgreSQL %d, wal_level %s: the catalog from the WAL (read from its start) gives the %d changes identical to the catalog file's", major, level, same)
	}
	walCat.Close()
	withCat.Close()
	if _, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(xid), Start: start}); !errors.Is(err, rows.ErrNoCatalog) || !strings.Contains(err.Error(), "pg_attribute") {
		t.Errorf("without a catalog file, from %s: %v", start, err)
	}

	// the same transaction with the backup
	b, err := backup.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	full, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, XID: xlog.XID(xid)})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	// the TRUNCATE: its rows are the backup's only; without it, counted
	var kept []rows.Change
	truncated := 0
	for _, c := range full.Changes {
		if c.Op == rows.Truncate {
			truncated++
			continue
		}
		kept = append(kept, c)
	}
	full.Changes = kept
	dropped := 0
	for _, m := range res.Missing {
		if m.Rows == 0 && m.Reason == rows.WhyDropped && m.Relation == "public.t_trunc" {
			dropped++
		}
	}
	if truncated != 10 || dropped != 1 {
		t.Errorf("TRUNCATE t_trunc: %d rows with the backup (want 10), counted %d times without", truncated, dropped)
	}
	if _, err := rows.Changes(rows.Config{WAL: wal, XID: xlog.XID(subxid), Start: start, Catalog: cat}); !errors.Is(err, rows.ErrSubtransaction) || subxid == 0 {
		t.Errorf("xid %d of a subtransaction: %v", subxid, err)
	}
	if len(full.Changes) != len(res.Changes) {
		t.Fatalf("%d changes without a backup, %d with", len(res.Changes), len(full.Changes))
	}

	js := func(c *rows.Change, row *rows.Row) string {
		f := serverFormat(c.Rel, major)
		b, err := f.AppendRowJSON(nil, c.Rel, row)
		if err != nil {
			t.Fatalf("%s at %s: %v", c.Op, c.LSN, err)
		}
		return string(b)
	}
	type count struct{ given, key, missing, sameAsBackup int }
	counts := map[string]*count{}
	seenOld, seenNew := map[string]bool{}, map[string]bool{}
	toastMissing := 0
	for i := range res.Changes {
		c, fc := &res.Changes[i], &full.Changes[i]
		tb := c.Rel.Class.Name
		if counts[tb] == nil {
			counts[tb] = &count{}
		}
		n := counts[tb]
		if c.Err != nil {
			t.Errorf("%s at %s of %s: %v", c.Op, c.LSN, tb, c.Err)
			continue
		}
		if c.LSN != fc.LSN || c.Op != fc.Op || fc.Err != nil {
			t.Errorf("change %d: %s %s without a backup, %s %s with (%v)", i, c.Op, c.LSN, fc.Op, fc.LSN, fc.Err)
			continue
		}
		if c.Op != rows.Insert {
			ctid := fmt.Sprintf("(%d,%d)", fc.Old.Block, fc.Old.Offset)
			want, ok := before[tb][ctid]
			if !ok || after[tb][ctid] != "" {
				t.Errorf("%s at %s of %s: old row %s is not one the transaction removed", c.Op, c.LSN, tb, ctid)
			}
			seenOld[tb+ctid] = true
			onUnknown := unknown[tb][ctidPage(ctid)]
			switch {
			case c.OldMissing == rows.WhyToast:
				// its TOAST value's chunks were written before the read
				n.missing++
				if idOf(want) != "10" || tb != "t_pk" || c.Old == nil {
					t.Errorf("%s at %s of %s %s: old row's TOAST value missing", c.Op, c.LSN, tb, ctid)
				}
				toastMissing++
			case c.Old.Complete():
				n.given++
				if got := js(c, c.Old); got != want {
					t.Errorf("%s at %s of %s %s: old row\n got %s\nwant %s (from %s)", c.Op, c.LSN, tb, ctid, got, want, c.OldFrom)
				}
				if js(c, c.Old) == js(fc, fc.Old) {
					n.sameAsBackup++
				}
				if onUnknown && !(level == "logical" && tb == "t_full" && c.OldFrom == rows.FromRecord) {
					t.Errorf("%s at %s of %s %s: old row given from %s, its page's image was before the WAL read", c.Op, c.LSN, tb, ctid, c.OldFrom)
				}
			case c.Old != nil: // key columns only
				n.key++
				n.missing++
				var g, w map[string]any
				json.Unmarshal([]byte(js(c, c.Old)), &g)
				json.Unmarshal([]byte(want), &w)
				if len(g) == 0 || len(g) >= len(w) {
					t.Errorf("%s at %s of %s: key-only old row %v", c.Op, c.LSN, tb, g)
				}
				for k, v := range g {
					if fmt.Sprint(w[k]) != fmt.Sprint(v) {
						t.Errorf("%s at %s of %s %s: key column %s = %v, the server had %v", c.Op, c.LSN, tb, ctid, k, v, w[k])
					}
				}
				if level != "logical" || !onUnknown {
					t.Errorf("%s at %s of %s %s: key only (%s) at wal_level %s, page unknown %v", c.Op, c.LSN, tb, ctid, c.OldMissing, level, onUnknown)
				}
			default:
				n.missing++
				if !onUnknown || level == "logical" {
					t.Errorf("%s at %s of %s %s: old row missing (%s) at wal_level %s, page unknown %v", c.Op, c.LSN, tb, ctid, c.OldMissing, level, onUnknown)
				}
			}
		}
		if c.Op != rows.Delete {
			ctid := fmt.Sprintf("(%d,%d)", fc.New.Block, fc.New.Offset)
			want, ok := after[tb][ctid]
			if !ok || before[tb][ctid] != "" {
				t.Errorf("%s at %s of %s: new row %s is not one the transaction made", c.Op, c.LSN, tb, ctid)
			}
			seenNew[tb+ctid] = true
			switch {
			case c.NewMissing == rows.WhyToast:
				n.missing++
				if idOf(want) != "10" || tb != "t_pk" || c.New == nil {
					t.Errorf("%s at %s of %s %s: new row's TOAST value missing", c.Op, c.LSN, tb, ctid)
				}
				toastMissing++
			case c.New.Complete():
				n.given++
				if got := js(c, c.New); got != want {
					t.Errorf("%s at %s of %s %s: new row\n got %s\nwant %s (from %s)", c.Op, c.LSN, tb, ctid, got, want, c.NewFrom)
				}
				if js(c, c.New) == js(fc, fc.New) {
					n.sameAsBackup++
				}
			default:
				n.missing++
				oldCtid := fmt.Sprintf("(%d,%d)", fc.Old.Block, fc.Old.Offset)
				if level != "replica" || c.Op != rows.Update || !unknown[tb][ctidPage(oldCtid)] || fc.Old.Block != fc.New.Block {
					t.Errorf("%s at %s of %s %s: new row missing (%s)", c.Op, c.LSN, tb, ctid, c.NewMissing)
				}
			}
		}
	}
	if toastMissing != 2 {
		t.Errorf("t_pk id 10: %d of its old and new versions counted as missing their TOAST value, want 2", toastMissing)
	}
	// a TOASTed value (6,400 bytes, external) given without the backup
	toasted := 0
	for i := range res.Changes {
		if c := &res.Changes[i]; c.Old.Complete() && len(js(c, c.Old)) > 6400 {
			toasted++
		}
	}
	if toasted == 0 {
		t.Error("no external TOAST value given")
	}
	// every row the transaction removed or made is a change
	for _, tb := range walOnlyTables {
		for ctid := range before[tb] {
			if _, ok := after[tb][ctid]; !ok && !seenOld[tb+ctid] {
				t.Errorf("%s %s: removed by the transaction, not given", tb, ctid)
			}
		}
		for ctid := range after[tb] {
			if _, ok := before[tb][ctid]; !ok && !seenNew[tb+ctid] {
				t.Errorf("%s %s: made by the transaction, not given", tb, ctid)
			}
		}
	}
	// the missing counts per relation are the changes' own
	missing := map[string]int{}
	for _, m := range res.Missing {
		if m.Rows == 0 {
			continue
		}
		missing[strings.Trim(strings.TrimPrefix(m.Relation, "public."), `"`)] += m.Rows
	}
	var names []string
	for tb, n := range counts {
		names = append(names, tb)
		if missing[tb] != n.missing {
			t.Errorf("%s: Result.Missing counts %d, the changes %d", tb, missing[tb], n.missing)
		}
	}
	sort.Strings(names)
	for _, tb := range names {
		n := counts[tb]
		t.Logf("PostgreSQL %d, wal_level %s, %s: %d row versions given (%d identical to the with-backup output), %d not in the WAL (%d of them key columns only)", major, level, tb, n.given, n.sameAsBackup, n.missing, n.key)
	}
	if level == "replica" && counts["t_far"].missing == 0 || counts["t_pk"].given == 0 {
		t.Error("the incident did not exercise what it should")
	}

	// the undo script on the server
	var sb strings.Builder
	f := undoFormat(res.Relations[0], major)
	notUndone, err := f.WriteUndoPartial(&sb, res)
	if err != nil {
		t.Fatal(err)
	}
	// the same script, and the same rows missing, from Open with every
	// change spilled to the replay's file and read back
	streamed, err := rows.Open(rows.Config{WAL: wal, XID: xlog.XID(xid), Start: start, Catalog: cat, ChangeMemoryBytes: 1, TempDir: work})
	if err != nil {
		t.Fatal(err)
	}
	var ssb strings.Builder
	if _, err := f.WriteUndoPartial(&ssb, streamed); err != nil {
		t.Fatal(err)
	}
	if _, spilled := streamed.Replay().ChangeBytes(); spilled == 0 || ssb.String() != sb.String() || mustJSON(streamed.Missing) != mustJSON(res.Missing) || streamed.Len() != len(res.Changes) {
		t.Errorf("Open (%d bytes of changes spilled): %d changes, the undo script or the rows missing differ from Changes'", spilled, streamed.Len())
	}
	streamed.Close()
	path := filepath.Join(work, "undo.sql")
	os.WriteFile(path, []byte(sb.String()), 0o644)
	pgtest.ChownPG(t, path)
	if out, err := pgtest.AsPostgres(p.PsqlLine("postgres") + " -f " + pgtest.Shq(path)).CombinedOutput(); err != nil {
		t.Fatalf("undo script: %v\n%s\n%s", err, out, sb.String())
	}
	// expected: the rows before, but where a change was not undone, the
	// row as the transaction left it (by id)
	notByTable := map[string]map[string]bool{}
	for i := range res.Changes {
		c := &res.Changes[i]
		if rows.CannotUndo(c) == "" {
			continue
		}
		fc := &full.Changes[i]
		tb := c.Rel.Class.Name
		if notByTable[tb] == nil {
			notByTable[tb] = map[string]bool{}
		}
		var m map[string]any
		json.Unmarshal([]byte(before[tb][fmt.Sprintf("(%d,%d)", fc.Old.Block, fc.Old.Offset)]), &m)
		notByTable[tb][fmt.Sprint(m["id"])] = true
	}
	undone := 0
	for _, tb := range walOnlyTables {
		not := notByTable[tb]
		if len(not) > 0 && tb != "t_far" && tb != "t_full" && !(tb == "t_pk" && len(not) == 1 && not["10"]) {
			t.Errorf("%s: %d changes not undone", tb, len(not))
		}
		want := map[string]int{}
		for _, r := range before[tb] {
			if id := idOf(r); not == nil || !not[id] {
				want[r]++
			}
		}
		for _, r := range after[tb] {
			if id := idOf(r); not != nil && not[id] {
				want[r]++
			}
		}
		got := map[string]int{}
		for _, r := range serverRows(t, p, tb) {
			got[r]++
		}
		if a, b := mustJSON(got), mustJSON(want); a != b {
			t.Errorf("%s after the undo script: %d distinct rows, want %d", tb, len(got), len(want))
		} else {
			undone++
		}
	}
	t.Logf("PostgreSQL %d, wal_level %s: undo script run on the server: %d tables as expected, %d changes not undone (listed)", major, level, undone, len(notUndone))
}

func idOf(rowJSON string) string {
	var m map[string]any
	json.Unmarshal([]byte(rowJSON), &m)
	return fmt.Sprint(m["id"])
}
