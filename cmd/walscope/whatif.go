package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	format "github.com/walscope/walscope/format"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

func whatifCommand() *cli.Command {
	flags := append(walFlags(), filterFlags()...)
	flags = append(flags, checkpointSettingFlags()...)
	flags = append(flags, &cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json or csv"},
		&cli.IntFlag{Name: "span-bytes", Value: 64 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span of the first pass"})
	return &cli.Command{
		Name:      "whatif",
		Usage:     "estimate the WAL this stream would have been under other settings",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    act(whatifAction),
	}
}

// whatifAction reads the stream twice: first, in parallel spans, for the
// redo points, the wal_level and the block data sizes, then to re-estimate
// every record under each scenario; meanwhile the engine sizes the images
// under every wal_compression in parallel spans (whatif.ImagePipeline).
func whatifAction(c *cli.Command) error { return whatifRun(c, printWhatIf) }

// whatifRun runs the what-if over the input and hands the result to print
// (not called with --quiet).
func whatifRun(c *cli.Command, print func(w *whatif.WhatIf, stdout *bufio.Writer, outFormat string) error) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	// A range starting inside the WAL is simulated from the redo point of
	// the checkpoint before it (issue 28.2): the scenarios' checkpoint
	// schedules and the blocks each has imaged depend on it.
	countFrom := in.opts.Start
	if countFrom != 0 {
		from, err := whatif.PriorRedo(in.src, in.opts, c.Int("blcksz"))
		if err != nil {
			return readerSetupError(err)
		}
		in.opts.Start = from
	}
	s, err := stream.Open(in.src, stream.Config{Reader: in.opts})
	if err != nil {
		return readerSetupError(err)
	}
	dec := decode.NewDecoder(c.Int("blcksz"))
	wi := whatif.WhatIfInput{PageSize: s.PageSize(), SegSize: s.SegmentSize(), BlockSize: dec.BlockSize, WalLevel: xlog.WalLevelUnknown,
		Version: s.Version()}
	if err := checkpointSettings(c, &wi); err != nil {
		return err
	}
	workers := jobs(c)
	// Images are rebuilt and recompressed on every core by the engine,
	// from now on: during the first pass and ahead of the sequential
	// estimate.
	if workers > 1 {
		p, err := startImagePipeline(in, dec.BlockSize, workers)
		if err != nil {
			return err
		}
		wi.Images = p
		defer p.Close()
	}
	// The first pass, on every core: what the estimate needs to know ahead.
	parts, start, _, err := recordPass(in, dec.BlockSize, workers, max(1, c.Int("span-bytes")), func(p *whatif.WhatIfPass, d *decode.Record) { p.Add(d) })
	if err != nil {
		return err
	}
	wi.Start, wi.CountFrom = start, countFrom
	whatif.FillWhatIfInput(&wi, parts)
	var rc decode.Recompressor
	wi.Sizer = rc.Estimate
	w := whatif.NewWhatIf(wi)
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	quiet := c.Bool("quiet")
	return scan(c, stdout, scanPlan{
		start:      in.opts.Start,
		sequential: true,
		newSink:    func(bool) recordSink { return whatifSink{w} },
		merge:      func(recordSink) error { return nil },
		done: func(xlog.LSN, xlog.Version) error {
			if quiet {
				return nil
			}
			return print(w, stdout, outFormat)
		},
	})
}

// printWhatIf prints the scenarios.
func printWhatIf(w *whatif.WhatIf, stdout *bufio.Writer, outFormat string) error {
	actual, sc := w.Results()
	switch outFormat {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Actual    whatif.Scenario   `json:"actual"`
			Scenarios []whatif.Scenario `json:"scenarios"`
			Assumed   []string          `json:"assumed,omitempty"`
		}{actual, sc, w.Assumed})
	}
	t := &format.Table{Columns: []string{"setting", "value", "record_bytes", "wal_bytes", "image_bytes", "flush_write_bytes", "wal_ratio", "checkpoints", "pg_wal_bytes"},
		Numeric: []bool{false, false, true, true, true, true, true, true, true}}
	row := func(s whatif.Scenario) {
		ratio := "1.000"
		if actual.WALBytes > 0 {
			ratio = strconv.FormatFloat(float64(s.WALBytes)/float64(actual.WALBytes), 'f', 3, 64)
		}
		pgwal := ""
		if s.PgWALBytes > 0 {
			pgwal = fmt.Sprint(s.PgWALBytes)
		}
		t.Rows = append(t.Rows, []string{s.Setting, s.Value, fmt.Sprint(s.RecordBytes), fmt.Sprint(s.WALBytes),
			fmt.Sprint(s.ImageBytes), fmt.Sprint(s.FlushWriteBytes), ratio, fmt.Sprint(s.Checkpoints), pgwal})
	}
	row(actual)
	for _, s := range sc {
		row(s)
	}
	if err := t.Write(stdout, outFormat); err != nil || outFormat != "text" {
		return err
	}
	if actual.MaxWALSize != "" {
		fmt.Fprintf(stdout, "\n%s\n", format.SettingsNote(w.Settings, w.Assumed))
	}
	return nil
}

type whatifSink struct{ w *whatif.WhatIf }

func (s whatifSink) record(_ *decode.Decoder, d *decode.Record) error {
	s.w.Add(d)
	return nil
}

// startImagePipeline starts an whatif.ImagePipeline over the input: the
// engine rebuilding and recompressing its images on every core. Close ends
// it.
func startImagePipeline(in *input, blockSize, workers int) (*whatif.ImagePipeline, error) {
	newSizer := func() whatif.ImageSizer { var rc decode.Recompressor; return rc.Estimate }
	p, err := whatif.NewImagePipeline(in.src, in.opts, blockSize, newSizer, workers, 0)
	if err != nil {
		return nil, readerSetupError(err)
	}
	return p, nil
}

// checkpointSettingFlags are the flags of the checkpoint settings
// scenarios (whatif) and of the settings assumed for the stream.
func checkpointSettingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-wal-size", Usage: "max_wal_size scenarios, a `LIST` such as 1GB,4GB (default: values around the stream's)"},
		&cli.StringFlag{Name: "checkpoint-timeout", Usage: "checkpoint_timeout scenarios, a `LIST` such as 5min,30min (default: values around the stream's)"},
		&cli.Float64Flag{Name: "checkpoint-completion-target", Usage: "checkpoint_completion_target `T` the stream had (default 0.9; 0.5 before 14)"},
		&cli.StringFlag{Name: "current-max-wal-size", Usage: "max_wal_size `SIZE` the stream had (default: inferred from its checkpoints, else 1GB)"},
		&cli.StringFlag{Name: "current-checkpoint-timeout", Usage: "checkpoint_timeout `TIME` the stream had (default: inferred, else 5min)"},
		&cli.StringFlag{Name: "min-wal-size", Value: "80MB", Usage: "min_wal_size `SIZE` (for pg_wal's recycled segments)"},
		&cli.StringFlag{Name: "wal-keep-size", Value: "0", Usage: "wal_keep_size `SIZE` (pg_wal keeps at least that much)"},
	}
}

// checkpointSettings reads the checkpoint settings flags into in: the
// scenarios asked for, and what the stream is assumed to have had (the
// rest of in.Settings inferred later from the stream's checkpoints).
func checkpointSettings(c *cli.Command, in *whatif.WhatIfInput) error {
	list := func(name string, parse func(string) error) error {
		if c.String(name) == "" {
			return nil
		}
		for _, v := range strings.Split(c.String(name), ",") {
			if err := parse(v); err != nil {
				return usageErr("invalid value for option --%s: %v", name, err)
			}
		}
		return nil
	}
	if err := list("max-wal-size", func(v string) error {
		b, err := whatif.ParseSize(v)
		in.MaxWALSizes = append(in.MaxWALSizes, b)
		return err
	}); err != nil {
		return err
	}
	if err := list("checkpoint-timeout", func(v string) error {
		d, err := whatif.ParseTimeout(v)
		if err == nil && (d < 30*time.Second || d > 24*time.Hour) {
			err = fmt.Errorf("%s: checkpoint_timeout is 30s to 1d", v)
		}
		in.Timeouts = append(in.Timeouts, d)
		return err
	}); err != nil {
		return err
	}
	base := whatif.DefaultCheckpointSettings
	var err error
	if base.MinWALSize, err = whatif.ParseSize(c.String("min-wal-size")); err != nil {
		return usageErr("invalid value for option --min-wal-size: %v", err)
	}
	if v := c.String("wal-keep-size"); v != "0" {
		if base.WALKeepSize, err = whatif.ParseSize(v); err != nil {
			return usageErr("invalid value for option --wal-keep-size: %v", err)
		}
	}
	in.Given, err = givenCheckpoints(c, base)
	if err != nil {
		return err
	}
	return nil
}
