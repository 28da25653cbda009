package duckdbtest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// readmeQueries returns the portable queries of docs/datasets.md's
// Querying section (README's Export section prints some of them; the docs
// test checks they are the same): its sql blocks that are one SELECT
// (after a comment line naming it), by that comment, and the page's text.
func readmeQueries(t *testing.T) (names []string, queries map[string]string, readme string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "datasets.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme = string(b)
	i := strings.Index(readme, "\n## Querying\n")
	if i < 0 {
		t.Fatal("docs/datasets.md has no Querying section")
	}
	sec := readme[i:]
	if j := strings.Index(sec[1:], "\n## "); j >= 0 {
		sec = sec[:j+1]
	}
	queries = map[string]string{}
	for _, block := range strings.Split(sec, "```sql\n")[1:] {
		block = block[:strings.Index(block, "```")]
		comment, q, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(comment, "-- ") || !strings.HasPrefix(q, "SELECT") {
			continue
		}
		name := strings.TrimPrefix(comment, "-- ")
		names = append(names, name)
		queries[name] = strings.TrimSpace(q)
	}
	return names, queries, readme
}

// duckRows runs q over views of the export in dir, as README's DuckDB
// setup makes them, and returns its rows as strings (nil for null).
func duckRows(t *testing.T, db *sql.DB, q string) [][]*string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, q)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]*string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			var s string
			switch x := v.(type) {
			case nil:
				continue
			case *big.Int:
				s = x.String()
			case []byte:
				s = string(x)
			default:
				s = fmt.Sprint(x)
			}
			row[i] = &s
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func duckViews(t *testing.T, out string) *sql.DB {
	t.Helper()
	db := openDB(t)
	for _, table := range []string{"records", "checkpoints", "blocks"} {
		if _, err := db.Exec(fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet('%s', hive_partitioning = true)", table, filepath.Join(out, table, "**", "*.parquet"))); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// polarsRows runs the queries with nodejs-polars' SQL (sql.cjs).
func polarsRows(t *testing.T, dir, out string, qs []string) [][][]*string {
	t.Helper()
	qf := filepath.Join(t.TempDir(), "queries.json")
	b, _ := json.Marshal(qs)
	if err := os.WriteFile(qf, b, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "sql.cjs"), out, qf)
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("polars: %v", err)
	}
	var rows [][][]*string
	if err := json.Unmarshal(res, &rows); err != nil {
		t.Fatalf("polars: %v\n%s", err, res)
	}
	return rows
}

func show(rows [][]*string) string {
	var b strings.Builder
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				b.WriteString(" | ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(*v)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestReadmeQueries runs docs/datasets.md's queries (README's Export
// section prints the first), as printed there, with
// DuckDB and with polars over real exports, and checks that both engines
// give the same rows; that the per-resource-manager query gives
// `walscope stats`; that the labelled runs give the table the page prints;
// and that docs/schema.md's DuckDB conversions between an LSN and its text
// twin hold on every record.
func TestReadmeQueries(t *testing.T) {
	dir := readersDir(t)
	names, queries, readme := readmeQueries(t)
	if len(names) < 4 {
		t.Fatalf("docs/datasets.md's Querying section has %d portable queries: %v", len(names), names)
	}
	// One run (the fixture), and two labelled runs (as TestLabelledRuns).
	fx := extract(t, "pg15-replica-lz4")
	one := filepath.Join(t.TempDir(), "one")
	run(t, "export", "--out", one, "--tables", "records,checkpoints,blocks", filepath.Join(fx, "archive"))
	two := filepath.Join(t.TempDir(), "two")
	for _, label := range []string{"replica", "logical"} {
		fixture := "whatif/level-" + label
		d := extract(t, fixture)
		_, file, _, _ := runtime.Caller(0)
		rj, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "fixtures", fixture, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Start string `json:"run_start_lsn"`
			End   string `json:"run_end_lsn"`
		}
		if err := json.Unmarshal(rj, &r); err != nil {
			t.Fatal(err)
		}
		run(t, "export", "--out", two, "--label", label, "--tables", "records,checkpoints,blocks", "-s", r.Start, "-e", r.End, filepath.Join(d, "archive"))
	}
	for _, ds := range []struct {
		out   string
		which func(name string) bool
	}{
		{one, func(n string) bool { return !strings.Contains(n, "--label") }},
		{two, func(n string) bool { return strings.Contains(n, "--label") }},
	} {
		var qs, qn []string
		for _, n := range names {
			if ds.which(n) {
				qs, qn = append(qs, queries[n]), append(qn, n)
			}
		}
		db := duckViews(t, ds.out)
		pol := polarsRows(t, dir, ds.out, qs)
		for i, q := range qs {
			duck := duckRows(t, db, q)
			if len(duck) == 0 {
				t.Errorf("%s: no rows", qn[i])
			}
			if show(duck) != show(pol[i]) {
				t.Errorf("%s: DuckDB and polars differ\nDuckDB:\n%spolars:\n%s", qn[i], show(duck), show(pol[i]))
			} else {
				t.Logf("%s: DuckDB and polars agree on %d rows:\n%s", qn[i], len(duck), show(duck))
			}
			switch {
			case strings.HasPrefix(qn[i], "per resource manager"):
				want := walscopeStats(t, "rmgr", filepath.Join(fx, "archive"))
				for _, r := range duck {
					w := want[*r[0]]
					got := fmt.Sprintf("%s %s %s %s", *r[1], *r[2], *r[3], *r[4])
					if got != fmt.Sprintf("%d %d %d %d", w.N, w.RecLen, w.FPI, w.Combined) {
						t.Errorf("%s %s: %s; walscope stats %+v", qn[i], *r[0], got, w)
					}
				}
				if len(duck) != len(want) {
					t.Errorf("%s: %d rows, walscope stats %d", qn[i], len(duck), len(want))
				}
			case strings.HasPrefix(qn[i], "two runs side by side"):
				// docs/datasets.md prints this query's result: every row of it.
				for _, r := range duck {
					line := fmt.Sprintf("%s %s %s %+d", *r[0], *r[1], *r[2], atoi(*r[3]))
					if !strings.Contains(squeeze(readme), "\n"+line+"\n") {
						t.Errorf("docs/datasets.md does not print the row %q of %s", line, qn[i])
					}
				}
			case strings.HasPrefix(qn[i], "per relation"):
				if *duck[0][1] == "" || duck[0][0] == nil {
					t.Errorf("%s: the first relation is unnamed", qn[i])
				}
			}
		}
	}
	// docs/schema.md's conversions, both ways, on every record.
	db := duckViews(t, one)
	toText := "printf('%X/%X', lsn >> 32, lsn & 4294967295)"
	toNum := "('0x' || split_part(lsn_text, '/', 1))::BIGINT << 32 | ('0x' || split_part(lsn_text, '/', 2))::BIGINT"
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), toText) || !strings.Contains(strings.ReplaceAll(string(doc), `\|`, "|"), strings.ReplaceAll(toNum, "lsn_text", "t")) {
		t.Errorf("docs/schema.md does not give the conversions tested here")
	}
	n := scalar[int64](t, db, "SELECT count(*) FROM records")
	bad := scalar[int64](t, db, "SELECT count(*) FROM records WHERE "+toText+" <> lsn_text OR ("+toNum+") <> lsn")
	if bad != 0 || n == 0 {
		t.Errorf("%d of %d records: the LSN and its text twin do not convert into each other", bad, n)
	}
	// The LSNs without a twin (end_lsn, prev_lsn, checkpoint_cycle) through
	// the same conversion: the next record's, the previous one's and the
	// cycle's redo point's text (the stream is one timeline's, in order).
	// (where the neighbour is at that LSN: not after a segment switch)
	for _, c := range []struct{ col, twin, from string }{
		{"end_lsn", "next", "lead(lsn"},
		{"prev_lsn", "prev", "lag(lsn"},
	} {
		conv := strings.ReplaceAll(toText, "lsn", c.col)
		q := fmt.Sprintf("SELECT count(*) FILTER (WHERE %s <> %s_text), count(*) FROM (SELECT *, %s) OVER w AS %s, %s_text) OVER w AS %s_text FROM records WINDOW w AS (ORDER BY lsn)) WHERE %s = %s",
			conv, c.twin, c.from, c.twin, c.from, c.twin, c.col, c.twin)
		var bad, n int64
		if err := db.QueryRow(q).Scan(&bad, &n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if bad != 0 || n < 80000 {
			t.Errorf("%s: %d of %d records' text is not the neighbouring record's lsn_text", c.col, bad, n)
		}
	}
	cyc := strings.ReplaceAll(toText, "lsn", "r.checkpoint_cycle")
	if bad := scalar[int64](t, db, "SELECT count(*) FROM records r JOIN checkpoints c ON r.checkpoint_cycle = c.redo_lsn WHERE "+cyc+" <> c.redo_lsn_text"); bad != 0 {
		t.Errorf("%d records: checkpoint_cycle as text is not its cycle's redo_lsn_text", bad)
	}
}

func atoi(s string) int64 {
	var v int64
	fmt.Sscan(s, &v)
	return v
}

// squeeze folds runs of spaces into one.
func squeeze(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

// TestRelationNames: records and blocks name each relation file as
// `walscope stats --by relation` does (from the WAL, and from --catalog
// first): every file stats names has that name in both tables, and the
// records it counts for the file's main fork are the records whose first
// block reference is that file.
func TestRelationNames(t *testing.T) {
	fx := extract(t, "pg15-replica-lz4")
	arch := filepath.Join(fx, "archive")
	var rels []struct {
		Fork     string `json:"fork"`
		Name     string `json:"name"`
		Relation string `json:"relation"`
		Records  int64  `json:"records"`
	}
	if err := json.Unmarshal([]byte(run(t, "stats", "--by", "relation", "--format", "json", arch)), &rels); err != nil {
		t.Fatal(err)
	}
	// A catalog naming one file otherwise: it wins, as in stats.
	catalog := filepath.Join(t.TempDir(), "catalog.csv")
	var renamed string
	for _, r := range rels {
		if r.Name != "" && r.Fork == "main" && strings.HasPrefix(r.Name, "public.") {
			renamed = r.Relation
			break
		}
	}
	var spc, db, rel int64
	fmt.Sscanf(renamed, "%d/%d/%d", &spc, &db, &rel)
	if err := os.WriteFile(catalog, []byte(fmt.Sprintf("database,datname,relfilenode,nspname,relname\n%d,catalogdb,%d,elsewhere,renamed\n", db, rel)), 0o666); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	run(t, "export", "--out", out, "--tables", "records,blocks,checkpoints", "--catalog", catalog, arch)
	db0 := duckViews(t, out)
	named := 0
	for _, r := range rels {
		if r.Name == "" || !strings.Contains(r.Relation, "/") {
			continue
		}
		// stats notes a file that replaced another (a rewrite: VACUUM FULL,
		// CLUSTER, TRUNCATE) and names it after the file it replaced, which
		// the export does not follow: only the name is compared. Here the
		// WAL names every such file itself (vt's copy by ALTER TABLE SET
		// TABLESPACE after VACUUM FULL pg_class included).
		want, _, _ := strings.Cut(r.Name, " (replaced ")
		if r.Relation == renamed {
			want = "elsewhere.renamed"
		}
		fmt.Sscanf(r.Relation, "%d/%d/%d", &spc, &db, &rel)
		where := fmt.Sprintf("tablespace = %d AND database = %d AND relfilenode = %d", spc, db, rel)
		for _, table := range []string{"records", "blocks"} {
			got := scalar[string](t, db0, fmt.Sprintf("SELECT coalesce(string_agg(DISTINCT coalesce(schema_name, '?') || '.' || coalesce(relation_name, '?'), ','), '') FROM %s WHERE %s", table, where))
			switch {
			case got == want, table == "records" && got == "":
			default:
				t.Errorf("%s %s: named %q, stats --by relation %q", table, r.Relation, got, r.Name)
			}
		}
		if r.Fork == "main" {
			// records whose first block is this file's main fork (records has no fork column: count those of every fork)
			n := scalar[int64](t, db0, "SELECT count(*) FROM records WHERE "+where)
			if n < r.Records {
				t.Errorf("records of %s: %d, stats --by relation %d", r.Relation, n, r.Records)
			}
		}
		named++
	}
	if named < 5 || renamed == "" {
		t.Errorf("stats --by relation named %d files", named)
	}
	// The catalog's datname names its database (over the WAL's name);
	// shared relations (database 0) have none.
	for _, table := range []string{"records", "blocks"} {
		if bad := scalar[int64](t, db0, fmt.Sprintf("SELECT count(*) FROM %s WHERE database = %d AND database_name IS DISTINCT FROM 'catalogdb' OR database = 0 AND database_name IS NOT NULL", table, db)); bad != 0 {
			t.Errorf("%s: %d rows whose database_name is not the catalog's", table, bad)
		}
	}
}

// TestDatabaseNames: over real PostgreSQL 15 WAL (fixtures/versions/pg15,
// made by fixtures/versions.sh: initdb's postgres, then `create database
// fxdb1 strategy wal_log`, whose files the WAL writes, and fxdb2 with
// file_copy), records and blocks name each database from the pg_database
// tuples the WAL carries, as the server named them: every row of a
// database has the name, and database 0 (shared catalogs) none.
func TestDatabaseNames(t *testing.T) {
	fx := extract(t, "versions/pg15")
	out := filepath.Join(t.TempDir(), "out")
	run(t, "export", "--out", out, "--tables", "records,blocks,checkpoints", filepath.Join(fx, "archive"))
	db0 := duckViews(t, out)
	// the databases the oracle (pg_waldump 15) shows created, in order
	ref, err := os.ReadFile(filepath.Join(fx, "ref", "records-00000001.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var oids []int64
	for _, l := range strings.Split(string(ref), "\n") {
		if i := strings.Index(l, "desc: CREATE_"); i >= 0 && strings.HasPrefix(l, "rmgr: Database") {
			f := strings.Fields(l[i:])
			var spc, oid int64
			fmt.Sscanf(f[len(f)-1], "%d/%d", &spc, &oid)
			oids = append(oids, oid)
		}
	}
	want := map[int64]string{}
	for i, name := range []string{"postgres", "fxdb1", "fxdb2"} {
		if len(oids) < 3 {
			t.Fatalf("the oracle shows databases %v created, the script 3", oids)
		}
		want[oids[len(oids)-3+i]] = name
	}
	written := 0
	for _, table := range []string{"records", "blocks"} {
		rows, err := db0.Query("SELECT database, coalesce(database_name, '?'), count(*) FROM " + table + " WHERE database IS NOT NULL GROUP BY ALL")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var oid, n int64
			var name string
			if err := rows.Scan(&oid, &name, &n); err != nil {
				t.Fatal(err)
			}
			switch w, ok := want[oid]; {
			case oid == 0 && name == "?":
			case ok && name == w:
				written++
			default:
				t.Errorf("%s: %d rows of database %d named %q, the server's name %q", table, n, oid, name, w)
			}
		}
		rows.Close()
	}
	if written < 4 { // postgres and fxdb1 (WAL_LOG writes its files) in both tables
		t.Errorf("%d (table, database) pairs named, want 4", written)
	}
}
