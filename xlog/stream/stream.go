// Package stream reads one WAL stream with several readers at once and gives
// exactly what one sequential xlog.Reader gives: the same records, in WAL
// order, ending at the same record with the same error.
//
// The stream is cut into spans of whole segments. Each span is read by its
// own xlog.Reader (Options.Start and StopAt), into a part of the caller's
// type P; parts are handed to the caller's Merge one after another in WAL
// order. At most Workers spans are read at once, and at most Workers+1 are
// read but not yet merged, so memory is bounded by the parts, not by the
// stream. Where spans read fast (switched segments holding a few KB of WAL
// each), consecutive planned spans are read as one, by one reader into one
// part, so that each reading lasts about a millisecond or more (jobTarget):
// the hand-offs between threads then cost little beside it.
//
// Every join is checked: the first record of a span must start where the
// previous span's last record ended, and name that record as its xl_prev. A
// span can only know this with its neighbour's help: its reader finds its
// first record by skipping the continuation of a record that began in the
// previous span (XLogFindNextRecord), trusting the page header. When a join
// does not hold, the rest of the stream is read again by one reader that
// goes on from the previous span's last record, as a sequential reader
// would, and its part replaces the span's: the reading then ends where, and
// with the error, a sequential reading ends. A Job can also check joins
// itself (CheckJoin), which is what a reader that resynchronises after
// damage, like analyze.Verify, does through RunSpans.
//
//	segments:  |  000..01  |  000..02  |  000..03  |  000..04  |
//	spans:     [ span 0              ) [ span 1              )
//	records:   r1  r2  r3  r4..........r4' r5  r6  r7 ...
//	                        ^ r4 starts in span 0 and is read whole by
//	                          span 0's reader; span 1 starts at r5, which
//	                          must start at r4's end and name r4 as xl_prev
package stream

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/walscope/walscope/xlog"
)

// ErrJoin is wrapped by the error CheckJoin returns: two spans' records do not
// chain. It wraps xlog.ErrPrevLink, the error a sequential reader gives at such
// a record.
var ErrJoin = fmt.Errorf("spans do not join: %w", xlog.ErrPrevLink)

// ErrStop, returned by a Job's Record, ends the reading after that record as
// if the stream ended there: Run then reports a clean end (Result.Err nil).
// Later spans are not merged.
var ErrStop = errors.New("stop reading")

// DefaultSpanBytes is the WAL each span covers when Config.SpanBytes is 0.
const DefaultSpanBytes = 64 << 20

// Config says how to read a stream.
type Config struct {
	// Reader are the options of every span's reader; Start and End delimit
	// the stream, and StopAt, if set, ends it at the first record that
	// begins at or after it. Continues and each span's StopAt are set per
	// span.
	Reader xlog.Options
	// Workers is how many spans are read at once; 0 means GOMAXPROCS, 1 one
	// sequential reader.
	Workers int
	// SpanBytes is the WAL one span covers, rounded down to whole segments
	// (at least one); 0 means DefaultSpanBytes.
	SpanBytes int
	// Cores, when not nil, are shared with the run's other work: each
	// span being read holds one besides the Workers bound, so that the
	// streams of a run together read at most as many spans at once as it
	// has cores, and work that takes one for itself keeps it.
	Cores Cores
	// Progress, when set, is called from the readers' goroutines, at most
	// once per MiB read per span, with the WAL bytes read since its last
	// call; it must be safe for concurrent use.
	Progress func(bytes int64)
}

// Cores are the cores a run's parallel work shares, a token each
// (GOMAXPROCS of them): each span a Stream reads holds one while it is read
// (Config.Cores), and other work of the run may take one for itself
// (TryTake). The Go scheduler gives every runnable goroutine its turn: a
// compressed backup inflated on one goroutine while two readers read the
// WAL on two cores got about two thirds of a core, and the replay that
// waits for it waited longer (rows on a gzip'd tar, replay.OpenBackupAhead:
// the backup open in 0.32-0.37 s instead of 0.47-0.56 s, the run 12% sooner).
type Cores chan struct{}

// NewCores returns a token for each of GOMAXPROCS cores.
func NewCores() Cores { return make(Cores, runtime.GOMAXPROCS(0)) }

// TryTake takes a core if one is free, without waiting: work that takes
// one must never wait for a span to be read while it holds it, and a
// caller that gets none goes on sharing. A nil Cores has none.
func (c Cores) TryTake() bool {
	if c == nil {
		return false
	}
	select {
	case c <- struct{}{}:
		return true
	default:
		return false
	}
}

// Give gives back a core TryTake took.
func (c Cores) Give() { <-c }

// Stream is a WAL stream opened for a parallel reading: its geometry is
// known (from the first segment's long page header), its spans are planned.
type Stream struct {
	src     xlog.Source
	cfg     Config
	spans   []xlog.Span
	start   xlog.LSN
	end     xlog.LSN
	version xlog.Version
	segSize uint32
	page    uint32
	sysID   uint64
}

// Open reads the stream's geometry and plans its spans. Its errors are
// xlog.NewReader's.
func Open(src xlog.Source, cfg Config) (*Stream, error) {
	if cfg.Reader.Index == nil {
		// Every span's reader looks files up in one index, not its own,
		// and takes the geometry this first reader reads.
		cfg.Reader.Index = xlog.NewSegmentIndex()
	}
	r, err := xlog.NewReader(src, cfg.Reader)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.SpanBytes <= 0 {
		cfg.SpanBytes = DefaultSpanBytes
	}
	s := &Stream{src: src, cfg: cfg, start: r.Start(), version: r.Version(), segSize: r.SegmentSize(),
		page: r.PageSize(), sysID: r.SystemID(), end: r.LastSegmentEnd()}
	if cfg.Reader.End != 0 {
		s.end = min(s.end, cfg.Reader.End)
	}
	if cfg.Workers > 1 {
		s.spans = r.Spans(max(1, cfg.SpanBytes/int(s.segSize)))
	}
	if len(s.spans) <= 1 {
		s.spans = []xlog.Span{{Start: cfg.Reader.Start}}
	}
	if g := cfg.Reader.StopAt; g != 0 {
		// The spans that begin before the stream's stop; the last reads
		// to it.
		n := len(s.spans)
		for n > 1 && s.spans[n-1].Start >= g {
			n--
		}
		s.spans = s.spans[:n]
		s.spans[n-1].Stop = 0
	}
	return s, nil
}

// Spans returns the planned spans, in WAL order; the last one's Stop is 0.
// A part may cover several consecutive ones (SpanInfo.Span).
func (s *Stream) Spans() []xlog.Span { return s.spans }

// Start is where reading begins (Config.Reader.Start, or the start of the
// first segment).
func (s *Stream) Start() xlog.LSN { return s.start }

// Limit is the furthest the stream can go: the end of its last segment file,
// or Config.Reader.End.
func (s *Stream) Limit() xlog.LSN { return s.end }

// Version is the PostgreSQL version that wrote the stream.
func (s *Stream) Version() xlog.Version { return s.version }

// SegmentSize is the stream's WAL segment size.
func (s *Stream) SegmentSize() uint32 { return s.segSize }

// PageSize is the stream's XLOG_BLCKSZ.
func (s *Stream) PageSize() uint32 { return s.page }

// SystemID is the database system identifier of the first segment.
func (s *Stream) SystemID() uint64 { return s.sysID }

// SpanInfo tells a part which stretch of the stream it reads.
type SpanInfo struct {
	Index int       // of its first planned span (Spans), in WAL order; a re-read after a failed join keeps the index of the span it replaces
	Span  xlog.Span // the records that start in [Start, Stop); Stop 0: to the end; one or more planned spans
	// Whole is set when this one part reads the whole stream: it may then
	// write its output as it goes.
	Whole bool
	// Resumed is set on the part that reads the rest of the stream on from
	// the last record of the previous span, after a join did not hold.
	Resumed bool
}

// Job is what a reading does with the records. P is the type of a span's
// part, typically a pointer to an accumulator.
type Job[P any] struct {
	// NewPart makes the part of one span, before its reading starts, on the
	// goroutine that reads it.
	NewPart func(SpanInfo) P
	// Record is called with every record of the span, in order, on the
	// span's goroutine. rec is valid only during the call. A non-nil error
	// ends the reading at this record: ErrStop as a clean end, any other
	// error as the stream's end (it is Result.Err).
	Record func(part P, rec *xlog.Record) error
	// Merge is called with each part that is used, in WAL order, on Run's
	// goroutine. An error from Merge ends Run and is returned by it.
	Merge func(part P) error
	// Reuse, when set, is called instead of NewPart with a part Merge is
	// done with (Run keeps no reference to it after Merge returns), on the
	// goroutine of a later span: it returns the part NewPart would have
	// made for info, typically the same one cleared, or false to have
	// NewPart make one. A reading cut into many spans holding little WAL
	// (switched segments: a few KB in each 16 MB) then makes about Workers+2
	// parts, not one per span: in a short run each new part was fresh memory,
	// paid in page faults, more than the reading of its span (issue 16).
	Reuse func(part P, info SpanInfo) (P, bool)
}

// Result says how a reading ended.
type Result struct {
	Records int64    // records handed to Record
	First   xlog.LSN // the first record's start (InvalidLSN if none)
	Last    xlog.LSN // the last record's start
	// End is where reading stopped: after the last record at a clean end,
	// else where the problem is.
	End xlog.LSN
	// Err is nil at a clean end (the end of the requested range or of the
	// files, or ErrStop); else the error that ended the reading: the
	// reader's (an *xlog.Error, which xlog.IsEndOfWAL tells apart from
	// damage) or the one Record returned.
	Err error
}

// spanEnd is what one span's reading found.
type spanEnd[P any] struct {
	part      P
	records   int64
	first     xlog.LSN
	firstPrev xlog.LSN
	last      xlog.LSN
	end       xlog.LSN
	err       error    // io.EOF at the span's stop or the stream's end
	stopped   bool     // Record returned ErrStop
	spanStop  xlog.LSN // the Stop of the span read (0: to the end)
	setupErr  error
}

// Run reads the stream with Job j. Its error is a setup error (a span's reader
// that cannot open) or Merge's; how the reading ended is in the Result.
func Run[P any](s *Stream, j Job[P]) (Result, error) {
	var res Result
	var free parts[P]
	merge := func(p P) error {
		err := j.Merge(p)
		if err == nil && j.Reuse != nil {
			free.put(p)
		}
		return err
	}
	var last spanEnd[P]
	haveLast := false
	finish := func(e *spanEnd[P]) {
		res.Records += e.records
		if e.records > 0 {
			if res.First == 0 {
				res.First = e.first
			}
			res.Last = e.last
		}
		res.End = e.end
		if e.err != nil && e.err != io.EOF && !e.stopped {
			res.Err = e.err
		}
	}
	var runErr error
	RunSpans(s, func(info SpanInfo, stop *atomic.Bool) *spanEnd[P] {
		return readSpan(s, j, &free, info, false, stop)
	}, func(i int, e *spanEnd[P]) bool {
		if e.setupErr != nil {
			runErr = e.setupErr
			return false
		}
		if haveLast && e.records > 0 && CheckJoin(last.last, last.end, e.first, e.firstPrev) != nil {
			// The join does not hold: read on from the last good record as
			// one reader would, and let that reading end the stream.
			info := SpanInfo{Index: i, Span: xlog.Span{Start: last.last}, Resumed: true}
			e = readSpan(s, j, &free, info, true, nil)
			if e.setupErr != nil {
				runErr = e.setupErr
				return false
			}
			if err := merge(e.part); err != nil {
				runErr = err
				return false
			}
			finish(e)
			return false
		}
		if err := merge(e.part); err != nil {
			runErr = err
			return false
		}
		finish(e)
		if e.records > 0 {
			last, haveLast = *e, true
		}
		return e.err == io.EOF && !e.stopped && e.spanStop != 0
	})
	return res, runErr
}

// parts holds the parts Merge is done with, for Job.Reuse.
type parts[P any] struct {
	mu   sync.Mutex
	list []P
}

func (f *parts[P]) put(p P) {
	f.mu.Lock()
	f.list = append(f.list, p)
	f.mu.Unlock()
}

// newPart is a merged part j.Reuse takes, else NewPart's.
func (f *parts[P]) newPart(j Job[P], info SpanInfo) P {
	if j.Reuse != nil {
		f.mu.Lock()
		var p P
		ok := len(f.list) > 0
		if ok {
			p = f.list[len(f.list)-1]
			f.list = f.list[:len(f.list)-1]
		}
		f.mu.Unlock()
		if ok {
			if p, ok = j.Reuse(p, info); ok {
				return p
			}
		}
	}
	return j.NewPart(info)
}

// readSpan reads one span into a new part. With skipFirst (a re-read from the
// previous span's last record) that record, already merged, is not handed on.
func readSpan[P any](s *Stream, j Job[P], free *parts[P], info SpanInfo, skipFirst bool, stop *atomic.Bool) *spanEnd[P] {
	e := &spanEnd[P]{spanStop: info.Span.Stop}
	opts := s.cfg.Reader
	opts.Start = info.Span.Start
	if st := info.Span.Stop; st != 0 && (opts.StopAt == 0 || st < opts.StopAt) {
		opts.StopAt = st // (else the stream's, if any)
	}
	opts.Continues = info.Index > 0
	r, err := xlog.NewReader(s.src, opts)
	if err != nil {
		e.setupErr = err
		return e
	}
	defer r.Close()
	e.part = free.newPart(j, info)
	reported := info.Span.Start
	for n := 0; ; n++ {
		if n&1023 == 1023 && stop != nil && stop.Load() {
			e.err = io.EOF // the result will not be used
			return e
		}
		rec, err := r.Next()
		if err != nil {
			e.err, e.end = err, r.EndLSN()
			if s.cfg.Progress != nil && e.end > reported {
				s.cfg.Progress(int64(e.end - reported))
			}
			return e
		}
		if s.cfg.Progress != nil && rec.EndLSN-reported > 1<<20 {
			s.cfg.Progress(int64(rec.EndLSN - reported))
			reported = rec.EndLSN
		}
		if skipFirst {
			skipFirst = false
			if rec.LSN == info.Span.Start {
				continue
			}
		}
		if e.records == 0 {
			e.first, e.firstPrev = rec.LSN, rec.Header.Prev
		}
		e.records++
		e.last, e.end = rec.LSN, rec.EndLSN
		if err := j.Record(e.part, rec); err != nil {
			if err == ErrStop {
				e.err, e.stopped = io.EOF, true
			} else {
				e.err, e.end = err, rec.LSN
			}
			return e
		}
	}
}

// CheckJoin checks that a span whose first record starts at first and names
// firstPrev as xl_prev follows one whose last record starts at prevLast and
// ends where the next begins, at prevEnd. Its error is an *xlog.Error
// wrapping ErrJoin (and so xlog.ErrPrevLink).
func CheckJoin(prevLast, prevEnd, first, firstPrev xlog.LSN) error {
	if first == prevEnd && firstPrev == prevLast {
		return nil
	}
	e := &xlog.Error{LSN: first, RecordLSN: prevLast, Err: ErrJoin,
		Msg: fmt.Sprintf("record with incorrect prev-link %s at %s", firstPrev, first)}
	if first != prevEnd {
		e.Msg = fmt.Sprintf("the record after %s should start at %s, the next one found starts at %s", prevLast, prevEnd, first)
	}
	return e
}

// RunSpans is the scheduler under Run, for readings that drive their own
// reader per span (one that resynchronises after damage, say): read is
// called for consecutive stretches of one or more planned spans that cover
// the stream (info.Span), at most Config.Workers at once, each on its own
// goroutine, and may poll stop to end early; merge is called with the results
// in WAL order, with info.Index, on RunSpans' goroutine, and returns whether
// to go on. Spans after the one merge stopped at are not read, or their
// results dropped; RunSpans returns when no read is running any more.
func RunSpans[R any](s *Stream, read func(info SpanInfo, stop *atomic.Bool) R, merge func(index int, r R) bool) {
	spans := s.spans
	workers := max(1, s.cfg.Workers)
	if len(spans) == 1 || workers == 1 {
		// Nothing to overlap: read on the caller's goroutine. A goroutine
		// and channel per span made a run over one 1 MB segment hand its
		// work between threads (futex wake-ups, a second stack) for
		// nothing, which a loaded machine turns into milliseconds of
		// waiting (issue 16: start time).
		var stop atomic.Bool
		for i, sp := range spans {
			if !merge(i, read(SpanInfo{Index: i, Span: sp, Whole: len(spans) == 1}, &stop)) {
				return
			}
		}
		return
	}
	type job struct {
		index int // its first planned span
		out   chan R
	}
	// jobs carries the jobs started, in WAL order, to the merging loop.
	jobs := make(chan job, len(spans))
	var stop atomic.Bool
	// slots bounds the jobs read but not yet merged; sem the jobs being
	// read. wg counts the scheduler and the readers it starts: RunSpans
	// returns only when none is left, so that the caller may close the
	// source.
	slots := make(chan struct{}, workers+1)
	sem := make(chan struct{}, workers)
	done := make(chan struct{})
	size := newJobSizer(s)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i := 0; i < len(spans); {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			sem <- struct{}{}
			cores := s.cfg.Cores
			if cores != nil {
				select {
				case cores <- struct{}{}:
				case <-done:
					<-sem
					return
				}
			}
			if stop.Load() {
				<-sem
				if cores != nil {
					<-cores
				}
				return
			}
			n := size.spans(len(spans) - i)
			info := SpanInfo{Index: i, Span: xlog.Span{Start: spans[i].Start, Stop: spans[i+n-1].Stop}, Whole: len(spans) == 1}
			j := job{index: i, out: make(chan R, 1)}
			jobs <- j
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				r := read(info, &stop)
				size.took(n, time.Since(t))
				j.out <- r
				<-sem
				if cores != nil {
					<-cores
				}
			}()
			i += n
		}
	}()
	defer func() {
		stop.Store(true)
		close(done)
		wg.Wait()
	}()
	for j := range jobs {
		r := <-j.out
		// the job's slot is freed once it is merged, not before: a job
		// being merged (a merge that works, like a replay's) counts as
		// read but not merged, and the bound holds while it runs
		ok := merge(j.index, r)
		<-slots
		if !ok {
			return
		}
	}
}

// jobTarget is how long one job of the parallel reading should take: a job
// reads one planned span, or several consecutive ones where spans read fast.
// Each job costs goroutine hand-offs between threads (a few to tens of
// µs on a virtual machine); on dense WAL a 32 MiB span takes tens of
// milliseconds and is a job of its own, but on an archive of switched
// segments (a few KB of WAL in each 16 MB file) a span took 70 µs, and two
// readers were slower than one (issue 16). A variable, for the tests.
var jobTarget = 2 * time.Millisecond

// maxJobBytes bounds the WAL one job covers, whatever the spans before it
// took: a stretch of switched segments followed by dense WAL then costs at
// most this much read by one reader.
const maxJobBytes = 1 << 30

// jobSizer decides how many planned spans the next job covers, from how
// long the last job took a span: twice as many while they are fast, fewer
// at once when they are slow.
type jobSizer struct {
	max int // spans in maxJobBytes
	n   atomic.Int64
}

func newJobSizer(s *Stream) *jobSizer {
	z := &jobSizer{max: 1}
	if len(s.spans) > 1 && s.spans[0].Stop > s.spans[0].Start {
		z.max = max(1, int(maxJobBytes/uint64(s.spans[0].Stop-s.spans[0].Start)))
	}
	z.n.Store(1)
	return z
}

// spans returns the size of the next job, at most left.
func (z *jobSizer) spans(left int) int {
	return max(1, min(int(z.n.Load()), left))
}

// took records that a job of n spans took d.
func (z *jobSizer) took(n int, d time.Duration) {
	perSpan := d / time.Duration(n)
	next := 2 * n
	if perSpan > 0 {
		next = min(next, int(jobTarget/perSpan))
	}
	z.n.Store(int64(max(1, min(next, z.max))))
}

// SetProgress sets Config.Progress, for a caller that sizes its progress
// display from the opened stream (Start, Limit).
func (s *Stream) SetProgress(f func(bytes int64)) { s.cfg.Progress = f }
