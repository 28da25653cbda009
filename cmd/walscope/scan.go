package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// recordSink receives the selected records of one span of the stream.
type recordSink interface {
	record(dec *decode.Decoder, d *decode.Record) error
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
}

// scanPart is one span's decoder, count and sink.
type scanPart struct {
	dec   *decode.Decoder
	sink  recordSink
	first bool // the stream's first span, before its first record
	start xlog.LSN
	shown int
}

// scan reads the input the command's flags select, decodes every record,
// applies pg_waldump's filters and -n limit, and feeds the selected records
// to sinks, on the parallel engine (xlog/stream): without a limit, spans of
// the stream are read on every core, merged in WAL order, and the run ends
// as a sequential read would.
func scan(c *cli.Context, stdout *bufio.Writer, plan scanPlan) error {
	stderr := c.App.ErrWriter
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
	res, err := stream.Run(s, stream.Job[*scanPart]{
		NewPart: func(info stream.SpanInfo) *scanPart {
			return &scanPart{dec: decode.NewDecoder(blcksz), sink: plan.newSink(info.Whole),
				first: info.Index == 0 && !info.Resumed, start: info.Span.Start}
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
				return stream.ErrStop
			}
			return nil
		},
		Merge: func(p *scanPart) error { return plan.merge(p.sink) },
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
	return streamEnd(stderr, res, in.pgMode, quiet)
}

// streamEnd turns how a reading on the engine ended into the run's
// outcome, as endOfRun does for a reader's final error.
func streamEnd(stderr io.Writer, res stream.Result, pgMode, quiet bool) error {
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

// xlogPass is a first pass over the stream for its XLOG records
// (checkpoints, parameter changes): spans of spanBytes read on every core,
// headers only, each XLOG record handed to add with its span's T. With
// skipCRC only the XLOG records are checked against their CRC (the command's
// own reading checks every record); without, every record is, and the end
// is where a full read stops. It returns the spans' Ts in WAL order, the

// xlogPass is a first pass over the stream for its XLOG records
// (checkpoints, parameter changes): spans of spanBytes read on every core,
// headers only, each XLOG record handed to add with its span's T. With
// skipCRC only the XLOG records are checked against their CRC (the command's
// own reading checks every record); without, every record is, and the end
// is where a full read stops. It returns the spans' Ts in WAL order, the
// first record's LSN and where reading stopped (the end of the WAL, or its
// first problem).
func xlogPass[T any](in *input, blockSize, workers, spanBytes int, skipCRC bool, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	opts := in.opts
	// Checkpoint records are far below HeadersOnlyKeep: kept whole.
	opts.HeadersOnly, opts.SkipCRC = true, skipCRC
	return passSpans(in.src, opts, blockSize, workers, spanBytes, func(part *T, rec *xlog.Record, dec *decode.Decoder) error {
		if rec.Header.Rmid != xlog.RmgrXLOG || len(rec.Raw) != int(rec.Header.TotLen) {
			return nil // (an XLOG record cut short is a full-page image: none this pass wants)
		}
		if skipCRC && xlog.RecordCRC(rec.Raw) != rec.Header.CRC {
			return errPassStop // damaged here: the reading ends here too
		}
		if d, err := dec.Decode(rec); err == nil {
			add(part, d)
		}
		return nil
	})
}

// recordPass is a first pass over every record of the stream, decoded, on
// every core, stopping where a single reader would (a damaged record, or
// one that does not decode); it returns what xlogPass returns.
func recordPass[T any](in *input, blockSize, workers, spanBytes int, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN, err error) {
	return passSpans(in.src, in.opts, blockSize, workers, spanBytes, func(part *T, rec *xlog.Record, dec *decode.Decoder) error {
		d, err := dec.Decode(rec)
		if err != nil {
			return err
		}
		add(part, d)
		return nil
	})
}

// errPassStop ends a first pass at a record.
var errPassStop = fmt.Errorf("first pass stops here")

// passSpans reads the stream on the parallel engine, handing each record to
// each with its span's T and decoder; an error from each ends the reading
// there. It returns the Ts of the spans up to where reading stopped (a
// problem, or the end of the WAL), in WAL order, the first record's LSN, and
// where reading stopped. The command's own reading reports how the WAL ends;
// err is a setup error (a file that cannot be opened), for the command.
func passSpans[T any](src xlog.Source, opts xlog.Options, blockSize, workers, spanBytes int, each func(*T, *xlog.Record, *decode.Decoder) error) (parts []T, start, end xlog.LSN, err error) {
	s, err := stream.Open(src, stream.Config{Reader: opts, Workers: workers, SpanBytes: spanBytes})
	if err != nil {
		return nil, 0, 0, readerSetupError(err)
	}
	type part struct {
		t   T
		dec *decode.Decoder
	}
	res, err := stream.Run(s, stream.Job[*part]{
		NewPart: func(stream.SpanInfo) *part { return &part{dec: decode.NewDecoder(blockSize)} },
		Record:  func(p *part, rec *xlog.Record) error { return each(&p.t, rec, p.dec) },
		Merge: func(p *part) error {
			parts = append(parts, p.t)
			return nil
		},
	})
	if err != nil {
		return nil, 0, 0, readerSetupError(err)
	}
	return parts, res.First, res.End, nil
}
