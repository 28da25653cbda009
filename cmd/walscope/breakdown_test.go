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
