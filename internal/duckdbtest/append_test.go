package duckdbtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// growNights copies the archive's files into growing night directories cut
// by segment index, and appends each to the dataset ds.
func growNights(t *testing.T, archive, ds string, cuts []int) {
	t.Helper()
	ents, err := os.ReadDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for k, cut := range cuts {
		d := filepath.Join(t.TempDir(), fmt.Sprintf("night%d", k+1))
		os.Mkdir(d, 0o755)
		seg := -1
		for _, n := range names {
			if !strings.Contains(n, ".") || strings.HasSuffix(n, ".partial") {
				seg++
			}
			if seg >= cut {
				break
			}
			b, _ := os.ReadFile(filepath.Join(archive, n))
			os.WriteFile(filepath.Join(d, n), b, 0o644)
		}
		run(t, "export", "--append", ds, "-j", "2", "-q", d)
	}
}

// manifestFiles is the DuckDB statement that puts the files the manifest
// lists for table into a variable, the way docs/datasets.md tells readers
// to read only committed batches.
func manifestFiles(ds, table string) string {
	return fmt.Sprintf(`SET VARIABLE %[2]s_files = (
  SELECT list('%[1]s/' || f.path ORDER BY f.path)
  FROM (SELECT unnest(tables.%[2]s.files) AS f FROM read_json('%[1]s/_walscope_manifest/_batch-*.json')))`, ds, table)
}

// TestAppendedDataset grows a dataset over four nights of a real archive
// and reads it with DuckDB as one table, through the hive layout and
// through the manifest's file lists: the records equal `walscope stats`
// and pg_waldump --stats of the whole WAL, batch and day are typed
// partition columns, the night-by-night rows equal one batch's, and a
// batch directory no manifest lists is read by the glob but not by the
// manifest's readers.
func TestAppendedDataset(t *testing.T) {
	fx := extract(t, "pg15-replica-lz4")
	archive := filepath.Join(fx, "archive")
	ds := filepath.Join(t.TempDir(), "ds")
	growNights(t, archive, ds, []int{3, 7, 10, 13})
	whole := filepath.Join(t.TempDir(), "whole")
	run(t, "export", "--append", whole, "-j", "2", "-q", archive)
	db := openDB(t)

	glob := filepath.Join(ds, "records", "*", "*", "*.parquet")
	got := queryCounts(t, db, perRmgr, glob)
	ref, err := os.ReadFile(filepath.Join(fx, "ref", "stats-rmgr-00000001.txt"))
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "nightly rmgr vs pg_waldump --stats", got, parseStats(t, string(ref)))
	compare(t, "nightly rmgr vs walscope stats", got, walscopeStats(t, "rmgr", archive))

	src := fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", glob)
	if ty := scalar[string](t, db, "SELECT DISTINCT typeof(day) || ' ' || typeof(batch) FROM "+src); ty != "DATE BIGINT" {
		t.Errorf("partition columns: %s, want DATE BIGINT", ty)
	}
	if n := scalar[int64](t, db, "SELECT count(DISTINCT batch) FROM "+src); n != 4 {
		t.Errorf("%d batches", n)
	}

	// The manifest's lists read the same rows.
	if _, err := db.Exec(manifestFiles(ds, "records")); err != nil {
		t.Fatal(err)
	}
	listed := "read_parquet(getvariable('records_files'), hive_partitioning = true)"
	if a, b := scalar[int64](t, db, "SELECT count(*) FROM "+listed), scalar[int64](t, db, "SELECT count(*) FROM "+src); a != b || a == 0 {
		t.Errorf("manifest's files: %d rows, glob: %d", a, b)
	}

	// Night by night = one batch (names aside: a batch cannot know names
	// the WAL gives after it; cmd/walscope's TestAppendNightByNight
	// checks those).
	wholeSrc := fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", filepath.Join(whole, "records", "*", "*", "*.parquet"))
	const names = "EXCLUDE (batch, schema_name, relation_name, relkind, database_name)"
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT * %s FROM %s EXCEPT ALL SELECT * %s FROM %s)", names, src, names, wholeSrc),
		fmt.Sprintf("SELECT count(*) FROM (SELECT * %s FROM %s EXCEPT ALL SELECT * %s FROM %s)", names, wholeSrc, names, src),
	} {
		if n := scalar[int64](t, db, q); n != 0 {
			t.Errorf("%d rows differ: %s", n, q)
		}
	}

	// A batch directory that no manifest lists (a killed run's): the glob
	// reads it, the manifest's readers do not.
	orphan := filepath.Join(ds, "records", "batch=5")
	if err := os.CopyFS(orphan, os.DirFS(filepath.Join(ds, "records", "batch=4"))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(manifestFiles(ds, "records")); err != nil {
		t.Fatal(err)
	}
	a, b := scalar[int64](t, db, "SELECT count(*) FROM "+listed), scalar[int64](t, db, "SELECT count(*) FROM "+src)
	if a >= b || a != scalar[int64](t, db, "SELECT count(*) FROM "+wholeSrc) {
		t.Errorf("with an uncommitted batch: the manifest's files %d rows, the glob %d", a, b)
	}
	t.Logf("records: %d rows over 4 batches; the glob reads %d with an uncommitted batch=5 beside them", a, b)
}
