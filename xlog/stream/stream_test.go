package stream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testwal.Cleanup()
	os.Exit(code)
}

// withJobTarget sets how long a job should last for the rest of the test:
// 0 reads every planned span as a job of its own, an hour makes every job
// after the first ones cover many spans.
func withJobTarget(t *testing.T, d time.Duration) {
	old := jobTarget
	jobTarget = d
	t.Cleanup(func() { jobTarget = old })
}

// got is what a reading delivered: every record's identity, and its end.
type got struct {
	recs []recID
	end  xlog.LSN
	err  string // "" at a clean end
}

type recID struct {
	lsn, endLSN, prevRead xlog.LSN
	crc                   uint32
	tli                   xlog.TimeLineID
}

func idOf(rec *xlog.Record) recID {
	return recID{rec.LSN, rec.EndLSN, rec.PrevRead, rec.Header.CRC, rec.TLI}
}

// sequential reads src with one xlog.Reader, stopping (with stopErr) at the
// record starting at stopAt, if not 0.
func sequential(t *testing.T, src xlog.Source, opts xlog.Options, stopAt xlog.LSN, stopErr error) got {
	t.Helper()
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var g got
	for {
		rec, err := r.Next()
		if err != nil {
			g.end = r.EndLSN()
			if err != io.EOF {
				g.err = err.Error()
			}
			return g
		}
		g.recs = append(g.recs, idOf(rec))
		g.end = rec.EndLSN
		if rec.LSN == stopAt {
			g.end = rec.LSN
			if stopErr != ErrStop {
				g.err = stopErr.Error()
			} else {
				g.end = rec.EndLSN
			}
			return g
		}
	}
}

// parallel reads src with Run; each part is the records of one span.
func parallel(t *testing.T, s *Stream, stopAt xlog.LSN, stopErr error) (got, Result) {
	t.Helper()
	return parallelJob(t, s, stopAt, stopErr, false)
}

// parallelJob is parallel, with reuse a Job that hands merged parts on to
// later spans (Job.Reuse).
func parallelJob(t *testing.T, s *Stream, stopAt xlog.LSN, stopErr error, reuse bool) (got, Result) {
	t.Helper()
	var g got
	job := Job[*[]recID]{
		NewPart: func(SpanInfo) *[]recID { return new([]recID) },
		Record: func(p *[]recID, rec *xlog.Record) error {
			*p = append(*p, idOf(rec))
			if rec.LSN == stopAt {
				return stopErr
			}
			return nil
		},
		Merge: func(p *[]recID) error {
			g.recs = append(g.recs, *p...)
			return nil
		},
	}
	if reuse {
		job.Reuse = func(p *[]recID, _ SpanInfo) (*[]recID, bool) {
			*p = (*p)[:0]
			return p, true
		}
	}
	res, err := Run(s, job)
	ended(t, &g, res, err)
	if res.Records != int64(len(g.recs)) {
		t.Errorf("Result.Records %d, merged %d", res.Records, len(g.recs))
	}
	if len(g.recs) > 0 && (res.First != g.recs[0].lsn || res.Last != g.recs[len(g.recs)-1].lsn) {
		t.Errorf("Result first/last %s/%s, merged %s/%s", res.First, res.Last, g.recs[0].lsn, g.recs[len(g.recs)-1].lsn)
	}
	return g, res
}

// ended records in g how a Run ended; err, Run's own, fails the test.
func ended(t *testing.T, g *got, res Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	g.end = res.End
	if res.Err != nil {
		g.err = res.Err.Error()
	}
}

func same(t *testing.T, what string, want, have got) {
	t.Helper()
	if len(want.recs) != len(have.recs) {
		t.Errorf("%s: %d records, sequential %d", what, len(have.recs), len(want.recs))
	}
	for i := range min(len(want.recs), len(have.recs)) {
		if want.recs[i] != have.recs[i] {
			t.Errorf("%s: record %d is %+v, sequential %+v", what, i, have.recs[i], want.recs[i])
			break
		}
	}
	if want.end != have.end || want.err != have.err {
		t.Errorf("%s: ended at %s with %q, sequential at %s with %q", what, have.end, have.err, want.end, want.err)
	}
}

// inputs lists every fixture and corpus (all timelines followed) and every
// case of the corruption catalogue.
func inputs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, s := range testwal.Sets(t) {
		out[s.Name] = filepath.Join(testwal.Extract(t, s), "archive")
	}
	for _, c := range testwal.CorruptCases(t, 10) {
		out["corrupt/"+testwal.CaseName(c)] = testwal.ExtractCase(t, c)
	}
	return out
}

// TestParallelEqualsSequential: on every fixture, corpus and corruption case,
// with spans of one segment and of odd sizes, on 2 to 5 workers, Run delivers
// the records one reader delivers, in order, and ends where and as it ends;
// and a Job that stops at a record (an error, or ErrStop) ends there too.
func TestParallelEqualsSequential(t *testing.T) {
	for name, dir := range inputs(t) {
		t.Run(name, func(t *testing.T) {
			src, err := xlog.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			opts := xlog.Options{FollowHistory: true}
			want := sequential(t, src, opts, 0, nil)
			if len(want.recs) == 0 {
				t.Skip("no record")
			}
			s0, err := Open(src, Config{Reader: opts, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			seg := int(s0.SegmentSize())
			spans := 0
			defaultTarget := jobTarget
			withJobTarget(t, defaultTarget) // restored however the test ends
			for i, c := range []struct{ workers, segs int }{{2, 1}, {3, 1}, {2, 3}, {5, 2}, {4, 7}, {2, 1}, {3, 1}, {2, 1}, {3, 2}} {
				s, err := Open(src, Config{Reader: opts, Workers: c.workers, SpanBytes: c.segs*seg + seg/3})
				if err != nil {
					t.Fatal(err)
				}
				spans = max(spans, len(s.Spans()))
				reuse := i >= 5 && i < 7   // with merged parts reused
				target := time.Duration(0) // a job per span
				if i >= 7 {
					target = time.Hour // jobs of many spans
				}
				jobTarget = target
				have, _ := parallelJob(t, s, 0, nil, reuse)
				jobTarget = defaultTarget
				same(t, fmt.Sprintf("%d workers, %d-segment spans, reuse %v, job target %v", c.workers, c.segs, reuse, target), want, have)
			}
			if spans < 2 && len(src.Segments()) > 1 {
				t.Errorf("%d segments read in %d span", len(src.Segments()), spans)
			}
			// A range: from inside a record to an end inside another, as
			// -s and -e give it.
			ranged := opts
			ranged.Start = want.recs[len(want.recs)/5].lsn + 1
			ranged.End = want.recs[len(want.recs)*4/5].lsn + 1
			wantRange := sequential(t, src, ranged, 0, nil)
			for _, workers := range []int{2, 3} {
				s, err := Open(src, Config{Reader: ranged, Workers: workers, SpanBytes: seg})
				if err != nil {
					t.Fatal(err)
				}
				have, _ := parallel(t, s, 0, nil)
				same(t, fmt.Sprintf("from %s to %s on %d workers", ranged.Start, ranged.End, workers), wantRange, have)
			}
			// A Job that ends the reading at a record in the middle.
			stopAt := want.recs[len(want.recs)*2/3].lsn
			for _, stopErr := range []error{errors.New("enough"), ErrStop} {
				s, _ := Open(src, Config{Reader: opts, Workers: 3, SpanBytes: seg})
				have, res := parallelJob(t, s, stopAt, stopErr, stopErr == ErrStop)
				same(t, fmt.Sprintf("stopping with %v", stopErr), sequential(t, src, opts, stopAt, stopErr), have)
				if stopErr != ErrStop && !errors.Is(res.Err, stopErr) {
					t.Errorf("Result.Err %v, want the Job's error", res.Err)
				}
			}
		})
	}
}

// openLZ4Fixture opens fixtures/pg15-replica-lz4, a stream of 13 segments.
func openLZ4Fixture(t *testing.T) *xlog.DirSource {
	t.Helper()
	for _, s := range testwal.Sets(t) {
		if s.Name == "fixtures/pg15-replica-lz4" {
			src, err := xlog.OpenDir(filepath.Join(testwal.Extract(t, s), "archive"))
			if err != nil {
				t.Fatal(err)
			}
			return src
		}
	}
	t.Fatal("fixtures/pg15-replica-lz4 missing")
	return nil
}

// TestFailedJoinReadsOn: when a span's first record is not where the
// previous span ended (here a span that starts a record late, as a segment
// rewritten under the readers would make it), the join is refused and the
// rest of the stream is read on from the last good record by one reader:
// the result is still the sequential one, record for record.
func TestFailedJoinReadsOn(t *testing.T) {
	src := openLZ4Fixture(t)
	opts := xlog.Options{FollowHistory: true}
	want := sequential(t, src, opts, 0, nil)
	s, err := Open(src, Config{Reader: opts, Workers: 3, SpanBytes: int(2 * 1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.spans) < 3 {
		t.Fatalf("%d spans", len(s.spans))
	}
	// Span 1 begins one byte after its first record: its reader starts at the
	// record after, and the join with span 0 fails.
	var first xlog.LSN
	for _, r := range want.recs {
		if r.lsn >= s.spans[1].Start {
			first = r.lsn
			break
		}
	}
	s.spans[1].Start = first + 1
	for _, reuse := range []bool{false, true} {
		var resumed atomic.Int32
		var g got
		job := Job[*[]recID]{
			NewPart: func(info SpanInfo) *[]recID {
				if info.Resumed {
					resumed.Add(1)
				}
				return new([]recID)
			},
			Record: func(p *[]recID, rec *xlog.Record) error { *p = append(*p, idOf(rec)); return nil },
			Merge:  func(p *[]recID) error { g.recs = append(g.recs, *p...); return nil },
		}
		if reuse {
			job.Reuse = func(p *[]recID, info SpanInfo) (*[]recID, bool) {
				if info.Resumed {
					resumed.Add(1)
				}
				*p = (*p)[:0]
				return p, true
			}
		}
		res, err := Run(s, job)
		ended(t, &g, res, err)
		if resumed.Load() != 1 {
			t.Errorf("reuse %v: %d resumed readings, want 1", reuse, resumed.Load())
		}
		same(t, fmt.Sprintf("with a failed join, reuse %v", reuse), want, g)
	}
}

// TestReuseBoundsParts: with Job.Reuse, a reading of many spans makes no
// more parts than can be in flight (Workers reading, one more read and
// waiting: the engine's look-ahead bound, and the part a failed join
// resumes with), hands every later span a merged part, and delivers what
// one reader delivers; a Reuse that declines has NewPart make the part.
func TestReuseBoundsParts(t *testing.T) {
	src := openLZ4Fixture(t)
	opts := xlog.Options{FollowHistory: true}
	want := sequential(t, src, opts, 0, nil)
	withJobTarget(t, 0) // a part per planned span
	for _, workers := range []int{2, 3} {
		for _, decline := range []bool{false, true} {
			s, err := Open(src, Config{Reader: opts, Workers: workers, SpanBytes: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Spans()) < 4*workers {
				t.Fatalf("%d spans", len(s.Spans()))
			}
			var made, reused atomic.Int32
			var g got
			res, err := Run(s, Job[*[]recID]{
				NewPart: func(SpanInfo) *[]recID { made.Add(1); return new([]recID) },
				Record:  func(p *[]recID, rec *xlog.Record) error { *p = append(*p, idOf(rec)); return nil },
				Merge:   func(p *[]recID) error { g.recs = append(g.recs, *p...); return nil },
				Reuse: func(p *[]recID, _ SpanInfo) (*[]recID, bool) {
					if decline {
						return nil, false
					}
					reused.Add(1)
					*p = (*p)[:0]
					return p, true
				},
			})
			ended(t, &g, res, err)
			what := fmt.Sprintf("%d workers, %d spans, decline %v", workers, len(s.Spans()), decline)
			same(t, what, want, g)
			total := int(made.Load() + reused.Load())
			switch {
			case total != len(s.Spans()):
				t.Errorf("%s: %d parts made and %d reused, want one per span", what, made.Load(), reused.Load())
			case decline && reused.Load() != 0:
				t.Errorf("%s: %d parts reused", what, reused.Load())
			case !decline && int(made.Load()) > workers+2:
				t.Errorf("%s: %d parts made, more than %d workers can have in flight", what, made.Load(), workers)
			}
		}
	}
}

func TestCheckJoin(t *testing.T) {
	if err := CheckJoin(0x100, 0x140, 0x140, 0x100); err != nil {
		t.Errorf("a good join: %v", err)
	}
	for _, c := range []struct {
		first, prev xlog.LSN
		msg         string
	}{
		{0x140, 0xF8, "record with incorrect prev-link 0/F8 at 0/140"},
		{0x180, 0x140, "the record after 0/100 should start at 0/140, the next one found starts at 0/180"},
	} {
		err := CheckJoin(0x100, 0x140, c.first, c.prev)
		var xe *xlog.Error
		if !errors.As(err, &xe) || xe.Msg != c.msg || xe.LSN != c.first || xe.RecordLSN != 0x100 {
			t.Errorf("CheckJoin: %#v, want an *xlog.Error %q at %s", err, c.msg, c.first)
		}
		if !errors.Is(err, ErrJoin) || !errors.Is(err, xlog.ErrPrevLink) {
			t.Errorf("%v wraps neither ErrJoin nor xlog.ErrPrevLink", err)
		}
	}
}

// mostSegments is the archive of the test set with the most segments.
func mostSegments(t *testing.T) *xlog.DirSource {
	t.Helper()
	var src *xlog.DirSource
	for _, set := range testwal.Sets(t) {
		d, err := xlog.OpenDir(filepath.Join(testwal.Extract(t, set), "archive"))
		if err != nil {
			t.Fatal(err)
		}
		if src == nil || len(d.Segments()) > len(src.Segments()) {
			src = d
		}
	}
	return src
}

// TestBoundedLookAhead: however slow the merging, at most Workers+1 jobs
// are read but not yet merged; the jobs cover the planned spans in order,
// one each or several where they read fast.
func TestBoundedLookAhead(t *testing.T) {
	s, err := Open(mostSegments(t), Config{Reader: xlog.Options{FollowHistory: true, HeadersOnly: true}, Workers: 2, SpanBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Spans()) < 6 {
		t.Fatalf("%d spans", len(s.Spans()))
	}
	for _, target := range []time.Duration{0, jobTarget, time.Hour} {
		withJobTarget(t, target)
		var read, merged, worst atomic.Int32
		var next xlog.LSN = s.Spans()[0].Start
		jobs := 0
		RunSpans(s, func(info SpanInfo, _ *atomic.Bool) SpanInfo {
			if n := read.Add(1) - merged.Load(); n > worst.Load() {
				worst.Store(n)
			}
			return info
		}, func(i int, got SpanInfo) bool {
			// Jobs are consecutive stretches of planned spans, in order.
			if got.Index != i || got.Span.Start != next || s.Spans()[i].Start != next {
				t.Errorf("job target %v: job %+v merged as %d, the next was to start at %s", target, got, i, next)
			}
			next = got.Span.Stop
			jobs++
			merged.Add(1)
			return true
		})
		if worst.Load() > 3 {
			t.Errorf("job target %v: %d jobs read ahead of the merge, want at most 3", target, worst.Load())
		}
		if next != 0 {
			t.Errorf("job target %v: the jobs merged end at %s, not at the end of the stream", target, next)
		}
		switch {
		case target == 0 && jobs != len(s.Spans()):
			t.Errorf("job target 0: %d jobs for %d spans, want one each", jobs, len(s.Spans()))
		case target == time.Hour && jobs > len(s.Spans())/2:
			t.Errorf("job target 1h: %d jobs for %d spans: fast spans not read together", jobs, len(s.Spans()))
		}
	}
}

// TestCoresShared: a stream given Cores reads at most as many spans at
// once as there are tokens not taken by other work: with 3 tokens, 3
// Workers and one token taken, never more than 2; given back, 3 again.
func TestCoresShared(t *testing.T) {
	withJobTarget(t, 0) // one job a span
	cores := make(Cores, 3)
	s, err := Open(mostSegments(t), Config{Reader: xlog.Options{FollowHistory: true, HeadersOnly: true}, Workers: 3, SpanBytes: 1, Cores: cores})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Spans()) < 6 {
		t.Fatalf("%d spans", len(s.Spans()))
	}
	// each read waits (a while at most: the last spans are fewer) until
	// want are being read, so that as many start as may
	widest := func(want int32) int32 {
		var now, worst atomic.Int32
		RunSpans(s, func(info SpanInfo, _ *atomic.Bool) int {
			n := now.Add(1)
			for w := worst.Load(); n > w && !worst.CompareAndSwap(w, n); w = worst.Load() {
			}
			for wait := time.Now(); now.Load() < want && time.Since(wait) < 300*time.Millisecond; {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond) // one more starts meanwhile, if it may
			now.Add(-1)
			return info.Index
		}, func(int, int) bool { return true })
		return worst.Load()
	}
	if !cores.TryTake() {
		t.Fatal("no core free before the reading")
	}
	if w := widest(2); w != 2 {
		t.Errorf("one of 3 cores taken: %d spans read at once, want 2", w)
	}
	cores.Give()
	if w := widest(3); w != 3 {
		t.Errorf("no core taken: %d spans read at once, want 3", w)
	}
	if len(cores) != 0 {
		t.Errorf("%d cores still held after the readings", len(cores))
	}
	if Cores(nil).TryTake() {
		t.Error("nil Cores gave a core")
	}
}

// TestNoReadAfterReturn: when the merge stops early, RunSpans returns only
// once no span is being read any more, so that the caller may close the
// source.
func TestNoReadAfterReturn(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V16, 8192, 1<<20, 1)
	for i := 0; w.Pos() < xlog.LSN(8<<20); i++ {
		w.Record(xlog.RmgrLogicalMessage, 0, xlog.XID(i+1), xlogtest.MainData(5000))
	}
	s, err := Open(w.Source(), Config{Workers: 3, SpanBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Spans()) < 6 {
		t.Fatalf("%d spans", len(s.Spans()))
	}
	var active, started atomic.Int32
	RunSpans(s, func(info SpanInfo, stop *atomic.Bool) int {
		active.Add(1)
		started.Add(1)
		defer active.Add(-1)
		for range 50 { // a slow reader, which polls stop as readSpan does
			if stop.Load() {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		return info.Index
	}, func(i int, _ int) bool { return i < 1 })
	if n := active.Load(); n != 0 {
		t.Errorf("%d spans still being read after RunSpans returned", n)
	}
	if n := started.Load(); int(n) == len(s.Spans()) {
		t.Errorf("all %d spans were read though the merge stopped at the second", n)
	}
}

// TestOneSpanReadInline: with one span, or one worker, the spans are read
// and merged on the caller's goroutine: no goroutine is started, so a run
// over one small segment does not hand its work between threads (issue 16:
// start time).
func TestOneSpanReadInline(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V16, 8192, 1<<20, 1)
	for i := 0; w.Pos() < xlog.LSN(3<<20); i++ {
		w.Record(xlog.RmgrLogicalMessage, 0, xlog.XID(i+1), xlogtest.MainData(5000))
	}
	for _, cfg := range []Config{
		{Workers: 2},               // one span: the default span covers the stream
		{Workers: 1, SpanBytes: 1}, // one worker: one span (spans are planned for several)
	} {
		s, err := Open(w.Source(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		before := runtime.NumGoroutine()
		reads := 0
		RunSpans(s, func(info SpanInfo, _ *atomic.Bool) int {
			reads++
			if n := runtime.NumGoroutine(); n != before {
				t.Errorf("workers %d: %d goroutines while reading span %d, %d before", cfg.Workers, n, info.Index, before)
			}
			return info.Index
		}, func(int, int) bool { return true })
		if reads != len(s.Spans()) || reads != 1 {
			t.Errorf("workers %d: %d spans read, %d planned; want 1", cfg.Workers, reads, len(s.Spans()))
		}
		// and it reads the records to the end of the WAL written
		res, err := Run(s, Job[*int]{NewPart: func(SpanInfo) *int { return new(int) },
			Record: func(p *int, _ *xlog.Record) error { *p++; return nil },
			Merge:  func(*int) error { return nil }})
		if err != nil || res.Records == 0 || !xlog.IsEndOfWAL(res.Err) {
			t.Errorf("workers %d: %d records, %v, %v", cfg.Workers, res.Records, err, res.Err)
		}
	}
}

// TestJobSizer: a job covers twice as many spans as the last while spans
// read faster than jobTarget, as many as fit in jobTarget when they read
// slower, never fewer than one nor more than maxJobBytes of WAL.
func TestJobSizer(t *testing.T) {
	withJobTarget(t, 2*time.Millisecond)
	z := &jobSizer{max: 64}
	z.n.Store(1)
	steps := []struct {
		n    int
		took time.Duration
		want int
	}{
		{1, 10 * time.Microsecond, 2},   // fast: double
		{2, 20 * time.Microsecond, 4},   //
		{4, 40 * time.Microsecond, 8},   //
		{8, 4 * time.Millisecond, 4},    // 500 µs a span: 4 fit in 2 ms
		{4, 40 * time.Millisecond, 1},   // 10 ms a span: one
		{1, 0, 2},                       // too fast to time
		{64, 64 * time.Microsecond, 64}, // capped by maxJobBytes
		{1, 50 * time.Millisecond, 1},   // slow
	}
	for i, s := range steps {
		z.took(s.n, s.took)
		if got := z.spans(1 << 20); got != s.want {
			t.Errorf("step %d: after %d spans in %v the next job covers %d, want %d", i, s.n, s.took, got, s.want)
		}
	}
	if got := z.spans(3); got > 3 {
		t.Errorf("%d spans with 3 left", got)
	}
	// The cap from the stream: 1 GiB of 16 MB spans.
	s := &Stream{spans: []xlog.Span{{Start: 0, Stop: 16 << 20}, {Start: 16 << 20}}}
	if z := newJobSizer(s); z.max != maxJobBytes/(16<<20) || z.spans(10) != 1 {
		t.Errorf("max %d, first job %d spans", z.max, z.spans(10))
	}
}
