package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
)

// TestTableAgainstRecovery: `walscope table` of fixtures/pages' tables at
// each of its seven restore points, in the copy, csv and jsonl formats,
// equals byte for byte what the real standby restored there printed for
// `COPY t TO STDOUT`, `COPY t TO STDOUT (FORMAT csv, HEADER)` and
// `SELECT row_to_json(x) FROM t x` (fixtures/pages/generate.sh): table
// kinds holds every type of the issue (bool, integers, floats with NaN and
// infinities, numerics, varchar, bpchar, "char", name, bytea, uuid, date,
// time, timetz, timestamp, timestamptz, interval, json, jsonb, inet, cidr,
// macaddr, macaddr8, money, an enum, arrays with NULLs and quotes, a range,
// oid), a dropped column and a column added with a default later; acct has
// TOASTed values (pglz-compressed and incompressible external).
func TestTableAgainstRecovery(t *testing.T) {
	base, archive, expected, targets := pagesFixture(t)
	compared := 0
	for _, target := range targets {
		for _, tab := range []string{"acct", "hist", "kinds", "doomed"} {
			for _, f := range []string{"copy", "csv", "jsonl"} {
				want, err := os.ReadFile(filepath.Join(expected, target, tab+"."+f))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				out, stderr, code := walscope(t, "", "table", "--backup", base, "--relation", tab, "--target-name", target, "--format", f, archive)
				if code != 0 {
					t.Errorf("%s %s %s: exit %d: %s", target, tab, f, code, stderr)
					continue
				}
				if out != string(want) {
					t.Errorf("%s %s %s differs:\n%s", target, tab, f, firstDiffLine(out, string(want)))
					continue
				}
				compared += strings.Count(out, "\n")
			}
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d lines of COPY, CSV and JSON identical to the standby's", compared)
}

func firstDiffLine(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return "walscope: " + g[i] + "\nserver:   " + w[i]
		}
	}
	return "line counts differ"
}

// TestTableSQLRecreates: the --format sql script of table kinds (every
// type) at after-insert, run by a real PostgreSQL 15 (with the enum type
// the table uses), recreates the table under --as with exactly the
// standby's COPY text.
func TestTableSQLRecreates(t *testing.T) {
	server, client := pgtest.Need(t, 15)
	base, archive, expected, _ := pagesFixture(t)
	script, stderr, code := walscope(t, "", "table", "--backup", base, "--relation", "kinds", "--target-name", "after-insert", "--format", "sql", "--as", "kinds_back", archive)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	work := pgtest.WorkDir(t, "walscope-table-sql-", "WALSCOPE_KEEP")
	s := pgtest.New(t, work, "sql", 15, server, client)
	s.InitDB(t, "", "")
	s.Start(t)
	s.Query(t, "create type mood as enum ('sad', 'ok', 'happy')")
	f := filepath.Join(work, "restore.sql")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, f)
	if out, err := pgtest.AsPostgres(s.PsqlLine("postgres") + " -f " + pgtest.Shq(f)).CombinedOutput(); err != nil {
		t.Fatalf("psql -f: %v\n%s", err, out)
	}
	got := strings.Join(s.Query(t, "copy kinds_back to stdout"), "\n") + "\n"
	want, err := os.ReadFile(filepath.Join(expected, "after-insert", "kinds.copy"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("recreated table differs:\n%s", firstDiffLine(got, string(want)))
	}
}
