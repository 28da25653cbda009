package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
)

// TestRelationWALNames: without --catalog, stats --by relation names the
// files of fixtures/rewrite (real PostgreSQL 15 WAL of VACUUM FULL,
// TRUNCATE, CLUSTER, REINDEX) from the WAL alone, as the server's catalog
// does (relfilenodes.csv), old dropped files and new files alike.
func TestRelationWALNames(t *testing.T) {
	root := testwal.Root(t)
	dir := testwal.Extract(t, testwal.Set{Name: "fixtures/rewrite", Dir: filepath.Join(root, "fixtures", "rewrite")})
	truth, err := os.ReadFile(filepath.Join(root, "fixtures", "rewrite", "relfilenodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	relOf := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(truth)), "\n")[1:] {
		f := strings.Split(l, ",")
		if !strings.Contains(f[1], ".") {
			f[1] = "public." + f[1]
		}
		relOf[f[2]] = f[1]
	}
	out, _, code := walscope(t, "", "stats", "--by", "relation", "--format", "csv", filepath.Join(dir, "archive"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	named := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 || f[1] != "main" {
			continue
		}
		path := strings.Split(f[0], "/")
		want, ok := relOf[path[len(path)-1]]
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(f[2], " (replaced ")
		if name != want {
			t.Errorf("%s: named %q, want %s", f[0], f[2], want)
		}
		named++
	}
	if named < 20 {
		t.Errorf("only %d files named:\n%s", named, out)
	}
}
