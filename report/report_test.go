package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
)

// sampleSide reads fixtures/sample (PostgreSQL 15, two segments) into a
// report side, as walscope report does (without what-if's estimates, which
// are set by hand, and verify's reading).
func sampleSide(t *testing.T, name string) *ReportSide {
	t.Helper()
	src, err := xlog.OpenDir("../fixtures/sample")
	if err != nil {
		t.Fatal(err)
	}
	read := func(each func(*xlog.Record, *decode.Record)) {
		r, err := xlog.NewReader(src, xlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		dec := decode.NewDecoder(8192)
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !xlog.IsEndOfWAL(err) {
					t.Fatal(err)
				}
				return
			}
			d, err := dec.Decode(rec)
			if err != nil {
				t.Fatal(err)
			}
			each(rec, d)
		}
	}
	var finder stats.RedoFinder
	var start, end xlog.LSN
	read(func(rec *xlog.Record, d *decode.Record) {
		if start == 0 {
			start = rec.LSN
		}
		end = rec.EndLSN
		finder.Add(d)
	})
	b := stats.NewBreakdown(time.Second, finder.Sorted(), start, end)
	var st stats.Stats
	bins := NewLSNBins(start, end, 240)
	read(func(_ *xlog.Record, d *decode.Record) {
		b.Add(d)
		st.Add(d)
		bins.Add(d)
	})
	b.Finish()
	if st.Count == 0 || len(b.Cycles) == 0 {
		t.Fatalf("sample: %d records, %d cycles", st.Count, len(b.Cycles))
	}
	return &ReportSide{
		Name: name, BlockSize: 8192, WalLevel: 1, FullPageWrites: []string{"on"},
		Stats: &st, Breakdown: b, LSN: bins,
		Actual: whatif.Scenario{Setting: "actual", Value: "", WALBytes: b.Total.WALBytes, ImageBytes: b.Total.ImageBytes, RecordBytes: b.Total.RecordBytes},
		Scenarios: []whatif.Scenario{
			{Setting: "full_page_writes", Value: "off", WALBytes: b.Total.WALBytes - b.Total.ImageBytes, RecordBytes: b.Total.RecordBytes - b.Total.ImageBytes},
		},
		Verify: &verify.VerifyReport{Version: 15, SystemID: 1, SegmentSize: 1 << 20, PageSize: 8192, Segments: 2,
			Records: st.Count, Timelines: []verify.TimelineRange{{TLI: 1, Start: start.String(), End: end.String(), Records: st.Count}}},
	}
}

var (
	idAttr  = regexp.MustCompile(`\bid="([^"]*)"`)
	urlRefs = regexp.MustCompile(`url\(#([^)]*)\)`)
)

// checkIDs fails if an id= value repeats in doc, or a url(#id) names no
// element of doc; it returns the number of ids.
func checkIDs(t *testing.T, what, doc string) int {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range idAttr.FindAllStringSubmatch(doc, -1) {
		if seen[m[1]] {
			t.Errorf("%s: id %q appears twice", what, m[1])
		}
		seen[m[1]] = true
	}
	for _, m := range urlRefs.FindAllStringSubmatch(doc, -1) {
		if !seen[m[1]] {
			t.Errorf("%s: url(#%s) names no element", what, m[1])
		}
	}
	return len(seen)
}

// TestReportDeterministic renders the report of one stream and of two side
// by side, in a row and from many goroutines at once (go test -race): every
// rendering of a report is the same, byte for byte, and no id= value repeats
// within one document.
func TestReportDeterministic(t *testing.T) {
	gen := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	one := &Report{Title: "one", Generated: gen, Sides: []*ReportSide{sampleSide(t, "a")}}
	two := &Report{Title: "two", Generated: gen, Sides: []*ReportSide{sampleSide(t, "a"), sampleSide(t, "b")}}
	render := func(r *Report) (string, error) {
		var b bytes.Buffer
		err := WriteReport(&b, r)
		return b.String(), err
	}
	for _, r := range []*Report{one, two} {
		first, err := render(r)
		if err != nil {
			t.Fatal(err)
		}
		charts := strings.Count(first, `<svg class="chart"`)
		if charts < 8*len(r.Sides) {
			t.Fatalf("%s: %d charts", r.Title, charts)
		}
		if n := checkIDs(t, r.Title, first); n < charts {
			t.Errorf("%s: %d ids for %d charts", r.Title, n, charts)
		}
		again, err := render(r)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Errorf("%s: a second rendering differs from the first", r.Title)
		}
		var wg sync.WaitGroup
		out := make([]string, 8)
		for i := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i], _ = render(r)
			}()
		}
		wg.Wait()
		for i, o := range out {
			if o != first {
				t.Errorf("%s: concurrent rendering %d differs from the first", r.Title, i)
			}
		}
	}
}

// chartDoc draws a document of charts with one ChartIDs.
func chartDoc(ids *ChartIDs) string {
	var b strings.Builder
	for i := range 3 {
		area := &AreaChart{Title: fmt.Sprintf("area %d", i), X: []float64{0, 1, 2}, XEnd: 3,
			Series: []string{"record bytes", "image bytes", "other"}, Values: [][]float64{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}}
		bar := &BarChart{Title: "bars", Series: []string{"a", "b", "c", "d"},
			Rows: []BarRow{{Label: "x", Values: []float64{1, 2, 3, 4}}}}
		b.WriteString(string(area.SVG(ids)))
		b.WriteString(string(bar.SVG(ids)))
	}
	return b.String()
}

// TestChartIDs: charts take their ids from the ChartIDs they are drawn
// with, never from state shared between documents: a document of charts
// drawn twice, or in many goroutines at once, is the same each time and its
// ids are unique; two documents put into one page with distinct prefixes
// keep them unique; drawing without a ChartIDs panics.
func TestChartIDs(t *testing.T) {
	first := chartDoc(&ChartIDs{})
	if n := checkIDs(t, "charts", first); n != 6+3*(2+3) {
		t.Errorf("%d ids, want 6 charts and 15 patterns (the first series is solid)", n)
	}
	if !strings.Contains(first, `id="c1"`) || !strings.Contains(first, `id="c6-p3"`) {
		t.Errorf("ids do not number the document's charts from c1:\n%s", first)
	}
	if again := chartDoc(&ChartIDs{}); again != first {
		t.Error("a second document differs from the first")
	}
	var wg sync.WaitGroup
	out := make([]string, 16)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = chartDoc(&ChartIDs{})
		}()
	}
	wg.Wait()
	for i, o := range out {
		if o != first {
			t.Errorf("concurrent document %d differs from the first", i)
		}
	}
	page := chartDoc(&ChartIDs{Prefix: "a-"}) + chartDoc(&ChartIDs{Prefix: "b-"})
	checkIDs(t, "two documents in one page", page)

	defer func() {
		if recover() == nil {
			t.Error("SVG(nil) did not panic")
		}
	}()
	var h template.HTML = (&BarChart{Rows: []BarRow{{Label: "x", Values: []float64{1}}}}).SVG(nil)
	t.Errorf("SVG(nil) drew %s", h)
}
