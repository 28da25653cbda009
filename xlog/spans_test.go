package xlog_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

// TestSpansAndStopAt: Spans cuts the stream at segment boundaries into
// contiguous spans, the first beginning at Options.Start and the last
// reading to the end; a Reader given a span's Start and StopAt returns
// exactly the records that start in it, each read whole (those crossing
// into the next span included), and ends where the next span's first record
// starts. Together the spans return the sequential reading, with the
// PrevRead a sequential reading gives when Options.Continues is set.
func TestSpansAndStopAt(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V16, 8192, 1<<20, 1)
	for i := 0; w.Pos() < xlog.LSN(6<<20)+xlog.LSN(1<<20)/3; i++ {
		// sizes that put records across pages and segments
		w.Record(xlog.RmgrLogicalMessage, 0, xlog.XID(i+1), xlogtest.MainData((i*7919)%30000))
	}
	src := w.Source()
	for _, start := range []xlog.LSN{0, xlog.LSN(2<<20) + 12345} {
		for _, end := range []xlog.LSN{0, xlog.LSN(5<<20) + 777} {
			opts := xlog.Options{Start: start, End: end}
			want, wantErr := readAll(t, src, opts)
			wantPrev := prevReads(t, src, opts, false)
			for n := 1; n <= 4; n++ {
				r, err := xlog.NewReader(src, opts)
				if err != nil {
					t.Fatal(err)
				}
				spans := r.Spans(n)
				first := r.Start()
				r.Close()
				if start != 0 && first != start {
					t.Errorf("Reader.Start %s, want %s", first, start)
				}
				if len(spans) < 2 && n <= 2 {
					t.Fatalf("start %s, end %s: %d spans of %d segments", start, end, len(spans), n)
				}
				if spans[0].Start != first || spans[len(spans)-1].Stop != 0 {
					t.Errorf("spans %v: want the first at %s and the last open", spans, first)
				}
				for i := 1; i < len(spans); i++ {
					if spans[i].Start != spans[i-1].Stop || uint64(spans[i].Start)%(1<<20) != 0 || spans[i].Start <= spans[i-1].Start {
						t.Errorf("spans %v: span %d does not follow span %d at a segment boundary", spans, i, i-1)
					}
				}
				var got []written
				var prev []xlog.LSN
				var lastErr error
				for i, sp := range spans {
					o := opts
					o.Start, o.StopAt, o.Continues = sp.Start, sp.Stop, i > 0
					part, err := readAll(t, src, o)
					for _, rec := range part {
						if rec.lsn < sp.Start || (sp.Stop != 0 && rec.lsn >= sp.Stop) {
							t.Errorf("span %v returned a record at %s", sp, rec.lsn)
						}
					}
					if i < len(spans)-1 && err != io.EOF {
						t.Errorf("span %v ended with %v, want io.EOF", sp, err)
					}
					got = append(got, part...)
					prev = append(prev, prevReads(t, src, o, true)...)
					lastErr = err
				}
				if len(got) != len(want) {
					t.Fatalf("start %s, end %s, %d-segment spans: %d records, sequential %d", start, end, n, len(got), len(want))
				}
				for i := range want {
					if got[i].lsn != want[i].lsn || !bytes.Equal(got[i].raw, want[i].raw) || prev[i] != wantPrev[i] {
						t.Fatalf("record %d: %s (prev %s), sequential %s (prev %s)", i, got[i].lsn, prev[i], want[i].lsn, wantPrev[i])
					}
				}
				if (lastErr == nil) != (wantErr == nil) || (lastErr != nil && lastErr.Error() != wantErr.Error()) {
					t.Errorf("the last span ended with %v, sequential %v", lastErr, wantErr)
				}
			}
		}
	}
}

// prevReads returns the PrevRead of every record a reading returns; with
// check, it also checks that at each io.EOF before the end, EndLSN is where
// the first record after StopAt starts.
func prevReads(t *testing.T, src xlog.Source, opts xlog.Options, check bool) []xlog.LSN {
	t.Helper()
	r, err := xlog.NewReader(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []xlog.LSN
	for {
		rec, err := r.Next()
		if err != nil {
			if check && err == io.EOF && opts.StopAt != 0 && opts.End == 0 && r.EndLSN() < opts.StopAt {
				t.Errorf("span stopping at %s ended at %s", opts.StopAt, r.EndLSN())
			}
			return out
		}
		out = append(out, rec.PrevRead)
	}
}

// TestIsEndOfWAL: the ends of written WAL are ends; nil and damage are not.
func TestIsEndOfWAL(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{io.EOF, true},
		{&xlog.Error{Err: xlog.ErrZeroLength}, true},
		{&xlog.Error{Err: xlog.ErrPageAddr, Stale: true}, true},
		{&xlog.Error{Err: xlog.ErrPageAddr}, false},
		{&xlog.Error{Err: xlog.ErrChecksum}, false},
	} {
		if got := xlog.IsEndOfWAL(c.err); got != c.want {
			t.Errorf("IsEndOfWAL(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
