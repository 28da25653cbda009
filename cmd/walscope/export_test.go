package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/walscope/walscope/internal/testwal"
)

func exportFixture(t testing.TB) string {
	root := testwal.Root(t)
	return testwal.Extract(t, testwal.Set{Name: "fixtures/pg15-replica-lz4", Dir: filepath.Join(root, "fixtures", "pg15-replica-lz4")})
}

// readTable reads every Parquet file of a table with pqarrow and returns the
// row count and the sum of a uint32 column.
func readTable(t *testing.T, dir, column string) (rows int64, sum uint64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(path, ".parquet") {
			t.Errorf("unexpected file %s", path)
			return nil
		}
		files++
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return err
		}
		defer pf.Close()
		if v := pf.MetaData().KeyValueMetadata().FindValue("walscope.schema_version"); v == nil || *v != "1" {
			t.Errorf("%s: schema version %v", path, v)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			return err
		}
		defer tbl.Release()
		rows += tbl.NumRows()
		if column != "" {
			idx := tbl.Schema().FieldIndices(column)
			for _, c := range tbl.Column(idx[0]).Data().Chunks() {
				for _, v := range c.(*array.Uint32).Uint32Values() {
					sum += uint64(v)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

// TestExportReadBack exports a fixture in several spans (one part file
// each) and reads every table back with pqarrow: records match `stats`.
func TestExportReadBack(t *testing.T) {
	dir := exportFixture(t)
	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := walscope(t, dir, "export", "--out", out, "--span-bytes", "3000000", "-j", "2", "--label", "run1", "--partition-by", "timeline", "archive")
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	js, _, _ := walscope(t, dir, "stats", "--format", "json", "archive")
	var st struct {
		Rows []struct {
			Count    int64  `json:"count"`
			Combined uint64 `json:"combined_size"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	var wantN int64
	var wantBytes uint64
	for _, r := range st.Rows {
		wantN += r.Count
		wantBytes += r.Combined
	}
	n, sum, files := readTable(t, filepath.Join(out, "records", "label=run1"), "total_length")
	if n != wantN || sum != wantBytes {
		t.Errorf("records: %d rows, %d bytes; stats: %d, %d", n, sum, wantN, wantBytes)
	}
	if files < 2 {
		t.Errorf("records in %d files, want one per span", files)
	}
	if _, err := os.Stat(filepath.Join(out, "records", "label=run1", "timeline=1")); err != nil {
		t.Errorf("no timeline partition: %v", err)
	}
	for _, table := range []string{"blocks", "checkpoints", "transactions", "segments"} {
		if n, _, _ := readTable(t, filepath.Join(out, table), ""); n == 0 {
			t.Errorf("%s: no rows", table)
		}
	}
	// JSON Lines: one line per record.
	outj := filepath.Join(t.TempDir(), "outj")
	if _, stderr, code := walscope(t, dir, "export", "--out", outj, "--format", "jsonl", "--tables", "records", "archive"); code != 0 {
		t.Fatalf("export jsonl: %s", stderr)
	}
	files2, _ := filepath.Glob(filepath.Join(outj, "records", "*.jsonl"))
	var lines int64
	for _, f := range files2 {
		b, _ := os.ReadFile(f)
		lines += int64(strings.Count(string(b), "\n"))
	}
	if lines != wantN {
		t.Errorf("jsonl: %d lines, want %d", lines, wantN)
	}
}

// TestExportRefusesRerun: a second export into the same dataset fails
// unless --overwrite; another label goes beside it.
func TestExportRefusesRerun(t *testing.T) {
	dir := exportFixture(t)
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"export", "--out", out, "--tables", "records,segments", "--label", "a", "archive"}
	if _, stderr, code := walscope(t, dir, args...); code != 0 {
		t.Fatalf("first export: %s", stderr)
	}
	before, _ := filepath.Glob(filepath.Join(out, "records", "label=a", "*.parquet"))
	_, stderr, code := walscope(t, dir, args...)
	if code != exitProblem || !strings.Contains(stderr, "--overwrite") {
		t.Errorf("rerun: exit %d, %q; want a refusal", code, stderr)
	}
	after, _ := filepath.Glob(filepath.Join(out, "records", "label=a", "*.parquet"))
	if len(after) != len(before) {
		t.Errorf("rerun changed the dataset: %v -> %v", before, after)
	}
	if _, stderr, code := walscope(t, dir, append([]string{"export", "--overwrite"}, args[1:]...)...); code != 0 {
		t.Errorf("--overwrite: exit %d %s", code, stderr)
	}
	other := []string{"export", "--out", out, "--tables", "records", "--label", "b", "archive"}
	if _, stderr, code := walscope(t, dir, other...); code != 0 {
		t.Errorf("second label: exit %d %s", code, stderr)
	}
	// No temporary file is left anywhere.
	filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".tmp") {
			t.Errorf("temporary file left: %s", path)
		}
		return nil
	})
}

// BenchmarkExportRecords reports the records exported per second into the
// records table (Parquet) from a fixture.
func BenchmarkExportRecords(b *testing.B) {
	dir := exportFixture(b)
	js := func() int64 {
		var out strings.Builder
		code := run([]string{"walscope", "stats", "--format", "json", filepath.Join(dir, "archive")}, &out, &strings.Builder{})
		if code != 0 {
			b.Fatal("stats failed")
		}
		var st struct {
			Rows []struct {
				Count int64 `json:"count"`
			} `json:"rows"`
		}
		json.Unmarshal([]byte(out.String()), &st)
		var n int64
		for _, r := range st.Rows {
			n += r.Count
		}
		return n
	}()
	b.ResetTimer()
	for range b.N {
		out := filepath.Join(b.TempDir(), "out")
		var stderr strings.Builder
		if code := run([]string{"walscope", "export", "--out", out, "--tables", "records", "-q", filepath.Join(dir, "archive")}, &strings.Builder{}, &stderr); code != 0 {
			b.Fatalf("export: %s", stderr.String())
		}
	}
	b.ReportMetric(float64(js)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
