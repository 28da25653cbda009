package main

import (
	"bufio"
	"time"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	format "github.com/walscope/walscope/format"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

func statsCommand() *cli.Command {
	flags := append(walFlags(), filterFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "by", Value: "rmgr", Usage: "group by `KEY`: rmgr (pg_waldump --stats), record (--stats=record), relation, checkpoint, time, xid, segment or timeline"},
		&cli.StringFlag{Name: "bucket", Value: "1m", Usage: "with --by time, the bucket `WIDTH` (a Go duration: 10s, 1m, 1h)"},
		&cli.IntFlag{Name: "top", Usage: "with --by xid or relation, show only the `N` largest (xid: 20 by default)"},
		&cli.StringFlag{Name: "catalog", Usage: "with --by relation, name relations from `FILE`, a CSV export of pg_class (see README)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text (pg_waldump's table), json or csv"},
		&cli.IntFlag{Name: "span-bytes", Value: 32 << 20, Hidden: true, Usage: "WAL `BYTES` per parallel span"},
	)
	return &cli.Command{
		Name:      "stats",
		Usage:     "summarize WAL volume as pg_waldump --stats does",
		ArgsUsage: "[PATH... | STARTSEG [ENDSEG]]",
		Flags:     flags,
		Action:    act(statsAction),
	}
}

func statsAction(c *cli.Command) error {
	var perRecord bool
	switch by := c.String("by"); by {
	case "rmgr":
	case "record":
		perRecord = true
	case "relation", "checkpoint", "time", "xid", "segment", "timeline":
		return breakdownAction(c, by)
	default:
		return usageErr("unrecognized value for option --by: %s", c.String("by"))
	}
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	var st stats.Stats
	quiet := c.Bool("quiet")
	return scan(c, stdout, scanPlan{
		spanBytes:   max(1, c.Int("span-bytes")),
		headersOnly: true, // counting needs the headers only
		newSink: func(direct bool) recordSink {
			if direct {
				return &statsSink{st: &st, whole: true} // one span: counted in place
			}
			return &statsSink{st: new(stats.Stats)}
		},
		merge: func(s recordSink) error {
			if p := s.(*statsSink).st; p != &st {
				st.Merge(p)
			}
			return nil
		},
		done: func(_ xlog.LSN, v xlog.Version) error {
			if quiet {
				return nil
			}
			if st.Version == 0 {
				st.Version = v
			}
			switch outFormat {
			case "json":
				return format.WriteStatsJSON(stdout, &st, perRecord)
			case "csv":
				return format.WriteStatsCSV(stdout, &st, perRecord)
			}
			stdout.Write(format.AppendStatsTable(nil, &st, perRecord))
			return nil
		},
	})
}

// statsSink counts one span's records.
type statsSink struct {
	st    *stats.Stats
	whole bool // st is the run's total
}

// reset empties a span's counts, merged, for a later span.
func (s *statsSink) reset() bool {
	if s.whole {
		return false
	}
	s.st.Reset()
	return true
}

func (s *statsSink) record(_ *decode.Decoder, d *decode.Record) error {
	s.st.Add(d)
	return nil
}

// breakdownAction aggregates by relation, checkpoint cycle, time bucket,
// transaction, segment or timeline: spans read on every core into parts
// merged in WAL order (what crosses a cut, transactions and the time of the
// records before a span's first timestamp, is settled by the merge), with a
// first pass for the redo points when the checkpoint cycles are asked for.
func breakdownAction(c *cli.Command, by string) error {
	outFormat := c.String("format")
	if outFormat != "text" && outFormat != "json" && outFormat != "csv" {
		return usageErr("unrecognized value for option --format: %s", outFormat)
	}
	// From WAL timestamps' resolution to a year: buckets start at
	// multiples of their width from year 1 (time.Truncate), so a wider one
	// began decades before the WAL (--bucket 1000000h printed 1940).
	bucket, err := time.ParseDuration(c.String("bucket"))
	if err != nil || bucket < time.Microsecond || bucket > 366*24*time.Hour {
		return usageErr("invalid value %q for option --bucket: a duration from 1us to 8784h (a year)", c.String("bucket"))
	}
	cat, err := loadCatalog(c)
	if err != nil {
		return err
	}
	var redo []stats.CycleInfo
	var start, end xlog.LSN
	if by == "checkpoint" {
		in, err := resolveInput(c)
		if err != nil {
			return err
		}
		var finders []stats.RedoFinder
		finders, start, end, err = xlogPass(in, c.Int("blcksz"), jobs(c), max(1, 2*c.Int("span-bytes")), false, func(f *stats.RedoFinder, d *decode.Record) { f.Add(d) })
		if err != nil {
			return err
		}
		var finder stats.RedoFinder
		for i := range finders {
			finder.Append(&finders[i])
		}
		redo = finder.Sorted()
	}
	// The names the WAL carries, read by a reader of its own beside the
	// spans (names.WALNames needs the records in order).
	var nameSrc *names.NamesReading
	if by == "relation" {
		in, err := resolveInput(c)
		if err != nil {
			return err
		}
		nameSrc = names.StartNames(in.src, in.opts, c.Int("blcksz"))
		defer nameSrc.Wait()
	}
	b := stats.NewBreakdown(bucket, redo, start, end)
	stdout := bufio.NewWriterSize(c.Root().Writer, 64<<10)
	defer stdout.Flush()
	quiet := c.Bool("quiet")
	top := c.Int("top")
	if by == "xid" && top == 0 {
		top = 20
	}
	// Ended transactions are kept only as far as the table shows them:
	// memory stays bounded whatever the number of transactions.
	b.KeepXids = 0
	if by == "xid" {
		b.KeepXids = top
	}
	return scan(c, stdout, scanPlan{
		spanBytes: max(1, c.Int("span-bytes")),
		newSink: func(direct bool) recordSink {
			if direct {
				return breakdownSink{b}
			}
			return breakdownSink{b.NewPart()}
		},
		merge: func(rs recordSink) error {
			if p := rs.(breakdownSink).b; p != b {
				b.Merge(p)
			}
			return nil
		},
		done: func(xlog.LSN, xlog.Version) error {
			if quiet {
				return nil
			}
			b.Finish()
			var t *format.Table
			switch by {
			case "relation":
				w, err := nameSrc.Wait()
				if err != nil {
					return readerSetupError(err)
				}
				// the catalog first, then the names the WAL carries
				t = format.RelationTable(b, names.FirstName{cat, w}, top)
			case "checkpoint":
				t = format.CheckpointTable(b)
			case "time":
				t = format.TimeTable(b)
			case "xid":
				t = format.XidTable(b, top)
			case "segment":
				t = format.SegmentTable(b)
			case "timeline":
				t = format.TimelineTable(b)
			}
			return t.Write(stdout, outFormat)
		},
	})
}

type breakdownSink struct{ b *stats.Breakdown }

func (s breakdownSink) record(_ *decode.Decoder, d *decode.Record) error {
	s.b.Add(d)
	return nil
}
