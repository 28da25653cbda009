package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

func exportCommand() *cli.Command {
	flags := append(walFlags(), filterFlags()...)
	flags = append(flags, serverCheckpointFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the tables under `DIR` (DIR/<table>/...), or upload them to s3://, gs:// or azblob://bucket/prefix"},
		&cli.StringFlag{Name: "shard", Usage: "export shard `I/N` (0 <= I < N) of the archive's segments, as one of N independent jobs writing one dataset (implies --partition-by segment-range)"},
		&cli.StringFlag{Name: "tables", Value: strings.Join(export.Tables, ","), Usage: "comma-separated `LIST` of tables: " + strings.Join(export.Tables, ", ")},
		&cli.StringFlag{Name: "label", Usage: "add a label column and a label=`NAME` partition (to compare runs in one directory)"},
		&cli.StringFlag{Name: "partition-by", Usage: "partition further by `KEY`: segment-range (the range this job read) or timeline"},
		&cli.StringFlag{Name: "format", Value: "parquet", Usage: "file `FORMAT`: parquet, jsonl or csv"},
		&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing dataset (the same label and segment range)"},
		&cli.BoolFlag{Name: "desc", Usage: "add records.description, pg_waldump's description of each record"},
		&cli.StringFlag{Name: "catalog", Usage: "name relations from `FILE`, a CSV export of pg_class (see README), before the names the WAL carries"},
		&cli.BoolFlag{Name: "no-wal-names", Usage: "name relations from --catalog only: skip the first pass that learns the names the WAL carries"},
		&cli.IntFlag{Name: "row-group", Value: export.DefaultRowGroupRows, Usage: "Parquet row group length in `ROWS`"},
		&cli.IntFlag{Name: "span-bytes", Value: 32 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span (one part file each)"},
		&cli.StringFlag{Name: "append", Usage: "add the WAL after what the incremental dataset `DATASET` (a directory or s3://, gs://, azblob:// URL) covers to it, as a new batch"},
		&cli.BoolFlag{Name: "verify-exported", Usage: "with --append: check the SHA-256 of every already exported segment the input holds, not only of the one the last batch ended in"},
		&cli.IntFlag{Name: "file-rows", Value: defaultFileRows, Usage: "with --append: at most `ROWS` rows in one file (a bigger batch's files are split)"},
		&cli.StringFlag{Name: "merge-below", Value: "64MB", Usage: "with --append: merge the batch's files of a day with that day's small earlier files, into files of at most `SIZE` (64MB, 512kB, bytes)"},
		&cli.BoolFlag{Name: "no-merge", Usage: "with --append: never merge files"},
		&cli.BoolFlag{Name: "break-lock", Usage: "with --append to an object store: take over the dataset's lease even if the append that holds it may be alive"},
		&cli.DurationFlag{Name: "lock-ttl", Value: 24 * time.Hour, Usage: "with --append to an object store: a lease older than `DURATION` is stale and taken over (its append has died)"},
	)
	return &cli.Command{
		Name:      "export",
		Usage:     "export the WAL as tables (Parquet, JSON Lines or CSV) for DuckDB, pandas, Spark",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    act(exportAction),
	}
}

func exportAction(c *cli.Command) error {
	cfg := export.Config{
		Dir: c.String("out"), Label: c.String("label"), PartitionBy: c.String("partition-by"),
		Format: export.Format(c.String("format")), Desc: c.Bool("desc"), Overwrite: c.Bool("overwrite"),
		BlockSize: c.Int("blcksz"), RowGroupRows: c.Int("row-group"),
	}
	appendTo := c.String("append")
	if cfg.Dir == "" && appendTo == "" {
		return usageErr("--out (or --append) is required")
	}
	switch cfg.Format {
	case export.Parquet, export.JSONL, export.CSV:
	default:
		return usageErr("unrecognized value for option --format: %s", cfg.Format)
	}
	switch cfg.PartitionBy {
	case export.PartitionNone, export.PartitionSegmentRange, export.PartitionTimeline:
	default:
		return usageErr("unrecognized value for option --partition-by: %s", cfg.PartitionBy)
	}
	if n := cfg.RowGroupRows; n < 1 || n > export.MaxRowGroupRows {
		return usageErr("invalid value \"%d\" for option --row-group: from 1 to %d rows", n, export.MaxRowGroupRows)
	}
	if strings.ContainsAny(cfg.Label, "/\\=") || cfg.Label == "." || cfg.Label == ".." {
		return usageErr("invalid --label %q: it names a directory (label=NAME)", cfg.Label)
	}
	seen := map[string]bool{}
	for _, t := range strings.Split(c.String("tables"), ",") {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		if export.SchemaOf(t) == nil {
			return usageErr("unknown table %q (tables: %s)", t, strings.Join(export.Tables, ", "))
		}
		seen[t] = true
		cfg.Tables = append(cfg.Tables, t)
	}
	if len(cfg.Tables) == 0 {
		return usageErr("--tables lists no table")
	}
	if appendTo != "" {
		return appendAction(c, cfg, appendTo)
	}
	for _, f := range []string{"verify-exported", "file-rows", "merge-below", "no-merge", "break-lock", "lock-ttl"} {
		if c.IsSet(f) {
			return usageErr("--%s applies to --append only", f)
		}
	}

	// The live heap is mostly row groups being built (about 13 MB each, a
	// few per worker), long-lived: the default GC headroom of 100% of it
	// only raised the peak RSS (186 MB against 150 MB at 50%, no slower).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}

	if s := c.String("shard"); s != "" {
		if _, err := parseShard(s); err != nil {
			return err
		}
		if cfg.PartitionBy == export.PartitionNone {
			cfg.PartitionBy = export.PartitionSegmentRange
		}
		if cfg.PartitionBy != export.PartitionSegmentRange {
			return usageErr("--shard writes one segment range per shard: it needs --partition-by segment-range")
		}
	}

	// A first pass finds the checkpoint cycles (records.checkpoint_cycle,
	// the checkpoints table) and the segment range read.
	in, err := resolveInput(c)
	if errors.Is(err, errEmptyShard) {
		fmt.Fprintf(c.Root().ErrWriter, "walscope: shard %s: %v\n", c.String("shard"), err)
		return nil
	}
	if err != nil {
		return err
	}
	// A dataset for an object store is written to a local staging
	// directory, uploaded when complete, and removed in any case.
	out := cfg.Dir
	stagingDir, upload, cleanup, err := exportStaging(cfg.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.Dir = stagingDir
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return readerSetupError(err)
	}
	segSize := r.SegmentSize()
	first := uint64(r.Start()) / uint64(segSize)
	last := uint64(r.LastSegmentEnd())/uint64(segSize) - 1
	if in.opts.End != 0 && in.opts.End < r.LastSegmentEnd() {
		last = uint64(in.opts.End-1) / uint64(segSize)
	}
	if in.shardLast != nil {
		last = *in.shardLast // its End ends the record crossing into the next shard
	}
	cfg.SegmentRange = segRangeName(first, segSize) + "-" + segRangeName(last, segSize)
	// Where the job's records begin: from its start to its -e, or to the
	// end of its last segment (a shard's records are those beginning in
	// its segments).
	cfg.StartLSN, cfg.EndLSN = r.Start(), xlog.LSN((last+1)*uint64(segSize))
	if in.opts.End != 0 && in.opts.End < cfg.EndLSN {
		cfg.EndLSN = in.opts.End
	}
	ckSegs, ckTimeout, err := serverCheckpoints(c, segSize, r.Version())
	if err != nil {
		r.Close()
		return err
	}
	err = exportFirstPass(c, in, r, &cfg)
	r.Close()
	if err != nil {
		return err
	}
	applyServerCheckpoints(ckSegs, ckTimeout, nil, cfg.Cycles)

	ex, err := export.New(cfg)
	if err != nil {
		if e := publishErr(err); e != nil {
			return e
		}
		return usageErr("%v", err)
	}
	var facts []archive.FileFact
	if a, ok := in.src.(*archive.Source); ok && ex.Want(export.TableSegments) {
		facts, _ = a.FactsWith(archive.FactsOptions{Quick: true})
	}
	err = exportSpans(c, ex, facts, 0, 0, "", nil)
	if e := publishErr(err); e != nil {
		return e // refused when publishing: another export was first
	}
	if err == nil && upload != nil {
		if err := upload(cfg.Overwrite); err != nil {
			if e := storeErr(err); e != nil {
				return e
			}
			return &exitError{code: exitProblem, msg: fmt.Sprintf("%s: %v", out, err)}
		}
	}
	return err
}

// exportFirstPass fills cfg's relation names (records, blocks: the catalog,
// then the names the WAL carries, learnt in the cycles' pass, one reading
// of the WAL for both, or by a reader of their own when there is none) and
// checkpoint cycles.
func exportFirstPass(c *cli.Command, in *input, r *xlog.Reader, cfg *export.Config) error {
	var err error
	var nameSrc *names.NamesReading
	walNames := cfg.NeedsNames() && !c.Bool("no-wal-names")
	if cfg.NeedsNames() {
		if cfg.Catalog, err = loadCatalog(c); err != nil {
			return err
		}
		if walNames && !cfg.NeedsCycles() {
			nameSrc = names.StartNames(in.src, in.opts, c.Int("blcksz"))
		}
	}
	if cfg.NeedsCycles() {
		workers := jobs(c)
		if walNames {
			cfg.Cycles, cfg.Earlier, cfg.WALNames, err = findCyclesAndNames(in, cfg.BlockSize, workers)
			if err != nil {
				return readerSetupError(err)
			}
		} else {
			cfg.Cycles, cfg.Earlier = findCycles(in, r, cfg.BlockSize, workers)
		}
	}
	if nameSrc != nil {
		cfg.WALNames, err = nameSrc.Wait()
	}
	if err != nil {
		return readerSetupError(err)
	}
	return nil
}

// exportSpans reads the stream from start (0: the flags' --start) to stop
// (0: the flags' --end; else the records before it, stopWhy saying why) into
// ex in parallel spans and finishes it; done, if set, is called before
// Finish and may finish (or abort) the export itself (finished true).
func exportSpans(c *cli.Command, ex *export.Exporter, facts []archive.FileFact, start, stop xlog.LSN, stopWhy string, done func(end xlog.LSN) (finished bool, err error)) error {
	var mu sync.Mutex
	var open []*exportSink // spans started and not merged
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	finished := false
	err := scan(c, stdout, scanPlan{
		spanBytes: max(1, c.Int("span-bytes")),
		newSink: func(bool) recordSink {
			s := &exportSink{span: ex.NewSpan()}
			mu.Lock()
			open = append(open, s)
			mu.Unlock()
			return s
		},
		merge: func(rs recordSink) error {
			s := rs.(*exportSink)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.done = true
			return ex.Merge(s.span)
		},
		done: func(end xlog.LSN, _ xlog.Version) error {
			// The spans read past the end and never merged (the reading
			// ended in an earlier one: -e before a record that continues
			// on the next page): their files go before the export is
			// finished and published (a .part-*.tmp was left in the output).
			mu.Lock()
			for _, s := range open {
				s.abort()
			}
			mu.Unlock()
			if done != nil {
				if f, err := done(end); f || err != nil {
					finished = true
					return err
				}
			}
			finished = true
			return ex.Finish(facts, end)
		},
		start:  start,
		end:    stop,
		endWhy: stopWhy,
	})
	// Remove what spans read but never merged (after an error) left.
	mu.Lock()
	for _, s := range open {
		s.abort()
	}
	mu.Unlock()
	if !finished {
		ex.Abort()
	}
	return err
}

// findCycles reads the checkpoint records in spans, one worker per core,
// and returns the checkpoint cycles of the stream and the checkpoints read
// whose cycle began before it (RedoFinder.Before).
func findCycles(in *input, r *xlog.Reader, blockSize, workers int) (cycles, before []stats.CycleInfo) {
	// The export's tenths of the last cycle wait for the end of its own
	// reading: this pass need not check the CRC of records it skips.
	// (A file that cannot be opened is reported by the export's own reading.)
	finders, start, _, _ := xlogPass(in, blockSize, workers, 64<<20, true, func(f *stats.RedoFinder, d *decode.Record) { f.Add(d) })
	var all stats.RedoFinder
	for i := range finders {
		all.Append(&finders[i])
	}
	return all.Cycles(start), all.Before(start)
}

// findCyclesAndNames is findCycles and names.LearnNames in one reading.
func findCyclesAndNames(in *input, blockSize, workers int) (cycles, before []stats.CycleInfo, _ *names.WALNames, _ error) {
	finders, start, _, nameSrc, err := names.XLOGPassWithNames(in.src, in.opts, blockSize, workers, 64<<20, func(f *stats.RedoFinder, d *decode.Record) { f.Add(d) })
	if err != nil {
		return nil, nil, nil, err
	}
	var all stats.RedoFinder
	for i := range finders {
		all.Append(&finders[i])
	}
	return all.Cycles(start), all.Before(start), nameSrc, nil
}

// segRangeName names a segment by its number, without timeline (the 16
// hex digits after a segment file name's timeline).
func segRangeName(segno uint64, segSize uint32) string {
	n := xlog.NewSegmentName(1, segno, segSize)
	return fmt.Sprintf("%08X%08X", n.Log, n.Seg)
}

// exportSink feeds one span's records to its export.Span.
type exportSink struct {
	mu      sync.Mutex
	span    *export.Span
	done    bool // merged or aborted
	aborted bool
}

var errExportAborted = errors.New("export aborted")

func (s *exportSink) record(dec *decode.Decoder, d *decode.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errExportAborted
	}
	return s.span.Add(dec, d)
}

func (s *exportSink) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done, s.aborted = true, true
		s.span.Abort()
	}
}

// publishErr is the error for a dataset that may not be written (exit 1),
// nil for any other error.
func publishErr(err error) error {
	switch {
	case errors.Is(err, export.ErrExists):
		// The library names no flag: the hint is the command's.
		return &exitError{code: exitProblem, msg: err.Error() + " (use --overwrite to replace it)"}
	case errors.Is(err, export.ErrOverlap):
		return &exitError{code: exitProblem, msg: err.Error() + " (its rows would be counted twice)"}
	}
	return nil
}
