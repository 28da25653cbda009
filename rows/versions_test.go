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
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// versionConfig is one real server the rows of its transactions are
// checked against.
type versionConfig struct {
	name   string
	major  int
	conf   string
	always bool // run without WALSCOPE_ROWS_VERSIONS=all
}

var versionConfigs = []versionConfig{
	{name: "15-logical", major: 15, conf: "wal_level = logical\n", always: true},
	{name: "18", major: 18, conf: "wal_level = replica\n", always: true},
	{name: "10", major: 10, conf: "wal_level = replica\n"},
	{name: "11", major: 11, conf: "wal_level = logical\n"},
	{name: "12", major: 12, conf: "wal_level = replica\n"},
	{name: "13", major: 13, conf: "wal_level = replica\nwal_compression = on\n", always: true},
	{name: "14", major: 14, conf: "wal_level = logical\n"},
	{name: "16", major: 16, conf: "wal_level = replica\n"},
	{name: "17", major: 17, conf: "wal_level = replica\n"},
}

// TestVersions: on real servers of PostgreSQL 10 to 18 (13, 15 with
// wal_level = logical and 18 by default, every installed one with
// WALSCOPE_ROWS_VERSIONS=all), a workload of transactions, each with
// a released and a rolled-back savepoint while a second session commits
// between its statements (DELETE with TOASTed values, UPDATE of every row
// and of the key, INSERTs, DELETE then TRUNCATE then INSERT, UPDATE then
// DROP TABLE; UPDATE, DELETE and INSERT in a prepared transaction committed
// by COMMIT PREPARED; a CREATE TABLE with rows (one TOASTed, one updated),
// given as inserts and dropped by the undo, beside an INSERT; one
// truncated in place between TOASTed INSERTs; an ALTER
// TABLE adding a column and one rewriting a table, each named;
// TRUNCATE, INSERT, TRUNCATE again (in place), INSERT; a table moved to
// another schema, one rewritten twice, tables altered then truncated,
// truncated then altered, altered then dropped, rows changed between; a
// table moved to another tablespace between changes of its rows; tables
// made unlogged and logged again, or left unlogged, with changes while
// unlogged that Result.Missing and Skipped must count)
// after an online base backup (the low-level API): for each,
// Changes applied to the server's own row_to_json of the tables just
// before BEGIN (each old row present when its change comes) gives exactly
// its rows just after COMMIT, and as many changes per table and operation
// as its statements made; every row version in the columns the table had
// at its statement is the table's row as the transaction's own session
// saw it just before that statement (old) or just after (new): a
// rewrite's copies too; then the undo scripts (Format.WriteUndo with the
// command's settings, written from Open's changes all spilled to the
// replay's file and read back backward, identical to those written from
// Changes), run on the same server from the last transaction to
// the first, bring each transaction's tables back to its rows before it.
func TestVersions(t *testing.T) {
	pgtest.Need(t, 15)
	for _, cfg := range versionConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			if !cfg.always && os.Getenv("WALSCOPE_ROWS_VERSIONS") != "all" {
				t.Skip("WALSCOPE_ROWS_VERSIONS=all runs this version too")
			}
			if _, why := pgtest.Bin(cfg.major); why != "" {
				if cfg.always {
					pgtest.SkipOrFail(t, why)
				}
				t.Skip(why)
			}
			runVersion(t, cfg)
		})
	}
}

type versionIncident struct {
	name   string
	xid    uint32
	tables []string
	ops    map[string]map[string]int
	before map[string][]string
	after  map[string][]string
	// created: a table the transaction created, named in Result.Created
	// (its rows are inserts; the undo drops it)
	created string
	// skipped: what Result.Skipped must say, entry by entry
	skipped []string
	// defs: the tables' columns (name and type, in order) before it
	defs map[string][]string
	// steps: the tables as the transaction saw them after each of its
	// statements (its own session's queries)
	steps []step
	// loose: tables whose versions are checked one by one (against the
	// session's rows then, or, in their columns of before, among the rows
	// of before), not as a whole after: dropped after a change of their
	// columns, their versions follow several layouts
	loose map[string]bool
	// unlogged: tables the transaction had unlogged for a while, and
	// what Result.Missing must say of them (table, operation, rows):
	// their changes then are not given, so neither their rows after nor
	// the undo are whole
	unlogged map[string]bool
	missing  string
}

// step is the transaction's tables as it saw them after one of its
// statements: the WAL insert position then (the statement's records lie
// before it, the next one's after), their columns (layoutSig) and rows
// (row_to_json).
type step struct {
	lsn  xlog.LSN
	cols map[string]string
	rows map[string][]string
}

func runVersion(t *testing.T, cfg versionConfig) {
	bin, client := pgtest.Need(t, cfg.major)
	work := pgtest.WorkDir(t, "rows-"+cfg.name+"-", "WALSCOPE_KEEP")
	arch, archiving := pgtest.ArchiveDir(t, work)
	base := filepath.Join(work, "base")
	p := pgtest.New(t, work, "primary", cfg.major, bin, client)
	p.InitDB(t, "", archiving+"autovacuum = off\nmax_prepared_transactions = 2\n"+cfg.conf)
	p.Start(t)
	p.Query(t, `CREATE TABLE acct (id int PRIMARY KEY, owner text, note text);
INSERT INTO acct SELECT g, 'owner ' || g, CASE WHEN g % 10 = 0 THEN (SELECT string_agg(md5((g * 1000 + h)::text), '') FROM generate_series(1, 100) h)
  WHEN g % 10 = 5 THEN repeat('compressible ', 500) END FROM generate_series(1, 100) g;
CREATE TABLE stock (id int PRIMARY KEY, qty int, price numeric, ok bool) WITH (fillfactor = 60);
INSERT INTO stock SELECT g, g * 2, g / 7.0, g % 2 = 0 FROM generate_series(1, 200) g;
CREATE TABLE notes (a int, b text);
INSERT INTO notes SELECT g % 5, 'note ' || (g % 7) FROM generate_series(1, 40) g;
CREATE TABLE hist (id int, v text);
INSERT INTO hist SELECT g, 'h' || g FROM generate_series(1, 80) g;
CREATE TABLE doomed (id int, v text, big text);
INSERT INTO doomed SELECT g, 'd' || g, CASE WHEN g % 10 = 0 THEN (SELECT string_agg(md5((g - h)::text), '') FROM generate_series(1, 100) h) END FROM generate_series(1, 50) g;
CREATE TABLE heartbeat (n int);
CREATE TABLE spare (id int, v text);
INSERT INTO spare SELECT g, 's' || g FROM generate_series(1, 20) g;
CREATE TABLE shape (id int PRIMARY KEY, name text, qty int NOT NULL, gone text, tail int);
INSERT INTO shape SELECT g, 'n' || g, g * 3, CASE WHEN g % 4 <> 0 THEN 'g' || g END, g * 11 FROM generate_series(1, 30) g;
CREATE SCHEMA moved;
CREATE TABLE wander (id int PRIMARY KEY, v text, n int);
INSERT INTO wander SELECT g, 'w' || g, g FROM generate_series(1, 15) g;
CREATE TABLE twice (id int PRIMARY KEY, v text, n int);
INSERT INTO twice SELECT g, CASE WHEN g = 4 THEN (SELECT string_agg(md5((h * 31)::text), '') FROM generate_series(1, 150) h) ELSE 't' || g END, g * 10 FROM generate_series(1, 20) g;
CREATE TABLE cut (id int PRIMARY KEY, v text);
INSERT INTO cut SELECT g, 'c' || g FROM generate_series(1, 12) g;
CREATE TABLE cut2 (id int, v text);
INSERT INTO cut2 SELECT g, 'k' || g FROM generate_series(1, 6) g;
CREATE TABLE recut (id int, v text);
INSERT INTO recut SELECT g, 'r' || g FROM generate_series(1, 9) g;
CREATE TABLE gone (id int PRIMARY KEY, v text, n int);
INSERT INTO gone SELECT g, 'g' || g, g FROM generate_series(1, 10) g;
CREATE TABLE gone2 (id int, v text);
INSERT INTO gone2 SELECT g, 'h' || g FROM generate_series(1, 8) g;
CREATE TABLE cl (id int PRIMARY KEY, v text);
INSERT INTO cl SELECT g, 'l' || g FROM generate_series(12, 1, -1) g;
CREATE TABLE cl2 (id int PRIMARY KEY, v text);
INSERT INTO cl2 SELECT g, 'm' || g FROM generate_series(12, 1, -1) g;
CREATE TABLE moveme (id int PRIMARY KEY, v text);
INSERT INTO moveme SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE TABLE ul (id int PRIMARY KEY, v text);
INSERT INTO ul SELECT g, 'u' || g FROM generate_series(1, 10) g;
CREATE TABLE ul2 (id int PRIMARY KEY, v text);
INSERT INTO ul2 SELECT g, 'w' || g FROM generate_series(1, 10) g;
CREATE UNLOGGED TABLE ul3 (id int PRIMARY KEY, v text);
INSERT INTO ul3 SELECT g, 'z' || g FROM generate_series(1, 10) g;
CHECKPOINT;`)
	p.BaseBackup(t, base)
	// a tablespace made after the backup (its directory under the test's)
	spc := filepath.Join(work, "spc")
	if err := os.Mkdir(spc, 0o700); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, spc)
	p.Query(t, "CREATE TABLESPACE elsewhere LOCATION '"+spc+"'")
	a, hb := p.Session(t, "a"), p.Session(t, "hb")
	beat := 0
	tick := func() { beat++; hb.Exec(fmt.Sprintf("INSERT INTO heartbeat VALUES (%d)", beat)) }
	// the tables are found by name in any schema (one is moved)
	qualified := func(query func(string) []string, tab string) string {
		q := query("SELECT quote_ident(nspname) || '.' || quote_ident(relname) FROM pg_class c JOIN pg_namespace n ON n.oid = relnamespace WHERE relname = '" + tab + "' AND relkind = 'r'")
		if len(q) == 0 {
			return ""
		}
		return q[0]
	}
	server := func(sql string) []string { return p.Query(t, sql) }
	snap := func(tables []string) map[string][]string {
		out := map[string][]string{}
		for _, tab := range tables {
			name := qualified(server, tab)
			if name == "" {
				out[tab] = nil
				continue
			}
			out[tab] = p.Query(t, "SELECT row_to_json(x) FROM "+name+" x")
		}
		return out
	}
	defs := func(tables []string) map[string][]string {
		out := map[string][]string{}
		for _, tab := range tables {
			out[tab] = p.Query(t, "SELECT 'in schema ' || nspname FROM pg_class c JOIN pg_namespace n ON n.oid = relnamespace WHERE relname = '"+tab+"' AND relkind = 'r' UNION ALL SELECT * FROM (SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute a JOIN pg_class c ON c.oid = attrelid WHERE relname = '"+tab+"' AND relkind = 'r' AND attnum > 0 AND NOT attisdropped ORDER BY attnum) x")
		}
		return out
	}
	// what the transaction sees of its tables after a statement: in its
	// own session
	inside := func(tables []string) step {
		st := step{cols: map[string]string{}, rows: map[string][]string{}}
		lsn, err := xlog.ParseLSN(a.One("SELECT pg_current_wal_insert_lsn()"))
		if err != nil {
			t.Fatal(err)
		}
		st.lsn = lsn
		for _, tab := range tables {
			name := qualified(a.Exec, tab)
			if name == "" {
				continue
			}
			st.cols[tab] = a.One("SELECT string_agg(attname || ' ' || atttypid || ' ' || atttypmod, ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '" + name + "'::regclass AND attnum > 0 AND NOT attisdropped")
			st.rows[tab] = a.Exec("SELECT row_to_json(x) FROM " + name + " x")
		}
		return st
	}
	count := func(sql string) int {
		var n int
		fmt.Sscan(p.Query(t, sql)[0], &n)
		return n
	}
	var incidents []*versionIncident
	prepared := false // the next run ends in PREPARE TRANSACTION and COMMIT PREPARED
	run := func(name string, tables []string, ops map[string]map[string]int, stmts ...string) {
		in := &versionIncident{name: name, tables: tables, ops: ops, before: snap(tables), defs: defs(tables)}
		tick()
		a.Exec("BEGIN")
		in.steps = append(in.steps, inside(tables))
		for _, s := range stmts {
			a.Exec(s)
			in.steps = append(in.steps, inside(tables))
			tick()
		}
		fmt.Sscan(a.One("SELECT txid_current_if_assigned()"), &in.xid)
		if prepared {
			a.Exec("PREPARE TRANSACTION 'rows'")
			tick()
			a.Exec("COMMIT PREPARED 'rows'")
		} else {
			a.Exec("COMMIT")
		}
		tick()
		in.after = snap(tables)
		incidents = append(incidents, in)
	}
	run("delete", []string{"acct", "notes"}, map[string]map[string]int{"acct": {"insert": 1, "delete": count("SELECT count(*) FROM acct WHERE id % 3 = 0")}, "notes": {"delete": count("SELECT count(*) FROM notes WHERE a = 2")}},
		"INSERT INTO acct VALUES (1001, 'late', NULL)", "SAVEPOINT a", "DELETE FROM acct WHERE id % 3 = 0", "RELEASE a",
		"SAVEPOINT b", "DELETE FROM acct WHERE id < 50", "ROLLBACK TO b", "DELETE FROM notes WHERE a = 2")
	run("update", []string{"stock", "notes", "acct"}, map[string]map[string]int{"stock": {"update": 200 + 40}, "notes": {"update": count("SELECT count(*) FROM notes WHERE a = 1")}, "acct": {"update": 3}},
		"UPDATE stock SET qty = qty + 1", "SAVEPOINT s", "UPDATE stock SET id = id + 1000 WHERE id % 5 = 0", "RELEASE s",
		"SAVEPOINT r", "UPDATE stock SET ok = NULL", "ROLLBACK TO r", "UPDATE notes SET b = b || '!' WHERE a = 1",
		"UPDATE acct SET owner = 'changed' WHERE id IN (10, 20, 25)")
	run("insert", []string{"stock", "acct"}, map[string]map[string]int{"stock": {"insert": 30}, "acct": {"insert": 1}},
		"INSERT INTO stock SELECT g, g, g, true FROM generate_series(5001, 5030) g", "SAVEPOINT x",
		"INSERT INTO stock VALUES (9999, 0, 0, false)", "ROLLBACK TO x",
		"INSERT INTO acct VALUES (2001, 'big', (SELECT string_agg(md5((g * 7)::text), '') FROM generate_series(1, 150) g))")
	run("truncate", []string{"hist"}, map[string]map[string]int{"hist": {"delete": 5, "update": 1, "truncate": 75, "insert": 1}},
		"DELETE FROM hist WHERE id <= 5", "SAVEPOINT t", "UPDATE hist SET v = 'touched' WHERE id = 6", "RELEASE t",
		"TRUNCATE hist", "INSERT INTO hist VALUES (1, 'after')")
	run("drop", []string{"doomed"}, map[string]map[string]int{"doomed": {"update": 1, "drop": 50}},
		"UPDATE doomed SET v = 'last' WHERE id = 1", "SAVEPOINT d", "DELETE FROM doomed", "ROLLBACK TO d", "DROP TABLE doomed")
	prepared = true
	run("prepared", []string{"stock", "notes"}, map[string]map[string]int{"stock": {"update": count("SELECT count(*) FROM stock WHERE id <= 10"), "delete": 1}, "notes": {"insert": 1}},
		"UPDATE stock SET price = price * 2 WHERE id <= 10", "SAVEPOINT p", "DELETE FROM stock WHERE id = 11", "RELEASE p",
		"SAVEPOINT q", "DELETE FROM stock", "ROLLBACK TO q", "INSERT INTO notes VALUES (42, 'two-phase')")
	prepared = false
	// a table made by the transaction: read with the catalog as the
	// transaction left it, its TOAST table too
	run("create", []string{"notes", "fresh"}, map[string]map[string]int{"notes": {"insert": 1}, "fresh": {"insert": 11, "update": 1}},
		"CREATE TABLE fresh (id int PRIMARY KEY, v text)", "INSERT INTO fresh SELECT g, 'f' FROM generate_series(1, 10) g",
		"SAVEPOINT c", "UPDATE fresh SET v = 'g' WHERE id = 3", "RELEASE c",
		"INSERT INTO fresh VALUES (11, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 150) g))",
		"INSERT INTO notes VALUES (43, 'beside a new table')")
	incidents[len(incidents)-1].created = "public.fresh"
	// a table made by the transaction, TOASTed rows inserted, then
	// truncated: in place (heap_truncate_one_rel cuts its file and its
	// TOAST table's to nothing), and rows inserted again, their chunks
	// where the cut ones were: the TRUNCATE gives the rows with their
	// values as they were
	run("createtrunc", []string{"notes", "brief"}, map[string]map[string]int{"notes": {"insert": 1}, "brief": {"insert": 4, "truncate": 3}},
		"CREATE TABLE brief (id int PRIMARY KEY, v text)", "ALTER TABLE brief ALTER v SET STORAGE EXTERNAL",
		"INSERT INTO brief SELECT g, (SELECT string_agg(md5(g::text || h::text), '') FROM generate_series(1, 100) h) FROM generate_series(1, 3) g",
		"TRUNCATE brief",
		"INSERT INTO brief VALUES (4, (SELECT string_agg(md5('again' || h::text), '') FROM generate_series(1, 120) h))",
		"INSERT INTO notes VALUES (47, 'beside a TRUNCATE of a new table')")
	incidents[len(incidents)-1].created = "public.brief"
	// the second TRUNCATE cuts the file the first made, in place (a Storage
	// TRUNCATE): it gives the row inserted between them, as the session
	// saw it
	run("retruncate", []string{"hist"}, map[string]map[string]int{"hist": {"truncate": count("SELECT count(*) FROM hist") + 1, "insert": 2}},
		"TRUNCATE hist", "INSERT INTO hist VALUES (2, 'between')", "TRUNCATE hist", "INSERT INTO hist VALUES (3, 'last')")
	// ALTER TABLE in the transaction: columns added (with a default: on
	// 10 a rewrite), renamed and dropped, rows changed before and after;
	// each version read in the columns it follows (old ones from before
	// the transaction as of before it, the others as it left the table),
	// and the undo puts the definition and the rows back
	run("alter", []string{"notes", "shape"}, map[string]map[string]int{"notes": {"insert": 1}, "shape": {"update": 7, "delete": 1, "insert": 1}},
		"UPDATE shape SET qty = qty + 1 WHERE id <= 3", "ALTER TABLE shape ADD COLUMN extra int DEFAULT 7",
		"SAVEPOINT al", "ALTER TABLE shape RENAME COLUMN name TO label", "RELEASE al", "ALTER TABLE shape DROP COLUMN tail",
		"UPDATE shape SET extra = id, qty = 0 WHERE id BETWEEN 2 AND 5", "DELETE FROM shape WHERE id = 10",
		"INSERT INTO shape (id, label, qty) VALUES (100, 'new', 1)", "INSERT INTO notes VALUES (44, 'beside an ALTER')")
	// a rewrite (ALTER COLUMN TYPE): the copies of the rows are no
	// changes; rows changed before it lie in the old file, as of before,
	// those after in the new one, as the transaction left them
	run("retype", []string{"notes", "spare"}, map[string]map[string]int{"notes": {"insert": 1}, "spare": {"update": 4, "delete": 1, "insert": 1}},
		"UPDATE spare SET v = v || '!' WHERE id <= 3", "ALTER TABLE spare ALTER COLUMN id TYPE bigint",
		"UPDATE spare SET v = 'after' WHERE id = 5", "DELETE FROM spare WHERE id = 6", "INSERT INTO spare VALUES (77, 'x')",
		"INSERT INTO notes VALUES (45, 'beside a rewrite')")
	// a table renamed, given a column and losing one, none of its rows
	// written: its rows of before, whose values of the dropped column the
	// undo sets back, are read from a file the transaction's records do
	// not name (a second replay holds it)
	// (and a table without a key given a column, its rows then updated:
	// undone in place, found by all their columns of before)
	run("rename", []string{"notes", "stock", "hist"}, map[string]map[string]int{"notes": {"insert": 1}, "hist": {"update": count("SELECT count(*) FROM hist")}},
		"ALTER TABLE stock RENAME TO stock_old", "ALTER TABLE stock_old ADD COLUMN memo text", "ALTER TABLE stock_old DROP COLUMN ok", "INSERT INTO notes VALUES (46, 'beside a rename')",
		"ALTER TABLE hist ADD COLUMN flag bool DEFAULT true", "UPDATE hist SET v = v || '?', flag = false")
	// no row of stock changed: its rows after are those before (under
	// its new name with other columns)
	incidents[len(incidents)-1].after["stock"] = incidents[len(incidents)-1].before["stock"]
	// a table moved to another schema between changes of its rows: the
	// undo moves it back, in place
	run("schema", []string{"wander"}, map[string]map[string]int{"wander": {"update": 8, "delete": 1, "insert": 1}},
		"UPDATE wander SET v = v || '!' WHERE id <= 3", "ALTER TABLE wander SET SCHEMA moved",
		"UPDATE moved.wander SET n = n + 100 WHERE id BETWEEN 2 AND 6", "DELETE FROM moved.wander WHERE id = 7",
		"INSERT INTO moved.wander VALUES (50, 'moved', 0)")
	// a table rewritten twice (ALTER COLUMN TYPE, then again), its rows
	// changed before, between (in the file the second rewrite replaced,
	// a column renamed there, one row TOASTed: its value in the first
	// rewrite's TOAST table, dropped by the second) and after, and a
	// third rewrite, rows changed and a column added in a savepoint
	// rolled back (none of it a change): each version in the columns
	// the table had at its change; undone as a whole
	run("rewrite2", []string{"twice"}, map[string]map[string]int{"twice": {"update": 8, "delete": 2, "insert": 2}},
		"UPDATE twice SET v = v || '!' WHERE id <= 3", "ALTER TABLE twice ALTER COLUMN n TYPE bigint",
		"UPDATE twice SET n = n + 1 WHERE id BETWEEN 3 AND 5", "ALTER TABLE twice RENAME COLUMN v TO w",
		"DELETE FROM twice WHERE id = 6", "INSERT INTO twice VALUES (50, 'mid', 5)",
		"SAVEPOINT r", "UPDATE twice SET n = 0", "ROLLBACK TO r",
		"SAVEPOINT r2", "ALTER TABLE twice ALTER COLUMN n TYPE numeric", "UPDATE twice SET n = n / 3", "ALTER TABLE twice ADD COLUMN q int",
		"ROLLBACK TO r2",
		"ALTER TABLE twice ALTER COLUMN n TYPE text", "UPDATE twice SET w = 'after' WHERE id IN (2, 50)",
		"DELETE FROM twice WHERE id = 4", "INSERT INTO twice VALUES (51, 'last', 'x')")
	// altered, then truncated: cut given a column (in place) and its
	// rows changed before and after: the TRUNCATE gives the rows as they
	// were then, each in its columns then. cut2 rewritten, a row of the
	// rewrite's file changed, then truncated: on 10 to 12 the TRUNCATE
	// gives the table a new file; from 13 it cuts that file (made by the
	// transaction) in place (heap_truncate_one_rel): either way its rows
	// are those of the rewrite's file then, the update among them
	run("altertrunc", []string{"cut", "cut2"}, map[string]map[string]int{"cut": {"update": 4, "delete": 1, "truncate": 11, "insert": 1}, "cut2": {"update": 1, "truncate": 6, "insert": 1}},
		"UPDATE cut SET v = 'u' WHERE id = 1", "ALTER TABLE cut ADD COLUMN extra int", "UPDATE cut SET extra = id WHERE id <= 3",
		"DELETE FROM cut WHERE id = 12", "ALTER TABLE cut2 ALTER COLUMN id TYPE bigint", "UPDATE cut2 SET v = 'x' WHERE id = 2",
		"TRUNCATE cut, cut2", "INSERT INTO cut VALUES (1, 'again', 5)", "INSERT INTO cut2 VALUES (7, 'y')")
	// truncated, then altered: rows inserted after the TRUNCATE copied by
	// a rewrite, one updated, then a column added with a default (on 10
	// a second rewrite) and a row inserted
	run("truncalter", []string{"recut"}, map[string]map[string]int{"recut": {"delete": 1, "truncate": 8, "insert": 3, "update": 1}},
		"DELETE FROM recut WHERE id = 1", "TRUNCATE recut", "INSERT INTO recut VALUES (1, 'a'), (2, 'b')",
		"ALTER TABLE recut ALTER COLUMN id TYPE bigint", "UPDATE recut SET v = 'c' WHERE id = 2",
		"ALTER TABLE recut ADD COLUMN z text DEFAULT 'zz'", "INSERT INTO recut VALUES (3, 'd', 'e')")
	// altered, then dropped: gone rewritten (ALTER COLUMN TYPE) and given
	// a column, rows changed before, between and after; gone2 given a
	// column with a default (on 10 a rewrite) and rows updated. The
	// DROPs give the rows then, in the columns then; the undo creates
	// each table again as it was before, with its rows of before
	run("altdrop", []string{"gone", "gone2"}, map[string]map[string]int{"gone": {"update": 2, "delete": 1, "drop": 9}, "gone2": {"update": 2, "drop": 8}},
		"UPDATE gone SET v = 'u' WHERE id = 1", "ALTER TABLE gone ALTER COLUMN n TYPE text", "UPDATE gone SET n = 'x' WHERE id = 2",
		"ALTER TABLE gone ADD COLUMN z int", "DELETE FROM gone WHERE id = 3", "DROP TABLE gone",
		"ALTER TABLE gone2 ADD COLUMN z int DEFAULT 4", "UPDATE gone2 SET v = 'w' WHERE id <= 2", "DROP TABLE gone2")
	incidents[len(incidents)-1].loose = map[string]bool{"gone": true, "gone2": true}
	// CLUSTER (a rewrite keeping the rows' xmin: their copies are pages,
	// not inserts) between changes, then DROP TABLE: the DROP gives the
	// rows of the new file then. cl2 clustered, a row changed, then
	// truncated: as cut2 above (from 13 the CLUSTER's file cut in place:
	// the rows of its pages as they were then)
	run("cluster", []string{"cl", "cl2"}, map[string]map[string]int{"cl": {"update": 2, "delete": 1, "drop": 11}, "cl2": {"update": 2, "truncate": 12, "insert": 1}},
		"UPDATE cl SET v = 'a' WHERE id = 1", "CLUSTER cl USING cl_pkey", "UPDATE cl SET v = 'b' WHERE id = 2",
		"DELETE FROM cl WHERE id = 3", "DROP TABLE cl",
		"UPDATE cl2 SET v = 'a' WHERE id = 1", "CLUSTER cl2 USING cl2_pkey", "UPDATE cl2 SET v = 'b' WHERE id = 2",
		"TRUNCATE cl2", "INSERT INTO cl2 VALUES (100, 'n')")
	// ALTER TABLE SET TABLESPACE: the file copied block by block (XLOG
	// FPI records, the rows' xmin kept) into a new file in another
	// tablespace, rows changed before and after
	run("tablespace", []string{"moveme"}, map[string]map[string]int{"moveme": {"update": 3, "insert": 1, "delete": 2}},
		"UPDATE moveme SET v = 'a' WHERE id = 1", "DELETE FROM moveme WHERE id = 9", "ALTER TABLE moveme SET TABLESPACE elsewhere",
		"UPDATE moveme SET v = 'b' WHERE id IN (1, 2)", "INSERT INTO moveme VALUES (100, 'n')", "DELETE FROM moveme WHERE id = 3")
	// ALTER TABLE SET UNLOGGED (a rewrite into a file whose changes are
	// not WAL-logged, the copies neither) between changes of the rows,
	// changes while unlogged, SET LOGGED (a rewrite whose copies are
	// logged inserts) and a DELETE after: ul's changes while unlogged
	// are counted, by key, from its rows at SET UNLOGGED and the copies
	// of SET LOGGED; ul2, left unlogged, has every change after SET
	// UNLOGGED missing. The logged changes are given, each version as
	// the session saw it
	run("unlogged", []string{"ul", "ul2"}, map[string]map[string]int{"ul": {"update": 2, "delete": 1}, "ul2": {"update": 1}},
		"UPDATE ul SET v = 'a' WHERE id = 1", "ALTER TABLE ul SET UNLOGGED", "UPDATE ul SET v = 'b' WHERE id IN (2, 6)",
		"DELETE FROM ul WHERE id = 3", "INSERT INTO ul VALUES (100, 'n')", "ALTER TABLE ul SET LOGGED",
		"UPDATE ul SET v = 'c' WHERE id = 4", "DELETE FROM ul WHERE id = 5",
		"UPDATE ul2 SET v = 'a' WHERE id = 1", "ALTER TABLE ul2 SET UNLOGGED", "UPDATE ul2 SET v = 'b' WHERE id = 2",
		"DELETE FROM ul2 WHERE id = 3", "UPDATE ul3 SET v = 'y' WHERE id IN (1, 2)")
	incidents[len(incidents)-1].unlogged = map[string]bool{"ul": true, "ul2": true}
	incidents[len(incidents)-1].missing = "public.ul update 2, public.ul delete 1, public.ul insert 1, public.ul2 update every row"
	incidents[len(incidents)-1].skipped = []string{"table public.ul: unlogged from", "table public.ul2: made unlogged at"}
	switchWAL := "SELECT pg_switch_wal()"
	if cfg.major < 10 {
		switchWAL = "SELECT pg_switch_xlog()"
	}
	p.Query(t, switchWAL)
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
	changes, copies, stepChecked := 0, 0, 0
	altered := map[string]bool{}
	scripts := make([]string, len(incidents))
	for k, in := range incidents {
		res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(in.xid)})
		if err != nil {
			t.Fatalf("%s (xid %d): %v", in.name, in.xid, err)
		}
		st := map[string]map[string]int{}
		for _, tab := range in.tables {
			st[tab] = map[string]int{}
			for _, l := range in.before[tab] {
				st[tab][l]++
			}
		}
		var f *rows.Format
		if len(res.Relations) > 0 {
			f = serverFormat(res.Relations[0], b.MajorVersion())
		}
		got := map[string]map[string]int{}
		// a table the transaction altered: the versions in the columns of
		// before come from the rows before it, those in the columns it
		// left from its earlier changes (or a rewrite's copies), and what
		// is left of them is among its rows after it
		live := map[string]map[string]int{}
		// every version in the columns the table had when its change was
		// made is the table's row then, as the transaction saw it before
		// the statement (old) or after it (new): a rewrite's copies and
		// the versions in a file a later rewrite replaced included
		type stepRole struct {
			i   int
			old bool
		}
		left := map[stepRole]map[string]map[string]int{}
		seen := func(c *rows.Change, row *rows.Row, i int, old bool) bool {
			tab := c.Rel.Class.Name
			if i < 0 || i >= len(in.steps) || layoutSig(c.Rel, row) != in.steps[i].cols[tab] {
				return false
			}
			k := stepRole{i, old}
			if left[k] == nil {
				left[k] = map[string]map[string]int{}
			}
			if left[k][tab] == nil {
				left[k][tab] = map[string]int{}
				for _, r := range in.steps[i].rows[tab] {
					left[k][tab][r]++
				}
			}
			j, err := f.AppendRowJSON(nil, c.Rel, row)
			if err != nil {
				t.Fatal(err)
			}
			if left[k][tab][string(j)] == 0 {
				t.Errorf("%s: %s at %s: %s row %s is not the table's as the transaction saw it then (columns %s)", in.name, c.Op, c.LSN, map[bool]string{true: "old", false: "new"}[old], j, in.steps[i].cols[tab])
			}
			left[k][tab][string(j)]--
			stepChecked++
			return true
		}
		for i := range res.Changes {
			c := &res.Changes[i]
			tab := c.Rel.Class.Name
			if c.Err != nil || st[tab] == nil {
				t.Fatalf("%s: change %d of %s: %v", in.name, i, tab, c.Err)
			}
			if got[tab] == nil {
				got[tab] = map[string]int{}
			}
			got[tab][string(c.Op)]++
			stmt := 1
			for stmt < len(in.steps) && c.LSN >= in.steps[stmt].lsn {
				stmt++
			}
			if stmt == len(in.steps) {
				t.Errorf("%s: %s at %s is after the transaction's last statement", in.name, c.Op, c.LSN)
			}
			oldSeen := c.Old != nil && seen(c, c.Old, stmt-1, true)
			newSeen := c.New != nil && seen(c, c.New, stmt, false)
			if in.loose[tab] {
				if c.Old != nil && !oldSeen {
					old, err := f.AppendRowJSON(nil, c.Rel, c.Old)
					if err != nil {
						t.Fatal(err)
					}
					if st[tab][string(old)] == 0 {
						t.Errorf("%s: %s at %s: old row %s is neither the table's then nor before the transaction", in.name, c.Op, c.LSN, old)
					}
					st[tab][string(old)]--
				}
				if c.New != nil && !newSeen {
					t.Errorf("%s: %s at %s: a new version of %s is not in the table's columns then (%s)", in.name, c.Op, c.LSN, tab, in.steps[stmt].cols[tab])
				}
				changes++
				continue
			}
			if c.Rel.Before == nil && (c.Old != nil && !oldSeen || c.New != nil && !newSeen) {
				t.Errorf("%s: %s at %s: the columns of a version of %s are not the table's then (%s)", in.name, c.Op, c.LSN, tab, in.steps[stmt-1].cols[tab])
			}
			if c.Rel.Before != nil {
				altered[tab] = true
				if live[tab] == nil {
					live[tab] = map[string]int{}
				}
				if c.Old != nil {
					old, err := f.AppendRowJSON(nil, c.Rel, c.Old)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case c.Old.Rel == c.Rel.Before && st[tab][string(old)] > 0:
						st[tab][string(old)]--
					case c.Old.Rel == nil && live[tab][string(old)] > 0:
						live[tab][string(old)]--
					case c.Old.Rel != c.Rel.Before && oldSeen:
						// a rewrite's copy, or a version in a file a later
						// rewrite replaced: the table's row then
						copies++
					default:
						t.Errorf("%s: %s at %s: old row %s (columns of before: %v) is not the table's then", in.name, c.Op, c.LSN, old, c.Old.Rel == c.Rel.Before)
					}
				}
				if c.New != nil {
					n, err := f.AppendRowJSON(nil, c.Rel, c.New)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case c.New.Rel == c.Rel.Before:
						st[tab][string(n)]++ // written before a rewrite, in the old file
					case c.New.Rel == nil:
						live[tab][string(n)]++
					case !newSeen:
						t.Errorf("%s: %s at %s: new row %s in columns that are neither the table's then, of before nor as the transaction left it", in.name, c.Op, c.LSN, n)
					}
				}
				changes++
				continue
			}
			if c.Old != nil {
				old, err := f.AppendRowJSON(nil, c.Rel, c.Old)
				if err != nil {
					t.Fatal(err)
				}
				if st[tab][string(old)] == 0 {
					t.Errorf("%s: %s at %s: old row %s is not the table's then", in.name, c.Op, c.LSN, old)
				}
				st[tab][string(old)]--
			}
			if c.New != nil {
				n, err := f.AppendRowJSON(nil, c.Rel, c.New)
				if err != nil {
					t.Fatal(err)
				}
				st[tab][string(n)]++
			}
			changes++
		}
		if len(res.Relations) > 0 {
			// the script run is the one written from the changes read
			// back from the replay's file (Open, every change spilled):
			// the same as from the changes in memory
			var sb, streamed strings.Builder
			if err := undoFormat(res.Relations[0], b.MajorVersion()).WriteUndo(&sb, res); err != nil {
				t.Fatalf("%s: undo: %v", in.name, err)
			}
			sres, err := rows.Open(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(in.xid), ChangeMemoryBytes: 1})
			if err != nil {
				t.Fatalf("%s: Open: %v", in.name, err)
			}
			if err := undoFormat(sres.Relations[0], b.MajorVersion()).WriteUndo(&streamed, sres); err != nil {
				t.Fatalf("%s: undo (streamed): %v", in.name, err)
			}
			sres.Close()
			if streamed.String() != sb.String() {
				t.Errorf("%s: the undo script written from the spilled changes differs from the one from memory:\n%s\n----\n%s", in.name, streamed.String(), sb.String())
			}
			scripts[k] = streamed.String()
		}
		if g := strings.Join(res.Created, ","); g != in.created {
			t.Errorf("%s: created %q, want %q", in.name, g, in.created)
		}
		if len(res.Skipped) != len(in.skipped) {
			t.Errorf("%s: skipped %q, want %q", in.name, res.Skipped, in.skipped)
		}
		for i, s := range res.Skipped {
			if i < len(in.skipped) && !strings.Contains(s, in.skipped[i]) {
				t.Errorf("%s: skipped %q, want %q", in.name, s, in.skipped[i])
			}
		}
		var missing []string
		for _, m := range res.Missing {
			if m.Rows == 0 {
				missing = append(missing, fmt.Sprintf("%s %s every row", m.Relation, m.Op))
				continue
			}
			missing = append(missing, fmt.Sprintf("%s %s %d", m.Relation, m.Op, m.Rows))
			if !strings.Contains(m.Reason, "unlogged") {
				t.Errorf("%s: missing %d %s rows of %s: %s", in.name, m.Rows, m.Op, m.Relation, m.Reason)
			}
		}
		if g := strings.Join(missing, ", "); g != in.missing {
			t.Errorf("%s: missing %q, want %q", in.name, g, in.missing)
		}
		// ul3, unlogged from its CREATE: no change of it is in the WAL
		// (the unlogged incident updates two rows), every transaction
		// of the database says so; with --relation ul3, nothing else
		if g := strings.Join(res.UnloggedTables, ", "); g != "public.ul3" {
			t.Errorf("%s: unlogged tables %q, want public.ul3", in.name, g)
		}
		if in.name == "unlogged" {
			ures, err := rows.Open(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: xlog.XID(in.xid), Relation: "ul3"})
			if err != nil {
				t.Fatalf("%s: --relation ul3: %v", in.name, err)
			}
			n := 0
			for _, err := range ures.All() {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if g := strings.Join(ures.UnloggedTables, ", "); g != "public.ul3" || n != 0 || len(ures.Relations) != 0 {
				t.Errorf("%s: --relation ul3: unlogged %q, %d changes, %d relations; want public.ul3 and none", in.name, g, n, len(ures.Relations))
			}
			ures.Close()
		}
		// the rows a table's changes while unlogged touched: those of the
		// session's table after SET UNLOGGED not there after SET LOGGED
		// (Gone), and the other way round (New)
		for _, u := range res.Unlogged {
			tab := u.Rel.Class.Name
			if u.From == 0 || u.To == 0 {
				if u.Gone != nil || u.New != nil {
					t.Errorf("%s: %s unlogged from %s to %s: rows given", in.name, tab, u.From, u.To)
				}
				continue
			}
			at := func(lsn xlog.LSN) map[string]int {
				i := 0
				for i < len(in.steps)-1 && in.steps[i].lsn <= lsn {
					i++
				}
				m := map[string]int{}
				for _, r := range in.steps[i].rows[tab] {
					m[r]++
				}
				return m
			}
			then, end := at(u.From), at(u.To)
			for _, c := range []struct {
				what       string
				rows       []*rows.Row
				from, less map[string]int
			}{{"gone", u.Gone, then, end}, {"new", u.New, end, then}} {
				want := map[string]int{}
				for r, n := range c.from {
					if d := n - c.less[r]; d > 0 {
						want[r] = d
					}
				}
				got := map[string]int{}
				for _, r := range c.rows {
					j, err := f.AppendRowJSON(nil, u.Rel, r)
					if err != nil {
						t.Fatal(err)
					}
					got[string(j)]++
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || len(want) == 0 {
					t.Errorf("%s: %s rows %s while unlogged: %v, the session's %v", in.name, tab, c.what, got, want)
				}
				stepChecked += len(c.rows)
			}
		}
		res.Close()
		for tab, l := range live {
			after := map[string]int{}
			for _, r := range in.after[tab] {
				after[r]++
			}
			for row, n := range l {
				if n > after[row] {
					t.Errorf("%s: %s: %d of row %s given by the changes and not changed again, the server has %d", in.name, tab, n, row, after[row])
				}
			}
		}
		for _, tab := range in.tables {
			if live[tab] != nil || in.loose[tab] || in.unlogged[tab] {
				continue
			}
			after := map[string]int{}
			for _, l := range in.after[tab] {
				after[l]++
			}
			for row, n := range st[tab] {
				if n != after[row] {
					t.Errorf("%s: %s: %d of row %s after the changes, the server has %d", in.name, tab, n, row, after[row])
				}
			}
			for row := range after {
				if st[tab][row] == 0 {
					t.Errorf("%s: %s: the server's row %s is not there after the changes", in.name, tab, row)
				}
			}
		}
		if g, w := fmt.Sprint(got), fmt.Sprint(in.ops); g != w {
			t.Errorf("%s: changes per table and operation %s, the server's statements %s", in.name, g, w)
		}
	}
	if changes == 0 {
		t.Fatal("nothing compared")
	}
	// The undo scripts, run on the primary from the last transaction to the
	// first, bring each transaction's tables back to their rows before it.
	p.Start(t)
	undone := 0
	for k := len(incidents) - 1; k >= 0; k-- {
		in := incidents[k]
		path := filepath.Join(work, in.name+".sql")
		if err := os.WriteFile(path, []byte(scripts[k]), 0o644); err != nil {
			t.Fatal(err)
		}
		pgtest.ChownPG(t, path)
		if out, err := pgtest.AsPostgres(p.PsqlLine("postgres") + " -f " + pgtest.Shq(path)).CombinedOutput(); err != nil {
			t.Fatalf("%s: undo script: %v\n%s", in.name, err, out)
		}
		now, nowDefs := snap(in.tables), defs(in.tables)
		for _, tab := range in.tables {
			if g, w := strings.Join(nowDefs[tab], ", "), strings.Join(in.defs[tab], ", "); g != w {
				t.Errorf("%s: %s after the undo script has the columns %s, before the transaction %s", in.name, tab, g, w)
			}
			if in.unlogged[tab] {
				continue // its changes while unlogged are not undone
			}
			if !sameRows(now[tab], in.before[tab]) {
				t.Errorf("%s: %s after the undo script: %d rows, %d before the transaction, or they differ", in.name, tab, len(now[tab]), len(in.before[tab]))
				continue
			}
			undone++
		}
	}
	p.Stop("fast")
	if g, w := fmt.Sprint(altered), "map[cut:true cut2:true hist:true recut:true shape:true spare:true twice:true wander:true]"; g != w {
		t.Errorf("tables whose changes were read as altered: %v, want %v", g, w)
	}
	t.Logf("PostgreSQL %d (%s): %d changes of %d transactions agree with the server's rows (%d row versions equal to the table's as the transaction saw it at their statement, %d of them old versions a rewrite copied); %d tables back to their rows and columns by the undo scripts", cfg.major, strings.ReplaceAll(strings.TrimSpace(cfg.conf), "\n", ", "), changes, len(incidents), stepChecked, copies, undone)
}

// serverFormat prints values as a server with initdb's settings does.
func serverFormat(rel *rows.Relation, major int) *rows.Format {
	st := typeout.DefaultSettings()
	f := &typeout.Formatter{Settings: st, Types: rel.Catalog, Major: major}
	return &rows.Format{Text: f.Append, ISOText: f.Append}
}

// undoFormat writes literals as walscope rows --format sql does.
func undoFormat(rel *rows.Relation, major int) *rows.Format {
	st := typeout.DefaultSettings()
	st.Set("DateStyle", "ISO, MDY")
	st.Set("IntervalStyle", "postgres")
	st.Set("extra_float_digits", "1")
	f := &typeout.Formatter{Settings: st, Types: rel.Catalog, Major: major}
	return &rows.Format{Text: f.Append, Literal: typeout.AppendLiteral,
		Settings: "SET LOCAL DateStyle = 'ISO, MDY';\nSET LOCAL IntervalStyle = 'postgres';\nSET LOCAL extra_float_digits = 1;\n"}
}

// layoutSig is the columns a version of rel follows (its own, Row.Rel),
// as step's query lists them: name, type oid and typmod.
func layoutSig(rel *rows.Relation, row *rows.Row) string {
	if row.Rel != nil {
		rel = row.Rel
	}
	var cols []string
	for _, c := range rel.Table.Columns {
		cols = append(cols, fmt.Sprintf("%s %d %d", c.Attribute.Name, c.Attribute.TypID, c.Attribute.TypMod))
	}
	return strings.Join(cols, ", ")
}

// sameRows compares two lists of rows as multisets.
func sameRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, r := range a {
		n[r]++
	}
	for _, r := range b {
		if n[r]--; n[r] < 0 {
			return false
		}
	}
	return true
}
