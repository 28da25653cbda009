package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestRelationCatalog: --catalog names relations, and a relation file that
// replaced another in one transaction (TRUNCATE, CLUSTER, VACUUM FULL) takes
// the name of the file it replaced.
func TestRelationCatalog(t *testing.T) {
	var dir string
	for _, s := range testwal.Sets(t) {
		if s.Name == "corpora/pg18-8k-mixed" {
			dir = filepath.Join(testwal.Extract(t, s), "archive")
		}
	}
	out, _, code := walscope(t, "", "stats", "--by", "relation", "--format", "csv", dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var newRel, oldRel, db string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, ",")
		if len(f) > 2 && strings.Contains(f[2], "(replaced ") {
			newRel, db = strings.Split(f[0], "/")[2], strings.Split(f[0], "/")[1]
			oldRel = strings.TrimSuffix(strings.Split(f[2], "(replaced ")[1], ")")
			break
		}
	}
	if newRel == "" {
		t.Fatalf("no replaced relation in:\n%s", out)
	}
	cat := filepath.Join(t.TempDir(), "catalog.csv")
	os.WriteFile(cat, []byte("database,reltablespace,relfilenode,nspname,relname\n"+db+",0,"+oldRel+",public,t\n"+db+",0,1259,pg_catalog,pg_class\n"), 0o644)
	out, _, code = walscope(t, "", "stats", "--by", "relation", "--catalog", cat, dir)
	if code != 0 || !strings.Contains(out, "public.t (replaced "+oldRel+")") {
		t.Fatalf("exit %d; relation %s not named after %s:\n%s", code, newRel, oldRel, out)
	}
}

// TestRelationRewrites: over real PostgreSQL 15 WAL of VACUUM FULL, TRUNCATE,
// CLUSTER and REINDEX of tables with indexes and TOAST tables
// (fixtures/rewrite), every new relation file the relation breakdown shows
// is named after the file its relation had at the start, as the catalog
// says (relfilenodes.csv, read from pg_class after each command).
func TestRelationRewrites(t *testing.T) {
	root := testwal.Root(t)
	dir := testwal.Extract(t, testwal.Set{Name: "fixtures/rewrite", Dir: filepath.Join(root, "fixtures", "rewrite")})
	truth, err := os.ReadFile(filepath.Join(root, "fixtures", "rewrite", "relfilenodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	start := map[string]string{} // relation -> its file at the start
	relOf := map[string]string{} // file -> relation
	for _, l := range strings.Split(strings.TrimSpace(string(truth)), "\n")[1:] {
		f := strings.Split(l, ",")
		if f[0] == "start" {
			start[f[1]] = f[2]
		}
		relOf[f[2]] = f[1]
	}
	out, _, code := walscope(t, "", "stats", "--by", "relation", "--format", "csv", filepath.Join(dir, "archive"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	checked := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 {
			continue
		}
		path := strings.Split(f[0], "/")
		file := path[len(path)-1]
		rel, ok := relOf[file]
		if !ok || start[rel] == file {
			if strings.Contains(f[2], "(replaced ") {
				t.Errorf("%s (%s) is said to have replaced a file: %q", file, rel, f[2])
			}
			continue
		}
		want := "(replaced " + start[rel] + ")"
		if !strings.Contains(f[2], want) {
			t.Errorf("%s, a new file of %s: %q, want %s", file, rel, f[2], want)
		}
		checked[rel] = true
	}
	// t, its TOAST index, t_pkey, t_w (four commands), u, its TOAST index
	// and u_pkey have WAL of their own after being rewritten.
	for _, rel := range []string{"t", "t_pkey", "t_w", "u", "u_pkey", "pg_toast.pg_toast_16384_index", "pg_toast.pg_toast_16392_index"} {
		if !checked[rel] {
			t.Errorf("no rewritten file of %s in the breakdown", rel)
		}
	}
}

// TestBreakdownPartsEqualSequential: every breakdown read in parallel spans
// of one segment each, merged in WAL order, equals the one read by a single
// reader, on every fixture and corpus (transactions, subtransactions and
// replaced files crossing the cuts, time buckets opened in one span and
// continued in the next, checkpoint cycles over many spans).
func TestBreakdownPartsEqualSequential(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			for _, by := range []string{"relation", "checkpoint", "time", "xid", "segment", "timeline"} {
				// one-second buckets: the fixtures' WAL was written in a few minutes
				args := []string{"stats", "--by", by, "--format", "csv", "--top", "1000000", "--bucket", "1s"}
				seq, stderr, code := walscope(t, "", append(args, "-j", "1", dir)...)
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", by, code, stderr)
				}
				par, stderr, code := walscope(t, "", append(args, "-j", "3", "--span-bytes", "1", dir)...)
				if code != 0 {
					t.Fatalf("%s in parts: exit %d: %s", by, code, stderr)
				}
				if par != seq {
					s, p := strings.Split(seq, "\n"), strings.Split(par, "\n")
					for i := range min(len(s), len(p)) {
						if s[i] != p[i] {
							t.Fatalf("--by %s: line %d differs:\n parts: %q\n  one reader: %q", by, i+1, p[i], s[i])
						}
					}
					t.Fatalf("--by %s: %d lines in parts, %d by one reader", by, len(p), len(s))
				}
				if strings.Count(seq, "\n") < 2 {
					t.Fatalf("--by %s: nothing: %q", by, seq)
				}
			}
		})
	}
}

// TestBreakdownPartsOnDamage: over every case of the corruption catalogue,
// the breakdowns read in spans of one segment print what one reader prints,
// end with the same message and exit with the same code (the merge stops at
// the first span that ended on a problem, as the reader does).
func TestBreakdownPartsOnDamage(t *testing.T) {
	for _, tarball := range testwal.CorruptCases(t, 15) {
		t.Run(testwal.CaseName(tarball), func(t *testing.T) {
			dir := testwal.ExtractCase(t, tarball)
			for _, by := range []string{"relation", "checkpoint", "time", "xid"} {
				args := []string{"stats", "--by", by, "--format", "csv", "--bucket", "1s"}
				seq, seqErr, seqCode := walscope(t, "", append(args, "-j", "1", dir)...)
				par, parErr, parCode := walscope(t, "", append(args, "-j", "3", "--span-bytes", "1", dir)...)
				if seqCode == 2 || !strings.Contains(seqErr, "walscope: ") {
					t.Fatalf("--by %s: exit %d: %q", by, seqCode, seqErr)
				}
				if par != seq || parErr != seqErr || parCode != seqCode {
					t.Errorf("--by %s: spans exit %d, %q; one reader exit %d, %q (outputs equal: %v)", by, parCode, parErr, seqCode, seqErr, par == seq)
				}
			}
		})
	}
}

// TestWhatIfFirstPassParts: whatif's first pass read in spans of one segment
// (data lengths, wal_level and redo points merged in WAL order) gives the
// estimates a single reader gives, on every fixture.
func TestWhatIfFirstPassParts(t *testing.T) {
	for _, set := range testwal.Sets(t) {
		if strings.HasPrefix(set.Name, "corpora/") {
			continue // long (every image compressed three ways, twice); the fixtures cover 15
		}
		t.Run(set.Name, func(t *testing.T) {
			dir := filepath.Join(testwal.Extract(t, set), "archive")
			seq, stderr, code := walscope(t, "", "whatif", "--format", "csv", "-j", "1", dir)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			par, stderr, code := walscope(t, "", "whatif", "--format", "csv", "-j", "3", "--span-bytes", "1", dir)
			if code != 0 {
				t.Fatalf("in parts: exit %d: %s", code, stderr)
			}
			if par != seq {
				t.Fatalf("in parts:\n%s\none reader:\n%s", par, seq)
			}
		})
	}
}
