package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/growth"
	"github.com/walscope/walscope/internal/testwal"
)

// growthFixture is fixtures/growth extracted: archive/ (42 simulated days
// of a real PostgreSQL 15 under libfaketime) and ref/ (days.csv from
// pg_waldump, day-ends.csv).
func growthFixture(t testing.TB) string {
	t.Helper()
	growthOnce.Do(func() {
		dir, err := os.MkdirTemp("", "walscope-growth-")
		if err != nil {
			growthErr = err
			return
		}
		src := filepath.Join(testwal.Root(t), "fixtures", "growth")
		// archive/ and ref/ (oracle.tar.zst: not a pg_waldump set)
		for _, tarball := range []string{"archive.tar.zst", "oracle.tar.zst"} {
			if err := testwal.UntarZstd(filepath.Join(src, tarball), dir); err != nil {
				growthErr = err
				return
			}
		}
		growthDir = dir
	})
	if growthErr != nil {
		t.Fatal(growthErr)
	}
	return growthDir
}

// fixtures/growth, unpacked once per test binary
var (
	growthOnce sync.Once
	growthDir  string
	growthErr  error
)

// growthCSVFile reads a CSV file into its rows (the header first).
func growthCSVFile(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// nightFiles returns, per line of ref/day-ends.csv, the archive's segment
// files up to the one that day ended in: the archive as it was that night.
func nightFiles(t testing.TB, fx string) [][]string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(fx, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, row := range growthCSVFile(t, filepath.Join(fx, "ref", "day-ends.csv"))[1:] {
		var files []string
		for _, e := range ents {
			if e.Name() <= row[2] {
				files = append(files, filepath.Join(fx, "archive", e.Name()))
			}
		}
		out = append(out, files)
	}
	return out
}

// appendNight runs export --append of a night's files; "nothing to
// append" (a night whose WAL is still in the last batch's segment) is 0 too.
func appendNight(t *testing.T, ds string, files []string, flags ...string) {
	t.Helper()
	args := append([]string{"export", "--append", ds, "--span-bytes", "1500000", "-j", "2"}, flags...)
	_, stderr, code := walscope(t, "", append(args, files...)...)
	if code != 0 {
		t.Fatalf("export --append %s (%d files): exit %d\n%s", ds, len(files), code, stderr)
	}
}

// manifestsWithout copies dataset ds's manifests into a new directory with
// the growth aggregate's field removed from the first half of the batches:
// the manifests a walscope from before that field would have written.
func manifestsWithout(t *testing.T, ds, field string) string {
	t.Helper()
	old := t.TempDir()
	md := filepath.Join(old, export.ManifestDir)
	os.Mkdir(md, 0o755)
	ents, _ := os.ReadDir(filepath.Join(ds, export.ManifestDir))
	ents = slices.DeleteFunc(ents, func(e os.DirEntry) bool { return !strings.HasSuffix(e.Name(), ".json") }) // (the spacing state file)
	for i, e := range ents {
		data, _ := os.ReadFile(filepath.Join(ds, export.ManifestDir, e.Name()))
		if i < len(ents)/2 {
			var b map[string]any
			if err := json.Unmarshal(data, &b); err != nil {
				t.Fatal(err)
			}
			delete(b["growth"].(map[string]any), field)
			data, _ = json.Marshal(b)
		}
		os.WriteFile(filepath.Join(md, e.Name()), data, 0o644)
	}
	return old
}

// walAfter counts the records of the WAL from start on and their total
// lengths (walscope dump's rec/tot, as pg_waldump prints them).
func walAfter(t *testing.T, start, wal string) (records, bytes uint64) {
	t.Helper()
	out, stderr, code := walscope(t, "", "dump", "-s", start, wal)
	if code != 0 {
		t.Fatalf("dump -s %s: exit %d\n%s", start, code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "len (rec/tot): ")
		if !ok {
			continue
		}
		_, tot, _ := strings.Cut(rest, "/")
		tot, _, _ = strings.Cut(tot, ",")
		n, err := strconv.ParseUint(strings.TrimSpace(tot), 10, 64)
		if err != nil {
			t.Fatalf("dump line %q", line)
		}
		records, bytes = records+1, bytes+n
	}
	return records, bytes
}

func growthJSON(t *testing.T, args ...string) *growth.Report {
	t.Helper()
	out, stderr, code := walscope(t, "", append([]string{"growth", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("growth %v: exit %d\n%s", args, code, stderr)
	}
	var r growth.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("growth json: %v\n%s", err, out)
	}
	return &r
}

// TestGrowthFixture builds fixtures/growth's dataset night by night (one
// export --append per simulated day, killed once at each commit step on
// the last night) and checks growth against pg_waldump's day totals, a
// single export of the whole archive, its own --since/--until bounds, the
// forecast's documented backtest and the errors for datasets without the
// aggregate. DuckDB over the same dataset: internal/duckdbtest's
// TestGrowthEqualsDuckDB.
func TestGrowthFixture(t *testing.T) {
	fx := growthFixture(t)
	nightly := filepath.Join(t.TempDir(), "nightly")
	nights := nightFiles(t, fx)
	var before []byte
	for i, files := range nights {
		if i == len(nights)-1 {
			before, _, _ = runOut(t, "growth", "--dataset", nightly, "--format", "json")
			for _, step := range []string{"staged", "manifest"} {
				killedAppend(t, step, append([]string{"export", "--append", nightly, "--span-bytes", "1500000"}, files...)...)
				after, _, _ := runOut(t, "growth", "--dataset", nightly, "--format", "json")
				if string(after) != string(before) {
					t.Errorf("killed at %s: growth changed (a killed run's aggregate is visible)", step)
				}
			}
		}
		appendNight(t, nightly, files)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	appendNight(t, whole, []string{filepath.Join(fx, "archive")})
	m, err := export.ReadManifest(os.DirFS(nightly))
	if err != nil || m == nil || len(m.Batches) < 10 {
		t.Fatalf("nightly dataset: %v, %d batches", err, len(m.Batches))
	}
	rep := growthJSON(t, "--dataset", nightly, "--by", "hour")

	t.Run("pg_waldump", func(t *testing.T) {
		// ref/days.csv: pg_waldump 15's records and tot lengths per day of
		// the last COMMIT/ABORT time; every commit is a faked day.
		ref := growthCSVFile(t, filepath.Join(fx, "ref", "days.csv"))[1:]
		got := map[string]*growth.Day{}
		for _, d := range rep.Days {
			got[d.Day] = d
		}
		// The dataset ends at the last checkpoint's redo point: the WAL
		// after it (the last cycle: a checkpoint record and a few more,
		// after the last commit) is the next append's.
		tailRecords, tailBytes := walAfter(t, m.Last().End, filepath.Join(fx, "archive"))
		if tailRecords == 0 || tailRecords > 10 {
			t.Errorf("%d records after the dataset's end %s", tailRecords, m.Last().End)
		}
		for i, row := range ref {
			d := got[row[0]]
			if d == nil {
				t.Errorf("%s: not in growth", row[0])
				continue
			}
			records, bytes := d.Records, d.Bytes
			if i == len(ref)-1 {
				records, bytes = records+tailRecords, bytes+tailBytes
			}
			if strconv.FormatUint(records, 10) != row[1] || strconv.FormatUint(bytes, 10) != row[2] {
				t.Errorf("%s: growth %d records, %d bytes; pg_waldump %s, %s", row[0], records, bytes, row[1], row[2])
			}
		}
		if len(ref) < 42 || !strings.HasPrefix(ref[0][0], "2026-09") {
			t.Errorf("days.csv: %d days from %s", len(ref), ref[0][0])
		}
		// hours add up to days, rmgrs and relations to totals
		var hourBytes, dayBytes uint64
		for _, h := range rep.Hours {
			hourBytes += h.Bytes
			var rm, rel uint64
			for _, c := range h.Rmgr {
				rm += c.Bytes
			}
			for _, c := range h.Relations {
				rel += c.Bytes
			}
			if rm != h.Bytes || rel+h.OtherRelations.Bytes > h.Bytes {
				t.Errorf("%s: %d bytes, rmgrs %d, relations %d", h.Start, h.Bytes, rm, rel)
			}
		}
		for _, d := range rep.Days {
			dayBytes += d.Bytes
		}
		if hourBytes != dayBytes || dayBytes != rep.Total.Bytes || len(rep.Hours) < 42*12 {
			t.Errorf("hours %d bytes, days %d, total %d; %d hours", hourBytes, dayBytes, rep.Total.Bytes, len(rep.Hours))
		}
	})

	t.Run("whole", func(t *testing.T) {
		// One export of the whole archive: the same days, hours, rmgrs,
		// relations, checkpoints and segments.
		w := growthJSON(t, "--dataset", whole, "--by", "hour")
		w.Batches = rep.Batches
		// The checkpoints' causes are the checkpoints table's, which each
		// batch infers from the spacing of its checkpoints and of the
		// last 64 before it (recent_checkpoints, stats.Reclassify): a
		// night with too little history to show the WAL distance may call
		// "requested" what the whole export calls "wal" (3 days of 42
		// here; 12 checkpoints were "unknown" before the history was
		// carried); none is "unknown" that the whole export knows. Their
		// number per day is the same.
		if len(w.Days) != len(rep.Days) {
			t.Fatalf("%d days whole, %d nightly", len(w.Days), len(rep.Days))
		}
		n := *rep
		n.Days = nil
		differ := 0
		for i, d := range rep.Days {
			sum := func(c growth.Checkpoints) (k int) {
				for _, v := range c {
					k += v
				}
				return k
			}
			if a, b := sum(d.Checkpoints), sum(w.Days[i].Checkpoints); a != b {
				t.Errorf("%s: %d checkpoints nightly, %d whole", d.Day, a, b)
			}
			if a, b := d.Checkpoints["unknown"], w.Days[i].Checkpoints["unknown"]; a != b {
				t.Errorf("%s: %d checkpoints of unknown cause nightly, %d whole", d.Day, a, b)
			}
			if !reflect.DeepEqual(d.Checkpoints, w.Days[i].Checkpoints) {
				differ++
				t.Logf("%s: causes nightly %v, whole %v", d.Day, d.Checkpoints, w.Days[i].Checkpoints)
			}
			x := *d
			x.Checkpoints = w.Days[i].Checkpoints
			// the spacing estimate is of the settings each night infers
			// (here none are given): TestGrowthSpacing checks it, nightly
			// against whatif, with the server's settings given
			x.SpacingSaved = w.Days[i].SpacingSaved
			n.Days = append(n.Days, &x)
		}
		n.Spacing = w.Spacing
		if differ > 3 {
			t.Errorf("%d days' checkpoint causes differ between the nightly and the whole export (3 days of fixtures/growth do: nights with too little history to show the WAL distance)", differ)
		}
		if !reflect.DeepEqual(w, &n) {
			a, _ := json.Marshal(n.Days)
			b, _ := json.Marshal(w.Days)
			t.Errorf("nightly and whole differ:\n%.2000s\n%.2000s", a, b)
			for i := range min(len(n.Days), len(w.Days)) {
				if !reflect.DeepEqual(n.Days[i], w.Days[i]) {
					a, _ := json.Marshal(n.Days[i])
					b, _ := json.Marshal(w.Days[i])
					t.Errorf("first day that differs: nightly\n%.3000s\nwhole\n%.3000s", a, b)
					break
				}
			}
		}
	})

	t.Run("since-until", func(t *testing.T) {
		r := growthJSON(t, "--dataset", nightly, "--since", "2026-09-14", "--until", "2026-09-20", "--by", "hour")
		if len(r.Days) != 7 || r.Days[0].Day != "2026-09-14" || r.Days[6].Day != "2026-09-20" {
			t.Fatalf("days %v", len(r.Days))
		}
		var sum uint64
		for _, d := range rep.Days {
			if d.Day >= "2026-09-14" && d.Day <= "2026-09-20" {
				sum += d.Bytes
			}
		}
		if r.Total.Bytes != sum || len(r.Hours) == 0 || r.Hours[0].Start.Format("2006-01-02") != "2026-09-14" {
			t.Errorf("bounded total %d, want %d", r.Total.Bytes, sum)
		}
		if len(r.Weeks) != 1 || r.Weeks[0].Start != "2026-09-14" || r.Weeks[0].Days != 7 {
			t.Errorf("weeks %+v", r.Weeks)
		}
		if r.Forecast.None == "" {
			t.Errorf("a forecast from %d days", r.Forecast.HistoryDays)
		}
		_, stderr, code := walscope(t, "", "growth", "--dataset", nightly, "--since", "2026-10-01", "--until", "2026-09-01")
		if code != exitUsage || !strings.Contains(stderr, "after --until") {
			t.Errorf("since after until: exit %d %s", code, stderr)
		}
	})

	t.Run("forecast", func(t *testing.T) {
		f := rep.Forecast
		if f.WAL == nil {
			t.Fatalf("no forecast: %s", f.None)
		}
		byDay := map[string]uint64{}
		for _, d := range rep.Days {
			byDay[d.Day] = d.Bytes
		}
		bt := f.WAL.Backtest
		if bt.HeldBack != growth.HoldBack(f.HistoryDays) || bt.FitDays+bt.HeldBack != min(f.HistoryDays, growth.MaxHistoryDays) || len(bt.Days) != bt.HeldBack {
			t.Errorf("backtest %d+%d days of %d", bt.FitDays, bt.HeldBack, f.HistoryDays)
		}
		var ape, maxAPE float64
		for _, d := range bt.Days {
			if d.Actual != float64(byDay[d.Day]) {
				t.Errorf("%s: actual %v, day %d", d.Day, d.Actual, byDay[d.Day])
			}
			a := 100 * math.Abs(d.Predicted-d.Actual) / d.Actual
			ape += a
			maxAPE = math.Max(maxAPE, a)
		}
		if math.Abs(ape/float64(len(bt.Days))-bt.MAPE) > 1e-9 || math.Abs(maxAPE-bt.MaxAPE) > 1e-9 {
			t.Errorf("MAPE %v, max %v; recomputed %v, %v", bt.MAPE, bt.MaxAPE, ape/float64(len(bt.Days)), maxAPE)
		}
		if f.ArchiveBytes != int64(len(growthCSVFile(t, filepath.Join(fx, "ref", "segments.txt"))))<<20 || f.Archive90 < f.Archive30 || f.Archive30 < float64(f.ArchiveBytes) {
			t.Errorf("archive %d now, %v in 30 days, %v in 90", f.ArchiveBytes, f.Archive30, f.Archive90)
		}
		ab := f.ArchiveBacktest
		var seg float64
		for _, d := range rep.Days {
			if d.Day >= bt.Days[0].Day && d.Day <= bt.Days[len(bt.Days)-1].Day {
				seg += float64(d.SegmentBytes)
			}
		}
		if ab == nil || ab.Actual != seg || ab.Days != bt.HeldBack {
			t.Errorf("archive backtest %+v, segment bytes of the held-back days %v", ab, seg)
		}
		t.Logf("forecast: history %d days %s..%s; WAL backtest (%d fit, %d held back) MAPE %.1f%% max %.1f%% (%.0f bytes); next 30 days %.0f, 90 days %.0f; archive %d now, %.0f in 30 days, %.0f in 90 (%.3f segment bytes per WAL byte); archive growth over the held-back days predicted %.0f, actual %.0f (%+.1f%%)",
			f.HistoryDays, f.HistoryFrom, f.HistoryTo, bt.FitDays, bt.HeldBack, bt.MAPE, bt.MaxAPE, bt.MaxAbsError, f.WAL.Next30, f.WAL.Next90,
			f.ArchiveBytes, f.Archive30, f.Archive90, f.SegmentRatio, ab.Predicted, ab.Actual, ab.ErrorPercent)
	})

	t.Run("text-csv", func(t *testing.T) {
		out, _, code := runOut(t, "growth", "--dataset", nightly)
		if code != 0 || !strings.Contains(string(out), "2026-10-18") || !strings.Contains(string(out), "public.archive_items") || !strings.Contains(string(out), "MAPE") {
			t.Errorf("text: exit %d\n%s", code, out)
		}
		out, _, code = runOut(t, "growth", "--dataset", nightly, "--format", "csv")
		rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
		if code != 0 || err != nil {
			t.Fatalf("csv: exit %d, %v", code, err)
		}
		totals := map[string]string{}
		for _, r := range rows[1:] {
			if r[1] == "total" {
				totals[r[0]] = r[4]
			}
		}
		for _, d := range rep.Days {
			if totals[d.Day] != strconv.FormatUint(d.Bytes, 10) {
				t.Errorf("csv %s: %s bytes, json %d", d.Day, totals[d.Day], d.Bytes)
			}
		}
	})

	t.Run("report", func(t *testing.T) {
		// report --dataset: the charts of the days, drawn from the
		// manifests; in Chromium (when there is one) every chart draws.
		page := filepath.Join(t.TempDir(), "growth.html")
		_, stderr, code := walscope(t, "", "report", "--dataset", nightly, "--since", "2026-09-07", "-o", page)
		if code != 0 {
			t.Fatalf("report --dataset: exit %d\n%s", code, stderr)
		}
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		html := string(raw)
		r := growthJSON(t, "--dataset", nightly, "--since", "2026-09-07")
		mape := fmt.Sprintf("MAPE %.1f%%", r.Forecast.WAL.Backtest.MAPE)
		if n := strings.Count(html, `<svg class="chart"`); n < 8 || !strings.Contains(html, mape) || !strings.Contains(html, "public.archive_items") ||
			!strings.Contains(html, "2026-09-07 to -") || strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), "http") {
			t.Errorf("report: %d charts, %q %v", n, mape, strings.Contains(html, mape))
		}
		if _, stderr, code := walscope(t, "", "report", "--since", "2026-09-07", "-o", page, filepath.Join(fx, "archive")); code != exitUsage || !strings.Contains(stderr, "--dataset") {
			t.Errorf("--since without --dataset: exit %d %s", code, stderr)
		}
		bin := findChromium()
		if bin == "" {
			t.Log("chromium not found: the HTML only")
			return
		}
		dom, logs := chromium(t, bin, page, "--dump-dom", "--window-size=1366,900")
		if m := consoleLine.FindAllString(logs, -1); len(m) > 0 {
			t.Errorf("console messages:\n%s", strings.Join(m, "\n"))
		}
		if !regexp.MustCompile(`>OK charts=\d+<`).MatchString(dom) {
			t.Errorf("the page's self-check did not pass")
		}
		chromium(t, bin, page, "--screenshot="+filepath.Join(artifactDir(t), "report-growth.png"), "--window-size=1366,3000")
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"growth"},
			{"growth", "--dataset", nightly, "--by", "week"},
			{"growth", "--dataset", nightly, "--format", "xml"},
			{"growth", "--dataset", nightly, "--since", "2026-9-7"},
			{"growth", "--dataset", nightly, filepath.Join(fx, "archive")},
			{"growth", "--dataset", filepath.Join(fx, "nothing-here")},
		} {
			if out, stderr, code := walscope(t, "", args...); code != exitUsage || out != "" || stderr == "" {
				t.Errorf("%v: exit %d, %d bytes out, %q", args, code, len(out), stderr)
			}
		}
	})

	t.Run("no-aggregate", func(t *testing.T) {
		// A manifest of a walscope before growth version 1: the same
		// manifests without "growth".
		old := t.TempDir()
		md := filepath.Join(old, export.ManifestDir)
		os.Mkdir(md, 0o755)
		ents, _ := os.ReadDir(filepath.Join(nightly, export.ManifestDir))
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue // the spacing state file
			}
			var b map[string]any
			data, _ := os.ReadFile(filepath.Join(nightly, export.ManifestDir, e.Name()))
			if err := json.Unmarshal(data, &b); err != nil {
				t.Fatal(err)
			}
			delete(b, "growth")
			data, _ = json.Marshal(b)
			os.WriteFile(filepath.Join(md, e.Name()), data, 0o644)
		}
		_, stderr, code := walscope(t, "", "growth", "--dataset", old)
		if code != exitUsage || !strings.Contains(stderr, "no growth aggregate") || !strings.Contains(stderr, "export --append NEWDIR") {
			t.Errorf("old manifest: exit %d\n%s", code, stderr)
		}
		// export --out: no manifest at all
		out := filepath.Join(t.TempDir(), "out")
		if _, stderr, code := walscope(t, "", "export", "--out", out, "--tables", "records", filepath.Join(fx, "archive")); code != 0 {
			t.Fatal(stderr)
		}
		_, stderr, code = walscope(t, "", "growth", "--dataset", out)
		if code != exitUsage || !strings.Contains(stderr, "not an incremental dataset") {
			t.Errorf("export --out dataset: exit %d\n%s", code, stderr)
		}
	})
}

// runOut runs walscope and returns its stdout as bytes.
func runOut(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	out, stderr, code := walscope(t, "", args...)
	return []byte(out), stderr, code
}

// TestGrowthWhatIf: the wal_compression estimate of the growth aggregate
// (a sample of one image in 16, sized at append time) against real
// PostgreSQL 15: fixtures/whatif's compression-off, -pglz, -lz4 and -zstd
// are one pgbench workload run under each setting. From each run's dataset
// the images under every other setting are estimated within 3% of what
// that run's server wrote (image_bytes), and under off exactly.
func TestGrowthWhatIf(t *testing.T) {
	methods := []string{"off", "pglz", "lz4", "zstd"}
	actual := map[string]float64{}
	est := map[string]map[string]float64{}
	for _, m := range methods {
		ds := filepath.Join(t.TempDir(), m)
		archive := filepath.Join(testwal.Root(t), "fixtures", "whatif", "compression-"+m, "archive.tar.zst")
		if _, stderr, code := walscope(t, "", "export", "--append", ds, "-q", archive); code != 0 {
			t.Fatalf("%s: %s", m, stderr)
		}
		r := growthJSON(t, "--dataset", ds)
		w := r.WhatIf
		if w == nil || w.SampledImages < 100 || w.Failed != 0 || w.Images != r.Total.Images {
			t.Fatalf("%s: sample %+v", m, w)
		}
		actual[m], est[m] = float64(w.ImageBytes), w.Estimate
		t.Logf("%s: %d images, %d sampled; as stored %d; estimates %v", m, w.Images, w.SampledImages, w.ImageBytes, w.Estimate)
	}
	for _, from := range methods {
		for _, to := range methods {
			e := est[from][to]
			d := 100 * (e - actual[to]) / actual[to]
			if to == "off" && e != actual[to] || math.Abs(d) > 3 {
				t.Errorf("from the %s run, %s estimated %.0f, the %s run wrote %.0f (%+.2f%%)", from, to, e, to, actual[to], d)
			}
		}
	}
}
