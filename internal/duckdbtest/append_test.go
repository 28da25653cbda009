package duckdbtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/walscope/walscope/export"
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
// to read only committed batches: the files no later batch replaced (merged
// into its own).
func manifestFiles(ds, table string) string {
	return fmt.Sprintf(`SET VARIABLE %[2]s_files = (
  WITH m AS (SELECT * FROM read_json('%[1]s/_walscope_manifest/_batch-*.json',
                                     columns = {tables: 'JSON', replaces: 'VARCHAR[]'})),
       f AS (SELECT unnest(CAST(tables -> '$.%[2]s.files' AS JSON[])) ->> 'path' AS path FROM m)
  SELECT list('%[1]s/' || path ORDER BY path) FROM f
  WHERE path NOT IN (SELECT unnest(replaces) FROM m))`, ds, table)
}

// less returns a's counts less b's (keys with nothing left dropped).
func less(a, b map[string]counts) map[string]counts {
	out := map[string]counts{}
	for k, c := range a {
		d := b[k]
		c = counts{c.N - d.N, c.RecLen - d.RecLen, c.FPI - d.FPI, c.Combined - d.Combined}
		if c.N != 0 {
			out[k] = c
		}
	}
	return out
}

// TestManifestFilesQuery: manifestFiles is docs/datasets.md's query, with
// the dataset's path and the table put in.
func TestManifestFilesQuery(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "datasets.md"))
	if err != nil {
		t.Fatal(err)
	}
	q := strings.ReplaceAll(manifestFiles("DS", "records"), "DS/", "lake/")
	if !strings.Contains(string(doc), q+";") {
		t.Errorf("docs/datasets.md does not print the query the tests run:\n%s", q)
	}
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
	// (each night holds a checkpoint record: a batch ends at the last
	// one's redo point)
	growNights(t, archive, ds, []int{3, 9, 10, 13})
	whole := filepath.Join(t.TempDir(), "whole")
	run(t, "export", "--append", whole, "-j", "2", "-q", archive)
	db := openDB(t)

	glob := filepath.Join(ds, "records", "*", "*", "*.parquet")
	got := queryCounts(t, db, perRmgr, glob)
	ref, err := os.ReadFile(filepath.Join(fx, "ref", "stats-rmgr-00000001.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The WAL from the dataset's end on (the cycle of the last checkpoint,
	// a shutdown one, which has not ended) is the next append's.
	m, err := export.ReadManifest(os.DirFS(ds))
	if err != nil || m == nil {
		t.Fatalf("manifest: %v", err)
	}
	tail := walscopeStats(t, "rmgr", "-s", m.Last().End, archive)
	if len(tail) == 0 {
		t.Fatalf("no WAL after the dataset's end %s", m.Last().End)
	}
	compare(t, "nightly rmgr vs pg_waldump --stats less the WAL after the dataset", got, less(parseStats(t, string(ref)), tail))
	compare(t, "nightly rmgr vs walscope stats", got, less(walscopeStats(t, "rmgr", archive), tail))

	src := fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", glob)
	if ty := scalar[string](t, db, "SELECT DISTINCT typeof(day) || ' ' || typeof(batch) FROM "+src); ty != "DATE BIGINT" {
		t.Errorf("partition columns: %s, want DATE BIGINT", ty)
	}
	// The fixture's WAL is of one real day (PostgreSQL wrote it in
	// minutes): each night's batch merged the day's files of the batches
	// before it into its own, so every row is in batch 4's files.
	if n := scalar[int64](t, db, "SELECT count(DISTINCT batch) FROM "+src); n != 1 {
		t.Errorf("%d batches", n)
	}
	if len(m.Batches) != 4 || len(m.Last().Replaces) == 0 {
		t.Fatalf("manifest: %v %+v", err, m)
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

	// The files the last batch merged into its own, back in place (as a
	// run killed after committing its merge leaves them): the glob reads
	// them, the manifest's readers do not.
	listedFiles := m.Files("records")
	var restore []string
	for _, p := range m.Last().Replaces {
		if strings.HasPrefix(p, "records/") {
			restore = append(restore, p)
		}
	}
	for _, r := range restore {
		p := filepath.Join(ds, filepath.FromSlash(r))
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := os.ReadFile(filepath.Join(ds, filepath.FromSlash(listedFiles[0])))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(manifestFiles(ds, "records")); err != nil {
		t.Fatal(err)
	}
	if a, b := scalar[int64](t, db, "SELECT count(*) FROM "+listed), scalar[int64](t, db, "SELECT count(*) FROM "+src); a >= b || a != scalar[int64](t, db, "SELECT count(*) FROM "+wholeSrc) {
		t.Errorf("with the files batch 4 merged back in place: the manifest's files %d rows, the glob %d", a, b)
	}
	if len(restore) == 0 {
		t.Errorf("batch 4 merged no records file")
	}
	for _, r := range restore {
		os.Remove(filepath.Join(ds, filepath.FromSlash(r)))
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
