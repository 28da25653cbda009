package main

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/urfave/cli/v2"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
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

// spanResult is what one span's reader found.
type spanResult struct {
	sink      recordSink
	records   int      // records read (before filtering)
	first     xlog.LSN // first record read
	firstPrev xlog.LSN // its xl_prev
	last      xlog.LSN // last record read
	end       xlog.LSN // where the next record would start
	err       error    // io.EOF at the span's end, else the error that ended it
	errRec    *xlog.Record
	decodeErr error
	version   xlog.Version
	segSize   uint32
	start     xlog.LSN // reading began here
}

// scan reads the input the command's flags select, decodes every record,
// applies pg_waldump's filters and -n limit, and feeds the selected records
// to sinks. Without a limit, the stream is cut into spans of whole segments
// read by one worker per core; the spans are merged in WAL order and checked
// at each join (the first record of a span must start where the previous
// span ended and name its last record as xl_prev). Everything before the
// first problem is delivered, then the run ends as a sequential read would.
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
	r, err := xlog.NewReader(in.src, in.opts)
	if err != nil {
		return readerSetupError(err)
	}
	quiet := c.Bool("quiet")
	blcksz := c.Int("blcksz")
	workers := jobs(c)
	var spans []xlog.Span
	if !plan.sequential && limit == 0 && workers > 1 {
		spans = r.Spans(max(1, plan.spanBytes/int(r.SegmentSize())))
	}
	if len(spans) <= 1 {
		spans = []xlog.Span{{Start: in.opts.Start}}
	}
	wholeEnd := r.LastSegmentEnd()
	if in.opts.End != 0 {
		wholeEnd = min(wholeEnd, in.opts.End)
	}
	bar := startProgress(stderr, quiet, int64(wholeEnd)-int64(r.Start()), int64(r.SegmentSize()))
	defer bar.finish()
	r.Close()

	readSpan := func(index int, sp xlog.Span, sink recordSink, limit int) spanResult {
		opts := in.opts
		opts.Start, opts.StopAt = sp.Start, sp.Stop
		opts.HeadersOnly = plan.headersOnly
		res := spanResult{sink: sink}
		r, err := xlog.NewReader(in.src, opts)
		if err != nil {
			res.err = err
			return res
		}
		defer r.Close()
		res.version, res.segSize, res.start = r.Version(), r.SegmentSize(), r.Start()
		dec := decode.NewDecoder(blcksz)
		shown := 0
		var prev xlog.LSN
		reported := sp.Start
		for {
			rec, err := r.Next()
			if bar != nil && rec != nil && rec.EndLSN-reported > 1<<20 {
				bar.add(int64(rec.EndLSN - reported))
				reported = rec.EndLSN
			}
			if err != nil {
				res.err, res.end = err, r.EndLSN()
				return res
			}
			if res.records == 0 {
				res.first, res.firstPrev = rec.LSN, rec.Header.Prev
				if index == 0 {
					// Nothing is written before the first span's output.
					reportSkip(stdout, stderr, res.start, rec.LSN, res.version, res.segSize)
				}
			}
			res.records++
			res.last, res.end = rec.LSN, rec.EndLSN
			d, err := dec.Decode(rec, prev)
			prev = rec.LSN
			if err != nil {
				res.decodeErr, res.errRec = err, rec
				res.err = walError(r, rec, err)
				return res
			}
			if !f.match(d) {
				continue
			}
			if err := sink.record(dec, d); err != nil {
				res.err = err
				return res
			}
			shown++
			if limit > 0 && shown >= limit {
				res.err = io.EOF
				return res
			}
		}
	}

	// Run the spans, at most workers at a time and at most workers+1 not
	// yet merged, so memory stays bounded whatever the archive size.
	results := make([]chan spanResult, len(spans))
	for i := range results {
		results[i] = make(chan spanResult, 1)
	}
	slots := make(chan struct{}, workers+1)
	var stop atomic.Bool
	go func() {
		defer close(slots)
		sem := make(chan struct{}, workers)
		for i, sp := range spans {
			slots <- struct{}{}
			if stop.Load() {
				results[i] <- spanResult{err: errStopped}
				continue
			}
			sem <- struct{}{}
			go func() {
				results[i] <- readSpan(i, sp, plan.newSink(len(spans) == 1), limit)
				<-sem
			}()
		}
	}()
	defer func() {
		stop.Store(true)
		go func() {
			for range slots {
			}
		}()
	}()

	var last spanResult
	haveLast := false
	var end xlog.LSN
	var version xlog.Version
	for i := range spans {
		res := <-results[i]
		<-slots
		if i == 0 && res.version != 0 {
			version = res.version
		}
		if haveLast && res.records > 0 && (res.first != last.end || res.firstPrev != last.last) {
			stop.Store(true)
			if err := plan.merge(res.sink); err != nil {
				return err
			}
			err := &xlog.Error{LSN: res.first, RecordLSN: last.last, Err: xlog.ErrPrevLink,
				Msg: fmt.Sprintf("record with incorrect prev-link %s at %s", res.firstPrev, res.first)}
			if res.first != last.end {
				err.Msg = fmt.Sprintf("the record after %s starts at %s, not at %s", last.last, res.first, last.end)
			}
			return finishScan(stdout, stderr, plan, err, last.end, version, in.pgMode, quiet)
		}
		if err := plan.merge(res.sink); err != nil {
			return err
		}
		if res.records > 0 {
			last, haveLast = res, true
		}
		end = res.end
		if res.err != io.EOF || spans[i].Stop == 0 {
			stop.Store(true)
			return finishScan(stdout, stderr, plan, res.err, end, version, in.pgMode, quiet)
		}
	}
	return finishScan(stdout, stderr, plan, io.EOF, end, version, in.pgMode, quiet)
}

var errStopped = fmt.Errorf("stopped")

func finishScan(stdout *bufio.Writer, stderr io.Writer, plan scanPlan, runErr error, end xlog.LSN, version xlog.Version, pgMode, quiet bool) error {
	if plan.done != nil {
		if err := plan.done(end, version); err != nil {
			return err
		}
	}
	stdout.Flush()
	if runErr == nil || runErr == io.EOF {
		return endOfRun(stderr, end, io.EOF, pgMode, quiet)
	}
	if _, ok := runErr.(*exitError); ok {
		return runErr
	}
	return endOfRun(stderr, end, runErr, pgMode, quiet)
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
// first record's LSN and where reading stopped (the end of the WAL, or its
// first problem).
func xlogPass[T any](in *input, r *xlog.Reader, blockSize, workers, spanBytes int, skipCRC bool, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN) {
	setup := func(o *xlog.Options) {
		// Checkpoint records are far below HeadersOnlyKeep: kept whole.
		o.HeadersOnly, o.SkipCRC = true, skipCRC
	}
	return passSpans(in, r, blockSize, workers, spanBytes, setup, func(part *T, rec *xlog.Record, dec *decode.Decoder) bool {
		if rec.Header.Rmid != xlog.RmgrXLOG || len(rec.Raw) != int(rec.Header.TotLen) {
			return true // (an XLOG record cut short is a full-page image: none this pass wants)
		}
		if skipCRC && xlog.RecordCRC(rec.Raw) != rec.Header.CRC {
			return false // damaged here: the reading ends here too
		}
		if d, err := dec.Decode(rec, 0); err == nil {
			add(part, d)
		}
		return true
	})
}

// recordPass is a first pass over every record of the stream, decoded, on
// every core, stopping where a single reader would (a damaged record, or
// one that does not decode); it returns what xlogPass returns.
func recordPass[T any](in *input, r *xlog.Reader, blockSize, workers, spanBytes int, add func(*T, *decode.Record)) (parts []T, start, end xlog.LSN) {
	return passSpans(in, r, blockSize, workers, spanBytes, func(*xlog.Options) {}, func(part *T, rec *xlog.Record, dec *decode.Decoder) bool {
		d, err := dec.Decode(rec, 0)
		if err != nil {
			return false
		}
		add(part, d)
		return true
	})
}

// passSpans reads the stream in spans, one worker per core, handing each
// record to each with its span's T and decoder; each returns false to stop
// the reading there. It returns the Ts of the spans up to the first that
// stopped (a problem, or the end of the WAL), in WAL order, the first
// record's LSN, and where reading stopped.
func passSpans[T any](in *input, r *xlog.Reader, blockSize, workers, spanBytes int, setup func(*xlog.Options), each func(*T, *xlog.Record, *decode.Decoder) bool) (parts []T, start, end xlog.LSN) {
	var spans []xlog.Span
	if workers > 1 {
		spans = r.Spans(max(1, spanBytes/int(r.SegmentSize())))
	}
	if len(spans) <= 1 {
		spans = []xlog.Span{{Start: in.opts.Start}}
	}
	parts = make([]T, len(spans))
	starts := make([]xlog.LSN, len(spans))
	ends := make([]xlog.LSN, len(spans))
	stopped := make([]bool, len(spans)) // ended before the span's end
	sem := make(chan struct{}, max(1, workers))
	var wg sync.WaitGroup
	for i, sp := range spans {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			opts := in.opts
			opts.Start, opts.StopAt = sp.Start, sp.Stop
			setup(&opts)
			r, err := xlog.NewReader(in.src, opts)
			if err != nil {
				stopped[i] = true
				return
			}
			defer r.Close()
			dec := decode.NewDecoder(blockSize)
			for {
				rec, err := r.Next()
				if err != nil {
					// the command's own reading reports how the WAL ends
					ends[i], stopped[i] = r.EndLSN(), err != io.EOF || sp.Stop == 0
					return
				}
				if starts[i] == 0 {
					starts[i] = rec.LSN
				}
				if !each(&parts[i], rec, dec) {
					ends[i], stopped[i] = rec.LSN, true
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range spans {
		if stopped[i] {
			return parts[:i+1], starts[0], ends[i]
		}
	}
	return parts, starts[0], ends[len(ends)-1]
}
