package names

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/waltest"
	"github.com/walscope/walscope/xlog"
)

// TestWALNamesAfterCatalogRewrite: over real PostgreSQL 15 WAL
// (fixtures/pg15-replica-lz4, made by fixtures/generate.sh: VACUUM FULL
// pg_class, then `create table tst (id int) tablespace fx_ts` and `alter
// table vt set tablespace fx_ts`, vt made by `create table vt` as file
// 16521), the pg_class updates logged after the
// relation mapper moved pg_class to its new file are rebuilt from the
// pages the rewrite imaged before the mapper said so: the files the
// oracle (pg_waldump 15) shows created in the tablespace are named as the
// script named them, the copy of vt included, and no compressed update is
// left unrebuilt.
func TestWALNamesAfterCatalogRewrite(t *testing.T) {
	dir, ok := waltest.FixtureSet(t, "pg15-replica-lz4")
	if !ok {
		t.Fatal("fixtures/pg15-replica-lz4: no archive")
	}
	ref, err := os.ReadFile(filepath.Join(dir, "ref", "records-00000001.txt"))
	if err != nil {
		t.Fatal(err)
	}
	created := regexp.MustCompile(`(?m)desc: CREATE pg_tblspc/\d+/[^/]+/(\d+)/(\d+)\s*$`)
	var files []decode.RelFileLocator
	for _, m := range created.FindAllStringSubmatch(string(ref), -1) {
		db, _ := strconv.ParseUint(m[1], 10, 32)
		rel, _ := strconv.ParseUint(m[2], 10, 32)
		files = append(files, decode.RelFileLocator{DBOID: uint32(db), RelNumber: uint32(rel)})
	}
	// tst, then vt's copy and its TOAST table's and TOAST index's (named
	// after vt's oid, the file it had when created: 16521)
	want := []string{"public.tst", "public.vt", "pg_toast.pg_toast_16521", "pg_toast.pg_toast_16521_index"}
	if len(files) != len(want) {
		t.Fatalf("the oracle shows main forks %v created in the tablespace, the script %d", files, len(want))
	}
	src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := LearnNames(src, xlog.Options{FollowHistory: true}, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if !w.movedCatalogs() {
		t.Fatal("the WAL does not move pg_class (VACUUM FULL pg_class)")
	}
	for i, f := range files {
		if got := w.Name(f); got != want[i] {
			t.Errorf("file %d/%d: named %q, created as %s", f.DBOID, f.RelNumber, got, want[i])
		}
	}
	if w.Unresolved != 0 {
		t.Errorf("%d compressed catalog updates not rebuilt", w.Unresolved)
	}
	if len(w.newPages) > keepNewPages {
		t.Errorf("%d new pages kept, at most %d", len(w.newPages), keepNewPages)
	}
}
