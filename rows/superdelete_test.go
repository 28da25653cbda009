package rows_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// TestSuperDelete: on a real PostgreSQL 15, a transaction's INSERT ... ON
// CONFLICT DO UPDATE races a second session's INSERT of the same key (the
// unique index's expression waits on an advisory lock after the
// speculative heap insertion, as PostgreSQL's isolation test
// insert-conflict-specconflict does, while the other session inserts the
// key and commits): its speculative insertion is taken back (pg_waldump
// shows the DELETE with XLH_DELETE_IS_SUPER) and the retry updates the
// other session's row. The transaction's changes are exactly its UPDATE
// before, that update and a confirmed speculative insertion (no insert or
// delete of the super-deleted tuple), each old row among the table's rows
// just before the commit and each new one among those after it; the undo
// script, run on the server, brings the table back to its rows just
// before the commit (the other session's row as it inserted it).
func TestSuperDelete(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "rows-super-", "WALSCOPE_KEEP")
	p := pgtest.New(t, work, "p", 15, bin, client)
	p.InitDB(t, "", "wal_keep_size = '1GB'\nautovacuum = off")
	p.Start(t)
	// blocked_key waits on advisory lock 42 at its second call in a
	// session with spec.block on: the call of the index insertion, after
	// the pre-check's and the speculative heap insertion
	p.Query(t, `CREATE FUNCTION blocked_key(k text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
DECLARE n int := coalesce(nullif(current_setting('spec.calls', true), ''), '0')::int + 1;
BEGIN
  PERFORM set_config('spec.calls', n::text, false);
  IF current_setting('spec.block', true) = 'on' AND n = 2 THEN
    PERFORM pg_advisory_xact_lock(42);
  END IF;
  RETURN k;
END $$;
CREATE TABLE upsert (key text, data text);
CREATE UNIQUE INDEX upsert_key ON upsert ((blocked_key(key)));
INSERT INTO upsert SELECT 'x' || g, 'd' || g FROM generate_series(1, 20) g;
CHECKPOINT;`)
	base := filepath.Join(work, "base")
	p.BaseBackup(t, base)
	a, other, ctl := p.Session(t, "a"), p.Session(t, "other"), p.Session(t, "ctl")
	ctl.Exec("SELECT pg_advisory_lock(42)")
	start := p.Query(t, "SELECT pg_current_wal_lsn()")[0]
	a.Exec("BEGIN")
	xid, _ := strconv.ParseUint(a.One("SELECT txid_current()"), 10, 32)
	a.Exec("UPDATE upsert SET data = 'changed' WHERE key = 'x3'")
	a.Exec("SET spec.block = 'on'")
	a.Exec("SELECT set_config('spec.calls', '0', false)")
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Exec("INSERT INTO upsert VALUES ('k', 'from a') ON CONFLICT ((blocked_key(key))) DO UPDATE SET data = 'updated by a'")
	}()
	p.WaitFor(t, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", "1")
	other.Exec("INSERT INTO upsert VALUES ('k', 'from other')")
	ctl.Exec("SELECT pg_advisory_unlock(42)")
	<-done
	a.Exec("SET spec.block = 'off'")
	a.Exec("INSERT INTO upsert VALUES ('m', 'new') ON CONFLICT DO NOTHING")
	before := p.Query(t, "SELECT row_to_json(x) FROM upsert x") // a's changes not visible yet
	a.Exec("COMMIT")
	after := p.Query(t, "SELECT row_to_json(x) FROM upsert x")
	p.Query(t, "SELECT pg_switch_wal()")

	walDir := filepath.Join(work, "wal")
	if out, err := exec.Command("cp", "-a", filepath.Join(p.Dir, "pg_wal"), walDir).CombinedOutput(); err != nil {
		t.Fatalf("cp pg_wal: %v\n%s", err, out)
	}
	// the oracle that the race happened: pg_waldump's DELETE of the
	// transaction with XLH_DELETE_IS_SUPER (0x08) among its flags
	dump, err := exec.Command(filepath.Join(client, "pg_waldump"), "-p", walDir, "-s", start, "-x", fmt.Sprint(xid), "-r", "Heap").CombinedOutput()
	if len(dump) == 0 {
		t.Fatalf("pg_waldump: %v", err)
	}
	super := 0
	for _, m := range regexp.MustCompile(`DELETE off \d+ flags 0x([0-9A-F]{2})`).FindAllStringSubmatch(string(dump), -1) {
		if f, _ := strconv.ParseUint(m[1], 16, 8); f&0x08 != 0 {
			super++
		}
	}
	if super != 1 {
		t.Fatalf("pg_waldump shows %d super-deletes of transaction %d (the race did not happen as planned):\n%s", super, xid, dump)
	}

	b, err := backup.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wal, err := archive.Open(walDir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(xid)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	f := serverFormat(res.Relations[0], 15)
	var ops []string
	for i := range res.Changes {
		c := &res.Changes[i]
		if c.Err != nil {
			t.Fatalf("%s at %s: %v", c.Op, c.LSN, c.Err)
		}
		ops = append(ops, string(c.Op))
		for _, v := range []struct {
			row   *rows.Row
			state []string
			what  string
		}{{c.Old, before, "just before the commit"}, {c.New, after, "after it"}} {
			if v.row == nil {
				continue
			}
			j, err := f.AppendRowJSON(nil, c.Rel, v.row)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(v.state, string(j)) {
				t.Errorf("%s at %s: row %s is not among the table's rows %s", c.Op, c.LSN, j, v.what)
			}
		}
	}
	if g := strings.Join(ops, " "); g != "update update insert" {
		t.Errorf("changes %q, want the UPDATE, the ON CONFLICT's update of the other session's row, the confirmed insertion", g)
	}
	var script strings.Builder
	if err := undoFormat(res.Relations[0], 15).WriteUndo(&script, res); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(work, "undo.sql")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, path)
	if out, err := pgtest.AsPostgres(p.PsqlLine("postgres") + " -f " + pgtest.Shq(path)).CombinedOutput(); err != nil {
		t.Fatalf("undo script: %v\n%s\n%s", err, out, script.String())
	}
	if now := p.Query(t, "SELECT row_to_json(x) FROM upsert x"); !sameRows(now, before) {
		t.Errorf("after the undo script: %q, just before the commit: %q\n%s", now, before, script.String())
	}
	t.Logf("1 super-delete (pg_waldump); changes %v agree with the server; the undo script brings back the %d rows of just before the commit", ops, len(before))
}
