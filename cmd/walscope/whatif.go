package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/analyze"
	"github.com/walscope/walscope/decode"
	format "github.com/walscope/walscope/format"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

func whatifCommand() *cli.Command {
	flags := append(walFlags(), filterFlags()...)
	flags = append(flags, &cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or csv"},
		&cli.IntFlag{Name: "span-bytes", Value: 64 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span of the first pass"})
	return &cli.Command{
		Name:      "whatif",
		Usage:     "estimate the WAL this stream would have been under other settings",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    whatifAction,
	}
}

// whatifAction reads the stream twice: first, in parallel spans, for the
// redo points, the wal_level and the block data sizes, then to re-estimate
// every record under each scenario.
func whatifAction(c *cli.Context) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	s, err := stream.Open(in.src, stream.Config{Reader: in.opts})
	if err != nil {
		return readerSetupError(err)
	}
	dec := decode.NewDecoder(c.Int("blcksz"))
	wi := analyze.WhatIfInput{PageSize: s.PageSize(), SegSize: s.SegmentSize(), BlockSize: dec.BlockSize, WalLevel: xlog.WalLevelUnknown}
	workers := jobs(c)
	// The first pass, on every core: what the estimate needs to know ahead.
	type firstPass struct {
		learner analyze.DataLenLearner
		level   analyze.LevelGuesser
		redo    []xlog.LSN
	}
	parts, start, _, err := recordPass(in, dec.BlockSize, workers, max(1, c.Int("span-bytes")), func(p *firstPass, d *decode.Record) {
		p.learner.Add(d)
		p.level.Add(d)
		if cp, ok := rmgr.Checkpoint(d); ok {
			p.redo = append(p.redo, cp.Redo)
		}
	})
	if err != nil {
		return err
	}
	wi.Start = start
	var learner analyze.DataLenLearner
	var level analyze.LevelGuesser
	for i := range parts {
		learner.Merge(&parts[i].learner)
		level.Merge(&parts[i].level)
		wi.Redo = append(wi.Redo, parts[i].redo...)
	}
	wi.WalLevel = level.Level()
	wi.DataLen = learner.Means()
	var rc decode.Recompressor
	wi.Sizer = rc.Estimate
	// Images are rebuilt and recompressed on every core, ahead of the
	// sequential estimate, by a reader of their own.
	if workers > 1 {
		p, stop, err := startImagePipeline(in, dec.BlockSize, workers)
		if err != nil {
			return err
		}
		wi.Images = p
		defer stop()
	}
	w := analyze.NewWhatIf(wi)
	stdout := bufio.NewWriterSize(c.App.Writer, 64<<10)
	defer stdout.Flush()
	quiet := c.Bool("quiet")
	return scan(c, stdout, scanPlan{
		sequential: true,
		newSink:    func(bool) recordSink { return whatifSink{w} },
		merge:      func(recordSink) error { return nil },
		done: func(xlog.LSN, xlog.Version) error {
			if quiet {
				return nil
			}
			actual, sc := w.Results()
			switch outFormat {
			case "json":
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Actual    analyze.Scenario   `json:"actual"`
					Scenarios []analyze.Scenario `json:"scenarios"`
				}{actual, sc})
			}
			t := &format.Table{Columns: []string{"setting", "value", "record_bytes", "wal_bytes", "image_bytes", "flush_write_bytes", "wal_ratio"},
				Numeric: []bool{false, false, true, true, true, true, true}}
			row := func(s analyze.Scenario) {
				ratio := "1.000"
				if actual.WALBytes > 0 {
					ratio = strconv.FormatFloat(float64(s.WALBytes)/float64(actual.WALBytes), 'f', 3, 64)
				}
				t.Rows = append(t.Rows, []string{s.Setting, s.Value, fmt.Sprint(s.RecordBytes), fmt.Sprint(s.WALBytes),
					fmt.Sprint(s.ImageBytes), fmt.Sprint(s.FlushWriteBytes), ratio})
			}
			row(actual)
			for _, s := range sc {
				row(s)
			}
			return t.Write(stdout, outFormat)
		},
	})
}

type whatifSink struct{ w *analyze.WhatIf }

func (s whatifSink) record(_ *decode.Decoder, d *decode.Record) error {
	s.w.Add(d)
	return nil
}

// startImagePipeline starts an analyze.ImagePipeline over the input: a
// reader of its own, workers recompressing images on every core. stop ends
// it and closes its reader.
func startImagePipeline(in *input, blockSize, workers int) (p *analyze.ImagePipeline, stop func(), err error) {
	pr, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return nil, nil, readerSetupError(err)
	}
	pdec := decode.NewDecoder(blockSize)
	next := func() (*decode.Record, error) {
		rec, err := pr.Next()
		if err != nil {
			return nil, err
		}
		d, err := pdec.Decode(rec)
		return d, err
	}
	newSizer := func() analyze.ImageSizer { var rc decode.Recompressor; return rc.Estimate }
	p = analyze.NewImagePipeline(next, blockSize, newSizer, workers, 1024)
	return p, func() { p.Close(); pr.Close() }, nil
}
