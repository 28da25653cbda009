package xactstate_test

// TestRecoveryOracle proves the commit state against real recovery: a
// PostgreSQL 15 cluster archives its WAL, a base backup is taken
// (pg_basebackup -Fp -X none) while transactions are open and prepared,
// then a workload runs in steps separated by restore points: commits and
// aborts, savepoints rolled back and released (more than
// PGPROC_MAX_CACHED_SUBXIDS = 64 in one transaction, so XACT_ASSIGNMENT is
// logged), two-phase commit (COMMIT PREPARED, ROLLBACK PREPARED, left
// prepared), row locks by several sessions (multixacts, with committed,
// aborted and running updating members), and transactions left open across
// restore points. For each restore point, the backup is restored with
// recovery_target_name and recovery_target_action = 'pause', hot_standby on:
//
//   - paused at the target, the standby's pg_xact_status of every recorded
//     xid is compared with Status before Finish, and every tuple of the
//     tables (pageinspect's heap_page_items) with TupleVisible: visible iff
//     its ctid is in SELECT ctid on the standby;
//   - then replay is resumed, which ends recovery there: pg_xact_status
//     again against Status after Finish, and pg_get_multixact_members of
//     every multixact xmax on the pages against MultiMembers.

import (
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// oracleConfig is one server version to prove against.
type oracleConfig struct {
	version xlog.Version
	server  string // initdb, pg_ctl, postgres
	client  string // PostgreSQL 15's psql, pg_basebackup, pg_waldump
	// baseBackup: pg_basebackup -Fp -X none (15); else the low-level API
	// (pg_backup_start/stop or pg_start/stop_backup) and a copy of the
	// data directory, since pg_basebackup 15 refuses newer servers.
	baseBackup bool
	// waldump: pg_waldump (15's reads 15 only) checks parents and commit LSNs.
	waldump bool
}

// oracleSchema is what every oracle cluster of version v holds: the tables
// whose pages are compared, and xs and mm, which answer without failing (a
// standby cannot create functions, so they are made before the backup). xs
// takes an xid as text: pg_xact_status(xid8) from 13, txid_status(bigint)
// (the same answers, for epoch 0) before.
func oracleSchema(v xlog.Version) string {
	status := "pg_xact_status(x::xid8)"
	if v < xlog.V13 {
		status = "txid_status(x::bigint)"
	}
	return strings.Replace(oracleSchemaSQL, "STATUS", status, 1)
}

const oracleSchemaSQL = `CREATE EXTENSION pageinspect;
CREATE TABLE t (id int PRIMARY KEY, v int);
INSERT INTO t SELECT g, 0 FROM generate_series(1, 20) g;
CREATE TABLE u (k int, v int);
CREATE FUNCTION xs(x text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN RETURN coalesce(STATUS, 'null');
EXCEPTION WHEN others THEN RETURN 'future'; END $$;
CREATE FUNCTION mm(m xid) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  SELECT string_agg(xid::text || ':' || mode, ',' ORDER BY xid::text::bigint, mode) INTO r FROM pg_get_multixact_members(m);
  RETURN coalesce(r, '');
EXCEPTION WHEN others THEN RETURN 'error: ' || sqlerrm; END $$;`

// recorded is an xid the workload recorded: its name says what it did.
type recorded struct {
	name string
	xid  uint32
}

type workload struct {
	t     *testing.T
	cfg   oracleConfig
	xids  []recorded
	steps []string // restore point names, in order
	// preparedAtBackup: pg_prepared_xacts just before pg_basebackup.
	preparedAtBackup []xlog.XID
	// commitTime: pg_xact_commit_timestamp of the committed recorded xids,
	// Unix microseconds, read at the end.
	commitTime map[uint32]int64
}

func (w *workload) note(name, xid string) {
	w.t.Helper()
	x, err := strconv.ParseUint(strings.TrimSpace(xid), 10, 64)
	if err != nil || x>>32 != 0 {
		w.t.Fatalf("%s: xid %q", name, xid)
	}
	w.xids = append(w.xids, recorded{name, uint32(x)})
}

// xactWithRow runs one transaction that inserts a row and ends with end
// ("COMMIT" or "ROLLBACK"), recording its xid.
func (w *workload) xactWithRow(s *pgtest.Session, name, end string) {
	w.t.Helper()
	s.Exec("BEGIN")
	w.note(name, s.One("INSERT INTO u VALUES (1, 0) RETURNING xmin"))
	s.Exec(end)
}

// manyMultis makes n multixacts from one session: each transaction locks
// row id FOR KEY SHARE and updates it in a subtransaction (an EXCEPTION
// block), which makes the row's xmax a multixact of the top-level locker
// and the updating subtransaction.
func (w *workload) manyMultis(s *pgtest.Session, id, n int) {
	w.t.Helper()
	if w.cfg.version < xlog.V11 { // no COMMIT in a DO block before 11: the same from the client
		var b strings.Builder
		for range n {
			fmt.Fprintf(&b, "BEGIN; SELECT FROM t WHERE id = %d FOR KEY SHARE; SAVEPOINT m; UPDATE t SET v = v + 1 WHERE id = %d; RELEASE m; COMMIT;\n", id, id)
		}
		s.Exec(b.String())
		return
	}
	s.Exec(fmt.Sprintf(`DO $$ BEGIN FOR i IN 1..%d LOOP
  PERFORM FROM t WHERE id = %d FOR KEY SHARE;
  BEGIN UPDATE t SET v = v + 1 WHERE id = %d; EXCEPTION WHEN others THEN RAISE; END;
  COMMIT;
END LOOP; END $$`, n, id, id))
}

// subxacts opens a transaction with n released savepoints, each inserting
// a row (so each has an xid); the top stays open.
func (w *workload) subxacts(s *pgtest.Session, name string, n int) {
	w.t.Helper()
	s.Exec("BEGIN")
	w.note(name+"/top", s.One("INSERT INTO u VALUES (2, 0) RETURNING xmin"))
	for i := range n {
		s.Exec(fmt.Sprintf("SAVEPOINT s%d", i))
		w.note(fmt.Sprintf("%s/sub%d", name, i), s.One("INSERT INTO u VALUES (3, 0) RETURNING xmin"))
		s.Exec(fmt.Sprintf("RELEASE s%d", i))
	}
}

func (w *workload) restorePoint(p *pgtest.Server, name string) {
	w.t.Helper()
	p.Query(w.t, fmt.Sprintf("SELECT pg_create_restore_point('%s')", name))
	w.steps = append(w.steps, name)
}

// run drives the primary; it returns after the base backup was taken and
// the last restore point archived.
func (w *workload) run(p *pgtest.Server, base string) {
	t := w.t
	a, b, c := p.Session(t, "a"), p.Session(t, "b"), p.Session(t, "c")
	long := p.Session(t, "long")

	// Before the backup: in pg_xact, pg_multixact and pg_twophase.
	w.xactWithRow(a, "pre/commit", "COMMIT")
	w.xactWithRow(a, "pre/abort", "ROLLBACK")
	a.Exec("BEGIN")
	a.Exec("SELECT * FROM t WHERE id IN (1, 2) FOR SHARE")
	w.note("pre/share1", a.One("SELECT txid_current()"))
	b.Exec("BEGIN")
	b.Exec("SELECT * FROM t WHERE id IN (1, 2) FOR SHARE")
	w.note("pre/share2", b.One("SELECT txid_current()"))
	a.Exec("COMMIT")
	b.Exec("COMMIT")
	c.Exec("BEGIN")
	w.note("pre/p0", c.One("INSERT INTO u VALUES (4, 0) RETURNING xmin"))
	c.Exec("PREPARE TRANSACTION 'p0'") // committed after the backup
	c.Exec("BEGIN")
	w.note("pre/p00", c.One("INSERT INTO u VALUES (4, 1) RETURNING xmin"))
	c.Exec("SAVEPOINT s")
	w.note("pre/p00/sub", c.One("INSERT INTO u VALUES (4, 2) RETURNING xmin"))
	c.Exec("RELEASE s")
	c.Exec("PREPARE TRANSACTION 'p00'") // prepared to the end
	w.manyMultis(a, 12, 1200)           // before the backup: read from pg_multixact
	long.Exec("BEGIN")
	w.note("pre/long", long.One("INSERT INTO u VALUES (5, 0) RETURNING xmin")) // open during the backup

	for _, l := range p.Query(t, "SELECT transaction FROM pg_prepared_xacts ORDER BY transaction::text::bigint") {
		x, _ := strconv.ParseUint(l, 10, 32)
		w.preparedAtBackup = append(w.preparedAtBackup, xlog.XID(x))
	}
	w.baseBackup(p, base)

	// Step 1: commits, aborts, savepoints, many subtransactions.
	for i := range 5 {
		w.xactWithRow(a, fmt.Sprintf("s1/commit%d", i), "COMMIT")
		w.xactWithRow(a, fmt.Sprintf("s1/abort%d", i), "ROLLBACK")
	}
	a.Exec("BEGIN")
	w.note("s1/sp/top", a.One("INSERT INTO u VALUES (6, 0) RETURNING xmin"))
	a.Exec("SAVEPOINT x")
	w.note("s1/sp/rolledback", a.One("INSERT INTO u VALUES (6, 1) RETURNING xmin"))
	a.Exec("ROLLBACK TO x")
	a.Exec("SAVEPOINT y")
	w.note("s1/sp/released", a.One("INSERT INTO u VALUES (6, 2) RETURNING xmin"))
	a.Exec("RELEASE y")
	a.Exec("COMMIT")
	a.Exec("BEGIN")
	w.note("s1/sp-abort/top", a.One("INSERT INTO u VALUES (7, 0) RETURNING xmin"))
	a.Exec("SAVEPOINT y")
	w.note("s1/sp-abort/released", a.One("INSERT INTO u VALUES (7, 1) RETURNING xmin"))
	a.Exec("RELEASE y")
	a.Exec("ROLLBACK")
	w.subxacts(a, "s1/many-commit", 70)
	a.Exec("COMMIT")
	w.subxacts(a, "s1/many-abort", 70)
	a.Exec("ROLLBACK")
	w.subxacts(b, "s1/many-open", 70) // commits in step 2
	a.Exec("BEGIN")
	w.note("s1/update", a.One("UPDATE t SET v = v + 1 WHERE id = 3 RETURNING txid_current()"))
	a.Exec("COMMIT")
	a.Exec("BEGIN")
	w.note("s1/update-abort", a.One("UPDATE t SET v = v + 1 WHERE id = 4 RETURNING txid_current()"))
	a.Exec("ROLLBACK")
	a.Exec("BEGIN")
	w.note("s1/delete", a.One("DELETE FROM t WHERE id = 5 RETURNING txid_current()"))
	a.Exec("COMMIT")
	a.Exec("BEGIN")
	w.note("s1/delete-abort", a.One("DELETE FROM t WHERE id = 6 RETURNING txid_current()"))
	a.Exec("ROLLBACK")
	w.restorePoint(p, "rp1")

	// Step 2: two-phase commit; the open transactions end.
	c.Exec("COMMIT PREPARED 'p0'")
	for _, g := range []struct{ gid, end string }{{"pa", "COMMIT PREPARED 'pa'"}, {"pb", "ROLLBACK PREPARED 'pb'"}} {
		c.Exec("BEGIN")
		w.note("s2/"+g.gid, c.One("INSERT INTO u VALUES (8, 0) RETURNING xmin"))
		c.Exec("PREPARE TRANSACTION '" + g.gid + "'")
		c.Exec(g.end)
	}
	for _, gid := range []string{"pc", "pd"} { // pc committed in step 3, pd prepared to the end
		c.Exec("BEGIN")
		w.note("s2/"+gid, c.One("INSERT INTO u VALUES (9, 0) RETURNING xmin"))
		c.Exec("SAVEPOINT s")
		w.note("s2/"+gid+"/sub", c.One("INSERT INTO u VALUES (9, 1) RETURNING xmin"))
		c.Exec("RELEASE s")
		c.Exec("SAVEPOINT r")
		w.note("s2/"+gid+"/rolledback", c.One("INSERT INTO u VALUES (9, 2) RETURNING xmin"))
		c.Exec("ROLLBACK TO r")
		c.Exec("PREPARE TRANSACTION '" + gid + "'")
	}
	long.Exec("COMMIT")
	b.Exec("COMMIT")
	long.Exec("BEGIN")
	w.note("s2/long", long.One("INSERT INTO u VALUES (10, 0) RETURNING xmin")) // rolled back in step 3
	w.restorePoint(p, "rp2")

	// Step 3: multixacts.
	d, e := p.Session(t, "d"), p.Session(t, "e")
	a.Exec("BEGIN")
	a.Exec("SELECT * FROM t WHERE id IN (7, 8) FOR SHARE")
	w.note("s3/share-a", a.One("SELECT txid_current()"))
	b.Exec("BEGIN")
	b.Exec("SELECT * FROM t WHERE id IN (7, 8) FOR SHARE")
	w.note("s3/share-b", b.One("SELECT txid_current()"))
	c.Exec("BEGIN")
	c.Exec("SELECT * FROM t WHERE id = 9 FOR KEY SHARE")
	w.note("s3/keyshare-c", c.One("SELECT txid_current()"))
	d.Exec("BEGIN")
	w.note("s3/update-d", d.One("UPDATE t SET v = v + 100 WHERE id = 9 RETURNING txid_current()"))
	a.Exec("COMMIT")
	b.Exec("COMMIT")
	c.Exec("COMMIT")
	d.Exec("COMMIT")
	c.Exec("BEGIN")
	c.Exec("SELECT * FROM t WHERE id = 10 FOR KEY SHARE")
	w.note("s3/keyshare-e", c.One("SELECT txid_current()"))
	d.Exec("BEGIN")
	w.note("s3/update-f-abort", d.One("UPDATE t SET v = v + 100 WHERE id = 10 RETURNING txid_current()"))
	d.Exec("ROLLBACK")
	c.Exec("COMMIT")
	e.Exec("BEGIN")
	e.Exec("SELECT * FROM t WHERE id = 11 FOR KEY SHARE")
	w.note("s3/keyshare-g-open", e.One("SELECT txid_current()"))
	d.Exec("BEGIN")
	w.note("s3/update-h-open", d.One("UPDATE t SET v = v + 100 WHERE id = 11 RETURNING txid_current()"))
	c.Exec("COMMIT PREPARED 'pc'")
	long.Exec("ROLLBACK")
	w.manyMultis(a, 13, 1000) // after: CREATE_ID records, ZERO_OFF_PAGE and ZERO_MEM_PAGE
	w.restorePoint(p, "rp3")

	// Step 4: the open lockers end; a last commit.
	d.Exec("COMMIT")
	e.Exec("COMMIT")
	// 33,000 more transactions: the xids cross into pg_xact's second page
	// (32,768 per 8 kB page), which a CLOG ZEROPAGE record creates.
	if w.cfg.version >= xlog.V11 {
		a.Exec("DO $$ BEGIN FOR i IN 1..33000 LOOP PERFORM txid_current(); COMMIT; END LOOP; END $$")
	} else { // no COMMIT in a DO block before 11: one statement each
		a.Exec(strings.Repeat("SELECT FROM txid_current();\n", 33000))
	}
	w.xactWithRow(a, "s4/commit-page1", "COMMIT")
	w.xactWithRow(a, "s4/abort-page1", "ROLLBACK")
	w.restorePoint(p, "rp4")

	// Commit timestamps (track_commit_timestamp), in Unix microseconds.
	w.commitTime = map[uint32]int64{}
	for _, l := range p.Query(t, "SELECT x, (extract(epoch FROM pg_xact_commit_timestamp(x::text::xid)) * 1000000)::bigint FROM unnest("+xidArray(w.xids)+") x WHERE pg_xact_commit_timestamp(x::text::xid) IS NOT NULL") {
		f := strings.Split(l, "|")
		x, _ := strconv.ParseUint(f[0], 10, 32)
		us, _ := strconv.ParseInt(f[1], 10, 64)
		w.commitTime[uint32(x)] = us
	}
	seg := p.Query(t, "SELECT pg_walfile_name(pg_current_wal_lsn())")[0]
	p.Query(t, "SELECT pg_switch_wal()")
	p.WaitFor(t, fmt.Sprintf("SELECT last_archived_wal >= '%s' FROM pg_stat_archiver", seg), "t")
}

// baseBackup takes the base backup while the workload's transactions are
// open and prepared.
func (w *workload) baseBackup(p *pgtest.Server, base string) {
	t := w.t
	if w.cfg.baseBackup {
		out, err := pgtest.AsPostgres(fmt.Sprintf("%s -h %s -p %d -U postgres -D %s -Fp -X none -c fast",
			filepath.Join(p.Client, "pg_basebackup"), pgtest.Shq(p.Sock), p.Port, pgtest.Shq(base))).CombinedOutput()
		if err != nil {
			t.Fatalf("pg_basebackup: %v\n%s", err, out)
		}
		return
	}
	p.BaseBackup(t, base)
}

// answers is what one restored server said at one target.
type answers struct {
	paused, promoted map[uint32]string // pg_xact_status (or 'future'/'null') by xid
	tuples           map[string][]tupleRow
	visible          map[string]map[string]bool // table -> ctid -> visible
	multis           map[uint32]string          // multixact -> "xid:mode,..." (promoted)
	multisPaused     map[uint32]string
}

type tupleRow struct {
	ctid string
	h    xactstate.TupleHeader
}

func xidArray(xs []recorded) string {
	var b strings.Builder
	b.WriteString("ARRAY[")
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "'%d'", x.xid)
	}
	b.WriteString("]::text[]")
	return b.String()
}

func statuses(t *testing.T, s *pgtest.Server, xs []recorded) map[uint32]string {
	out := map[uint32]string{}
	for _, l := range s.Query(t, "SELECT x, xs(x) FROM unnest("+xidArray(xs)+") x") {
		f := strings.Split(l, "|")
		x, _ := strconv.ParseUint(f[0], 10, 32)
		out[uint32(x)] = f[1]
	}
	return out
}

func multiAnswers(t *testing.T, s *pgtest.Server, tuples map[string][]tupleRow) map[uint32]string {
	out := map[uint32]string{}
	for _, rows := range tuples {
		for _, r := range rows {
			if r.h.Infomask&0x1000 != 0 {
				out[uint32(r.h.Xmax)] = ""
			}
		}
	}
	if len(out) == 0 {
		return out
	}
	ids := make([]string, 0, len(out))
	for m := range out {
		ids = append(ids, strconv.FormatUint(uint64(m), 10))
	}
	for _, l := range s.Query(t, "SELECT m, mm(m::text::xid) FROM unnest(ARRAY["+strings.Join(ids, ",")+"]::bigint[]) m") {
		f := strings.SplitN(l, "|", 2)
		m, _ := strconv.ParseUint(f[0], 10, 32)
		out[uint32(m)] = f[1]
	}
	return out
}

// restore recovers the backup to a restore point, pauses there, asks, then
// ends recovery and asks again.
func restore(t *testing.T, cfg oracleConfig, work, base, archive string, xs []recorded, target string) answers {
	t.Helper()
	settings := fmt.Sprintf("recovery_target_name = '%s'\nrecovery_target_action = 'pause'", target)
	var r *pgtest.Server
	if cfg.version >= xlog.V12 {
		r = pgtest.Restore(t, work, "r-"+target, int(cfg.version), cfg.server, cfg.client, base, archive, settings)
	} else {
		r = restoreWithRecoveryConf(t, cfg, work, "r-"+target, base, archive, settings)
	}
	defer r.Stop("immediate")
	r.WaitPaused(t)

	a := answers{tuples: map[string][]tupleRow{}, visible: map[string]map[string]bool{}}
	a.paused = statuses(t, r, xs)
	for _, table := range []string{"t", "u"} {
		for _, l := range r.Query(t, fmt.Sprintf(`SELECT '('||b||','||lp||')', t_xmin, t_xmax, (t_field3::bigint + 4294967296) %% 4294967296, t_infomask2, t_infomask
FROM generate_series(0, pg_relation_size('%s')/8192 - 1) b, heap_page_items(get_raw_page('%s', b::int))
WHERE lp_flags = 1 AND t_xmin IS NOT NULL`, table, table)) {
			f := strings.Split(l, "|")
			num := func(i int) uint64 {
				v, err := strconv.ParseUint(f[i], 10, 32)
				if err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				return v
			}
			a.tuples[table] = append(a.tuples[table], tupleRow{f[0], xactstate.TupleHeader{
				Xmin: xlog.XID(num(1)), Xmax: xlog.XID(num(2)), Xvac: xlog.XID(num(3)),
				Infomask2: uint16(num(4)), Infomask: uint16(num(5)),
			}})
		}
		a.visible[table] = map[string]bool{}
		for _, l := range r.Query(t, "SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT ctid FROM "+table) {
			a.visible[table][l] = true
		}
	}
	a.multisPaused = multiAnswers(t, r, a.tuples)
	r.Query(t, "SELECT pg_wal_replay_resume()")
	r.WaitFor(t, "SELECT pg_is_in_recovery()", "f")
	a.promoted = statuses(t, r, xs)
	a.multis = multiAnswers(t, r, a.tuples)
	return a
}

// restoreWithRecoveryConf is pgtest.Restore for 10 and 11, whose recovery
// settings are in recovery.conf (its presence starts the recovery).
func restoreWithRecoveryConf(t *testing.T, cfg oracleConfig, work, name, base, archive, settings string) *pgtest.Server {
	t.Helper()
	r := pgtest.New(t, work, name, int(cfg.version), cfg.server, cfg.client)
	if out, err := runCmd("cp", "-a", base, r.Dir); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(r.Dir, "postmaster.pid"))
	r.AppendConf(t, "archive_mode = off\nhot_standby = on")
	conf := fmt.Sprintf("restore_command = 'cp %s/%%f %%p'\n%s\n", archive, settings)
	if err := os.WriteFile(filepath.Join(r.Dir, "recovery.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, r.Dir)
	r.Start(t)
	return r
}

func runCmd(name string, args ...string) ([]byte, error) {
	return osexec.Command(name, args...).CombinedOutput()
}

// walFacts is what pg_waldump says of the WAL from the backup's start:
// where each transaction committed, which parent each subtransaction was
// given (ASSIGNMENT, and the subxacts of COMMIT, ABORT and their PREPARED
// forms), and where each restore point is.
type walFacts struct {
	commitLSN     map[uint32]xlog.LSN
	parent        map[uint32]xlog.XID
	parentLSN     map[uint32]xlog.LSN
	restorePoints map[string]xlog.LSN
	assignments   int // ASSIGNMENT records
}

var waldumpLine = regexp.MustCompile(`^rmgr: (\S+)\s+len \(rec/tot\):\s+\d+/\s*\d+, tx:\s+(\d+), lsn: ([0-9A-F]+/[0-9A-F]+), prev [0-9A-F]+/[0-9A-F]+, desc: (\S+) ?(.*)$`)

func waldump(t *testing.T, bin, archive string, start xlog.LSN) walFacts {
	t.Helper()
	out, _ := runCmd(filepath.Join(bin, "pg_waldump"), "-p", archive, "-s", start.String())
	f := walFacts{commitLSN: map[uint32]xlog.LSN{}, parent: map[uint32]xlog.XID{}, parentLSN: map[uint32]xlog.LSN{}, restorePoints: map[string]xlog.LSN{}}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		m := waldumpLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		lsn, err := xlog.ParseLSN(m[3])
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := strconv.ParseUint(m[2], 10, 32)
		desc := m[5]
		subs := func(top xlog.XID) {
			if i := strings.Index(desc, "subxacts: "); i >= 0 {
				rest := desc[i+len("subxacts: "):]
				if j := strings.Index(rest, ";"); j >= 0 {
					rest = rest[:j]
				}
				for _, x := range strings.Fields(rest) {
					v, _ := strconv.ParseUint(x, 10, 32)
					if _, ok := f.parent[uint32(v)]; !ok {
						f.parent[uint32(v)], f.parentLSN[uint32(v)] = top, lsn
					}
					if m[4] == "COMMIT" || m[4] == "COMMIT_PREPARED" {
						f.commitLSN[uint32(v)] = lsn
					}
				}
			}
		}
		switch {
		case m[1] == "XLOG" && m[4] == "RESTORE_POINT":
			f.restorePoints[desc] = lsn
		case m[1] != "Transaction":
		case m[4] == "COMMIT" || m[4] == "ABORT":
			if m[4] == "COMMIT" {
				f.commitLSN[uint32(tx)] = lsn
			}
			subs(xlog.XID(tx))
		case m[4] == "COMMIT_PREPARED" || m[4] == "ABORT_PREPARED":
			x, _ := strconv.ParseUint(desc[:strings.Index(desc, ":")], 10, 32)
			if m[4] == "COMMIT_PREPARED" {
				f.commitLSN[uint32(x)] = lsn
			}
			subs(xlog.XID(x))
		case m[4] == "ASSIGNMENT":
			f.assignments++
			// "xtop N: subxacts: a b c"
			x, _ := strconv.ParseUint(strings.TrimSuffix(strings.Fields(desc)[1], ":"), 10, 32)
			subs(xlog.XID(x))
		}
	}
	if n == 0 || len(f.restorePoints) == 0 {
		t.Fatalf("pg_waldump printed no records:\n%s", out)
	}
	return f
}

func backupStart(t *testing.T, base string) xlog.LSN {
	t.Helper()
	label, err := os.ReadFile(filepath.Join(base, "backup_label"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`START WAL LOCATION: ([0-9A-F]+/[0-9A-F]+)`).FindSubmatch(label)
	if m == nil {
		t.Fatalf("backup_label: no START WAL LOCATION:\n%s", label)
	}
	start, err := xlog.ParseLSN(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return start
}

// replay builds the state from the backup and the archive up to and
// including the restore point named target.
func replay(t *testing.T, base, archive string, target string, v xlog.Version) *xactstate.State {
	t.Helper()
	start := backupStart(t, base)
	src, err := xlog.OpenDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := xlog.NewReader(src, xlog.Options{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if rd.Version() != v {
		t.Fatalf("the WAL is of %v, the server of %v", rd.Version(), v)
	}
	st, err := xactstate.New(xactstate.FS(os.DirFS(base)), rd.Version(), 8192)
	if err != nil {
		t.Fatal(err)
	}
	dec := decode.NewDecoder(8192)
	for {
		rec, err := rd.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			t.Fatalf("restore point %s not found before %v", target, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		st.Add(d)
		if name, _, ok := rmgr.RestorePoint(d); ok && name == target {
			break
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("replaying to %s: %v", target, err)
	}
	return st
}

// standbyAgrees says whether a paused standby's pg_xact_status answer
// matches a Status before Finish.
func standbyAgrees(answer string, s xactstate.Status) bool {
	switch answer {
	case "committed":
		return s == xactstate.Committed
	case "aborted":
		return s == xactstate.Aborted
	case "in progress":
		return s == xactstate.InProgress || s == xactstate.Prepared
	case "future": // not yet assigned as far as the WAL replayed says
		return s == xactstate.InProgress
	}
	return false
}

// promotedAgrees: the same after recovery ended (Finish).
func promotedAgrees(answer string, s xactstate.Status) bool {
	switch answer {
	case "committed":
		return s == xactstate.Committed
	case "aborted", "future":
		return s == xactstate.Aborted
	case "in progress":
		return s == xactstate.Prepared
	}
	return false
}

func membersString(ms []xactstate.Member) string {
	parts := make([]string, len(ms))
	slices.SortFunc(ms, func(a, b xactstate.Member) int {
		if a.XID != b.XID {
			return int(int64(a.XID) - int64(b.XID))
		}
		return strings.Compare(a.Status.String(), b.Status.String())
	})
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%d:%s", m.XID, m.Status)
	}
	return strings.Join(parts, ",")
}

func TestRecoveryOracle(t *testing.T) {
	bin, client := pgtest.Need(t, 15)
	runOracle(t, oracleConfig{version: xlog.V15, server: bin, client: client, baseBackup: true, waldump: true})
}

// TestRecoveryOracleVersions runs the same proof on the servers of other
// versions (internal/pgtest: scripts/embedded-pg.sh's builds, with
// PostgreSQL 15's psql): 13, 16, 17 and 18, and with
// WALSCOPE_XACTSTATE_VERSIONS=all 10, 11, 12 and 14 too (10 and 11 restore
// through recovery.conf; before 13 the statuses are txid_status's; before
// 11 the many transactions are sent one by one, a DO block cannot commit).
// A version not installed is skipped (a failure with WALSCOPE_REQUIRE_PG=1).
func TestRecoveryOracleVersions(t *testing.T) {
	versions := []xlog.Version{xlog.V13, xlog.V16, xlog.V17, xlog.V18}
	if os.Getenv("WALSCOPE_XACTSTATE_VERSIONS") == "all" {
		versions = []xlog.Version{xlog.V10, xlog.V11, xlog.V12, xlog.V13, xlog.V14, xlog.V16, xlog.V17, xlog.V18}
	}
	for _, v := range versions {
		t.Run(fmt.Sprint(uint8(v)), func(t *testing.T) {
			bin, client := pgtest.Need(t, int(v))
			runOracle(t, oracleConfig{version: v, server: bin, client: client})
		})
	}
}

func runOracle(t *testing.T, cfg oracleConfig) {
	work, archive, p := newPrimary(t, cfg, nil)
	base := filepath.Join(work, "base")
	w := &workload{t: t, cfg: cfg}
	w.run(p, base)
	if err := p.Stop("fast"); err != nil {
		t.Fatal(err)
	}

	type tally struct{ compared, agreed int }
	var xp, xf, vis, mul, mulPaused, par, clsn, ctime tally

	// The prepared transactions of pg_twophase, before any record.
	st0, err := xactstate.New(xactstate.FS(os.DirFS(base)), cfg.version, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if got := st0.PreparedXIDs(); !slices.Equal(got, w.preparedAtBackup) || len(got) == 0 {
		t.Errorf("prepared in the backup's pg_twophase: %v; pg_prepared_xacts before the backup: %v", got, w.preparedAtBackup)
	}
	var facts walFacts
	if cfg.waldump {
		facts = waldump(t, cfg.client, archive, backupStart(t, base))
		if facts.assignments == 0 {
			t.Errorf("the workload logged no XACT_ASSIGNMENT")
		}
	}

	// The workload's own parents: a released savepoint's xid and its
	// transaction's (recorded as ".../subN" and ".../top", ".../sub" and
	// "...", ".../released" and ".../top").
	byName := map[string]uint32{}
	for _, x := range w.xids {
		byName[x.name] = x.xid
	}
	topOf := map[uint32]uint32{}
	for _, x := range w.xids {
		i := strings.LastIndex(x.name, "/")
		prefix, last := x.name[:i], x.name[i+1:]
		switch {
		case strings.HasPrefix(last, "sub") || last == "released":
			if top, ok := byName[prefix+"/top"]; ok {
				topOf[x.xid] = top
			} else if top, ok := byName[prefix]; ok {
				topOf[x.xid] = top
			}
		}
	}
	var own tally

	for k, target := range w.steps {
		ans := restore(t, cfg, work, base, archive, w.xids, target)
		st := replay(t, base, archive, target, cfg.version)
		stop, ok := facts.restorePoints[target]
		if !ok && cfg.waldump {
			t.Fatalf("pg_waldump shows no restore point %s", target)
		}
		for sub, top := range topOf {
			// Recovery knows a parent once a record names it; by the last
			// target every one of these transactions has ended.
			own.compared++
			got := st.Parent(xlog.XID(sub))
			if got == xlog.XID(top) || got == 0 && k < len(w.steps)-1 {
				own.agreed++
			} else {
				t.Errorf("%s: Parent(%d) = %d, the workload's top-level transaction %d", target, sub, got, top)
			}
		}
		for _, x := range w.xids {
			xid := xlog.XID(x.xid)
			_, recorded := st.CommitLSN(xid)
			committed := recorded // without pg_waldump: where a record committed it
			if cfg.waldump {
				// Parents: those pg_waldump shows before the target.
				if top, ok := facts.parent[x.xid]; ok && facts.parentLSN[x.xid] < stop {
					par.compared++
					if got := st.Parent(xid); got == top {
						par.agreed++
					} else {
						t.Errorf("%s: %s (xid %d): Parent %d, pg_waldump %d", target, x.name, x.xid, got, top)
					}
				}
				// Commit LSNs: those pg_waldump shows before the target.
				want, ok := facts.commitLSN[x.xid]
				committed = ok && want < stop
				got, ok := st.CommitLSN(xid)
				clsn.compared++
				if ok == committed && (!ok || got == want) {
					clsn.agreed++
				} else {
					t.Errorf("%s: %s (xid %d): CommitLSN %v %v, pg_waldump %v %v", target, x.name, x.xid, got, ok, want, committed)
				}
			}
			// Commit times: the server's commit timestamp, for those
			// committed by a record replayed.
			if us, ok := w.commitTime[x.xid]; ok && committed {
				ctime.compared++
				if got, ok := st.CommitTime(xid); ok && got.UnixMicro() == us {
					ctime.agreed++
				} else {
					t.Errorf("%s: %s (xid %d): CommitTime %v %v, pg_xact_commit_timestamp %d us", target, x.name, x.xid, got, ok, us)
				}
			}
		}

		for _, x := range w.xids {
			got := st.Status(xlog.XID(x.xid))
			xp.compared++
			if standbyAgrees(ans.paused[x.xid], got) {
				xp.agreed++
			} else {
				t.Errorf("%s: %s (xid %d): paused standby says %q, Status %v", target, x.name, x.xid, ans.paused[x.xid], got)
			}
		}
		tables := make([]string, 0, len(ans.tuples))
		for table := range ans.tuples {
			tables = append(tables, table)
		}
		sort.Strings(tables)
		for _, table := range tables {
			for _, r := range ans.tuples[table] {
				vis.compared++
				got := st.TupleVisible(r.h)
				if got == ans.visible[table][r.ctid] {
					vis.agreed++
				} else {
					t.Errorf("%s: %s %s %+v: standby sees it: %v, TupleVisible %v", target, table, r.ctid, r.h, ans.visible[table][r.ctid], got)
				}
			}
		}
		for m, want := range ans.multisPaused {
			if strings.HasPrefix(want, "error") {
				continue // not readable on a standby
			}
			mulPaused.compared++
			ms, err := st.MultiMembers(xactstate.MultiXactID(m))
			if err == nil && membersString(ms) == want {
				mulPaused.agreed++
			} else {
				t.Errorf("%s: paused: multixact %d: members %q, MultiMembers %q (%v)", target, m, want, membersString(ms), err)
			}
		}

		dist := map[string]int{}
		for _, x := range w.xids {
			dist["paused "+ans.paused[x.xid]]++
			dist["ended "+ans.promoted[x.xid]]++
		}
		t.Logf("%s: answers %v; multixacts on the pages %v (paused: %v)", target, dist, ans.multis, ans.multisPaused)

		st.Finish()
		for _, x := range w.xids {
			got := st.Status(xlog.XID(x.xid))
			xf.compared++
			if promotedAgrees(ans.promoted[x.xid], got) {
				xf.agreed++
			} else {
				t.Errorf("%s: %s (xid %d): promoted server says %q, Status after Finish %v", target, x.name, x.xid, ans.promoted[x.xid], got)
			}
		}
		for m, want := range ans.multis {
			mul.compared++
			ms, err := st.MultiMembers(xactstate.MultiXactID(m))
			switch {
			case strings.HasPrefix(want, "error"):
				if errors.Is(err, xactstate.ErrNoMulti) {
					mul.agreed++
				} else {
					t.Errorf("%s: multixact %d: server: %s, MultiMembers %q (%v)", target, m, want, membersString(ms), err)
				}
			case err == nil && membersString(ms) == want:
				mul.agreed++
			default:
				t.Errorf("%s: multixact %d: members %q, MultiMembers %q (%v)", target, m, want, membersString(ms), err)
			}
		}
		if err := st.Err(); err != nil {
			t.Errorf("%s: %v", target, err)
		}
	}
	t.Logf("%v, %d targets, %d recorded xids: statuses at the paused standby %d/%d agree, after recovery ended %d/%d; tuples' visibility %d/%d; multixact members after recovery %d/%d, on the paused standby %d/%d; parents (pg_waldump) %d/%d, (the workload's savepoints) %d/%d; commit LSNs (pg_waldump) %d/%d; commit times (pg_xact_commit_timestamp) %d/%d",
		cfg.version, len(w.steps), len(w.xids), xp.agreed, xp.compared, xf.agreed, xf.compared, vis.agreed, vis.compared, mul.agreed, mul.compared, mulPaused.agreed, mulPaused.compared,
		par.agreed, par.compared, own.agreed, own.compared, clsn.agreed, clsn.compared, ctime.agreed, ctime.compared)
	if xp.compared == 0 || vis.compared == 0 || mul.compared == 0 || ctime.compared == 0 || cfg.waldump && par.compared == 0 {
		t.Errorf("nothing compared: statuses %d, tuples %d, multixacts %d, parents %d, commit times %d", xp.compared, vis.compared, mul.compared, par.compared, ctime.compared)
	}
}
