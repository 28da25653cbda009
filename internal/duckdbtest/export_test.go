package duckdbtest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/walscope/walscope/internal/testwal"
)

var walscopeBin string

// TestMain builds walscope with CGO_ENABLED=0: the binary stays pure Go.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "walscope-duckdbtest-")
	if err != nil {
		panic(err)
	}
	walscopeBin = filepath.Join(dir, "walscope")
	// Built in the walscope module (its go.mod and go.sum), not this one.
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", walscopeBin, "./cmd/walscope")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building walscope:", err)
		os.Exit(2)
	}
	// the index files of the fixtures' gzip tars (table's --cache-dir)
	// go to the tests' directory, not the user's cache
	os.Setenv("WALSCOPE_CACHE_DIR", filepath.Join(dir, "cache"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(walscopeBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("walscope %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// extract unpacks a fixture's archive.tar.zst and ref.tar.zst.
func extract(t *testing.T, fixture string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "fixtures", fixture)
	dst := t.TempDir()
	ref := "ref.tar.zst"
	if _, err := os.Stat(filepath.Join(src, "oracle.tar.zst")); err == nil {
		ref = "oracle.tar.zst" // fixtures/growth: oracles that are not pg_waldump's
	}
	for _, tb := range []string{"archive.tar.zst", ref} {
		if err := testwal.UntarZstd(filepath.Join(src, tb), dst); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type counts struct{ N, RecLen, FPI, Combined int64 }

func queryCounts(t *testing.T, db *sql.DB, q string, args ...any) map[string]counts {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[string]counts{}
	for rows.Next() {
		var k string
		var c counts
		if err := rows.Scan(&k, &c.N, &c.RecLen, &c.FPI, &c.Combined); err != nil {
			t.Fatal(err)
		}
		out[k] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func scalar[T any](t *testing.T, db *sql.DB, q string) T {
	t.Helper()
	var v T
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

var statsRowRE = regexp.MustCompile(`^(\S+)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) \(\s*[\d.]+\)\s+(\d+) `)

// parseStats reads pg_waldump --stats output (rows with a zero count left out).
func parseStats(t *testing.T, text string) map[string]counts {
	out := map[string]counts{}
	for _, l := range strings.Split(text, "\n") {
		m := statsRowRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var c counts
		c.N, _ = strconv.ParseInt(m[2], 10, 64)
		c.RecLen, _ = strconv.ParseInt(m[3], 10, 64)
		c.FPI, _ = strconv.ParseInt(m[4], 10, 64)
		c.Combined, _ = strconv.ParseInt(m[5], 10, 64)
		if c.N > 0 {
			out[m[1]] = c
		}
	}
	if len(out) == 0 {
		t.Fatal("no rows in pg_waldump stats output")
	}
	return out
}

// walscopeStats runs walscope stats --format json.
func walscopeStats(t *testing.T, by string, args ...string) map[string]counts {
	t.Helper()
	var st struct {
		Rows []struct {
			Type     string `json:"type"`
			Count    int64  `json:"count"`
			Record   int64  `json:"record_size"`
			FPI      int64  `json:"fpi_size"`
			Combined int64  `json:"combined_size"`
		} `json:"rows"`
	}
	out := run(t, append([]string{"stats", "--by", by, "--format", "json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats json: %v", err)
	}
	m := map[string]counts{}
	for _, r := range st.Rows {
		if r.Count > 0 {
			m[r.Type] = counts{r.Count, r.Record, r.FPI, r.Combined}
		}
	}
	return m
}

func compare(t *testing.T, what string, got, want map[string]counts) {
	t.Helper()
	for k, w := range want {
		if g := got[k]; g != w {
			t.Errorf("%s %s: DuckDB %+v, want %+v", what, k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s: DuckDB %+v, not in the reference", what, k, g)
		}
	}
}

const perRmgr = `SELECT rmgr, count(*)::BIGINT, sum(total_length - image_bytes)::BIGINT, sum(image_bytes)::BIGINT, sum(total_length)::BIGINT
FROM read_parquet(?, hive_partitioning = true) GROUP BY rmgr`

const perType = `SELECT rmgr || '/' || record_type, count(*)::BIGINT, sum(total_length - image_bytes)::BIGINT, sum(image_bytes)::BIGINT, sum(total_length)::BIGINT
FROM read_parquet(?, hive_partitioning = true) GROUP BY ALL`

// TestExportMatchesStats exports a fixture and checks, with DuckDB, that the
// per-rmgr (and per record type) counts and sizes of records equal
// `walscope stats --format json` and pg_waldump --stats, and that blocks,
// checkpoints, transactions and segments agree with records.
func TestExportMatchesStats(t *testing.T) {
	dir := extract(t, "pg15-replica-lz4")
	tl := "00000001"
	segs, _ := filepath.Glob(filepath.Join(dir, "archive", tl+"????????????????"))
	first, last := filepath.Base(segs[0]), filepath.Base(segs[len(segs)-1])
	out := filepath.Join(t.TempDir(), "out")
	input := []string{"-p", filepath.Join(dir, "archive"), first, last}
	run(t, append([]string{"export", "--out", out, "-j", "2", "--desc"}, input...)...)
	db := openDB(t)
	records := filepath.Join(out, "records", "**", "*.parquet")

	ref, err := os.ReadFile(filepath.Join(dir, "ref", "stats-rmgr-"+tl+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := queryCounts(t, db, perRmgr, records)
	compare(t, "rmgr vs pg_waldump --stats", got, parseStats(t, string(ref)))
	compare(t, "rmgr vs walscope stats", got, walscopeStats(t, "rmgr", input...))

	ref, err = os.ReadFile(filepath.Join(dir, "ref", "stats-"+tl+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	gotType := queryCounts(t, db, perType, records)
	compare(t, "record type vs pg_waldump --stats=record", gotType, parseStats(t, string(ref)))

	q := func(table string) string {
		return fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", filepath.Join(out, table, "**", "*.parquet"))
	}
	checks := []struct{ name, a, b string }{
		{"blocks rows = sum(block_count)", "SELECT count(*) FROM " + q("blocks"), "SELECT sum(block_count) FROM " + q("records")},
		{"blocks images = sum(image_count)", "SELECT count(*) FILTER (has_image) FROM " + q("blocks"), "SELECT sum(image_count) FROM " + q("records")},
		{"blocks image bytes = sum(image_bytes)", "SELECT sum(image_length) FROM " + q("blocks"), "SELECT sum(image_bytes) FROM " + q("records")},
		{"blocks per record", "SELECT count(DISTINCT lsn) FROM " + q("blocks"), "SELECT count(*) FILTER (block_count > 0) FROM " + q("records")},
		{"checkpoints records", "SELECT sum(records) FROM " + q("checkpoints"), "SELECT count(*) FROM " + q("records")},
		{"checkpoints record bytes", "SELECT sum(record_bytes) FROM " + q("checkpoints"), "SELECT sum(total_length) FROM " + q("records")},
		{"checkpoints wal bytes", "SELECT sum(wal_bytes) FROM " + q("checkpoints"), "SELECT sum(end_lsn - lsn) FROM " + q("records")},
		{"checkpoints images", "SELECT sum(images) FROM " + q("checkpoints"), "SELECT sum(image_count) FROM " + q("records")},
		{"checkpoints image bytes", "SELECT sum(image_bytes) FROM " + q("checkpoints"), "SELECT sum(image_bytes) FROM " + q("records")},
		{"checkpoints tenths", "SELECT sum(image_bytes_tenth_1 + image_bytes_tenth_2 + image_bytes_tenth_3 + image_bytes_tenth_4 + image_bytes_tenth_5 + image_bytes_tenth_6 + image_bytes_tenth_7 + image_bytes_tenth_8 + image_bytes_tenth_9 + image_bytes_tenth_10) FROM " + q("checkpoints"), "SELECT sum(image_bytes) FROM " + q("records")},
		{"checkpoint cycles", "SELECT count(*) FROM " + q("checkpoints"), "SELECT count(DISTINCT checkpoint_cycle) FROM " + q("records")},
		{"cycles join", "SELECT count(*) FROM " + q("records") + " r JOIN " + q("checkpoints") + " c ON r.checkpoint_cycle = c.redo_lsn", "SELECT count(*) FROM " + q("records")},
		{"segments records", "SELECT sum(records) FROM " + q("segments"), "SELECT count(*) FROM " + q("records")},
		{"segments record bytes", "SELECT sum(record_bytes) FROM " + q("segments"), "SELECT sum(total_length) FROM " + q("records")},
		{"transaction ends", "SELECT count(*) FILTER (outcome <> 'none') FROM " + q("transactions"), "SELECT count(*) FROM " + q("records") + " WHERE xact_time IS NOT NULL"},
		{"commits", "SELECT count(*) FILTER (outcome = 'commit') FROM " + q("transactions"), "SELECT count(*) FROM " + q("records") + " WHERE record_type IN ('COMMIT', 'COMMIT_PREPARED')"},
	}
	for _, c := range checks {
		a := scalar[int64](t, db, "SELECT ("+c.a+")::BIGINT")
		b := scalar[int64](t, db, "SELECT ("+c.b+")::BIGINT")
		if a != b || a == 0 && !strings.Contains(c.name, "tenths") {
			t.Errorf("%s: %d, want %d", c.name, a, b)
		}
	}
	// Every record of a transaction is attributed at most once.
	if a, b := scalar[int64](t, db, "SELECT sum(records)::BIGINT FROM "+q("transactions")), scalar[int64](t, db, "SELECT count(*) FROM "+q("records")); a > b || a == 0 {
		t.Errorf("transactions records %d, records %d", a, b)
	}
	// Schema version in the key-value metadata of every file.
	n := scalar[int64](t, db, fmt.Sprintf("SELECT count(*) FROM parquet_kv_metadata('%s') WHERE decode(key) = 'walscope.schema_version' AND decode(value) = '2'", filepath.Join(out, "*", "*.parquet")))
	files, _ := filepath.Glob(filepath.Join(out, "*", "*.parquet"))
	if n == 0 || int(n) != len(files) {
		t.Errorf("schema version in %d files of %d", n, len(files))
	}
	// --desc: pg_waldump's description (empty for some record types).
	if desc := scalar[int64](t, db, "SELECT count(*) FROM "+q("records")+" WHERE description IS NULL"); desc != 0 {
		t.Errorf("%d records without a description", desc)
	}
	if n := scalar[int64](t, db, "SELECT count(*) FROM "+q("records")+" WHERE rmgr = 'Heap' AND description LIKE 'off %'"); n == 0 {
		t.Errorf("no Heap description")
	}
}

// TestLabelledRuns exports the measured part of two runs of one workload,
// at wal_level replica and logical, into one directory with --label, and
// shows their per-rmgr difference with one DuckDB query.
func TestLabelledRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	want := map[string]map[string]counts{}
	for _, label := range []string{"replica", "logical"} {
		fixture := "whatif/level-" + label
		dir := extract(t, fixture)
		_, file, _, _ := runtime.Caller(0)
		runJSON, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "fixtures", fixture, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rj struct {
			Start string `json:"run_start_lsn"`
			End   string `json:"run_end_lsn"`
		}
		if err := json.Unmarshal(runJSON, &rj); err != nil {
			t.Fatal(err)
		}
		in := []string{"-s", rj.Start, "-e", rj.End, filepath.Join(dir, "archive")}
		run(t, append([]string{"export", "--out", out, "--label", label, "--tables", "records,checkpoints"}, in...)...)
		want[label] = walscopeStats(t, "rmgr", in...)
	}
	db := openDB(t)
	query := `SELECT rmgr,
	count(*) FILTER (label = 'replica') AS replica_records,
	count(*) FILTER (label = 'logical') AS logical_records,
	coalesce(sum(total_length) FILTER (label = 'replica'), 0)::BIGINT AS replica_bytes,
	coalesce(sum(total_length) FILTER (label = 'logical'), 0)::BIGINT AS logical_bytes,
	logical_bytes - replica_bytes AS difference
FROM read_parquet(?, hive_partitioning = true)
GROUP BY rmgr ORDER BY abs(difference) DESC, rmgr`
	rows, err := db.Query(query, filepath.Join(out, "records", "**", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var total int64
	var report strings.Builder
	for rows.Next() {
		var rm string
		var rr, lr, rb, lb, diff int64
		if err := rows.Scan(&rm, &rr, &lr, &rb, &lb, &diff); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&report, "%-12s %8d %8d %10d %10d %+10d\n", rm, rr, lr, rb, lb, diff)
		if w := want["replica"][rm]; w.N != rr || w.Combined != rb {
			t.Errorf("replica %s: %d records, %d bytes; walscope stats %+v", rm, rr, rb, w)
		}
		if w := want["logical"][rm]; w.N != lr || w.Combined != lb {
			t.Errorf("logical %s: %d records, %d bytes; walscope stats %+v", rm, lr, lb, w)
		}
		total += diff
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rmgr         replica  logical      bytes      bytes   logical-replica\n%s", report.String())
	if total <= 0 {
		t.Errorf("logical wrote %d bytes more than replica; want more", total)
	}
	// The checkpoints table carries the settings: wal_level from the WAL.
	levels := scalar[string](t, db, fmt.Sprintf("SELECT coalesce(string_agg(DISTINCT label || ':' || wal_level, ',' ORDER BY label || ':' || wal_level), 'none recorded') FROM read_parquet('%s', hive_partitioning = true) WHERE wal_level IS NOT NULL", filepath.Join(out, "checkpoints", "**", "*.parquet")))
	t.Logf("wal_level per label: %s", levels)
}

// TestPartitions: jobs over two segment ranges (as on two machines) write
// into one directory, read as one dataset; timeline partitions read too.
func TestPartitions(t *testing.T) {
	dir := extract(t, "pg15-replica-lz4")
	arch := filepath.Join(dir, "archive")
	out := filepath.Join(t.TempDir(), "out")
	// The whole stream, partitioned by timeline.
	outTL := filepath.Join(t.TempDir(), "out")
	run(t, "export", "--out", outTL, "--partition-by", "timeline", "--label", "tl", arch)
	// Two jobs cut at a record start (as pg_waldump, a job drops the record
	// that crosses its end): they read as one dataset.
	db0 := openDB(t)
	cut := scalar[int64](t, db0, fmt.Sprintf("SELECT min(lsn)::BIGINT FROM read_parquet('%s') WHERE segment = '00000001000000000000000C'", filepath.Join(outTL, "records", "**", "*.parquet")))
	cutLSN := fmt.Sprintf("%X/%X", cut>>32, cut&0xFFFFFFFF)
	run(t, "export", "--out", out, "--partition-by", "segment-range", "--label", "ranges", "-e", cutLSN, arch)
	run(t, "export", "--out", out, "--partition-by", "segment-range", "--label", "ranges", "-s", cutLSN, arch)
	db := openDB(t)
	var ranges, n, bytes int64
	if err := db.QueryRow(`SELECT count(DISTINCT segment_range), count(*)::BIGINT, sum(total_length)::BIGINT
FROM read_parquet(?, hive_partitioning = true)`, filepath.Join(out, "records", "**", "*.parquet")).Scan(&ranges, &n, &bytes); err != nil {
		t.Fatal(err)
	}
	var tlN, tlBytes int64
	if err := db.QueryRow(`SELECT count(*)::BIGINT, sum(total_length)::BIGINT
FROM read_parquet(?, hive_partitioning = true) WHERE timeline = 1 AND label = 'tl'`, filepath.Join(outTL, "records", "**", "*.parquet")).Scan(&tlN, &tlBytes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d segment ranges: %d records, %d bytes; timeline=1: %d records, %d bytes", ranges, n, bytes, tlN, tlBytes)
	if ranges != 2 || n != tlN || bytes != tlBytes || n == 0 {
		t.Errorf("segment ranges (%d) %d records %d bytes; whole %d, %d", ranges, n, bytes, tlN, tlBytes)
	}
	segs := scalar[int64](t, db, fmt.Sprintf("SELECT sum(records)::BIGINT FROM read_parquet('%s', hive_partitioning = true)", filepath.Join(out, "segments", "**", "*.parquet")))
	if segs != n {
		t.Errorf("segments of the ranges: %d records, want %d", segs, n)
	}
}
