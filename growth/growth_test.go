package growth

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/fstest"
	"time"

	"github.com/walscope/walscope/export"
)

// TestFitExact: a series that is exactly a trend times weekday factors is
// fitted back to them, and predicted without error.
func TestFitExact(t *testing.T) {
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC) // a Monday
	f := [7]float64{1.2, 1.1, 1.0, 1.0, 1.3, 0.8, 0.6}
	var mean float64
	for _, v := range f {
		mean += v
	}
	for i := range f {
		f[i] /= mean / 7
	}
	var ys []float64
	for i := range 35 {
		ys = append(ys, (1000+50*float64(i))*f[i%7])
	}
	m := Fit(start, ys)
	if math.Abs(m.Slope-50) > 1e-6 || math.Abs(m.Level-1000) > 1e-6 {
		t.Errorf("trend %v + %v t, want 1000 + 50 t", m.Level, m.Slope)
	}
	for i := range f {
		if math.Abs(m.Factors[i]-f[i]) > 1e-9 {
			t.Errorf("factor %d: %v, want %v", i, m.Factors[i], f[i])
		}
	}
	s, err := ForecastSeries(start, ys)
	if err != nil {
		t.Fatal(err)
	}
	if s.Backtest.MAPE > 1e-9 || s.Backtest.HeldBack != 7 || s.Backtest.FitDays != 28 {
		t.Errorf("backtest %+v", s.Backtest)
	}
	// day 35 (a Monday) = (1000 + 50*35) * f[0]
	if want := 2750 * f[0]; math.Abs(s.Days[0].Value-want) > 1e-6 || s.Days[0].Day != "2026-10-12" {
		t.Errorf("first forecast day %+v, want %v", s.Days[0], want)
	}
	var n30 float64
	for i := 35; i < 65; i++ {
		n30 += (1000 + 50*float64(i)) * f[i%7]
	}
	if math.Abs(s.Next30-n30) > 1e-6 {
		t.Errorf("next 30 days %v, want %v", s.Next30, n30)
	}
}

// TestBacktestArithmetic: the error on the held-back days is the
// documented formula; 14 days are held back from 42 on, 7 before; fewer
// than 14 days give no forecast.
func TestBacktestArithmetic(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	ys := make([]float64, 42)
	for i := range ys {
		ys[i] = 100
	}
	ys[30], ys[41] = 200, 50 // held-back days that the flat fit misses
	s, err := ForecastSeries(start, ys)
	if err != nil {
		t.Fatal(err)
	}
	bt := s.Backtest
	if bt.HeldBack != 14 || bt.FitDays != 28 || len(bt.Days) != 14 {
		t.Fatalf("backtest %+v", bt)
	}
	// fitted on 28 days of 100: predicts 100 every day
	if bt.Days[0].Predicted != 100 {
		t.Errorf("predicted %v", bt.Days[0].Predicted)
	}
	// |100-200|/200 = 50%, |100-50|/50 = 100%, 12 days of 0
	if math.Abs(bt.MAPE-150.0/14) > 1e-9 || bt.MaxAPE != 100 || bt.MaxAbsError != 100 {
		t.Errorf("MAPE %v, max %v%%, max abs %v", bt.MAPE, bt.MaxAPE, bt.MaxAbsError)
	}
	if _, err := ForecastSeries(start, ys[:13]); err == nil {
		t.Error("a forecast from 13 days")
	}
	if s, err := ForecastSeries(start, ys[:20]); err != nil || s.Backtest.HeldBack != 7 {
		t.Errorf("20 days: %v", err)
	}
}

// manifestFS is a dataset of batches with the given aggregates.
func manifestFS(gs ...*export.Growth) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i, g := range gs {
		b := export.Batch{ID: i + 1, Walscope: "test", Start: "0/1000000", End: "0/2000000", EndTimeline: 1}
		if g != nil {
			b.Growth, _ = json.Marshal(g)
		}
		fsys[export.ManifestDir+"/"+export.BatchFileName(i+1)] = &fstest.MapFile{Data: b.Encode()}
	}
	return fsys
}

// dailyGrowth is a batch aggregate of the days from start, one hour
// (10:00) each, of bytes(i) bytes of Heap records on relation 16385.
func dailyGrowth(start time.Time, days int, bytes func(i int) int64) *export.Growth {
	g := &export.Growth{Version: export.GrowthVersion, Rmgrs: []string{"Heap"},
		Relations: []export.GrowthRelation{{Tablespace: 1663, DB: 5, Rel: 16385, Schema: "public", Name: "orders"}}}
	for i := range days {
		d := start.AddDate(0, 0, i)
		b := bytes(i)
		g.Hours = append(g.Hours, export.GrowthHour{Hour: export.HourKey(d.Add(10 * time.Hour)),
			Rmgr: [][6]int64{{0, b / 100, b, 0, 0, 0}}, Rel: [][7]int64{{0, 0, b / 100, b, 0, 0, 0}}})
		g.Days = append(g.Days, export.GrowthDay{Day: d.Format(time.DateOnly)})
		g.Segments = append(g.Segments, export.GrowthSegment{Name: fmt.Sprintf("%024X", i+1), Day: d.Format(time.DateOnly), Size: 1 << 20})
	}
	return g
}

// TestLoad: batches' hours add up; a checkpoint or segment two batches
// list counts once, on its first batch's day; a batch without the
// aggregate, or a dataset without a manifest, is an error naming the way
// out.
func TestLoad(t *testing.T) {
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
	a := dailyGrowth(start, 2, func(int) int64 { return 1000 })
	b := dailyGrowth(start.AddDate(0, 0, 1), 2, func(int) int64 { return 500 })
	a.Checkpoints = []export.GrowthCheckpoint{{Redo: "0/1000028", Day: "2026-09-08", Kind: "online", Cause: "time"}}
	b.Checkpoints = []export.GrowthCheckpoint{{Redo: "0/1000028", Day: "2026-09-08", Kind: "online", Cause: "unknown"},
		{Redo: "0/1800028", Day: "2026-09-09", Kind: "online", Cause: "wal"}}
	b.Segments[0].Name = a.Segments[1].Name // the segment the night ended in
	b.Segments[1].Name = "000000010000000000000003"
	d, err := Load(manifestFS(a, b))
	if err != nil {
		t.Fatal(err)
	}
	days := d.Days()
	if len(days) != 3 || days[1].Bytes != 1500 || days[1].Records != 15 || days[2].Bytes != 500 {
		t.Fatalf("days %+v", days)
	}
	if fmt.Sprint(days[1].Checkpoints) != "map[time:1]" || fmt.Sprint(days[2].Checkpoints) != "map[wal:1]" {
		t.Errorf("checkpoints %v %v", days[1].Checkpoints, days[2].Checkpoints)
	}
	if days[0].Segments != 1 || days[1].Segments != 1 || days[2].Segments != 1 || days[2].ArchiveBytes != 3<<20 {
		t.Errorf("segments %d %d %d, archive %d", days[0].Segments, days[1].Segments, days[2].Segments, days[2].ArchiveBytes)
	}
	if _, err := Load(manifestFS(a, nil)); !errors.Is(err, export.ErrNoGrowth) {
		t.Errorf("batch without aggregate: %v", err)
	}
	if _, err := Load(fstest.MapFS{"records/x.parquet": {}}); !errors.Is(err, ErrNoManifest) {
		t.Errorf("no manifest: %v", err)
	}
}

// TestBuild: bounds, weeks, top growing relations and the forecast's
// history (the dataset's first and last days left out).
func TestBuild(t *testing.T) {
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
	d, err := Load(manifestFS(dailyGrowth(start, 30, func(i int) int64 { return 1000 + 100*int64(i) })))
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Forecast.HistoryDays != 28 || r.Forecast.HistoryFrom != "2026-09-08" || r.Forecast.WAL == nil || r.Forecast.WAL.Backtest.MAPE > 1e-9 {
		t.Errorf("forecast %+v", r.Forecast)
	}
	if len(r.Weeks) != 5 || r.Weeks[1].Bytes != 7*1000+100*(7+8+9+10+11+12+13) {
		t.Errorf("weeks %+v", r.Weeks)
	}
	g := r.TopGrowing[0]
	if g.Label != "public.orders" || g.Last7 != 7*1000+100*(23+24+25+26+27+28+29) || g.Change != 7*7*100 {
		t.Errorf("top growing %+v", g)
	}
	r, err = d.Build(Options{Since: "2026-09-10", Until: "2026-09-16"})
	if err != nil || len(r.Days) != 7 || r.Total.Bytes != 7*1000+100*(3+4+5+6+7+8+9) || r.Forecast.None == "" {
		t.Errorf("bounded: %v, %d days, %d bytes, %q", err, len(r.Days), r.Total.Bytes, r.Forecast.None)
	}
	if _, err := d.Build(Options{Since: "2026-9-1"}); err == nil {
		t.Error("a bad day is accepted")
	}
}

// Example reads a dataset's growth (here two batches' manifests in
// memory; `walscope growth --dataset DIR` reads a directory or an object
// store) and prints its days and the forecast's backtest.
func Example() {
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
	// a weekly pattern on a growing trend, and some noise
	week := func(i int) int64 {
		return []int64{1200, 1100, 1000, 1000, 1300, 800, 600}[i%7]*(10+int64(i)) + int64(i*37%11)*200
	}
	first := dailyGrowth(start, 14, week)
	second := dailyGrowth(start.AddDate(0, 0, 14), 14, func(i int) int64 { return week(i + 14) })
	d, err := Load(manifestFS(first, second))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := d.Build(Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(r.Days), "days from", r.FirstDay, "to", r.LastDay, "total", r.Total.Bytes, "bytes")
	bt := r.Forecast.WAL.Backtest
	fmt.Printf("fitted on %d days, %d held back: MAPE %.1f%%\n", bt.FitDays, bt.HeldBack, bt.MAPE)
	// Output:
	// 28 days from 2026-09-07 to 2026-10-04 total 677000 bytes
	// fitted on 19 days, 7 held back: MAPE 3.0%
}

// BenchmarkLoadYear: a year of nightly batches, each of 24 hours of 8
// resource managers and 60 relations (about 60 KB of aggregate per
// manifest), loaded and reported.
func BenchmarkLoadYear(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var gs []*export.Growth
	for n := range 365 {
		g := &export.Growth{Version: export.GrowthVersion, Rmgrs: []string{"XLOG", "Transaction", "Storage", "Heap2", "Heap", "Btree", "Sequence", "Standby"}}
		for r := range 60 {
			g.Relations = append(g.Relations, export.GrowthRelation{Tablespace: 1663, DB: 5, Rel: uint32(16384 + r), Schema: "public", Name: fmt.Sprintf("t%d", r)})
		}
		day := start.AddDate(0, 0, n)
		for h := range 24 {
			gh := export.GrowthHour{Hour: export.HourKey(day.Add(time.Duration(h) * time.Hour))}
			for rm := range 8 {
				gh.Rmgr = append(gh.Rmgr, [6]int64{int64(rm), 1000, 100000, 10, 80000, 80000})
			}
			for r := range 60 {
				gh.Rel = append(gh.Rel, [7]int64{int64(r), int64(r % 8), 100, 10000, 1, 8000, 8000})
			}
			g.Hours = append(g.Hours, gh)
		}
		g.Days = []export.GrowthDay{{Day: day.Format(time.DateOnly)}}
		gs = append(gs, g)
	}
	fsys := manifestFS(gs...)
	var size int
	for _, f := range fsys {
		size += len(f.Data)
	}
	b.ReportMetric(float64(size)/365, "bytes/manifest")
	b.ResetTimer()
	for b.Loop() {
		d, err := Load(fsys)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Build(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
