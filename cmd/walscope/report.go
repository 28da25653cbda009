package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/analyze"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a self-contained HTML report with charts of the WAL",
		ArgsUsage: "PATH... | --compare A B",
		Flags: append(walFlags(),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the report to `FILE` (HTML)"},
			&cli.BoolFlag{Name: "compare", Usage: "draw two archives, A and B, side by side"},
			&cli.StringFlag{Name: "catalog", Usage: "name relations from `FILE`, a CSV export of pg_class (see README)"},
			&cli.IntFlag{Name: "blcksz", Value: 8192, Usage: "data page size BLCKSZ of the cluster"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not print where the report was written"},
		),
		Action: reportAction,
	}
}

func reportAction(c *cli.Context) error {
	out := c.String("out")
	if out == "" {
		return usageErr("report needs --out FILE")
	}
	cat, err := loadCatalog(c)
	if err != nil {
		return err
	}
	blcksz := c.Int("blcksz")
	workers := jobs(c)
	rep := &export.Report{Title: "walscope report", Generated: time.Now()}
	if c.Bool("compare") {
		if c.NArg() != 2 {
			return usageErr("report --compare needs two inputs, A and B")
		}
		for _, path := range c.Args().Slice() {
			src, err := archive.OpenPaths([]string{path})
			if err != nil {
				return openErr([]string{path}, err)
			}
			side, err := collectReport(path, &input{src: src, opts: xlog.Options{FollowHistory: true}}, blcksz, workers)
			if err != nil {
				return err
			}
			side.Catalog = cat
			rep.Sides = append(rep.Sides, side)
		}
		rep.Title = "walscope report: " + c.Args().Get(0) + " compared with " + c.Args().Get(1)
	} else {
		in, err := resolveInput(c)
		if err != nil {
			return err
		}
		name := strings.Join(c.Args().Slice(), " ")
		if d := c.String("path"); d != "" {
			name = strings.TrimSpace("-p " + d + " " + name)
		}
		side, err := collectReport(name, in, blcksz, workers)
		if err != nil {
			return err
		}
		side.Catalog = cat
		rep.Sides = []*export.ReportSide{side}
		rep.Title = "walscope report: " + name
	}
	if err := writeAtomic(out, func(w io.Writer) error { return export.WriteReport(w, rep) }); err != nil {
		return &exitError{code: exitProblem, msg: err.Error()}
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.ErrWriter, "walscope: report written to %s\n", out)
	}
	// As verify: a nightly job learns from the exit code that the WAL read
	// has problems (the report's verification section lists them).
	problems := 0
	for _, side := range rep.Sides {
		if side.Verify != nil && !side.Verify.OK() {
			problems += len(side.Verify.Problems)
		}
	}
	if problems > 0 {
		return &exitError{code: exitProblem, msg: fmt.Sprintf("the WAL read has problems (%d): see the report's verification section, or walscope verify", problems)}
	}
	return nil
}

// collectReport reads the stream twice (a first pass for the redo points,
// the timestamps' range, the wal_level and what-if's inputs; a second that
// feeds every analysis, with the what-if's images recompressed on every core
// by a reader running ahead) and verifies it.
func collectReport(name string, in *input, blcksz, workers int) (*export.ReportSide, error) {
	side := &export.ReportSide{Name: name, BlockSize: blcksz, WalLevel: -1}
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return nil, readerSetupError(err)
	}
	dec := decode.NewDecoder(blcksz)
	wi := analyze.WhatIfInput{PageSize: r.PageSize(), SegSize: r.SegmentSize(), BlockSize: dec.BlockSize, WalLevel: -1}
	var learner analyze.DataLenLearner
	var level analyze.LevelGuesser
	var finder analyze.RedoFinder
	var start, end xlog.LSN
	var tmin, tmax time.Time
	stamp := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if tmin.IsZero() || t.Before(tmin) {
			tmin = t
		}
		if t.After(tmax) {
			tmax = t
		}
	}
	var prev xlog.LSN
	for {
		rec, err := r.Next()
		if err != nil {
			break // the second pass reports how the WAL ends
		}
		d, err := dec.Decode(rec, prev)
		prev = rec.LSN
		if err != nil {
			break
		}
		if start == 0 {
			start = rec.LSN
		}
		end = rec.EndLSN
		learner.Add(d)
		level.Add(d)
		finder.Add(d)
		if cp, ok := rmgr.Checkpoint(d); ok {
			wi.Redo = append(wi.Redo, cp.Redo)
			stamp(cp.Time)
			fpw := map[bool]string{true: "on", false: "off"}[cp.FullPageWrites]
			if n := len(side.FullPageWrites); n == 0 || side.FullPageWrites[n-1] != fpw {
				side.FullPageWrites = append(side.FullPageWrites, fpw)
			}
			if cp.WalLevel >= 0 {
				side.WalLevelStated = true
			}
		}
		if pc, ok := rmgr.ParameterChange(d); ok {
			_ = pc
			side.WalLevelStated = true
		}
		if e, ok := rmgr.XactEnd(d); ok {
			stamp(e.Time)
		}
	}
	r.Close()
	if start == 0 {
		return nil, &exitError{code: exitProblem, msg: fmt.Sprintf("%s: no valid WAL record found", name)}
	}
	wi.Start = start
	wi.WalLevel = level.Level()
	wi.DataLen = learner.Means()
	side.WalLevel = wi.WalLevel
	var rc decode.Recompressor
	wi.Sizer = rc.Estimate
	if workers > 1 {
		p, stop, err := startImagePipeline(in, dec.BlockSize, workers)
		if err != nil {
			return nil, err
		}
		wi.Images = p
		defer stop()
	}
	w := analyze.NewWhatIf(wi)
	b := analyze.NewBreakdown(bucketFor(tmax.Sub(tmin)), finder.Sorted(), start, end)
	b.KeepXids = 0 // the report shows no transactions
	var st analyze.Stats
	bins := export.NewLSNBins(start, end, 240)

	// Second pass.
	r, err = xlog.NewReader(in.src, in.opts)
	if err != nil {
		return nil, readerSetupError(err)
	}
	prev = 0
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				side.EndNote = "Reading stopped at " + r.EndLSN().String() + ": " + err.Error()
			}
			break
		}
		d, err := dec.Decode(rec, prev)
		prev = rec.LSN
		if err != nil {
			side.EndNote = "Reading stopped at " + rec.LSN.String() + ": " + err.Error()
			break
		}
		if rec.LSN >= end {
			break
		}
		b.Add(d)
		st.Add(d)
		w.Add(d)
		bins.Add(d)
	}
	r.Close()
	b.Finish()
	side.Breakdown, side.Stats, side.LSN = b, &st, bins
	side.Actual, side.Scenarios = w.Results()

	vr, err := analyze.Verify(in.src, in.opts, blcksz, workers)
	if err != nil {
		return nil, readerSetupError(err)
	}
	if as, ok := in.src.(*archive.Source); ok {
		sum, problems, err := analyze.SummarizeArchive(as)
		if err == nil {
			vr.AddArchive(sum, problems)
		}
	}
	side.Verify = vr
	return side, nil
}

// bucketFor picks a round time bucket giving about 60 buckets over span.
func bucketFor(span time.Duration) time.Duration {
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if span/d <= 60 {
			return d
		}
	}
	return 7 * 24 * time.Hour
}
