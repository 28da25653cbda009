package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/internal/outfile"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/report"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
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
			&cli.StringFlag{Name: "dataset", Usage: "draw the days of `DATASET`, an incremental dataset of export --append (its manifests, without the WAL)"},
			&cli.StringFlag{Name: "since", Usage: "with --dataset: first `DAY` drawn (YYYY-MM-DD, UTC)"},
			&cli.StringFlag{Name: "until", Usage: "with --dataset: last `DAY` drawn (YYYY-MM-DD, UTC)"},
		),
		Action: act(reportAction),
	}
}

func reportAction(c *cli.Command) error {
	out := c.String("out")
	if out == "" {
		return usageErr("report needs --out FILE")
	}
	// Refused before the WAL is read: an output that cannot be written.
	if _, fi, err := outfile.Resolve(out); err != nil {
		return usageErr("--out %s: %v", out, err)
	} else if fi != nil && fi.IsDir() {
		return usageErr("--out %s is a directory", out)
	}
	if c.String("dataset") != "" {
		return reportDataset(c, out)
	}
	if c.IsSet("since") || c.IsSet("until") {
		return usageErr("--since and --until bound the days of --dataset")
	}
	cat, err := loadCatalog(c)
	if err != nil {
		return err
	}
	blcksz := c.Int("blcksz")
	workers := jobs(c)
	rep := &report.Report{Title: "walscope report", Generated: time.Now()}
	if c.Bool("compare") {
		if c.NArg() != 2 {
			return usageErr("report --compare needs two inputs, A and B")
		}
		for _, path := range c.Args().Slice() {
			src, err := openArchive(path) // local, or s3://, gs://, azblob://
			if err != nil {
				return openErr([]string{path}, err)
			}
			if err := noSegment([]string{path}, src); err != nil {
				return err
			}
			if err := refuseInput(out, []string{path}, src); err != nil {
				return err
			}
			side, err := collectReport(path, &input{src: src, opts: xlog.Options{FollowHistory: true}}, blcksz, workers, cat)
			if err != nil {
				return err
			}
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
		if err := refuseInput(out, append(c.Args().Slice(), c.String("path")), in.src); err != nil {
			return err
		}
		side, err := collectReport(name, in, blcksz, workers, cat)
		if err != nil {
			return err
		}
		rep.Sides = []*report.ReportSide{side}
		rep.Title = "walscope report: " + name
	}
	if err := writeAtomic(out, func(w io.Writer) error { return report.WriteReport(w, rep) }); err != nil {
		// Output not written is exit 2, as for every command.
		return outputErr("could not write the report %s: %v", out, err)
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: report written to %s\n", out)
	}
	// As verify: a nightly job learns from the exit code that the WAL read
	// has problems (the report's verification section lists them).
	// It names the classes, and a file walscope may not read is exit 2 here
	// too, as in every command.
	problems, byClass := 0, map[verify.Class]int{}
	var first *verify.Problem
	for _, side := range rep.Sides {
		if side.Verify != nil && !side.Verify.OK() {
			problems += len(side.Verify.Problems)
			for class, n := range side.Verify.ByClass {
				byClass[class] += n
			}
			if first == nil {
				first = &side.Verify.Problems[0]
			}
		}
	}
	if problems > 0 {
		var classes []string
		for _, k := range slices.Sorted(maps.Keys(byClass)) {
			classes = append(classes, fmt.Sprintf("%s %d", k, byClass[k]))
		}
		code := exitProblem
		if byClass[verify.ClassUnreadable] > 0 {
			code = exitUsage
		}
		return &exitError{code: code, noHint: true, msg: fmt.Sprintf("the WAL read has problems (%d: %s; the first: %s in file %s, LSN %s): see the report's verification section, or walscope verify",
			problems, strings.Join(classes, ", "), first.Class, first.File, first.LSNStr)}
	}
	return nil
}

// collectReport reads the stream twice (a first pass for the redo points,
// the timestamps' range, the wal_level and what-if's inputs; a second that
// feeds every analysis, with the what-if's images recompressed on every core
// by the engine from the start) and verifies it beside the second pass.
// Relations are named by cat first, then by the names the WAL carries
// (learnt in the second pass).
func collectReport(name string, in *input, blcksz, workers int, cat names.Catalog) (*report.ReportSide, error) {
	side := &report.ReportSide{Name: name, BlockSize: blcksz, WalLevel: xlog.WalLevelUnknown}
	s, err := stream.Open(in.src, stream.Config{Reader: in.opts, Workers: workers})
	if err != nil {
		return nil, readerSetupError(err)
	}
	dec := decode.NewDecoder(blcksz)
	wi := whatif.WhatIfInput{PageSize: s.PageSize(), SegSize: s.SegmentSize(), BlockSize: dec.BlockSize, WalLevel: xlog.WalLevelUnknown}
	// The what-if's images are rebuilt and recompressed on every core by
	// the engine from now on, during the first pass and ahead of the
	// second.
	if workers > 1 {
		p, err := startImagePipeline(in, dec.BlockSize, workers)
		if err != nil {
			return nil, err
		}
		wi.Images = p
		defer p.Close()
	}
	// The first pass, on every core, up to the first problem (the second
	// pass reports how the WAL ends).
	type firstPass struct {
		learner    whatif.DataLenLearner
		level      whatif.LevelGuesser
		finder     stats.RedoFinder
		redo       []xlog.LSN
		fpw        []string // full_page_writes as checkpoints state it, repeats dropped
		levelSaid  bool     // a record states wal_level
		tmin, tmax time.Time
		end        xlog.LSN // after the last record
	}
	parts, start, _, err := recordPass(in, blcksz, workers, 0, func(p *firstPass, d *decode.Record) {
		stamp := func(t time.Time) {
			if t.IsZero() {
				return
			}
			if p.tmin.IsZero() || t.Before(p.tmin) {
				p.tmin = t
			}
			if t.After(p.tmax) {
				p.tmax = t
			}
		}
		p.end = d.EndLSN
		p.learner.Add(d)
		p.level.Add(d)
		p.finder.Add(d)
		if cp, ok := rmgr.Checkpoint(d); ok {
			p.redo = append(p.redo, cp.Redo)
			stamp(cp.Time)
			fpw := map[bool]string{true: "on", false: "off"}[cp.FullPageWrites]
			if n := len(p.fpw); n == 0 || p.fpw[n-1] != fpw {
				p.fpw = append(p.fpw, fpw)
			}
			if cp.WalLevel >= xlog.WalLevelMinimal {
				p.levelSaid = true
			}
		}
		if _, ok := rmgr.ParameterChange(d); ok {
			p.levelSaid = true
		}
		if e, ok := rmgr.XactEnd(d); ok {
			stamp(e.Time)
		}
	})
	if err != nil {
		return nil, err
	}
	var learner whatif.DataLenLearner
	var level whatif.LevelGuesser
	var finder stats.RedoFinder
	var end xlog.LSN
	var tmin, tmax time.Time
	for i := range parts {
		p := &parts[i]
		learner.Merge(&p.learner)
		level.Merge(&p.level)
		finder.Points = append(finder.Points, p.finder.Points...)
		wi.Redo = append(wi.Redo, p.redo...)
		for _, fpw := range p.fpw {
			if n := len(side.FullPageWrites); n == 0 || side.FullPageWrites[n-1] != fpw {
				side.FullPageWrites = append(side.FullPageWrites, fpw)
			}
		}
		side.WalLevelStated = side.WalLevelStated || p.levelSaid
		if !p.tmin.IsZero() && (tmin.IsZero() || p.tmin.Before(tmin)) {
			tmin = p.tmin
		}
		if p.tmax.After(tmax) {
			tmax = p.tmax
		}
		end = max(end, p.end)
	}
	if start == 0 {
		return nil, noRecordError(name, in)
	}
	wi.Start = start
	wi.WalLevel = level.Level()
	wi.DataLen = learner.Means()
	side.WalLevel = wi.WalLevel
	// The checkpoints with their causes: the what-if's max_wal_size and
	// checkpoint_timeout scenarios, and the advice, need them.
	wi.Cycles, wi.Version = finder.Cycles(start), s.Version()
	var rc decode.Recompressor
	wi.Sizer = rc.Estimate
	w := whatif.NewWhatIf(wi)
	b := stats.NewBreakdown(bucketFor(tmax.Sub(tmin)), finder.Sorted(), start, end)
	b.KeepXids = 0 // the report shows no transactions
	var st stats.Stats
	bins := report.NewLSNBins(start, end, 240)
	events := incident.NewEvents(incident.EventsConfig{})
	nameSrc := names.NewWALNames(decode.NewDecoder(blcksz))

	// Second pass: the what-if estimate takes the records in order, from
	// one reader, while the engine verifies the stream (and sizes the
	// what-if's images) on the other cores.
	seq, err := stream.Open(in.src, stream.Config{Reader: in.opts, Workers: 1})
	if err != nil {
		return nil, readerSetupError(err)
	}
	verifying := verify.StartVerify(in.src, in.opts, blcksz, workers)
	res, runErr := stream.Run(seq, stream.Job[*decode.Decoder]{
		NewPart: func(stream.SpanInfo) *decode.Decoder { return dec },
		Record: func(dec *decode.Decoder, rec *xlog.Record) error {
			d, err := dec.Decode(rec)
			if err != nil {
				return err
			}
			if rec.LSN >= end {
				return stream.ErrStop
			}
			b.Add(d)
			st.Add(d)
			w.Add(d)
			bins.Add(d)
			events.Add(d)
			nameSrc.Add(d)
			return nil
		},
		Merge: func(*decode.Decoder) error { return nil },
	})
	vr, verifyErr := verifying.Wait()
	if runErr != nil {
		return nil, readerSetupError(runErr)
	}
	if verifyErr != nil {
		return nil, readerSetupError(verifyErr)
	}
	if res.Err != nil {
		side.EndNote = "Reading stopped at " + res.End.String() + ": " + res.Err.Error()
	}
	b.Finish()
	side.Breakdown, side.Stats, side.LSN = b, &st, bins
	side.Actual, side.Scenarios = w.Results()
	advice := whatif.Advise(w)
	side.Advice = &advice
	side.Events, side.WALNames = events, nameSrc
	side.Catalog = names.WithWALNames(cat, nameSrc, b.Original)
	if as, ok := in.src.(*archive.Source); ok {
		sum, problems, err := verify.SummarizeArchive(as)
		if err == nil {
			vr.AddArchive(sum, problems)
			noRecycledEnd(vr, as)
		}
	}
	side.Verify = vr
	return side, nil
}

// noRecordError is the error for a first pass that found no record: what the
// reader says where reading starts, with the class and exit code every other
// command gives it (issue 17: a segment under another name or a cut gzip
// file was "no valid WAL record found" with no class). The pass drops the
// reader's error, so the start is read again, once, on this error path.
func noRecordError(name string, in *input) error {
	none := &exitError{code: exitProblem, msg: fmt.Sprintf("%s: no valid WAL record found", name)}
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return readerSetupError(err)
	}
	defer r.Close()
	if _, err = r.Next(); err == nil || err == io.EOF || xlog.IsEndOfWAL(err) {
		return none
	}
	return endOfRun(io.Discard, 0, err, in.pgMode, true)
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

// reportDataset draws the days of --dataset from its growth aggregates
// (package growth), without the WAL.
func reportDataset(c *cli.Command, out string) error {
	if c.NArg() > 0 || c.Bool("compare") || c.IsSet("catalog") {
		return usageErr("report --dataset reads the dataset only: no WAL, --compare or --catalog")
	}
	rep, err := loadGrowth(c, true)
	if err != nil {
		return err
	}
	if err := writeAtomic(out, func(w io.Writer) error {
		return report.WriteDatasetReport(w, c.String("dataset"), rep, time.Now())
	}); err != nil {
		return outputErr("could not write the report %s: %v", out, err)
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: report written to %s\n", out)
	}
	return nil
}
