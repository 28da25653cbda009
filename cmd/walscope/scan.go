package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// recordSink receives the selected records of one span of the stream.
type recordSink interface {
	record(dec *decode.Decoder, d *decode.Record) error
}

// reusableSink is a sink a later span can take over once it is merged:
// reset makes it what newSink(false) makes, or says it cannot.
type reusableSink interface {
	reset() bool
}

// scanPlan says how a command consumes records.
type scanPlan struct {
	// newSink makes a span's sink; direct is set when one sink reads the
	// whole stream, which may then write its output as it goes.
	newSink     func(direct bool) recordSink
	merge       func(recordSink) error // called in WAL order, one span after another
	done        func(end xlog.LSN, version xlog.Version) error
	sequential  bool // the sink must see every record from one goroutine
	headersOnly bool // the sink needs no payload (xlog.Options.HeadersOnly)
	spanBytes   int  // WAL bytes per parallel span
	// start, when set, is where reading begins instead of --start: an
	// earlier position the sink reads from to warm up (what-if's redo
	// point before --start).
	start xlog.LSN
	// end, when set, is where reading ends (at the first record that
	// begins at or after it, xlog.Options.StopAt), for endWhy: where
	// export --append ends its batch.
	end    xlog.LSN
	endWhy string
}

// scanPart is one span's decoder, count and sink.
type scanPart struct {
	dec   *decode.Decoder
	sink  recordSink
	first bool // the stream's first span, before its first record
	start xlog.LSN
	shown int
}

// begin readies p, new or merged, for the span info: its decoder is kept, its
// sink too where it can be cleared, else the plan makes one.
func (p *scanPart) begin(info stream.SpanInfo, plan scanPlan) *scanPart {
	if r, ok := p.sink.(reusableSink); !ok || info.Whole || !r.reset() {
		p.sink = plan.newSink(info.Whole)
	}
	p.first, p.start, p.shown = info.Index == 0 && !info.Resumed, info.Span.Start, 0
	return p
}

// scan reads the input the command's flags select, decodes every record,
// applies pg_waldump's filters and -n limit, and feeds the selected records
// to sinks, on the parallel engine (xlog/stream): without a limit, spans of
// the stream are read on every core, merged in WAL order, and the run ends
// as a sequential read would.
func scan(c *cli.Command, stdout *bufio.Writer, plan scanPlan) error {
	stderr := c.Root().ErrWriter
	f, listed, err := parseFilter(c, stdout)
	if err != nil || listed {
		return err
	}
	in, err := resolveInput(c)
	if err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit < 0 {
		return usageErr("invalid value \"%d\" for option -n/--limit", limit)
	}
	quiet := c.Bool("quiet")
	blcksz := c.Int("blcksz")
	if plan.start != 0 {
		in.opts.Start = plan.start
	}
	if plan.end != 0 {
		in.opts.StopAt = plan.end
	}
	cfg := stream.Config{Reader: in.opts, Workers: jobs(c), SpanBytes: plan.spanBytes}
	cfg.Reader.HeadersOnly = plan.headersOnly
	if plan.sequential || limit > 0 {
		cfg.Workers = 1
	}
	s, err := stream.Open(in.src, cfg)
	if err != nil {
		return readerSetupError(err)
	}
	bar := startProgress(stderr, quiet, int64(s.Limit())-int64(s.Start()), int64(s.SegmentSize()))
	defer bar.finish()
	if bar != nil {
		s.SetProgress(bar.add)
	}
	limited := false // the -n limit ended the reading
	res, err := stream.Run(s, stream.Job[*scanPart]{
		NewPart: func(info stream.SpanInfo) *scanPart {
			return (&scanPart{dec: decode.NewDecoder(blcksz)}).begin(info, plan)
		},
		Record: func(p *scanPart, rec *xlog.Record) error {
			if p.first {
				// Nothing is written before the first span's output.
				p.first = false
				reportSkip(stdout, stderr, p.start, rec.LSN, rec.Version, rec.SegSize)
			}
			d, err := p.dec.Decode(rec)
			if err != nil {
				return walError(rec, err)
			}
			if !f.match(d) {
				return nil
			}
			if err := p.sink.record(p.dec, d); err != nil {
				return err
			}
			p.shown++
			if limit > 0 && p.shown >= limit {
				limited = true // (one worker with -n: no race)
				return stream.ErrStop
			}
			return nil
		},
		Merge: func(p *scanPart) error { return plan.merge(p.sink) },
		Reuse: func(p *scanPart, info stream.SpanInfo) (*scanPart, bool) { return p.begin(info, plan), true },
	})
	if err != nil {
		if _, ok := err.(*exitError); ok {
			return err
		}
		return readerSetupError(err)
	}
	if plan.done != nil {
		if err := plan.done(res.End, s.Version()); err != nil {
			return err
		}
	}
	stdout.Flush()
	bound := rangeBound(in, s)
	if plan.end != 0 && res.Err == nil {
		bound = plan.endWhy
	}
	if limited {
		bound = fmt.Sprintf("-n %d: %d records shown", limit, limit)
	}
	return streamEnd(stderr, res, in.pgMode, quiet, bound)
}

// rangeBound is "-e LSN" when the reading ended at the end the command line
// asked for (the files reach past it), else "".
func rangeBound(in *input, s *stream.Stream) string {
	if e := in.opts.End; e != 0 && s.Limit() == e {
		return "-e " + e.String()
	}
	return ""
}

// streamEnd turns how a reading on the engine ended into the run's
// outcome, as endOfRun does for a reader's final error. bound, if not "",
// is what ended a clean reading before the WAL ended (-e, -n): said as
// such, not as the end of WAL (after `dump -n 2` walscope said "end of WAL
// at 0/600208 (end of the available files)", which a reader of an incident
// takes for where the WAL ends).
func streamEnd(stderr io.Writer, res stream.Result, pgMode, quiet bool, bound string) error {
	if res.Err == nil && bound != "" {
		if !pgMode && !quiet {
			fmt.Fprintf(stderr, "walscope: stopped at %s (%s), not the end of WAL\n", res.End, bound)
		}
		return nil
	}
	if res.Err == nil {
		return endOfRun(stderr, res.End, io.EOF, pgMode, quiet)
	}
	if _, ok := res.Err.(*exitError); ok {
		return res.Err
	}
	return endOfRun(stderr, res.End, res.Err, pgMode, quiet)
}

// reportSkip says, as pg_waldump does, that the start was not a record start
// (nor a segment start). PostgreSQL 15 and earlier print it on stdout; 17 and
// later (16 unverified) through pg_log_info on stderr.
func reportSkip(stdout, stderr io.Writer, start, first xlog.LSN, v xlog.Version, segSize uint32) {
	if first == start || uint64(start)%uint64(segSize) == 0 {
		return
	}
	n := uint32(first - start)
	unit := "bytes"
	if n == 1 {
		unit = "byte"
	}
	msg := fmt.Sprintf("first record is after %s, at %s, skipping over %d %s\n", start, first, n, unit)
	if v <= xlog.V15 {
		io.WriteString(stdout, msg)
	} else {
		io.WriteString(stderr, "walscope: "+msg)
	}
}

// xlogPass is pass.XLOGPass over the command's input.
func xlogPass[T any](in *input, blockSize, workers, spanBytes int, skipCRC bool, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	parts, start, end, err = pass.XLOGPass(in.src, in.opts, blockSize, workers, spanBytes, skipCRC, add)
	if err != nil {
		err = readerSetupError(err)
	}
	return parts, start, end, err
}

// recordPass is pass.RecordPass over the command's input.
func recordPass[T any](in *input, blockSize, workers, spanBytes int, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	parts, start, end, err = pass.RecordPass(in.src, in.opts, blockSize, workers, spanBytes, add)
	if err != nil {
		err = readerSetupError(err)
	}
	return parts, start, end, err
}
