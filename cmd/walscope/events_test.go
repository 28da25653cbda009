package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestEventsPartsEqualSequential: the events read in parallel spans of one
// segment each, merged in WAL order, are exactly those one reader finds, on
// every fixture and corpus (transactions, their subtransactions, files
// created and replaced, rows deleted crossing the cuts; --min-rows 1 so
// that every transaction's rows make events).
func TestEventsPartsEqualSequential(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			args := []string{"events", "--format", "json", "--min-rows", "1"}
			seq, stderr, code := walscope(t, "", append(args, "-j", "1", dir)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			par, stderr, code := walscope(t, "", append(args, "-j", "3", "--span-bytes", "1", dir)...)
			if code != 0 {
				t.Fatalf("in parts: exit %d: %s", code, stderr)
			}
			if par != seq {
				s, p := strings.Split(seq, "\n"), strings.Split(par, "\n")
				for i := range min(len(s), len(p)) {
					if s[i] != p[i] {
						t.Fatalf("line %d differs:\n parts: %q\n  one reader: %q", i+1, p[i], s[i])
					}
				}
				t.Fatalf("%d lines in parts, %d by one reader", len(p), len(s))
			}
			var evs []map[string]any
			if err := json.Unmarshal([]byte(seq), &evs); err != nil {
				t.Fatal(err)
			}
			if len(evs) < 3 {
				t.Fatalf("%d events", len(evs))
			}
		})
	}
}

// TestEventsFilters: over fixtures/rewrite, named with a catalog made from
// the server's own relfilenodes.csv, --relation by name, T/D/R and
// relfilenode, --kind, --since/--until (in both accepted layouts) select
// what they say; JSON keys are stable and CSV has the same columns.
func TestEventsFilters(t *testing.T) {
	root := testwal.Root(t)
	dir := filepath.Join(testwal.Extract(t, testwal.Set{Name: "fixtures/rewrite", Dir: filepath.Join(root, "fixtures", "rewrite")}), "archive")
	truth, err := os.ReadFile(filepath.Join(root, "fixtures", "rewrite", "relfilenodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// the catalog as exported at the start (database 5: the fixture's)
	cat := "database,reltablespace,relfilenode,nspname,relname\n"
	for _, l := range strings.Split(strings.TrimSpace(string(truth)), "\n")[1:] {
		f := strings.Split(l, ",")
		if f[0] != "start" {
			continue
		}
		nsp, rel := "public", f[1]
		if s, r, ok := strings.Cut(f[1], "."); ok {
			nsp, rel = s, r
		}
		cat += "5,0," + f[2] + "," + nsp + "," + rel + "\n"
	}
	catFile := filepath.Join(t.TempDir(), "catalog.csv")
	os.WriteFile(catFile, []byte(cat), 0o644)

	run := func(args ...string) []map[string]any {
		t.Helper()
		out, stderr, code := walscope(t, "", append(append([]string{"events", "--format", "json", "--catalog", catFile}, args...), dir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var evs []map[string]any
		if err := json.Unmarshal([]byte(out), &evs); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return evs
	}
	keys := []string{"kind", "relation", "relation_name", "replaced", "database", "xid", "outcome", "first_lsn", "lsn", "time", "wal_time", "timeline", "rows", "detail", "rows_back", "rows_undo"}
	all := run()
	for _, e := range all {
		if len(e) != len(keys) {
			t.Fatalf("keys of %v, want %v", e, keys)
		}
		for _, k := range keys {
			if _, ok := e[k]; !ok {
				t.Fatalf("no key %s in %v", k, e)
			}
		}
	}
	// t: VACUUM FULL (16384 -> 16404), CLUSTER (-> 16415): named t through
	// the files they replaced; its creation (16384)
	byName := run("--relation", "public.t", "--kind", "rewrite")
	if len(byName) != 2 || byName[0]["relation"] != "1663/5/16404" || byName[1]["relation"] != "1663/5/16415" || byName[1]["replaced"] != "1663/5/16404" {
		t.Fatalf("--relation public.t --kind rewrite: %v", byName)
	}
	if short := run("--relation", "t", "--kind", "rewrite"); len(short) != 2 {
		t.Fatalf("--relation t: %d events", len(short))
	}
	if byTDR := run("--relation", "1663/5/16404"); len(byTDR) != 2 { // VACUUM FULL made it, CLUSTER replaced it
		t.Fatalf("--relation 1663/5/16404: %v", byTDR)
	}
	trunc := run("--relation", "16392")
	if len(trunc) != 2 || trunc[0]["kind"] != "create" || trunc[1]["kind"] != "truncate" || trunc[1]["relation_name"] != "public.u" {
		t.Fatalf("--relation 16392: %v", trunc)
	}
	kinds := run("--kind", "checkpoint", "--kind", "truncate,create")
	for _, e := range kinds {
		if k := e["kind"]; k != "checkpoint" && k != "truncate" && k != "create" {
			t.Fatalf("--kind: %v", e)
		}
	}
	// --since and --until: the TRUNCATE's commit time, in RFC 3339 and in
	// PostgreSQL's layout
	ct := trunc[1]["time"].(string)
	pg := strings.Replace(strings.TrimSuffix(ct, "Z"), "T", " ", 1) + "+00"
	for _, since := range []string{ct, pg} {
		got := run("--since", since, "--until", since, "--kind", "truncate")
		if len(got) != 4 { // u, its TOAST table and index, u_pkey
			t.Fatalf("--since/--until %s: %v", since, got)
		}
		for _, e := range got {
			if e["time"] != ct {
				t.Fatalf("--since/--until %s: %v", since, e)
			}
		}
	}
	// CSV: the same columns and rows
	out, _, code := walscope(t, "", "events", "--format", "csv", "--catalog", catFile, dir)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || strings.Join(rows[0], ",") != strings.Join(keys, ",") || len(rows) != len(all)+1 {
		t.Fatalf("csv: exit %d, %v, %d rows for %d events: %v", code, err, len(rows), len(all), rows[0])
	}
	// usage errors
	for _, bad := range [][]string{{"--kind", "nope"}, {"--since", "yesterday"}, {"--relation", "1/2"}, {"--format", "xml"}} {
		if _, _, code := walscope(t, "", append(append([]string{"events"}, bad...), dir)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// TestReportEvents: the report of fixtures/rewrite has the events section,
// with the same timeline as walscope events (every rewrite and truncation
// of relfilenodes.csv's commands, in WAL order).
func TestReportEvents(t *testing.T) {
	root := testwal.Root(t)
	dir := filepath.Join(testwal.Extract(t, testwal.Set{Name: "fixtures/rewrite", Dir: filepath.Join(root, "fixtures", "rewrite")}), "archive")
	page := filepath.Join(t.TempDir(), "r.html")
	if _, stderr, code := walscope(t, "", "report", "-q", "--out", page, dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	i := strings.Index(html, `<h2 id="events">`)
	if i < 0 || !strings.Contains(html, `<a href="#events">`) {
		t.Fatal("no events section")
	}
	sec := html[i:]
	out, _, _ := walscope(t, "", "events", "--format", "csv", dir)
	rows, _ := csv.NewReader(strings.NewReader(out)).ReadAll()
	last := 0
	for _, r := range rows[1:] {
		if r[0] != "rewrite" && r[0] != "truncate" {
			continue
		}
		// the relation cell: "T/D/R", or "name (T/D/R)" where the WAL
		// names it
		found := false
		for !found {
			j := strings.Index(sec[last:], "<td>"+r[0]+"</td><td>")
			if j < 0 {
				t.Fatalf("%s of %s not in the report's events, or out of order", r[0], r[1])
			}
			last += j + len(r[0]) + 13
			cell := sec[last : last+strings.Index(sec[last:], "</td>")]
			found = cell == r[1] || strings.HasSuffix(cell, "("+r[1]+")")
		}
	}
}
