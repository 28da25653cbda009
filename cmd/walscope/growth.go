package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/growth"
	"github.com/walscope/walscope/xlog/objstore"
)

func growthCommand() *cli.Command {
	return &cli.Command{
		Name:  "growth",
		Usage: "how an incremental dataset's WAL grew, by day or hour, and a forecast (from its manifests, without the WAL)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dataset", Usage: "the `DATASET` of `export --append` (a directory or an object-store URL)"},
			&cli.StringFlag{Name: "since", Usage: "first `DAY` reported (YYYY-MM-DD, UTC)"},
			&cli.StringFlag{Name: "until", Usage: "last `DAY` reported (YYYY-MM-DD, UTC)"},
			&cli.StringFlag{Name: "by", Value: "day", Usage: "`PERIOD` of the rows: day or hour"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "`N` relations in the top lists"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or csv"},
		},
		Action: act(growthAction),
	}
}

func growthAction(c *cli.Command) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	by := c.String("by")
	if by != "day" && by != "hour" {
		return usageErr("unrecognized value for option --by: %s (day or hour)", by)
	}
	if c.Args().Len() > 0 {
		return usageErr("growth reads the dataset only (--dataset), not WAL: %s", c.Args().First())
	}
	rep, err := loadGrowth(c, by == "hour")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(c.Root().Writer)
	switch outFormat {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	case "csv":
		err = growthCSV(w, rep, by == "hour")
	default:
		err = growthText(w, c.String("dataset"), rep, by == "hour", c.Int("top"))
	}
	if err == nil {
		err = w.Flush()
	}
	return err
}

// loadGrowth reads the --dataset's aggregates and builds the report of
// --since/--until (growth and report --dataset).
func loadGrowth(c *cli.Command, hours bool) (*growth.Report, error) {
	target := c.String("dataset")
	if target == "" {
		return nil, usageErr("--dataset DATASET is required")
	}
	fsys, err := datasetFS(target)
	if err != nil {
		return nil, err
	}
	d, err := growth.Load(fsys)
	if err != nil {
		if e := storeErr(err); e != nil {
			return nil, e
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
		}
		return nil, &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: %v", target, err)}
	}
	rep, err := d.Build(growth.Options{Since: c.String("since"), Until: c.String("until"), Hours: hours, Top: c.Int("top")})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return rep, nil
}

// datasetFS is the dataset's root, local or in an object store.
func datasetFS(target string) (fs.FS, error) {
	if !objstore.IsURL(target) {
		if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
			return nil, &exitError{code: exitUsage, noHint: true, msg: fmt.Sprintf("%s: not a dataset directory", target)}
		}
		return os.DirFS(target), nil
	}
	loc, err := objstore.ParseURL(target)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	t, err := storeTree(loc)
	if err != nil {
		return nil, storeErr(err)
	}
	return treeFS{t, strings.TrimSuffix(loc.String(), "/")}, nil
}

func mb(b float64) string { return strconv.FormatFloat(b/(1<<20), 'f', 2, 64) }

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

func checkpointCell(ck growth.Checkpoints) string {
	if len(ck) == 0 {
		return "-"
	}
	var keys []string
	for k := range ck {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, ck[k]))
	}
	return strings.Join(parts, ", ")
}

func growthText(w io.Writer, target string, r *growth.Report, hours bool, top int) error {
	fmt.Fprintf(w, "Dataset %s: %d batches, days %s to %s", target, r.Batches, r.FirstDay, r.LastDay)
	if r.Since != "" || r.Until != "" {
		fmt.Fprintf(w, "; reported %s to %s", orDash(r.Since), orDash(r.Until))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	if hours {
		fmt.Fprintf(w, "%-13s %10s %12s %8s %12s %6s\n", "hour", "records", "bytes", "images", "image bytes", "fpi%")
		for _, h := range r.Hours {
			name := export.UnknownHour
			if !h.Unknown {
				name = export.HourKey(h.Start)
			}
			fmt.Fprintf(w, "%-13s %10d %12d %8d %12d %5.1f%%\n", name, h.Records, h.Bytes, h.Images, h.ImageBytes, share(h.ImageBytes, h.Bytes))
		}
	} else {
		fmt.Fprintf(w, "%-10s %10s %12s %8s %12s %6s %9s %10s  %s\n", "day", "records", "bytes", "images", "image bytes", "fpi%", "segments", "archive MB", "checkpoints")
		for _, d := range r.Days {
			fmt.Fprintf(w, "%-10s %10d %12d %8d %12d %5.1f%% %9d %10s  %s\n", d.Day, d.Records, d.Bytes, d.Images, d.ImageBytes, share(d.ImageBytes, d.Bytes),
				d.Segments, mb(float64(d.ArchiveBytes)), checkpointCell(d.Checkpoints))
		}
	}
	t := &r.Total
	fmt.Fprintf(w, "%-10s %10d %12d %8d %12d %5.1f%%\n\n", "total", t.Records, t.Bytes, t.Images, t.ImageBytes, share(t.ImageBytes, t.Bytes))

	fmt.Fprintln(w, "By resource manager:")
	var rms []string
	for k := range t.Rmgr {
		rms = append(rms, k)
	}
	sort.Slice(rms, func(i, j int) bool {
		return t.Rmgr[rms[i]].Bytes > t.Rmgr[rms[j]].Bytes || t.Rmgr[rms[i]].Bytes == t.Rmgr[rms[j]].Bytes && rms[i] < rms[j]
	})
	for _, k := range rms {
		x := t.Rmgr[k]
		fmt.Fprintf(w, "  %-12s %10d records %12d bytes %5.1f%%  images %d (%d bytes)\n", k, x.Records, x.Bytes, share(x.Bytes, t.Bytes), x.Images, x.ImageBytes)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "By relation (the relation of a record's first block):")
	for i, x := range t.Relations {
		if i == top {
			fmt.Fprintf(w, "  ... %d more\n", len(t.Relations)-top)
			break
		}
		fmt.Fprintf(w, "  %-36s %10d records %12d bytes %5.1f%%\n", x.Label, x.Records, x.Bytes, share(x.Bytes, t.Bytes))
	}
	if t.OtherRelations.Records > 0 {
		fmt.Fprintf(w, "  %-36s %10d records %12d bytes %5.1f%%\n", "(relations folded by the cap)", t.OtherRelations.Records, t.OtherRelations.Bytes, share(t.OtherRelations.Bytes, t.Bytes))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Top growing relations (the last 7 days against the 7 before):")
	for _, g := range r.TopGrowing {
		fmt.Fprintf(w, "  %-36s %12d -> %12d bytes  %+d (%s)\n", g.Label, g.Prev7, g.Last7, g.Change, pct(g.ChangePercent))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Weeks (Monday to Sunday):")
	for _, wk := range r.Weeks {
		part := ""
		if wk.Days < 7 {
			part = fmt.Sprintf(" (%d days)", wk.Days)
		}
		fmt.Fprintf(w, "  %s %12d bytes %8s%s\n", wk.Start, wk.Bytes, pct(wk.ChangePercent), part)
	}
	fmt.Fprintln(w)
	f := &r.Forecast
	fmt.Fprintln(w, "Forecast (trend times weekday factors, least squares; docs/commands/growth.md):")
	if f.None != "" {
		fmt.Fprintf(w, "  %s\n", f.None)
	} else {
		bt := &f.WAL.Backtest
		fmt.Fprintf(w, "  history: %d complete days, %s to %s\n", f.HistoryDays, f.HistoryFrom, f.HistoryTo)
		fmt.Fprintf(w, "  error on the last %d days, fitted on the %d before: MAPE %.1f%%, max %.1f%% (%s MB)\n", bt.HeldBack, bt.FitDays, bt.MAPE, bt.MaxAPE, mb(bt.MaxAbsError))
		fmt.Fprintf(w, "  WAL per day: trend %+s MB per day per day; next 30 days %s MB, next 90 days %s MB\n", mb(f.WAL.Model.Slope), mb(f.WAL.Next30), mb(f.WAL.Next90))
		fmt.Fprintf(w, "  archive: %s MB now, %s MB in 30 days, %s MB in 90 days (%.3f segment bytes per WAL byte)\n",
			mb(float64(f.ArchiveBytes)), mb(f.Archive30), mb(f.Archive90), f.SegmentRatio)
		if ab := f.ArchiveBacktest; ab != nil {
			fmt.Fprintf(w, "  archive growth over the %d held-back days: predicted %s MB, actual %s MB (%+.1f%%)\n", ab.Days, mb(ab.Predicted), mb(ab.Actual), ab.ErrorPercent)
		}
	}
	fmt.Fprintln(w)
	if wi := r.WhatIf; wi != nil && wi.SampledImages > 0 {
		fmt.Fprintf(w, "wal_compression on the images (estimated from %d of %d images, sized at append time):\n", wi.SampledImages, wi.Images)
		fmt.Fprintf(w, "  as stored %s MB", mb(float64(wi.ImageBytes)))
		for _, m := range []string{"off", "pglz", "lz4", "zstd"} {
			fmt.Fprintf(w, "; %s %s MB (saves %s MB)", m, mb(wi.Estimate[m]), mb(wi.Saved[m]))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w)
	}
	growthSettingsText(w, r.Settings)
	growthSpacingText(w, r.Spacing)
	for _, n := range r.NotComputed {
		fmt.Fprintf(w, "Not computed: %s\n", n)
	}
	return nil
}

// growthSettingsText prints what the settings would have saved.
func growthSettingsText(w io.Writer, s *growth.Settings) {
	if s == nil {
		return
	}
	if s.Days > 0 {
		fmt.Fprintf(w, "What other settings would have saved (record bytes, over %d days of %s MB; wal_level %s; estimated at append time as walscope whatif does):\n", s.Days, mb(float64(s.Bytes)), s.WalLevel)
		for _, sc := range s.Scenarios {
			if !sc.Applies {
				fmt.Fprintf(w, "  %-22s -  (the stream is at or below it)\n", sc.Scenario)
				continue
			}
			extra := ""
			if sc.Scenario == growth.ScenarioFPWOff {
				extra = fmt.Sprintf(", %d images dropped", sc.ImagesDropped)
			}
			fmt.Fprintf(w, "  %-22s saves %s MB (%.1f%%)%s\n", sc.Scenario, mb(float64(sc.SavedBytes)), sc.Percent, extra)
		}
		for _, wk := range s.Weeks {
			fmt.Fprintf(w, "  week %s (%d days):", wk.Start, wk.Days)
			for _, sc := range s.Scenarios {
				if sc.Applies {
					fmt.Fprintf(w, " %s %s MB", sc.Scenario, mb(float64(wk.Saved[sc.Scenario])))
				}
			}
			fmt.Fprintln(w)
		}
	}
	if len(s.NotRecorded) > 0 {
		fmt.Fprintf(w, "  not recorded (batches written before the settings estimate): %d days, %s\n", len(s.NotRecorded), strings.Join(s.NotRecorded, ", "))
	}
	fmt.Fprintln(w)
}

// growthSpacingText prints what other checkpoint spacing would have saved.
func growthSpacingText(w io.Writer, s *growth.Spacing) {
	if s == nil {
		return
	}
	if s.Days > 0 {
		current := make([]string, len(s.Current))
		for i, c := range s.Current {
			current[i] = growth.SettingsLabel(c)
		}
		assumed := ""
		if len(s.Assumed) > 0 {
			assumed = " (assumed: " + strings.Join(s.Assumed, ", ") + ")"
		}
		fmt.Fprintf(w, "What other checkpoint spacing would have saved (record bytes, over %d days of %s MB; the stream's %s%s; simulated at append time as walscope whatif does):\n",
			s.Days, mb(float64(s.Bytes)), strings.Join(current, "; "), assumed)
		for _, sc := range s.Scenarios {
			sets := make([]string, len(sc.Settings))
			for i, c := range sc.Settings {
				sets[i] = growth.SettingsLabel(c)
			}
			fmt.Fprintf(w, "  %-22s saves %s MB (%.1f%%), %d checkpoints (%s)\n", sc.Scenario, mb(float64(sc.SavedBytes)), sc.Percent, sc.Checkpoints, strings.Join(sets, "; "))
		}
		for _, wk := range s.Weeks {
			fmt.Fprintf(w, "  week %s (%d days):", wk.Start, wk.Days)
			for _, sc := range s.Scenarios {
				fmt.Fprintf(w, " %s %s MB", sc.Scenario, mb(float64(wk.Saved[sc.Scenario])))
			}
			fmt.Fprintln(w)
		}
		if s.DroppedBlocks > 0 {
			fmt.Fprintf(w, "  %d blocks seen were not carried from night to night (each may have needed one image more under closer checkpoints)\n", s.DroppedBlocks)
		}
	}
	if len(s.NotRecorded) > 0 {
		fmt.Fprintf(w, "  not recorded (batches written before the spacing estimate): %d days, %s\n", len(s.NotRecorded), strings.Join(s.NotRecorded, ", "))
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func share(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// growthCSV writes the report as rows of period, group, key and counts:
// group total (key empty), rmgr, relation, other_relations, checkpoints
// (key the cause, count), segments (count, bytes: their sizes), archive
// (bytes), settings_saved and spacing_saved (key the scenario, bytes: the
// record bytes it would have saved; a day without the estimate has none),
// and forecast (a future day: key wal_bytes).
func growthCSV(out io.Writer, r *growth.Report, hours bool) error {
	w := csv.NewWriter(out)
	w.Write([]string{"period", "group", "key", "records", "bytes", "images", "image_bytes", "image_bytes_uncompressed", "count"})
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	row := func(period, group, key string, c *growth.Counts, count string) {
		w.Write([]string{period, group, key, u(c.Records), u(c.Bytes), u(c.Images), u(c.ImageBytes), u(c.ImageBytesRaw), count})
	}
	period := func(p *growth.Period) {
		name := export.UnknownDay
		if !p.Unknown {
			name = p.Start.Format(time.DateOnly)
			if hours {
				name = export.HourKey(p.Start)
			}
		} else if hours {
			name = export.UnknownHour
		}
		row(name, "total", "", &p.Counts, "")
		var rms []string
		for k := range p.Rmgr {
			rms = append(rms, k)
		}
		sort.Strings(rms)
		for _, k := range rms {
			row(name, "rmgr", k, p.Rmgr[k], "")
		}
		for _, x := range p.Relations {
			row(name, "relation", x.Label, &x.Counts, "")
		}
		if p.OtherRelations.Records > 0 {
			row(name, "other_relations", "", &p.OtherRelations, "")
		}
	}
	if hours {
		for _, h := range r.Hours {
			period(h)
		}
	} else {
		for _, d := range r.Days {
			period(&d.Period)
			var ks []string
			for k := range d.Checkpoints {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				w.Write([]string{d.Day, "checkpoints", k, "", "", "", "", "", strconv.Itoa(d.Checkpoints[k])})
			}
			w.Write([]string{d.Day, "segments", "", "", strconv.FormatInt(d.SegmentBytes, 10), "", "", "", strconv.Itoa(d.Segments)})
			w.Write([]string{d.Day, "archive", "", "", strconv.FormatInt(d.ArchiveBytes, 10), "", "", "", ""})
			for _, sc := range growth.SettingsScenarios {
				if v, ok := d.SettingsSaved[sc]; ok {
					w.Write([]string{d.Day, "settings_saved", sc, "", strconv.FormatInt(v, 10), "", "", "", ""})
				}
			}
			for _, sc := range growth.SpacingScenarios {
				if v, ok := d.SpacingSaved[sc]; ok {
					w.Write([]string{d.Day, "spacing_saved", sc, "", strconv.FormatInt(v, 10), "", "", "", ""})
				}
			}
		}
	}
	if f := r.Forecast; f.WAL != nil {
		for _, d := range f.WAL.Days {
			w.Write([]string{d.Day, "forecast", "wal_bytes", "", strconv.FormatFloat(math.Round(d.Value), 'f', 0, 64), "", "", "", ""})
		}
	}
	w.Flush()
	return w.Error()
}
