package growth

import (
	"fmt"
	"sort"
	"time"

	"github.com/walscope/walscope/export"
)

// Options bound and shape a Report.
type Options struct {
	// Since and Until bound the days (YYYY-MM-DD, both included; "" for
	// no bound). The unknown day is only reported without bounds.
	Since, Until string
	// Hours adds the hours of the days (Report.Hours).
	Hours bool
	// Top is how many growing relations to list (0: 10).
	Top int
}

// RelationCounts is a relation's totals in a period.
type RelationCounts struct {
	Relation
	Label string `json:"label"`
	Counts
}

// Growing is a relation's bytes in the last 7 days against the 7 before.
type Growing struct {
	Relation
	Label  string `json:"label"`
	Last7  uint64 `json:"last_7_days_bytes"`
	Prev7  uint64 `json:"previous_7_days_bytes"`
	Change int64  `json:"change_bytes"`
	// ChangePercent is null when the previous 7 days had none.
	ChangePercent *float64 `json:"change_percent"`
}

// Week is a calendar week's (Monday to Sunday) totals: of the whole week
// (also its days before --since), compared with the week before.
type Week struct {
	Start         string   `json:"week"` // its Monday
	Days          int      `json:"days"` // of it in the report (7: a whole week)
	Bytes         uint64   `json:"bytes"`
	Records       uint64   `json:"records"`
	ImageBytes    uint64   `json:"image_bytes"`
	ChangePercent *float64 `json:"change_percent"` // against the week before, null for the first
}

// ForecastReport is the forecast of daily WAL bytes and of the archive.
type ForecastReport struct {
	// History is the complete days the model was fitted to: the report's
	// days less the dataset's first and last (either may hold part of a
	// day only), days without WAL counting 0.
	HistoryFrom string `json:"history_from,omitempty"`
	HistoryTo   string `json:"history_to,omitempty"`
	HistoryDays int    `json:"history_days"`
	// None says why there is no forecast (too little history); WAL is
	// nil then.
	None string `json:"none,omitempty"`
	// WAL forecasts the records' bytes per day.
	WAL *Series `json:"wal_bytes,omitempty"`
	// SegmentRatio is the history's segment bytes per WAL byte (the
	// segment files' sizes over the records' bytes: page headers, the
	// rest of switched segments): the archive grows by the WAL forecast
	// times it. Segments begin on whole days only, so a day's segment
	// bytes are too coarse to fit on their own.
	SegmentRatio float64 `json:"segment_bytes_per_wal_byte"`
	// ArchiveBacktest is the archive's growth over the held-back days
	// as the backtest's model predicts it (its WAL times the ratio of the
	// days it was fitted on), against the segments' bytes.
	ArchiveBacktest *ArchiveBacktest `json:"archive_backtest,omitempty"`
	// ArchiveBytes is the archive's size at the report's last day (every
	// segment the dataset lists up to it); Archive30 and Archive90 that
	// plus the WAL forecast's next 30 and 90 days (after the report's last
	// day) times SegmentRatio.
	ArchiveBytes int64   `json:"archive_bytes"`
	Archive30    float64 `json:"archive_bytes_in_30_days"`
	Archive90    float64 `json:"archive_bytes_in_90_days"`
}

// ArchiveBacktest is the predicted and actual archive growth over the
// held-back days.
type ArchiveBacktest struct {
	Days         int     `json:"days"`
	Predicted    float64 `json:"predicted_bytes"`
	Actual       float64 `json:"actual_bytes"`
	ErrorPercent float64 `json:"error_percent"` // 100 (predicted-actual)/actual
}

// Report is what `walscope growth` prints.
type Report struct {
	Batches  int    `json:"batches"`
	FirstDay string `json:"dataset_first_day"`
	LastDay  string `json:"dataset_last_day"`
	Since    string `json:"since,omitempty"`
	Until    string `json:"until,omitempty"`
	Days     []*Day `json:"days"`
	// Hours (Options.Hours) are the hours of Days.
	Hours []*Period `json:"hours,omitempty"`
	// Total is the days' sum.
	Total Period `json:"total"`
	// TopGrowing are the relations whose bytes grew most in the last 7
	// days of the report against the 7 before (also before --since).
	TopGrowing []Growing      `json:"top_growing"`
	Weeks      []Week         `json:"weeks"`
	Forecast   ForecastReport `json:"forecast"`
	// WhatIf estimates the images under every wal_compression.
	WhatIf *WhatIf `json:"whatif"`
	// Settings is what full_page_writes = off and the lower wal_levels
	// would have saved (settings.go).
	Settings *Settings `json:"settings"`
	// Spacing is what max_wal_size and checkpoint_timeout scenarios would
	// have saved (spacing.go).
	Spacing *Spacing `json:"spacing"`
	// NotComputed names what this version does not report.
	NotComputed []string `json:"not_computed"`
}

// NotComputed is what the report leaves out, said in every report.
var NotComputed = []string{}

// WhatIf estimates the report's image bytes under every wal_compression,
// from the sample of images the batches sized (export.GrowthWhatIf):
// under pglz, lz4 and zstd, the days' image_bytes times the sample's bytes
// under the method over its bytes as stored (a ratio estimator: the
// methods' sizes of a page go together, so the ratio varies little from
// image to image); under off, the days' image_bytes_uncompressed (BLCKSZ
// less the hole of every image: exact).
type WhatIf struct {
	// SampledImages of Images were sized (Failed more could not be
	// rebuilt).
	Images        uint64 `json:"images"`
	SampledImages uint64 `json:"sampled_images"`
	Failed        uint64 `json:"failed,omitempty"`
	// ImageBytes are the images' bytes as the WAL stores them; the
	// estimates are theirs under each method, and Saved what a method
	// saves against them (negative: it would have cost).
	ImageBytes uint64             `json:"image_bytes"`
	Estimate   map[string]float64 `json:"estimated_image_bytes"`
	Saved      map[string]float64 `json:"saved_bytes"`
}

// whatIf sums the days' samples.
func whatIf(days []*Day) *WhatIf {
	var s export.GrowthWhatIf
	var raw uint64
	w := &WhatIf{Estimate: map[string]float64{}, Saved: map[string]float64{}}
	for _, d := range days {
		w.Images += d.Images
		w.ImageBytes += d.ImageBytes
		raw += d.ImageBytesRaw
		if d.WhatIf != nil {
			s.Images += d.WhatIf.Images
			s.Stored += d.WhatIf.Stored
			s.Off += d.WhatIf.Off
			s.PGLZ += d.WhatIf.PGLZ
			s.LZ4 += d.WhatIf.LZ4
			s.Zstd += d.WhatIf.Zstd
			s.Failed += d.WhatIf.Failed
		}
	}
	w.SampledImages, w.Failed = s.Images, s.Failed
	if w.Images > 0 {
		w.Estimate["off"] = float64(raw)
	}
	if s.Stored > 0 {
		for m, v := range map[string]uint64{"pglz": s.PGLZ, "lz4": s.LZ4, "zstd": s.Zstd} {
			w.Estimate[m] = float64(w.ImageBytes) * float64(v) / float64(s.Stored)
		}
	}
	for m, e := range w.Estimate {
		w.Saved[m] = float64(w.ImageBytes) - e
	}
	return w
}

// Build makes the report of the dataset's days within opts' bounds.
func (d *Dataset) Build(opts Options) (*Report, error) {
	for _, b := range []string{opts.Since, opts.Until} {
		if b == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, b); err != nil {
			return nil, fmt.Errorf("invalid day %q: YYYY-MM-DD", b)
		}
	}
	if opts.Since != "" && opts.Until != "" && opts.Since > opts.Until {
		return nil, fmt.Errorf("--since %s is after --until %s", opts.Since, opts.Until)
	}
	top := opts.Top
	if top <= 0 {
		top = 10
	}
	all := d.Days()
	r := &Report{Batches: d.Batches, Since: opts.Since, Until: opts.Until, NotComputed: NotComputed, Total: *newPeriod(time.Time{}, false)}
	var known []*Day
	for _, x := range all {
		if !x.Unknown {
			known = append(known, x)
		}
	}
	if len(known) > 0 {
		r.FirstDay, r.LastDay = known[0].Day, known[len(known)-1].Day
	}
	bounded := opts.Since != "" || opts.Until != ""
	in := func(day string, unknown bool) bool {
		if unknown {
			return !bounded
		}
		return (opts.Since == "" || day >= opts.Since) && (opts.Until == "" || day <= opts.Until)
	}
	for _, x := range all {
		if in(x.Day, x.Unknown) {
			x.fill(d)
			r.Days = append(r.Days, x)
			r.Total.addPeriod(&x.Period)
		}
	}
	r.Total.fill(d)
	if opts.Hours {
		for _, h := range d.Hours {
			day := export.UnknownDay
			if !h.Unknown {
				day = h.Start.Format(time.DateOnly)
			}
			if in(day, h.Unknown) {
				h.fill(d)
				r.Hours = append(r.Hours, h)
			}
		}
	}
	// The known days, gaps filled with empty ones: of the report, and of
	// the dataset up to the report's last day (what the report's first
	// week and its last 7 days compare with may precede --since).
	filled := func(src []*Day) []*Day {
		var days []*Day
		for _, x := range src {
			if x.Unknown {
				continue
			}
			for len(days) > 0 && days[len(days)-1].Start.AddDate(0, 0, 1).Before(x.Start) {
				t := days[len(days)-1].Start.AddDate(0, 0, 1)
				days = append(days, &Day{Period: *newPeriod(t, false), Day: t.Format(time.DateOnly), Checkpoints: Checkpoints{}, ArchiveBytes: days[len(days)-1].ArchiveBytes})
			}
			days = append(days, x)
		}
		return days
	}
	days := filled(r.Days)
	var upTo []*Day
	for _, x := range all {
		if len(days) > 0 && !x.Unknown && x.Day <= days[len(days)-1].Day {
			upTo = append(upTo, x)
		}
	}
	upTo = filled(upTo)
	r.TopGrowing = topGrowing(d, upTo, top)
	r.Weeks = []Week{}
	if len(days) > 0 {
		firstMonday := days[0].Start.AddDate(0, 0, -weekdayIndex(days[0].Start)).Format(time.DateOnly)
		for _, w := range weeks(upTo) {
			if w.Start >= firstMonday {
				r.Weeks = append(r.Weeks, w)
			}
		}
		// the first week's days within the report only
		if n := len(r.Weeks); n > 0 {
			for i := range r.Weeks {
				r.Weeks[i].Days = 0
			}
			for _, x := range days {
				monday := x.Start.AddDate(0, 0, -weekdayIndex(x.Start)).Format(time.DateOnly)
				for i := range r.Weeks {
					if r.Weeks[i].Start == monday {
						r.Weeks[i].Days++
					}
				}
			}
		}
	}
	r.Forecast = forecast(days, r.FirstDay, r.LastDay)
	r.WhatIf = whatIf(days)
	r.Settings = d.settingsReport(r.Days)
	r.Spacing = d.spacingReport(r.Days, d.dataLenMeans(r.Days))
	return r, nil
}

// fill lists the period's relations (Period.Relations), largest first.
func (p *Period) fill(d *Dataset) {
	p.Relations = p.Relations[:0]
	for k, c := range p.Relation {
		rel := d.relation(k)
		p.Relations = append(p.Relations, RelationCounts{Relation: rel, Label: rel.Label(), Counts: *c})
	}
	sort.Slice(p.Relations, func(i, j int) bool {
		a, b := p.Relations[i], p.Relations[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		if a.Label != b.Label {
			return a.Label < b.Label
		}
		return a.Relation.less(b.Relation) // one name, two files (a rewrite, a tablespace move)
	})
}

func (d *Dataset) relation(k RelKey) Relation {
	if r := d.Relations[k]; r != nil {
		return *r
	}
	return Relation{Tablespace: k.Tablespace, DB: k.DB, Rel: k.Rel}
}

// topGrowing compares the last 7 of days with the 7 before.
func topGrowing(d *Dataset, days []*Day, top int) []Growing {
	if len(days) == 0 {
		return []Growing{}
	}
	n := len(days)
	var last, prev []*Period
	for i := max(0, n-7); i < n; i++ {
		last = append(last, &days[i].Period)
	}
	for i := max(0, n-14); i < max(0, n-7); i++ {
		prev = append(prev, &days[i].Period)
	}
	lt, pt := RelationTotals(last), RelationTotals(prev)
	var out []Growing
	for k, c := range lt {
		g := Growing{Relation: d.relation(k), Last7: c.Bytes}
		if p := pt[k]; p != nil {
			g.Prev7 = p.Bytes
		}
		out = append(out, g)
	}
	for k, p := range pt {
		if lt[k] == nil {
			out = append(out, Growing{Relation: d.relation(k), Prev7: p.Bytes})
		}
	}
	for i := range out {
		g := &out[i]
		g.Label = g.Relation.Label()
		g.Change = int64(g.Last7) - int64(g.Prev7)
		if g.Prev7 > 0 {
			pc := 100 * float64(g.Change) / float64(g.Prev7)
			g.ChangePercent = &pc
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Change != out[j].Change {
			return out[i].Change > out[j].Change
		}
		if out[i].Label != out[j].Label {
			return out[i].Label < out[j].Label
		}
		return out[i].Relation.less(out[j].Relation)
	})
	if len(out) > top {
		out = out[:top]
	}
	if out == nil {
		out = []Growing{}
	}
	return out
}

// weeks sums days by calendar week.
func weeks(days []*Day) []Week {
	out := []Week{}
	for _, x := range days {
		monday := x.Start.AddDate(0, 0, -weekdayIndex(x.Start)).Format(time.DateOnly)
		if len(out) == 0 || out[len(out)-1].Start != monday {
			out = append(out, Week{Start: monday})
		}
		w := &out[len(out)-1]
		w.Days++
		w.Bytes += x.Bytes
		w.Records += x.Records
		w.ImageBytes += x.ImageBytes
	}
	for i := 1; i < len(out); i++ {
		if p := out[i-1].Bytes; p > 0 {
			pc := 100 * (float64(out[i].Bytes) - float64(p)) / float64(p)
			out[i].ChangePercent = &pc
		}
	}
	return out
}

// forecast fits the complete days (not the dataset's first or last).
func forecast(days []*Day, first, last string) ForecastReport {
	var hist []*Day
	for _, x := range days {
		if x.Day != first && x.Day != last {
			hist = append(hist, x)
		}
	}
	f := ForecastReport{HistoryDays: len(hist)}
	if len(days) > 0 {
		f.ArchiveBytes = days[len(days)-1].ArchiveBytes
	}
	if len(hist) > 0 {
		f.HistoryFrom, f.HistoryTo = hist[0].Day, hist[len(hist)-1].Day
	}
	if len(hist) > MaxHistoryDays {
		hist = hist[len(hist)-MaxHistoryDays:]
	}
	wal := make([]float64, len(hist))
	seg := make([]float64, len(hist))
	for i, x := range hist {
		wal[i], seg[i] = float64(x.Bytes), float64(x.SegmentBytes)
	}
	if len(hist) < MinHistoryDays {
		f.None = fmt.Sprintf("no forecast: %d complete days of history (the dataset's first and last days left out), %d needed", len(hist), MinHistoryDays)
		return f
	}
	start := hist[0].Start
	var err error
	if f.WAL, err = ForecastSeries(start, wal); err != nil {
		f.None = err.Error()
		return f
	}
	ratio := func(from, to int) float64 {
		var w, s float64
		for i := from; i < to; i++ {
			w, s = w+wal[i], s+seg[i]
		}
		if w == 0 {
			return 0
		}
		return s / w
	}
	f.SegmentRatio = ratio(0, len(hist))
	bt := &f.WAL.Backtest
	ab := &ArchiveBacktest{Days: bt.HeldBack}
	r := ratio(0, bt.FitDays)
	for i, d := range bt.Days {
		ab.Predicted += d.Predicted * r
		ab.Actual += seg[bt.FitDays+i]
	}
	if ab.Actual > 0 {
		ab.ErrorPercent = 100 * (ab.Predicted - ab.Actual) / ab.Actual
	}
	f.ArchiveBacktest = ab
	// The forecast starts after the last history day; the report's days
	// after it (the dataset's last) are in ArchiveBytes already.
	skip := int(days[len(days)-1].Start.Sub(hist[len(hist)-1].Start).Hours() / 24)
	for i, x := range f.WAL.Days {
		if i < skip {
			continue
		}
		if i < skip+30 {
			f.Archive30 += x.Value * f.SegmentRatio
		}
		if i < skip+90 {
			f.Archive90 += x.Value * f.SegmentRatio
		}
	}
	f.Archive30 += float64(f.ArchiveBytes)
	f.Archive90 += float64(f.ArchiveBytes)
	return f
}
