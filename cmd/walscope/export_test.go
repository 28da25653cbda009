package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

func exportFixture(t testing.TB) string {
	root := testwal.Root(t)
	return testwal.Extract(t, testwal.Set{Name: "fixtures/pg15-replica-lz4", Dir: filepath.Join(root, "fixtures", "pg15-replica-lz4")})
}

// readTable reads every Parquet file of a table with pqarrow and returns the
// row count and the sum of an int64 column.
func readTable(t *testing.T, dir, column string) (rows int64, sum uint64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == export.MarkerName {
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
		if v := pf.MetaData().KeyValueMetadata().FindValue("walscope.schema_version"); v == nil || *v != export.SchemaVersion {
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
				for _, v := range c.(*array.Int64).Int64Values() {
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

// TestExportCheckpointsMatchStats: the checkpoints table, exported in
// parallel spans (one span per segment), has per cycle the same volumes,
// distinct blocks and image bytes per tenth as `stats --by checkpoint`.
func TestExportCheckpointsMatchStats(t *testing.T) {
	root := testwal.Root(t)
	// checkpoints every 500 transactions; data checksums (XLOG FPI_FOR_HINT
	// records, which span pages) and a timeline switch; logical and zstd
	for _, name := range []string{"whatif/checkpoint-every-500", "pg15-replica-pglz-k-tl", "pg15-logical-zstd-k"} {
		t.Run(name, func(t *testing.T) {
			dir := testwal.Extract(t, testwal.Set{Name: "fixtures/" + name, Dir: filepath.Join(root, "fixtures", name)})
			checkpointsMatchStats(t, filepath.Join(dir, "archive"))
		})
	}
}

func checkpointsMatchStats(t *testing.T, archive string) {
	var js, stderr strings.Builder
	if code := run([]string{"walscope", "stats", "--by", "checkpoint", "--format", "json", archive}, &js, &stderr); code != 0 {
		t.Fatalf("stats: %s", stderr.String())
	}
	var cycles []map[string]any
	if err := json.Unmarshal([]byte(js.String()), &cycles); err != nil {
		t.Fatal(err)
	}
	rows, col := exportCSV(t, archive, "checkpoints", "-j", "2")
	byRedo := map[string][]string{}
	for _, r := range rows[1:] {
		redo, _ := strconv.ParseUint(r[col["redo_lsn"]], 10, 64)
		byRedo[xlog.LSN(redo).String()] = r
	}
	if len(cycles) < 4 {
		t.Fatalf("%d cycles in stats; the fixtures have more checkpoints", len(cycles))
	}
	keys := []string{"records", "record_bytes", "wal_bytes", "images", "image_bytes", "distinct_blocks_imaged"}
	for k := 1; k <= 10; k++ {
		keys = append(keys, fmt.Sprintf("image_bytes_tenth_%d", k))
	}
	for _, c := range cycles {
		redo := c["redo_lsn"].(string)
		r := byRedo[redo]
		if r == nil {
			t.Errorf("cycle at redo %s: not in the checkpoints table", redo)
			continue
		}
		for _, k := range keys {
			if got, want := r[col[k]], fmt.Sprint(int64(c[k].(float64))); got != want {
				t.Errorf("cycle at redo %s: %s %s, stats says %s", redo, k, got, want)
			}
		}
		// why it began: the same cause, null (empty) before the first redo
		if want, _ := c["cause"].(string); r[col["cause"]] != want {
			t.Errorf("cycle at redo %s: cause %q, stats says %q", redo, r[col["cause"]], want)
		}
	}
	if len(rows)-1 != len(cycles) {
		t.Errorf("%d checkpoint rows, stats has %d cycles", len(rows)-1, len(cycles))
	}
}

// exportCSV exports one table of archive as CSV in spans of one megabyte
// (one segment of the fixtures) and returns its rows, header first, and the
// header's columns by name.
func exportCSV(t *testing.T, archive, table string, flags ...string) ([][]string, map[string]int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var stderr strings.Builder
	args := append([]string{"walscope", "export", "--out", out, "--tables", table, "--format", "csv", "--span-bytes", "1048576", "-q"}, flags...)
	if code := run(append(args, archive), &strings.Builder{}, &stderr); code != 0 {
		t.Fatalf("export: %s", stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, table, "*.csv"))
	if len(files) != 1 {
		t.Fatalf("%s files %v", table, files)
	}
	rows, err := csv.NewReader(mustOpen(t, files[0])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return rows, col
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestExportTransactionsMatchXid: the transactions table, exported in spans
// of one segment, has one row per transaction, with the outcome, records and
// bytes `stats --by xid` (one reader) gives it: subtransactions folded into
// their top level across the spans, and a subtransaction's abort
// (ROLLBACK TO SAVEPOINT, logical level) ending nothing.
func TestExportTransactionsMatchXid(t *testing.T) {
	root := testwal.Root(t)
	for _, name := range []string{"pg15-logical-zstd-k", "rewrite", "pg15-replica-lz4"} {
		t.Run(name, func(t *testing.T) {
			archive := filepath.Join(testwal.Extract(t, testwal.Set{Name: "fixtures/" + name, Dir: filepath.Join(root, "fixtures", name)}), "archive")
			var xs, stderr strings.Builder
			if code := run([]string{"walscope", "stats", "--by", "xid", "--top", "1000000", "--format", "csv", "-j", "1", archive}, &xs, &stderr); code != 0 {
				t.Fatalf("stats: %s", stderr.String())
			}
			want := map[string]string{}
			rows, err := csv.NewReader(strings.NewReader(xs.String())).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows[1:] {
				outcome := map[string]string{"commit": "commit", "abort": "abort", "none seen": "none"}[r[1]]
				want[r[0]] = outcome + " " + r[3] + " " + r[4]
			}
			rows, col := exportCSV(t, archive, "transactions", "-j", "3")
			seen := map[string]bool{}
			for _, r := range rows[1:] {
				x := r[col["xid"]]
				if seen[x] {
					t.Errorf("xid %s: two rows", x)
				}
				seen[x] = true
				if got := r[col["outcome"]] + " " + r[col["records"]] + " " + r[col["record_bytes"]]; got != want[x] {
					t.Errorf("xid %s: %q, stats --by xid says %q", x, got, want[x])
				}
			}
			if len(seen) != len(want) || len(seen) < 10 {
				t.Errorf("%d transactions exported, stats has %d", len(seen), len(want))
			}
		})
	}
}

// TestExportSegmentValidationClasses: the segments table's validation names
// a file's archive problems by the classes ls and verify give them (it gave
// the finer kinds: "duplicate" where ls and verify say duplicate-segment).
func TestExportSegmentValidationClasses(t *testing.T) {
	dir := t.TempDir()
	archivetest.Plain(t, sampleWAL(t), dir)
	more := filepath.Join(dir, "more")
	archivetest.Plain(t, sampleWAL(t), more)
	os.Remove(filepath.Join(more, "000000010000000000000006"))
	seg := filepath.Join(more, "000000010000000000000007")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-500] ^= 0xFF // the same segment with different content
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x")
	if _, stderr, code := walscope(t, "", "export", "--format", "csv", "--tables", "segments", "--out", out, dir, more); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "segments", "*.csv"))
	if len(files) != 1 {
		t.Fatalf("segments: %v", files)
	}
	csvText, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(csvText)), "\n")[1:] {
		f := strings.Split(line, ",")
		got[f[0]] = f[len(f)-1]
	}
	want := map[string]string{"000000010000000000000006": "ok", "000000010000000000000007": "duplicate-segment"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("validation %v, want %v", got, want)
	}
}
