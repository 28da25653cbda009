package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/growth"
)

// A dataset report (`walscope report --dataset`): months of WAL drawn from
// an incremental dataset's growth aggregates (package growth), without the
// WAL: bytes per day by resource manager, images against the rest, bytes
// per hour, checkpoints per day by cause, the archive's size, the
// relations, the top growing ones, the weeks and the forecast with its
// backtest.

// datasetTopRmgrs is how many resource managers the daily chart names (the
// rest are "other").
const datasetTopRmgrs = 6

// WriteDatasetReport renders the growth report r of the dataset named
// dataset as one self-contained HTML page (inline CSS and SVG, and the
// same self-check script as WriteReport's).
func WriteDatasetReport(w io.Writer, dataset string, r *growth.Report, generated time.Time) error {
	ids := &ChartIDs{}
	var days []*growth.Day
	for _, d := range r.Days {
		if !d.Unknown {
			days = append(days, d)
		}
	}
	v := datasetView{Title: "walscope growth: " + dataset, Generated: generated.UTC().Format("2006-01-02 15:04:05 UTC"),
		NotComputed: r.NotComputed}
	v.Summary = []reportKV{
		{"dataset", dataset},
		{"batches", fmt.Sprint(r.Batches)},
		{"days in the dataset", r.FirstDay + " to " + r.LastDay},
	}
	if r.Since != "" || r.Until != "" {
		v.Summary = append(v.Summary, reportKV{"days reported", orDash(r.Since) + " to " + orDash(r.Until)})
	}
	t := &r.Total
	v.Summary = append(v.Summary,
		reportKV{"records", reportCount(t.Records)},
		reportKV{"WAL (records' bytes)", format.FormatBytes(float64(t.Bytes))},
		reportKV{"full-page images", fmt.Sprintf("%s in %s images (%s of the bytes)", format.FormatBytes(float64(t.ImageBytes)), reportCount(t.Images), reportPct(t.ImageBytes, t.Bytes))})
	if len(days) > 0 {
		v.Summary = append(v.Summary, reportKV{"archive (segments) at the last day", format.FormatBytes(float64(days[len(days)-1].ArchiveBytes))})
	}
	x := make([]float64, len(days))
	for i := range days {
		x[i] = float64(i)
	}
	dayLabel := func(f float64) string {
		i := int(f)
		if len(days) == 0 {
			return ""
		}
		return days[0].Start.AddDate(0, 0, i).Format("01-02")
	}
	if len(days) > 0 {
		// Bytes per day by resource manager.
		totals := map[string]uint64{}
		for _, d := range days {
			for k, c := range d.Rmgr {
				totals[k] += c.Bytes
			}
		}
		var rms []string
		for k := range totals {
			rms = append(rms, k)
		}
		sort.Slice(rms, func(i, j int) bool {
			return totals[rms[i]] > totals[rms[j]] || totals[rms[i]] == totals[rms[j]] && rms[i] < rms[j]
		})
		named := rms[:min(len(rms), datasetTopRmgrs)]
		series := append([]string{}, named...)
		if len(rms) > len(named) {
			series = append(series, "other")
		}
		vals := make([][]float64, len(series))
		for s := range vals {
			vals[s] = make([]float64, len(days))
		}
		for i, d := range days {
			for k, c := range d.Rmgr {
				s := len(named)
				for j, n := range named {
					if n == k {
						s = j
					}
				}
				vals[s][i] += float64(c.Bytes)
			}
		}
		v.Charts = append(v.Charts, (&AreaChart{Title: "WAL per day by resource manager", XLabel: "day (UTC)", YLabel: "bytes", X: x, XEnd: float64(len(days)),
			Series: series, Values: vals, XFormat: dayLabel, YBytes: true}).SVG(ids))
		img := make([]float64, len(days))
		rest := make([]float64, len(days))
		for i, d := range days {
			img[i], rest[i] = float64(d.ImageBytes), float64(d.Bytes-d.ImageBytes)
		}
		v.Charts = append(v.Charts, (&AreaChart{Title: "Full-page images and the rest, per day", XLabel: "day (UTC)", YLabel: "bytes", X: x, XEnd: float64(len(days)),
			Series: []string{"full-page images", "the rest of the records"}, Values: [][]float64{img, rest}, XFormat: dayLabel, YBytes: true}).SVG(ids))
		// Checkpoints per day by cause.
		causes := map[string]bool{}
		for _, d := range days {
			for k := range d.Checkpoints {
				causes[k] = true
			}
		}
		var cs []string
		for k := range causes {
			cs = append(cs, k)
		}
		sort.Strings(cs)
		if len(cs) > 0 {
			cv := make([][]float64, len(cs))
			for s, k := range cs {
				cv[s] = make([]float64, len(days))
				for i, d := range days {
					cv[s][i] = float64(d.Checkpoints[k])
				}
			}
			v.Charts = append(v.Charts, (&AreaChart{Title: "Checkpoints per day by cause (the checkpoints table's)", XLabel: "day (UTC)", YLabel: "checkpoints", X: x, XEnd: float64(len(days)),
				Series: cs, Values: cv, XFormat: dayLabel, YFormat: func(f float64) string { return format.FormatCount(f) }}).SVG(ids))
		}
		// WAL per day and its forecast; the archive and its forecast.
		f := &r.Forecast
		n := len(days)
		horizon := 0
		if f.WAL != nil {
			horizon = min(90, len(f.WAL.Days))
		}
		fx := make([]float64, n+horizon)
		for i := range fx {
			fx[i] = float64(i)
		}
		actual := make([]float64, n+horizon)
		predicted := make([]float64, n+horizon)
		archive := make([]float64, n+horizon)
		archiveF := make([]float64, n+horizon)
		for i, d := range days {
			actual[i] = float64(d.Bytes)
			archive[i] = float64(d.ArchiveBytes)
		}
		if f.WAL != nil {
			// the forecast's days after the report's last
			last := days[n-1].Start
			cum := float64(days[n-1].ArchiveBytes)
			k := n
			for _, p := range f.WAL.Days {
				t, err := time.Parse(time.DateOnly, p.Day)
				if err != nil || !t.After(last) {
					continue
				}
				if k >= n+horizon {
					break
				}
				predicted[k] = p.Value
				cum += p.Value * f.SegmentRatio
				archiveF[k] = cum
				k++
			}
		}
		v.Charts = append(v.Charts, (&AreaChart{Title: "WAL per day, and the forecast of the next 90 days", XLabel: "day (UTC)", YLabel: "bytes", X: fx, XEnd: float64(len(fx)),
			Series: []string{"WAL", "forecast"}, Values: [][]float64{actual, predicted}, XFormat: dayLabel, YBytes: true}).SVG(ids))
		v.Charts = append(v.Charts, (&AreaChart{Title: "The archive's size (its segments), and the forecast", XLabel: "day (UTC)", YLabel: "bytes", X: fx, XEnd: float64(len(fx)),
			Series: []string{"archive", "forecast"}, Values: [][]float64{archive, archiveF}, XFormat: dayLabel, YBytes: true}).SVG(ids))
	}
	// Bytes per hour (with --by hour).
	if len(r.Hours) > 0 {
		var hs []*growth.Period
		for _, h := range r.Hours {
			if !h.Unknown {
				hs = append(hs, h)
			}
		}
		if len(hs) > 0 {
			first := hs[0].Start
			nh := int(hs[len(hs)-1].Start.Sub(first).Hours()) + 1
			hx := make([]float64, nh)
			hv := make([]float64, nh)
			for i := range hx {
				hx[i] = float64(i)
			}
			for _, h := range hs {
				hv[int(h.Start.Sub(first).Hours())] += float64(h.Bytes)
			}
			v.Charts = append(v.Charts, (&AreaChart{Title: "WAL per hour", XLabel: "hour (UTC)", YLabel: "bytes", X: hx, XEnd: float64(nh),
				Series: []string{"WAL"}, Values: [][]float64{hv}, XFormat: func(f float64) string { return first.Add(time.Duration(f) * time.Hour).Format("01-02 15h") }, YBytes: true}).SVG(ids))
		}
	}
	// Relations.
	var rows []BarRow
	for i, rc := range t.Relations {
		if i == 15 {
			break
		}
		rows = append(rows, BarRow{Label: rc.Label, Values: []float64{float64(rc.ImageBytes), float64(rc.Bytes - rc.ImageBytes)}})
	}
	if len(rows) > 0 {
		v.Charts = append(v.Charts, (&BarChart{Title: "Relations by WAL (the relation of a record's first block)", XLabel: "bytes", Series: []string{"full-page images", "the rest"}, Rows: rows, Bytes: true}).SVG(ids))
	}
	var grow []BarRow
	for _, g := range r.TopGrowing {
		note := "new"
		if g.ChangePercent != nil {
			note = fmt.Sprintf("%+.0f%%", *g.ChangePercent)
		}
		grow = append(grow, BarRow{Label: g.Label, Values: []float64{float64(g.Last7)}, Note: fmt.Sprintf("was %s, %s", format.FormatBytes(float64(g.Prev7)), note)})
	}
	if len(grow) > 0 {
		v.Charts = append(v.Charts, (&BarChart{Title: "Top growing relations: the last 7 days (the 7 before in the note)", XLabel: "bytes", Series: []string{"last 7 days"}, Rows: grow, Bytes: true}).SVG(ids))
	}
	v.Weeks = reportTable{Columns: []string{"week (Monday)", "days", "records", "bytes", "image bytes", "change"}, Numeric: []bool{false, true, true, true, true, true}}
	for _, wk := range r.Weeks {
		ch := "-"
		if wk.ChangePercent != nil {
			ch = fmt.Sprintf("%+.1f%%", *wk.ChangePercent)
		}
		v.Weeks.Rows = append(v.Weeks.Rows, []string{wk.Start, fmt.Sprint(wk.Days), reportCount(wk.Records), format.FormatBytes(float64(wk.Bytes)), format.FormatBytes(float64(wk.ImageBytes)), ch})
	}
	f := &r.Forecast
	if f.WAL == nil {
		v.ForecastNote = f.None
	} else {
		bt := &f.WAL.Backtest
		v.Forecast = []reportKV{
			{"model", "a linear trend times day-of-week factors, least squares (docs/commands/growth.md#forecast)"},
			{"history", fmt.Sprintf("%d complete days, %s to %s", f.HistoryDays, f.HistoryFrom, f.HistoryTo)},
			{"error on held-back days", fmt.Sprintf("fitted on %d days, the next %d predicted: MAPE %.1f%%, largest %.1f%% (%s)", bt.FitDays, bt.HeldBack, bt.MAPE, bt.MaxAPE, format.FormatBytes(bt.MaxAbsError))},
			{"WAL in the next 30 days", format.FormatBytes(f.WAL.Next30)},
			{"WAL in the next 90 days", format.FormatBytes(f.WAL.Next90)},
			{"archive now", format.FormatBytes(float64(f.ArchiveBytes))},
			{"archive in 30 days", format.FormatBytes(f.Archive30)},
			{"archive in 90 days", format.FormatBytes(f.Archive90)},
		}
		if ab := f.ArchiveBacktest; ab != nil {
			v.Forecast = append(v.Forecast, reportKV{"archive growth over the held-back days", fmt.Sprintf("predicted %s, actual %s (%+.1f%%)", format.FormatBytes(ab.Predicted), format.FormatBytes(ab.Actual), ab.ErrorPercent)})
		}
		v.Backtest = reportTable{Columns: []string{"held-back day", "actual", "predicted", "error"}, Numeric: []bool{false, true, true, true}}
		for _, d := range bt.Days {
			e := "-"
			if d.Actual > 0 {
				e = fmt.Sprintf("%+.1f%%", 100*(d.Predicted-d.Actual)/d.Actual)
			}
			v.Backtest.Rows = append(v.Backtest.Rows, []string{d.Day, format.FormatBytes(d.Actual), format.FormatBytes(d.Predicted), e})
		}
	}
	if wi := r.WhatIf; wi != nil && wi.SampledImages > 0 {
		v.WhatIf = reportTable{Columns: []string{"wal_compression", "image bytes", "saved against the WAL as stored"}, Numeric: []bool{false, true, true}}
		v.WhatIf.Rows = append(v.WhatIf.Rows, []string{"as stored", format.FormatBytes(float64(wi.ImageBytes)), "-"})
		for _, m := range []string{"off", "pglz", "lz4", "zstd"} {
			v.WhatIf.Rows = append(v.WhatIf.Rows, []string{m, format.FormatBytes(wi.Estimate[m]), format.FormatBytes(wi.Saved[m])})
		}
		v.WhatIfNote = fmt.Sprintf("Estimated from %d of the %d images, sized at append time under every method (off: exact).", wi.SampledImages, wi.Images)
	}
	if st := r.Settings; st != nil && (st.Days > 0 || len(st.NotRecorded) > 0) {
		v.Settings = reportTable{Columns: []string{"setting", "record bytes saved", "of the bytes", "images dropped"}, Numeric: []bool{false, true, true, true}}
		for _, sc := range st.Scenarios {
			if !sc.Applies {
				v.Settings.Rows = append(v.Settings.Rows, []string{sc.Scenario, "-", "-", "-"})
				continue
			}
			img := "-"
			if sc.Scenario == growth.ScenarioFPWOff {
				img = reportCount(sc.ImagesDropped)
			}
			v.Settings.Rows = append(v.Settings.Rows, []string{sc.Scenario, format.FormatBytes(float64(sc.SavedBytes)), fmt.Sprintf("%.1f%%", sc.Percent), img})
		}
		v.SettingsNote = fmt.Sprintf("Over %d days (%s of records, wal_level %s), counted at append time as walscope whatif estimates them (-: the stream is at or below the setting).", st.Days, format.FormatBytes(float64(st.Bytes)), orDash(st.WalLevel))
		if n := len(st.NotRecorded); n > 0 {
			v.SettingsNote += fmt.Sprintf(" %d days not recorded (batches written before the estimate), left out: %s to %s.", n, st.NotRecorded[0], st.NotRecorded[n-1])
		}
	}
	if sp := r.Spacing; sp != nil && (sp.Days > 0 || len(sp.NotRecorded) > 0) {
		v.Spacing = reportTable{Columns: []string{"scenario", "settings", "record bytes saved", "of the bytes", "checkpoints"}, Numeric: []bool{false, false, true, true, true}}
		for _, sc := range sp.Scenarios {
			sets := make([]string, len(sc.Settings))
			for i, c := range sc.Settings {
				sets[i] = growth.SettingsLabel(c)
			}
			v.Spacing.Rows = append(v.Spacing.Rows, []string{sc.Scenario, strings.Join(sets, "; "), format.FormatBytes(float64(sc.SavedBytes)), fmt.Sprintf("%.1f%%", sc.Percent), strconv.Itoa(sc.Checkpoints)})
		}
		current := make([]string, len(sp.Current))
		for i, c := range sp.Current {
			current[i] = growth.SettingsLabel(c)
		}
		v.SpacingNote = fmt.Sprintf("Over %d days (%s of records; the stream's %s), simulated at append time as walscope whatif does (negative: closer checkpoints would cost).", sp.Days, format.FormatBytes(float64(sp.Bytes)), orDash(strings.Join(current, "; ")))
		if len(sp.Assumed) > 0 {
			v.SpacingNote += " Assumed: " + strings.Join(sp.Assumed, ", ") + "."
		}
		if n := len(sp.NotRecorded); n > 0 {
			v.SpacingNote += fmt.Sprintf(" %d days not recorded (batches written before the estimate), left out: %s to %s.", n, sp.NotRecorded[0], sp.NotRecorded[n-1])
		}
	}
	return datasetTemplate().Execute(w, v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type datasetView struct {
	Title, Generated string
	Summary          []reportKV
	Charts           []template.HTML
	Weeks            reportTable
	Forecast         []reportKV
	ForecastNote     string
	Backtest         reportTable
	WhatIf           reportTable
	WhatIfNote       string
	Settings         reportTable
	SettingsNote     string
	Spacing          reportTable
	SpacingNote      string
	NotComputed      []string
}

var datasetTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("dataset").Parse(datasetHTML))
})

const datasetHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; color: #222; margin: 0 auto; padding: 16px 24px; max-width: 1320px; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0; }
h2 { font-size: 1.25em; border-bottom: 2px solid #4e79a7; padding-bottom: 3px; margin-top: 1.6em; }
svg.chart { width: 100%; max-width: 980px; height: auto; display: block; margin: 6px 0 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef2f7; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 16em; font-weight: normal; background: #f5f5f5; }
.note { color: #555; font-size: 13px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="note">Generated by walscope on {{.Generated}} from the dataset's batch manifests alone (no WAL, no Parquet file). Days and hours are UTC, by the last commit time at or before each record (the records' day partition). Sizes in bytes, kB, MB (powers of 1024).</p>
<h2 id="summary">Summary</h2>
<table class="kv">{{range .Summary}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
<h2 id="charts">Over the days</h2>
{{range .Charts}}{{.}}{{end}}
<h2 id="weeks">Week over week</h2>
{{template "table" .Weeks}}
<h2 id="forecast">Forecast</h2>
{{with .ForecastNote}}<p>{{.}}</p>{{end}}
{{if .Forecast}}<table class="kv">{{range .Forecast}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
{{template "table" .Backtest}}{{end}}
{{if .WhatIf.Rows}}<h2 id="whatif">wal_compression on the images</h2>
<p class="note">{{.WhatIfNote}}</p>
{{template "table" .WhatIf}}{{end}}
{{if .Settings.Rows}}<h2 id="settings">What other settings would have saved</h2>
<p class="note">{{.SettingsNote}}</p>
{{template "table" .Settings}}{{end}}
{{if .Spacing.Rows}}<h2 id="spacing">What other checkpoint spacing would have saved</h2>
<p class="note">{{.SpacingNote}}</p>
{{template "table" .Spacing}}{{end}}
{{range .NotComputed}}<p class="note">Not computed: {{.}}</p>{{end}}
` + reportTail
