package replay_test

// TestRecovery proves Run against real recovery. A real server (PostgreSQL
// 15 from Debian, and 13, 17 and 18 from scripts/embedded-pg.sh when they
// are installed) archives its WAL; pageinspect is created (in template1
// too, so the databases created later have it), tables are filled, and an
// online base backup is taken with the low-level API while a transaction
// is prepared. Then a workload runs in steps separated by restore points:
//
//   - rp1: INSERT, COPY (multi-insert), COPY FREEZE into a table created in
//     the transaction, HOT and non-HOT updates, deletes, an aborted
//     transaction, a rolled-back savepoint, a VACUUM that cuts a table's
//     last pages off (to a non-zero length) before it grows again, a
//     TRUNCATE that cuts a table made in the same transaction and its
//     TOAST table in place;
//   - rp2: COMMIT PREPARED, ROLLBACK PREPARED, a transaction left prepared,
//     row locks by two sessions (multixacts, one with an update), TOAST
//     updates, deletes and inserts, VACUUM;
//   - rp3: VACUUM FREEZE, TRUNCATE, VACUUM FULL, DROP TABLE, CREATE DATABASE
//     (STRATEGY file_copy and, from 15, wal_log) with a table in each, and
//     a database and a table named with capitals;
//   - rp4: changes in the new databases, a transaction left running.
//
// Besides the four names, targets are an LSN (inclusive) inside step 2, an
// XID (recovery_target_inclusive = false) in step 3 and a time inside step 1.
// For each target the same backup is restored by the real server with
// restore_command from the archive, recovery_target_action = 'pause' and
// hot_standby = on, and paused there it gives every block of every user
// table and TOAST table (get_raw_page), SELECT ctid of each, and pg_class
// and pg_database. Run replays the same backup (backup.Open) and archive to
// the same target; every relation is resolved by name, its pages are
// compared byte for byte after heap.Mask on both, its visible tuples with
// the standby's ctids, and the catalogs' rows (oid, relname, relfilenode,
// relkind of every pg_class row; pg_database's oid and datname), a
// relation absent at the target (dropped after it, or made later) must be
// ErrNoRelation. Then the backup is restored to rp3 and promoted: timeline
// 2 gets changes of its own and restore point rp5, a target replayed with
// FollowHistory (the standby with recovery_target_timeline = 'latest'; the
// others with 'current', rp4 being on timeline 1 after the switch).
//
// PostgreSQL 15 runs twice: checksums on with wal_compression = lz4, and
// checksums off with pglz and wal_log_hints, its Run bounded to 64 pages in
// memory so most go through the spill file; 13 (wal_compression on, no
// checksums), 17 (checksums, no compression) and 18 (checksums, pglz,
// wal_log_hints) when installed: 18 by default, 13 and 17 with
// WALSCOPE_REPLAY_VERSIONS=all (about 3 minutes for the five on 2 cores,
// scripts/replay-oracle.sh sets it); WALSCOPE_REPLAY_VERSIONS=0 runs 15 alone;
// WALSCOPE_REPLAY_KEEP=1 keeps the work directories. The bad-input cases
// (a target before consistency, beyond the WAL, a segment missing, a
// backup of another system, no such relation) run on the first
// configuration. scripts/replay-oracle.sh runs it and prints the figures.

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/xlog"
)

// recoveryConfig is one server and its settings.
type recoveryConfig struct {
	name   string
	major  int
	initdb string // extra initdb arguments
	conf   string // extra postgresql.conf lines
	bad    bool   // run the bad-input cases too
	// memory bounds the pages Run holds in memory (Config.MemoryBytes):
	// 1 is its floor, 64 pages, so most go through the spill file.
	memory int64
	// always: run by default when installed (the others with
	// WALSCOPE_REPLAY_VERSIONS=all, to keep the test near 2 minutes)
	always bool
}

var recoveryConfigs = []recoveryConfig{
	{name: "15-checksums-lz4", major: 15, initdb: "--data-checksums", conf: "wal_compression = lz4\n", bad: true},
	{name: "15-pglz-hints-spill", major: 15, conf: "wal_compression = pglz\nwal_log_hints = on\n", memory: 1},
	{name: "13-compression", major: 13, conf: "wal_compression = on\n"},
	{name: "17-checksums", major: 17, initdb: "--data-checksums", conf: "wal_compression = off\n"},
	{name: "18-checksums-pglz-hints", major: 18, conf: "wal_compression = pglz\nwal_log_hints = on\n", always: true}, // 18's initdb enables checksums
}

func TestRecovery(t *testing.T) {
	pgtest.Need(t, 15) // skips (or fails) the whole test without PostgreSQL 15
	for _, cfg := range recoveryConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel() // the servers mostly wait: two configurations at once (-parallel, GOMAXPROCS)
			if cfg.major != 15 {
				switch os.Getenv("WALSCOPE_REPLAY_VERSIONS") {
				case "0":
					t.Skip("WALSCOPE_REPLAY_VERSIONS=0: PostgreSQL 15 alone")
				case "all":
				default:
					if !cfg.always {
						t.Skip("WALSCOPE_REPLAY_VERSIONS=all (scripts/replay-oracle.sh) runs this configuration too")
					}
				}
				if _, why := pgtest.Bin(cfg.major); why != "" {
					t.Skip(why)
				}
			}
			runRecovery(t, cfg)
		})
	}
}

// recoveryTarget is one target: as Run takes it and as postgresql.conf
// says it.
type recoveryTarget struct {
	label    string
	target   replay.Target
	settings string
	follow   bool // on the newest timeline (FollowHistory; recovery_target_timeline = 'latest')
}

// cluster is the primary's result: its backup and archive, and the targets.
type cluster struct {
	cfg     recoveryConfig
	bin     string
	client  string
	work    string
	base    string
	archive string
	targets []recoveryTarget
	// dropped: relations dropped during the workload, db.schema.table
	segAfterRP1 string // a segment written after rp1 and before rp2
}

func runRecovery(t *testing.T, cfg recoveryConfig) {
	bin, client := pgtest.Need(t, cfg.major)
	work := pgtest.WorkDir(t, "replay-"+cfg.name+"-", "WALSCOPE_REPLAY_KEEP")
	c := &cluster{cfg: cfg, bin: bin, client: client, work: work, base: filepath.Join(work, "base"), archive: filepath.Join(work, "archive")}
	os.MkdirAll(c.archive, 0o755)
	pgtest.ChownPG(t, c.archive)
	p := pgtest.New(t, work, "primary", cfg.major, bin, client)
	p.InitDB(t, cfg.initdb, fmt.Sprintf("wal_level = replica\narchive_mode = on\narchive_command = 'cp %%p %s/%%f'\n"+
		"max_prepared_transactions = 10\nautovacuum = off\n%s", c.archive, cfg.conf))
	p.Start(t)
	c.workload(t, p)
	p.Stop("fast")
	c.timelineSwitch(t)

	var answers []*standbyAnswers
	for _, tg := range c.targets {
		answers = append(answers, c.standby(t, tg))
	}
	everSeen := map[string]bool{}
	for _, a := range answers {
		for _, r := range a.rels {
			everSeen[r.qualified()] = true
		}
	}
	type tally struct{ pages, changed, identical, tuples, agree, classes, classAgree int }
	var total tally
	for i, tg := range c.targets {
		a := answers[i]
		rp := c.run(t, tg)
		var n tally
		// pg_database and pg_class, every row.
		dbs, err := rp.Databases()
		if err != nil {
			t.Fatalf("%s: Databases: %v", tg.label, err)
		}
		var gotDBs []string
		for _, d := range dbs {
			gotDBs = append(gotDBs, fmt.Sprintf("%d|%s", d.OID, d.Name))
		}
		sort.Strings(gotDBs)
		if strings.Join(gotDBs, ",") != strings.Join(a.databases, ",") {
			t.Errorf("%s: pg_database: standby %v, Databases %v", tg.label, a.databases, gotDBs)
		}
		for db, rows := range a.classes {
			oid := a.dbOID[db]
			cat, err := rp.Catalog(oid)
			if err != nil {
				t.Errorf("%s: Catalog(%s): %v", tg.label, db, err)
				continue
			}
			got := map[string]bool{}
			for _, cl := range cat.Classes() {
				got[fmt.Sprintf("%d|%s|%d|%c", cl.OID, cl.Name, cl.RelFileNode, cl.Kind)] = true
			}
			bad := 0
			for _, row := range rows {
				n.classes++
				if got[row] {
					n.classAgree++
					delete(got, row)
				} else if bad++; bad <= 5 {
					t.Errorf("%s: %s: pg_class row %s on the standby, not in Catalog", tg.label, db, row)
				}
			}
			for row := range got {
				if bad++; bad <= 5 {
					t.Errorf("%s: %s: pg_class row %s in Catalog, not on the standby", tg.label, db, row)
				}
			}
		}
		// Relations absent at the target.
		for q := range everSeen {
			if _, ok := a.byName[q]; ok {
				continue
			}
			if _, err := rp.Resolve(q, 0); !errors.Is(err, replay.ErrNoRelation) {
				t.Errorf("%s: %s does not exist on the standby; Resolve: %v", tg.label, q, err)
			}
		}
		// The user relations: name, pages, visible tuples.
		for _, sr := range a.rels {
			rel, err := rp.Resolve(sr.qualified(), 0)
			if err != nil {
				t.Errorf("%s: Resolve(%s): %v", tg.label, sr.qualified(), err)
				continue
			}
			if rel.Class.OID != sr.oid || rel.Class.RelFileNode != sr.relfilenode || rel.Class.Kind != sr.kind ||
				rel.Class.ToastRelid != sr.toast || rel.Locator.RelNumber != sr.relfilenode || rel.Locator.DBOID != a.dbOID[sr.db] {
				t.Errorf("%s: %s: standby oid %d relfilenode %d relkind %c toast %d; Resolve: %+v %+v", tg.label, sr.qualified(),
					sr.oid, sr.relfilenode, sr.kind, sr.toast, *rel.Class, rel.Locator)
				continue
			}
			nb, err := rp.NBlocks(rel.Locator, decode.ForkMain)
			if err != nil || int(nb) != len(sr.pages) {
				t.Errorf("%s: %s: standby %d blocks, NBlocks %d (%v)", tg.label, sr.qualified(), len(sr.pages), nb, err)
				continue
			}
			mismatches := 0
			for blk, want := range sr.pages {
				got, last, err := rp.Page(nil, rel.Locator, decode.ForkMain, uint32(blk))
				if err != nil {
					t.Errorf("%s: %s block %d: %v", tg.label, sr.qualified(), blk, err)
					continue
				}
				n.pages++
				if last != 0 {
					n.changed++
				}
				w := append([]byte(nil), want...)
				heap.Mask(w, uint32(blk))
				heap.Mask(got, uint32(blk))
				if bytes.Equal(got, w) {
					n.identical++
				} else if mismatches++; mismatches <= 3 {
					t.Errorf("%s: %s (%v) block %d differs after masking: %s", tg.label, sr.qualified(), rel.Locator, blk, firstDiff(got, w))
				}
			}
			gotVis := map[string]bool{}
			if err := rp.VisibleTuples(rel.Locator, func(blk uint32, off uint16, _ []byte) error {
				gotVis[fmt.Sprintf("(%d,%d)", blk, off)] = true
				return nil
			}); err != nil {
				t.Errorf("%s: %s: VisibleTuples: %v", tg.label, sr.qualified(), err)
				continue
			}
			bad := 0
			for ctid := range sr.ctids {
				n.tuples++
				if gotVis[ctid] {
					n.agree++
				} else if bad++; bad <= 5 {
					t.Errorf("%s: %s: the standby sees %s, VisibleTuples does not", tg.label, sr.qualified(), ctid)
				}
			}
			for ctid := range gotVis {
				if !sr.ctids[ctid] {
					n.tuples++
					if bad++; bad <= 5 {
						t.Errorf("%s: %s: VisibleTuples sees %s, the standby does not", tg.label, sr.qualified(), ctid)
					}
				}
			}
		}
		st := rp.Stop()
		spilled, reloaded := rp.Spilled()
		if err := rp.Close(); err != nil {
			t.Errorf("%s: Close: %v", tg.label, err)
		}
		if left, _ := filepath.Glob(filepath.Join(c.work, "walscope-replay-*")); len(left) > 0 {
			t.Errorf("%s: Close left %v", tg.label, left)
		}
		t.Logf("%s %-22s stop %s after=%v xid %d, %d records, %d/%d pages spilled/reloaded: pages %d compared (%d changed by the WAL), %d identical after masking; tuples %d, visibility agrees %d; pg_class rows %d/%d",
			cfg.name, tg.label, st.LSN, st.After, st.XID, st.Records, spilled, reloaded, n.pages, n.changed, n.identical, n.tuples, n.agree, n.classAgree, n.classes)
		if n.pages == 0 || n.tuples == 0 || n.classes == 0 {
			t.Errorf("%s: nothing compared: %d pages, %d tuples, %d pg_class rows", tg.label, n.pages, n.tuples, n.classes)
		}
		total.pages += n.pages
		total.changed += n.changed
		total.identical += n.identical
		total.tuples += n.tuples
		total.agree += n.agree
		total.classes += n.classes
		total.classAgree += n.classAgree
	}
	t.Logf("%s: %d targets: pages %d compared (%d changed by the WAL), %d identical after masking; tuples %d, visibility agrees %d; pg_class rows %d/%d",
		cfg.name, len(c.targets), total.pages, total.changed, total.identical, total.tuples, total.agree, total.classAgree, total.classes)
	if cfg.bad {
		c.badInput(t)
	}
}

// run replays the backup and archive to a target.
func (c *cluster) run(t *testing.T, tg recoveryTarget) *replay.Replay {
	t.Helper()
	rp, err := c.tryRunOpts(tg.target, c.base, c.archive, xlog.Options{FollowHistory: tg.follow}, c.cfg.memory)
	if err != nil {
		t.Fatalf("Run to %s: %v", tg.target, err)
	}
	return rp
}

func (c *cluster) tryRun(tg replay.Target, base, archive string) (*replay.Replay, error) {
	return c.tryRunOpts(tg, base, archive, xlog.Options{}, 0)
}

func (c *cluster) tryRunOpts(tg replay.Target, base, archive string, opts xlog.Options, memory int64) (*replay.Replay, error) {
	b, err := backup.Open(base)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	src, err := xlog.OpenDir(archive)
	if err != nil {
		return nil, err
	}
	return replay.Run(replay.Config{Backup: replay.OpenBackup(b), WAL: src, Options: opts, Target: tg, MemoryBytes: memory, TempDir: c.work})
}

func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo, hi := i&^15, min(i&^15+32, len(got), len(want))
	return fmt.Sprintf("first at byte %d: replay %x, standby %x (bytes %d..%d)", i, got[lo:hi], want[lo:hi], lo, hi)
}

// standbyRel is one user relation as the paused standby has it.
type standbyRel struct {
	db, nsp, name string
	oid           uint32
	relfilenode   uint32
	kind          byte
	toast         uint32
	pages         [][]byte
	ctids         map[string]bool
}

func (r *standbyRel) qualified() string {
	return table.QuoteIdent(r.db) + "." + table.QuoteIdent(r.nsp) + "." + table.QuoteIdent(r.name)
}

// standbyAnswers is what a server paused at a target said.
type standbyAnswers struct {
	databases []string            // oid|datname, sorted
	dbOID     map[string]uint32   // datname -> oid
	classes   map[string][]string // datname -> oid|relname|relfilenode|relkind of every pg_class row
	rels      []*standbyRel
	byName    map[string]*standbyRel
}

// standby restores the backup to a target, paused with hot standby, and
// asks it.
func (c *cluster) standby(t *testing.T, tg recoveryTarget) *standbyAnswers {
	t.Helper()
	name := "r-" + strings.NewReplacer(" ", "", "=", "", "'", "").Replace(tg.label)
	tli := "recovery_target_timeline = 'current'\n" // the targets of timeline 1, some after the switch
	if tg.follow {
		tli = "recovery_target_timeline = 'latest'\n"
	}
	r := pgtest.Restore(t, c.work, name, c.cfg.major, c.bin, c.client, c.base, c.archive, tg.settings+tli+"recovery_target_action = 'pause'\n")
	defer func() {
		r.Stop("immediate")
		os.RemoveAll(r.Dir)
	}()
	r.WaitPaused(t)
	a := &standbyAnswers{dbOID: map[string]uint32{}, classes: map[string][]string{}, byName: map[string]*standbyRel{}}
	for _, l := range r.Query(t, "SELECT oid, datname, datallowconn FROM pg_database") {
		f := strings.Split(l, "|")
		a.databases = append(a.databases, f[0]+"|"+f[1])
		a.dbOID[f[1]] = uint32(atoi(t, f[0]))
	}
	sort.Strings(a.databases)
	for db := range a.dbOID {
		if db == "template0" {
			continue
		}
		a.classes[db] = r.QueryDB(t, db, "SELECT oid, relname, relfilenode, relkind FROM pg_class")
		var rels []*standbyRel
		for _, l := range r.QueryDB(t, db, `SELECT c.oid, n.nspname, c.relname, c.relfilenode, c.relkind, c.reltoastrelid
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 't') AND c.oid >= 16384 ORDER BY c.oid`) {
			f := strings.Split(l, "|")
			sr := &standbyRel{db: db, nsp: f[1], name: f[2], oid: uint32(atoi(t, f[0])), relfilenode: uint32(atoi(t, f[3])),
				kind: f[4][0], toast: uint32(atoi(t, f[5])), ctids: map[string]bool{}}
			rels = append(rels, sr)
			a.byName[sr.qualified()] = sr
		}
		if len(rels) == 0 {
			continue
		}
		byOID := map[uint32]*standbyRel{}
		for _, sr := range rels {
			byOID[sr.oid] = sr
		}
		// Pages first: the SELECTs below may set hint bits in the
		// standby's buffers (masked, but read what replay wrote).
		for _, l := range r.QueryDB(t, db, `SELECT c.oid, b, encode(get_raw_page(c.oid::regclass::text, b::int), 'hex')
FROM pg_class c, generate_series(0, pg_relation_size(c.oid) / current_setting('block_size')::int - 1) b
WHERE c.relkind IN ('r', 't') AND c.oid >= 16384 ORDER BY 1, 2`) {
			f := strings.Split(l, "|")
			sr := byOID[uint32(atoi(t, f[0]))]
			pg, err := hex.DecodeString(f[2])
			if sr == nil || err != nil || atoi(t, f[1]) != len(sr.pages) {
				t.Fatalf("%s: get_raw_page row %.60q: %v", tg.label, l, err)
			}
			sr.pages = append(sr.pages, pg)
		}
		var sql strings.Builder
		for _, sr := range rels {
			fmt.Fprintf(&sql, "SELECT %d, ctid FROM %s.%s;\n", sr.oid, table.QuoteIdent(sr.nsp), table.QuoteIdent(sr.name))
		}
		for _, l := range r.QueryDB(t, db, sql.String()) {
			f := strings.Split(l, "|")
			byOID[uint32(atoi(t, f[0]))].ctids[f[1]] = true
		}
		a.rels = append(a.rels, rels...)
	}
	return a
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// workload drives the primary: the tables, the base backup, the steps and
// their targets, and the archive of the last segment.
func (c *cluster) workload(t *testing.T, p *pgtest.Server) {
	v := c.cfg.major
	p.Query(t, "CREATE EXTENSION pageinspect")
	p.QueryDB(t, "template1", "CREATE EXTENSION pageinspect")
	p.Query(t, `CREATE TABLE t (id int PRIMARY KEY, v int, pad text) WITH (fillfactor = 70);
INSERT INTO t SELECT g, 0, repeat('x', 40) FROM generate_series(1, 3000) g;
CREATE TABLE toasty (id int PRIMARY KEY, big text);
ALTER TABLE toasty ALTER big SET STORAGE EXTERNAL;
INSERT INTO toasty SELECT g, repeat(md5(g::text), 200) FROM generate_series(1, 20) g;
CREATE TABLE gone (id int, v text);
INSERT INTO gone SELECT g, 'gone' FROM generate_series(1, 500) g;
CREATE TABLE trunc (id int);
INSERT INTO trunc SELECT generate_series(1, 1000);
CREATE TABLE vf (id int, v int);
INSERT INTO vf SELECT g, 0 FROM generate_series(1, 2000) g;
DELETE FROM vf WHERE id % 3 = 0;
CREATE TABLE locks (id int PRIMARY KEY, v int);
INSERT INTO locks SELECT g, 0 FROM generate_series(1, 20) g;
CREATE TABLE cut (id int, v text);
INSERT INTO cut SELECT g, repeat('c', 100) FROM generate_series(1, 6000) g;
DELETE FROM cut WHERE id > 2000;
CHECKPOINT;`)
	a, b, cs := p.Session(t, "a"), p.Session(t, "b"), p.Session(t, "c")
	cs.Exec("BEGIN")
	cs.Exec("INSERT INTO t VALUES (9000, 0, 'prepared before the backup')")
	cs.Exec("PREPARE TRANSACTION 'pre'")
	p.BaseBackup(t, c.base)

	name := func(rp string) {
		p.Query(t, fmt.Sprintf("SELECT pg_create_restore_point('%s')", rp))
		c.targets = append(c.targets, recoveryTarget{label: "name " + rp, target: replay.Target{Name: rp}, settings: fmt.Sprintf("recovery_target_name = '%s'\n", rp)})
	}

	// Step 1.
	p.Query(t, `INSERT INTO t SELECT g, 1, 'new' FROM generate_series(3001, 3200) g;
COPY t (id) FROM PROGRAM 'seq 3201 3700';
BEGIN; CREATE TABLE cf (id int); COPY cf FROM PROGRAM 'seq 1 2000' WITH (FREEZE); COMMIT;
UPDATE t SET v = v + 1 WHERE id <= 50;
UPDATE t SET id = id + 100000 WHERE id BETWEEN 51 AND 80;
DELETE FROM t WHERE id BETWEEN 81 AND 120;
BEGIN; INSERT INTO t VALUES (5100, 0, 'aborted'); UPDATE t SET v = -1 WHERE id BETWEEN 121 AND 130; ROLLBACK;
BEGIN; INSERT INTO t VALUES (5000, 0, 'kept'); SAVEPOINT s; INSERT INTO t VALUES (5001, 0, 'rolled back');
UPDATE t SET v = 99 WHERE id = 200; ROLLBACK TO s; INSERT INTO t VALUES (5002, 0, 'kept'); COMMIT;
VACUUM cut;
INSERT INTO cut SELECT g, 'again' FROM generate_series(7001, 7300) g;
BEGIN; CREATE TABLE tin (id int, big text); ALTER TABLE tin ALTER big SET STORAGE EXTERNAL;
INSERT INTO tin SELECT g, repeat(md5(g::text), 100) FROM generate_series(1, 30) g;
TRUNCATE tin;
INSERT INTO tin SELECT g, repeat(md5('again' || g), 120) FROM generate_series(31, 40) g; COMMIT;`)
	// cut: its deleted rows (deleted before prepared transaction pre held
	// the horizon back) removed and its last pages cut off by the VACUUM
	// (an XLOG_SMGR_TRUNCATE to a non-zero length), then extended again;
	// tin: TRUNCATE of a table made in the same transaction, which cuts
	// the heap and its TOAST table in place (heap_truncate_one_rel: to
	// length 0, same files).
	if n := p.Query(t, "SELECT pg_relation_size('cut') / 8192"); len(n) != 1 || atoi(t, n[0]) >= 60 {
		t.Fatalf("cut has %v pages after its VACUUM: not truncated (want about 40 of its 90)", n)
	}
	time.Sleep(20 * time.Millisecond)
	at := p.Query(t, "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')")[0]
	time.Sleep(20 * time.Millisecond)
	p.Query(t, "UPDATE t SET v = v + 1 WHERE id BETWEEN 300 AND 320; INSERT INTO t VALUES (5003, 0, 'after the time')")
	tt, err := time.Parse("2006-01-02 15:04:05.999999", at)
	if err != nil {
		t.Fatal(err)
	}
	c.targets = append(c.targets, recoveryTarget{label: "time " + at, target: replay.Target{Time: tt, Inclusive: true},
		settings: fmt.Sprintf("recovery_target_time = '%s+00'\n", at)})
	name("rp1")
	p.Query(t, "SELECT pg_switch_wal()")
	c.segAfterRP1 = p.Query(t, "SELECT pg_walfile_name(pg_current_wal_insert_lsn())")[0]

	// Step 2.
	cs.Exec("COMMIT PREPARED 'pre'")
	for _, g := range []struct{ gid, end string }{{"p1", "COMMIT PREPARED 'p1'"}, {"p2", "ROLLBACK PREPARED 'p2'"}, {"p3", ""}} {
		cs.Exec("BEGIN")
		cs.Exec(fmt.Sprintf("INSERT INTO t VALUES (600%c, 0, '%s')", g.gid[1], g.gid))
		cs.Exec("PREPARE TRANSACTION '" + g.gid + "'")
		if g.end != "" {
			cs.Exec(g.end)
		}
	}
	p.Query(t, "SELECT pg_switch_wal()")
	a.Exec("BEGIN")
	a.Exec("SELECT * FROM locks WHERE id <= 5 FOR SHARE")
	b.Exec("BEGIN")
	b.Exec("SELECT * FROM locks WHERE id <= 5 FOR SHARE")
	a.Exec("COMMIT")
	b.Exec("COMMIT")
	a.Exec("BEGIN")
	a.Exec("SELECT * FROM locks WHERE id = 6 FOR KEY SHARE")
	b.Exec("BEGIN")
	b.Exec("UPDATE locks SET v = 1 WHERE id = 6")
	a.Exec("COMMIT")
	b.Exec("COMMIT")
	lsn := p.Query(t, "SELECT pg_current_wal_insert_lsn()")[0]
	l, err := xlog.ParseLSN(lsn)
	if err != nil {
		t.Fatal(err)
	}
	c.targets = append(c.targets, recoveryTarget{label: "lsn " + lsn, target: replay.Target{LSN: l, Inclusive: true},
		settings: fmt.Sprintf("recovery_target_lsn = '%s'\n", lsn)})
	p.Query(t, `UPDATE toasty SET big = repeat(md5('u' || id), 250) WHERE id <= 5;
DELETE FROM toasty WHERE id BETWEEN 6 AND 8;
INSERT INTO toasty SELECT g, repeat(md5(g::text), 300) FROM generate_series(21, 25) g;
VACUUM t;
VACUUM toasty;`)
	name("rp2")

	// Step 3.
	p.Query(t, "VACUUM FREEZE t")
	a.Exec("BEGIN")
	xid := a.One("SELECT txid_current()")
	a.Exec("UPDATE t SET v = 7 WHERE id BETWEEN 400 AND 410")
	a.Exec("COMMIT")
	x, err := strconv.ParseUint(xid, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	c.targets = append(c.targets, recoveryTarget{label: "xid " + xid + " exclusive", target: replay.Target{XID: xlog.XID(x), Inclusive: false},
		settings: fmt.Sprintf("recovery_target_xid = '%s'\nrecovery_target_inclusive = false\n", xid)})
	p.Query(t, `TRUNCATE trunc;
INSERT INTO trunc SELECT generate_series(1, 100);
VACUUM FULL vf;
DROP TABLE gone;`)
	dbs := []string{"d1"}
	if v >= 15 {
		p.Query(t, "CREATE DATABASE d1 STRATEGY file_copy")
		p.Query(t, "CREATE DATABASE d2 STRATEGY wal_log")
		dbs = append(dbs, "d2")
	} else {
		p.Query(t, "CREATE DATABASE d1")
	}
	// a database and a table named with capitals: named in double
	// quotes (Resolve reads a name's parts as identifiers)
	p.Query(t, `CREATE DATABASE "Sales"`)
	p.QueryDB(t, "Sales", `CREATE TABLE "Orders" (id int); INSERT INTO "Orders" SELECT generate_series(1, 50);`)
	for _, db := range dbs {
		p.QueryDB(t, db, `CREATE TABLE dt (id int, v text);
INSERT INTO dt SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
UPDATE dt SET v = 'updated' WHERE id <= 100;`)
	}
	name("rp3")

	// Step 4.
	for _, db := range dbs {
		p.QueryDB(t, db, "DELETE FROM dt WHERE id BETWEEN 200 AND 300; UPDATE dt SET v = 'again' WHERE id BETWEEN 500 AND 520;")
	}
	p.Query(t, "UPDATE locks SET v = v + 1")
	b.Exec("BEGIN")
	b.Exec("INSERT INTO t VALUES (7000, 0, 'running at the target')")
	name("rp4")
	b.Exec("COMMIT")
	seg := p.Query(t, "SELECT pg_walfile_name(pg_current_wal_insert_lsn())")[0]
	p.Query(t, "SELECT pg_switch_wal()")
	p.WaitFor(t, fmt.Sprintf("SELECT last_archived_wal >= '%s' FROM pg_stat_archiver", seg), "t")
}

// timelineSwitch restores the backup to rp3 and promotes it: timeline 2
// branches off before rp4, gets its own changes and restore point rp5, and
// archives its history file and WAL beside timeline 1's.
func (c *cluster) timelineSwitch(t *testing.T) {
	p := pgtest.Restore(t, c.work, "promoted", c.cfg.major, c.bin, c.client, c.base, c.archive,
		"recovery_target_name = 'rp3'\nrecovery_target_action = 'promote'\nrecovery_target_timeline = 'current'\n"+
			fmt.Sprintf("archive_mode = on\narchive_command = 'cp %%p %s/%%f'\n", c.archive))
	p.WaitFor(t, "SELECT pg_is_in_recovery()", "f")
	p.Query(t, `UPDATE t SET v = 55 WHERE id BETWEEN 600 AND 700;
INSERT INTO trunc SELECT generate_series(2000, 2100);
CREATE TABLE tl2 (id int);
INSERT INTO tl2 SELECT generate_series(1, 300);`)
	p.QueryDB(t, "d1", "DELETE FROM dt WHERE id BETWEEN 900 AND 950")
	p.Query(t, "SELECT pg_create_restore_point('rp5')")
	c.targets = append(c.targets, recoveryTarget{label: "name rp5 (timeline 2)", target: replay.Target{Name: "rp5"},
		settings: "recovery_target_name = 'rp5'\n", follow: true})
	seg := p.Query(t, "SELECT pg_walfile_name(pg_current_wal_insert_lsn())")[0]
	p.Query(t, "SELECT pg_switch_wal()")
	p.WaitFor(t, fmt.Sprintf("SELECT last_archived_wal >= '%s' FROM pg_stat_archiver", seg), "t")
	p.Stop("fast")
	os.RemoveAll(p.Dir)
}

// badInput: the errors of Run and Resolve on what recovery refuses.
func (c *cluster) badInput(t *testing.T) {
	b, err := backup.Open(c.base)
	if err != nil {
		t.Fatal(err)
	}
	start := b.Label().StartLSN
	b.Close()
	// A target before the backup is consistent: its start.
	if _, err := c.tryRun(replay.Target{LSN: start, Inclusive: true}, c.base, c.archive); !errors.Is(err, replay.ErrBeforeConsistent) {
		t.Errorf("target at the backup's start %s: %v, want ErrBeforeConsistent", start, err)
	} else {
		t.Logf("before consistency: %v", err)
	}
	// Beyond the WAL: a name never created, an LSN past the end.
	for _, tg := range []replay.Target{{Name: "never"}, {LSN: 0xFFFF_0000_0000, Inclusive: true}} {
		if _, err := c.tryRun(tg, c.base, c.archive); !errors.Is(err, replay.ErrNotReached) {
			t.Errorf("%s: %v, want ErrNotReached", tg, err)
		} else {
			t.Logf("beyond the WAL: %v", err)
		}
	}
	// A segment missing between the backup and rp2.
	holed := filepath.Join(c.work, "holed")
	os.MkdirAll(holed, 0o755)
	ents, err := os.ReadDir(c.archive)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == c.segAfterRP1 {
			continue
		}
		if err := os.Link(filepath.Join(c.archive, e.Name()), filepath.Join(holed, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.tryRun(replay.Target{Name: "rp2"}, c.base, holed); !errors.Is(err, replay.ErrWALMissing) {
		t.Errorf("rp2 with %s missing: %v, want ErrWALMissing", c.segAfterRP1, err)
	} else {
		t.Logf("segment missing: %v", err)
	}
	// A backup of another system: a fresh cluster's.
	p := pgtest.New(t, c.work, "other", c.cfg.major, c.bin, c.client)
	p.InitDB(t, "", "")
	p.Start(t)
	other := filepath.Join(c.work, "other-base")
	p.BaseBackup(t, other)
	p.Stop("immediate")
	if _, err := c.tryRun(replay.Target{Name: "rp1"}, other, c.archive); !errors.Is(err, replay.ErrOtherSystem) {
		t.Errorf("another system's backup: %v, want ErrOtherSystem", err)
	} else {
		t.Logf("another system: %v", err)
	}
	// No such relation, in the database and anywhere.
	rp := c.run(t, recoveryTarget{target: replay.Target{Name: "rp1"}})
	defer rp.Close()
	for _, name := range []string{"public.nosuch", "postgres.public.nosuch", "nodb.public.t", "public.dt"} {
		if _, err := rp.Resolve(name, 0); !errors.Is(err, replay.ErrNoRelation) {
			t.Errorf("Resolve(%s) at rp1: %v, want ErrNoRelation", name, err)
		}
	}
	// Names with capitals: each part an identifier, as PostgreSQL reads
	// 'a.b.c'::regclass (unquoted folded to lower case).
	rp3 := c.run(t, recoveryTarget{target: replay.Target{Name: "rp3"}})
	defer rp3.Close()
	if rel, err := rp3.Resolve(`"Sales".public."Orders"`, 0); err != nil || rel.Class.Name != "Orders" || rel.Database.Name != "Sales" {
		t.Errorf(`Resolve("Sales".public."Orders") at rp3: %v, %v`, rel, err)
	}
	for _, name := range []string{"Sales.public.Orders", `"Sales".public.orders`, `sales.public."Orders"`} {
		if _, err := rp3.Resolve(name, 0); !errors.Is(err, replay.ErrNoRelation) {
			t.Errorf("Resolve(%s) at rp3: %v, want ErrNoRelation", name, err)
		}
	}
	if _, err := rp.NBlocks(decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 999999}, decode.ForkMain); !errors.Is(err, replay.ErrNoRelation) {
		t.Errorf("NBlocks of a file that is nowhere: %v, want ErrNoRelation", err)
	}
}
