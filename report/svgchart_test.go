package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/walscope/walscope/format"
)

// svgWellFormed parses the SVG as XML.
func svgWellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
}

func TestAreaChart(t *testing.T) {
	c := &AreaChart{
		Title: "t<1>", XLabel: "WAL position (LSN)", YLabel: "WAL bytes per 64 kB",
		X: []float64{0, 10, 20}, XEnd: 30, Series: []string{"record bytes", `image "bytes" & <more>`},
		Values:  [][]float64{{1000, 3000, 2000}, {5000, 0, 4096}},
		Markers: []Marker{{X: 10, Label: "redo <0/A>"}, {X: 99, Label: "outside"}}, MarkerName: "redo point",
	}
	svg := string(c.SVG(&ChartIDs{}))
	svgWellFormed(t, svg)
	if n := strings.Count(svg, `class="mark"`); n != 2 {
		t.Errorf("%d marks, want one area per series", n)
	}
	if n := strings.Count(svg, `class="marker"`); n != 1 {
		t.Errorf("%d markers, want 1 (the other is outside the axis)", n)
	}
	for _, want := range []string{"WAL position (LSN)", "WAL bytes per 64 kB", ">0 bytes<", ">6 kB<", "redo &lt;0/A&gt;",
		"image &#34;bytes&#34; &amp; &lt;more&gt; (hatched)", "record bytes (solid)", "redo point (dashed line)", "<pattern "} {
		if !strings.Contains(svg, want) {
			t.Errorf("missing %q in\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<more>") || strings.Contains(svg, "<0/A>") {
		t.Errorf("unescaped text in\n%s", svg)
	}
}

func TestBarChart(t *testing.T) {
	c := &BarChart{
		Title: "bars", XLabel: "estimated WAL bytes", Series: []string{"other bytes", "image bytes"},
		Rows: []BarRow{
			{Label: "actual", Values: []float64{3 << 20, 1 << 20}, Note: "×1.00"},
			{Label: "full_page_writes = off", Values: []float64{3 << 20, 0}, Note: "×0.75"},
			{Label: "</svg><script>alert(1)</script>", Values: []float64{100, 200}},
		},
		Ref: 4 << 20, RefLabel: "actual WAL size",
	}
	svg := string(c.SVG(&ChartIDs{}))
	svgWellFormed(t, svg)
	// Zero values draw nothing: 2 + 1 + 2 rectangles.
	if n := strings.Count(svg, `class="mark"`); n != 5 {
		t.Errorf("%d marks, want 5", n)
	}
	for _, want := range []string{"estimated WAL bytes", ">4 MB, ×1.00<", ">3 MB, ×0.75<", ">300 bytes<", "actual WAL size (dashed line)",
		"&lt;/svg&gt;&lt;script&gt;", ">0 bytes<", ">1 MB<", `class="marker"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("missing %q in\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<script>") {
		t.Errorf("unescaped label in\n%s", svg)
	}
	counts := (&BarChart{Series: []string{"records"}, Rows: []BarRow{{Label: "Heap", Values: []float64{12345}}}, Format: format.FormatCount}).SVG(&ChartIDs{})
	if !strings.Contains(string(counts), ">12,345<") {
		t.Errorf("count label missing in\n%s", counts)
	}
}

func TestLSNBins(t *testing.T) {
	l := NewLSNBins(0x1000, 0x2000, 4)
	if l.Width != 0x400 || len(l.Record) != 4 {
		t.Fatalf("width %d, %d bins", l.Width, len(l.Record))
	}
}
