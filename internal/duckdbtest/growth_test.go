package duckdbtest

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/walscope/walscope/growth"
)

// growthNights appends fixtures/growth night by night: per line of its
// ref/day-ends.csv, the archive's segments up to the one that day ended in
// (a night whose WAL is still in the last batch's segment appends nothing).
func growthNights(t *testing.T, fx, ds string) {
	t.Helper()
	f, err := os.Open(filepath.Join(fx, "ref", "day-ends.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(fx, "archive"))
	for _, row := range rows[1:] {
		args := []string{"export", "--append", ds, "-j", "2", "-q"}
		for _, e := range ents {
			if e.Name() <= row[2] {
				args = append(args, filepath.Join(fx, "archive", e.Name()))
			}
		}
		run(t, args...)
	}
}

// cells are DuckDB's or growth's totals by a text key: records, bytes,
// images, image bytes, uncompressed image bytes.
type cells map[string][5]int64

func duckCells(t *testing.T, db *sql.DB, q string) cells {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := cells{}
	for rows.Next() {
		var k string
		var v [5]int64
		if err := rows.Scan(&k, &v[0], &v[1], &v[2], &v[3], &v[4]); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func growthCell(c *growth.Counts) [5]int64 {
	return [5]int64{int64(c.Records), int64(c.Bytes), int64(c.Images), int64(c.ImageBytes), int64(c.ImageBytesRaw)}
}

func sameCells(t *testing.T, what string, got, want cells) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	bad := 0
	for _, k := range keys {
		if got[k] != want[k] {
			if bad++; bad <= 5 {
				t.Errorf("%s %s: growth %v, DuckDB %v", what, k, got[k], want[k])
			}
		}
	}
	if bad > 0 || len(want) == 0 {
		t.Errorf("%s: %d of %d cells differ", what, bad, len(keys))
	}
}

// TestGrowthEqualsDuckDB: `walscope growth` over fixtures/growth appended
// night by night (42 simulated days of a real PostgreSQL 15 under
// libfaketime) gives, for every day, hour, resource manager and relation,
// the numbers DuckDB's queries over the dataset's records (read through
// the manifests' file lists) give; its hours are those of the last
// xact_time at or before each record in LSN order, and each hour's date is
// the record's day partition; its checkpoints per day and cause and its
// segments per day are those of the checkpoints and segments tables, a
// redo point or segment two batches share counted once (its first batch's
// row: of a segment, the one of the lowest first_lsn, since a merged
// batch's files hold rows of the batches before it).
func TestGrowthEqualsDuckDB(t *testing.T) {
	fx := extract(t, "growth")
	ds := filepath.Join(t.TempDir(), "ds")
	growthNights(t, fx, ds)
	var rep growth.Report
	if err := json.Unmarshal([]byte(run(t, "growth", "--dataset", ds, "--format", "json", "--by", "hour")), &rep); err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	for _, table := range []string{"records", "checkpoints", "segments"} {
		if _, err := db.Exec(manifestFiles(ds, table)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("CREATE VIEW %[1]s AS SELECT * FROM read_parquet(getvariable('%[1]s_files'), hive_partitioning = true)", table)); err != nil {
			t.Fatal(err)
		}
	}
	const sums = "count(*), sum(total_length), sum(image_count), sum(image_bytes), sum(image_bytes_uncompressed)"
	// The hour of each record: the last known xact_time, the dataset's
	// first for the records before it.
	if _, err := db.Exec(`CREATE VIEW hourly AS
  WITH r AS (SELECT *, last_value(xact_time IGNORE NULLS) OVER (ORDER BY lsn ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS t FROM records)
  SELECT *, floor(epoch_us(coalesce(t, (SELECT min_by(xact_time, lsn) FROM records WHERE xact_time IS NOT NULL))) / 3600000000)::BIGINT AS hour FROM r`); err != nil {
		t.Fatal(err)
	}
	hourName := func(h int64) string { return fmt.Sprint(h) }

	want := map[string]cells{
		"day":          duckCells(t, db, "SELECT CAST(day AS VARCHAR), "+sums+" FROM records GROUP BY ALL"),
		"day rmgr":     duckCells(t, db, "SELECT CAST(day AS VARCHAR) || ' ' || rmgr, "+sums+" FROM records GROUP BY ALL"),
		"day relation": duckCells(t, db, "SELECT CAST(day AS VARCHAR) || ' ' || tablespace || '/' || database || '/' || relfilenode, "+sums+" FROM records WHERE relfilenode IS NOT NULL GROUP BY ALL"),
		"hour rmgr":    duckCells(t, db, "SELECT hour || ' ' || rmgr, "+sums+" FROM hourly GROUP BY ALL"),
		"hour relation": duckCells(t, db, "SELECT hour || ' ' || tablespace || '/' || database || '/' || relfilenode, "+sums+
			" FROM hourly WHERE relfilenode IS NOT NULL GROUP BY ALL"),
	}
	got := map[string]cells{}
	for k := range want {
		got[k] = cells{}
	}
	for _, d := range rep.Days {
		if d.Records == 0 {
			continue // a day of checkpoints or segments only
		}
		got["day"][d.Day] = growthCell(&d.Counts)
		for rm, c := range d.Rmgr {
			got["day rmgr"][d.Day+" "+rm] = growthCell(c)
		}
		if d.Folded {
			t.Errorf("%s: relations folded by the cap", d.Day)
		}
		for _, r := range d.Relations {
			got["day relation"][fmt.Sprintf("%s %d/%d/%d", d.Day, r.Tablespace, r.DB, r.Rel)] = growthCell(&r.Counts)
		}
	}
	for _, h := range rep.Hours {
		hn := hourName(h.Start.Unix() / 3600)
		for rm, c := range h.Rmgr {
			got["hour rmgr"][hn+" "+rm] = growthCell(c)
		}
		for _, r := range h.Relations {
			got["hour relation"][fmt.Sprintf("%s %d/%d/%d", hn, r.Tablespace, r.DB, r.Rel)] = growthCell(&r.Counts)
		}
	}
	for _, k := range []string{"day", "day rmgr", "day relation", "hour rmgr", "hour relation"} {
		sameCells(t, k, got[k], want[k])
	}
	if n := scalar[int64](t, db, "SELECT count(*) FROM hourly WHERE CAST(make_timestamp(hour * 3600000000) AS DATE) <> day"); n != 0 {
		t.Errorf("%d records whose hour's date is not their day partition", n)
	}

	// Checkpoints per day and cause; segments per day.
	ck := map[string]int64{}
	rows, err := db.Query(`SELECT CAST(day AS VARCHAR) || ' ' || cause, count(*) FROM
  (SELECT *, row_number() OVER (PARTITION BY redo_lsn ORDER BY batch) AS n FROM checkpoints WHERE checkpoint_lsn IS NOT NULL) WHERE n = 1 GROUP BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var n int64
		rows.Scan(&k, &n)
		ck[k] = n
	}
	rows.Close()
	gck := map[string]int64{}
	for _, d := range rep.Days {
		for c, n := range d.Checkpoints {
			gck[d.Day+" "+c] = int64(n)
		}
	}
	if fmt.Sprint(gck) != fmt.Sprint(ck) || len(ck) < 10 {
		t.Errorf("checkpoints: growth %v\nDuckDB %v", gck, ck)
	}
	seg := duckCells(t, db, `SELECT CAST(day AS VARCHAR), count(*), sum(size), 0, 0, 0 FROM
  (SELECT *, row_number() OVER (PARTITION BY segment ORDER BY first_lsn NULLS LAST, batch) AS n FROM segments) WHERE n = 1 GROUP BY ALL`)
	gseg := cells{}
	for _, d := range rep.Days {
		if d.Segments > 0 {
			gseg[d.Day] = [5]int64{int64(d.Segments), d.SegmentBytes}
		}
	}
	sameCells(t, "segments", gseg, seg)
	t.Logf("%d batches, %d days, %d hours: day, rmgr, relation, hour cells equal DuckDB's (%d day-relation, %d hour-relation cells); %d checkpoint cells, %d segment days",
		rep.Batches, len(rep.Days), len(rep.Hours), len(want["day relation"]), len(want["hour relation"]), len(ck), len(seg))
	if !strings.HasPrefix(rep.FirstDay, "2026-09") {
		t.Errorf("first day %s", rep.FirstDay)
	}
}
