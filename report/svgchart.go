package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/walscope/walscope/format"
)

// The charts of the HTML report, drawn as inline SVG from numbers: stacked
// areas over a numeric axis (time or LSN) with vertical markers, and
// horizontal stacked bars with direct labels. Every text is escaped; series
// are told apart by svgFill pattern as well as colour, and bars carry their
// values as text, so no chart relies on colour alone. Each drawn mark has
// class "mark" (tests count them).

// Fill styles, in series order: a colour and a pattern each.
var svgChartStyles = []struct {
	color   string
	pattern string // "" solid, "hatch", "dots", "cross"
	name    string // how the svgLegend describes the pattern
}{
	{"#4e79a7", "", "solid"},
	{"#f28e2b", "hatch", "hatched"},
	{"#59a14f", "dots", "dotted"},
	{"#b07aa1", "cross", "cross-hatched"},
}

// ChartIDs gives the charts of one document their element ids (the svg
// element's, and its fill patterns' ids derived from it): Prefix + "c1",
// Prefix + "c2", ... in the order the charts are drawn. Every chart of a
// document must be drawn with the document's one ChartIDs, so that its ids
// are unique in the document and the same on every rendering; documents that
// are put together into one page need distinct Prefixes. The zero value is
// ready to use. A ChartIDs is not safe for concurrent use: give each
// document, and so each goroutine, its own.
type ChartIDs struct {
	Prefix string
	n      int
}

func (c *ChartIDs) next() string {
	if c == nil {
		panic("report: a chart needs the document's *ChartIDs to draw, not nil")
	}
	c.n++
	return c.Prefix + "c" + strconv.Itoa(c.n)
}

func svgEsc(s string) string { return html.EscapeString(s) }

func svgNum(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// svgFill returns the svgFill attribute of series i, defining its pattern in defs.
func svgFill(defs *strings.Builder, id string, i int) string {
	st := svgChartStyles[i%len(svgChartStyles)]
	if st.pattern == "" {
		return st.color
	}
	pid := fmt.Sprintf("%s-p%d", id, i)
	fmt.Fprintf(defs, `<pattern id="%s" patternUnits="userSpaceOnUse" width="6" height="6">`, pid)
	fmt.Fprintf(defs, `<rect width="6" height="6" fill="%s" opacity="0.35"/>`, st.color)
	switch st.pattern {
	case "hatch":
		fmt.Fprintf(defs, `<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2" stroke="%s" stroke-width="1.6"/>`, st.color)
	case "dots":
		fmt.Fprintf(defs, `<circle cx="3" cy="3" r="1.4" fill="%s"/>`, st.color)
	case "cross":
		fmt.Fprintf(defs, `<path d="M0,0 l6,6 M6,0 l-6,6" stroke="%s" stroke-width="1.2"/>`, st.color)
	}
	defs.WriteString(`</pattern>`)
	return "url(#" + pid + ")"
}

// svgLegendItem is one svgLegend entry: a swatch (a svgFill, or a dashed line when
// svgFill is empty) and its text.
type svgLegendItem struct{ fill, text string }

// svgLegendItems describes the series (their svgFill and pattern) and, if name is
// set, the dashed marker line.
func svgLegendItems(fills, names []string, marker string) []svgLegendItem {
	var out []svgLegendItem
	for i, n := range names {
		out = append(out, svgLegendItem{fills[i], n + " (" + svgChartStyles[i%len(svgChartStyles)].name + ")"})
	}
	if marker != "" {
		out = append(out, svgLegendItem{"", marker + " (dashed line)"})
	}
	return out
}

// svgLegend draws the items from (x, 18), wrapping at width w, and returns the
// y below the last line.
func svgLegend(b *strings.Builder, items []svgLegendItem, x0, w float64) float64 {
	x, y := x0, 18.0
	for _, it := range items {
		iw := 19 + 6.8*float64(len(it.text)) + 16
		if x > x0 && x+iw > w {
			x, y = x0, y+18
		}
		if it.fill == "" {
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c00" stroke-width="2" stroke-dasharray="4 3"/>`, svgNum(x+7), svgNum(y-12), svgNum(x+7), svgNum(y+3))
		} else {
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="14" height="14" fill="%s" stroke="#333" stroke-width="0.5"/>`, svgNum(x), svgNum(y-11), it.fill)
		}
		fmt.Fprintf(b, `<text x="%s" y="%s">%s</text>`, svgNum(x+19), svgNum(y), svgEsc(it.text))
		x += iw
	}
	return y + 8
}

// svgNiceTicks returns about n round tick values from 0 to max (1, 2, 5 × 10^k).
func svgNiceTicks(max float64, n int) []float64 {
	if max <= 0 {
		return []float64{0, 1}
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := 0.0; v < max+step*0.999; v += step {
		out = append(out, v)
	}
	return out
}

// svgNiceBytesTicks returns round ticks for a byte axis, in steps that are
// round in the unit format.FormatBytes shows (1, 2, 5 × 1024^k × 10^j).
func svgNiceBytesTicks(max float64, n int) []float64 {
	unit := 1.0
	for max/unit >= 1024*2 && unit < 1<<40 {
		unit *= 1024
	}
	t := svgNiceTicks(max/unit, n)
	for i := range t {
		t[i] *= unit
	}
	return t
}

// Marker is a vertical line at X on an area chart.
type Marker struct {
	X     float64
	Label string
}

// AreaChart is a stacked step-area chart over a numeric x axis: bin i covers
// [X[i], X[i+1]) (the last bin ends at XEnd), and the series' values stack.
type AreaChart struct {
	Title   string
	XLabel  string // axis title, with its unit
	YLabel  string
	X       []float64
	XEnd    float64
	Series  []string
	Values  [][]float64 // [series][bin]
	XFormat func(float64) string
	YFormat func(float64) string // default format.FormatBytes
	YBytes  bool                 // round y ticks in bytes units
	Markers []Marker
	// MarkerName describes the markers in the svgLegend.
	MarkerName string
	Width      int // viewBox width; default 900
	Height     int // default 300
}

// SVG draws the chart, taking its ids from ids, the document's allocator
// (SVG panics if ids is nil).
func (c *AreaChart) SVG(ids *ChartIDs) template.HTML {
	id := ids.next()
	W, H := float64(c.Width), float64(c.Height)
	if W == 0 {
		W = 900
	}
	if H == 0 {
		H = 300
	}
	yf := c.YFormat
	if yf == nil {
		yf = format.FormatBytes
	}
	xf := c.XFormat
	if xf == nil {
		xf = func(v float64) string { return svgNum(v) }
	}
	const left, right, bottom = 78.0, 16.0, 48.0
	var b, defs strings.Builder
	fills := make([]string, len(c.Series))
	for i := range c.Series {
		fills[i] = svgFill(&defs, id, i)
	}
	var leg strings.Builder
	marker := ""
	if len(c.Markers) > 0 {
		marker = c.MarkerName
	}
	top := svgLegend(&leg, svgLegendItems(fills, c.Series, marker), left, W) + 18
	H += top - 44
	pw, ph := W-left-right, H-top-bottom
	n := len(c.X)
	var ymax float64
	for j := 0; j < n; j++ {
		var s float64
		for i := range c.Values {
			s += c.Values[i][j]
		}
		ymax = math.Max(ymax, s)
	}
	var ticks []float64
	if c.YBytes || c.YFormat == nil {
		ticks = svgNiceBytesTicks(ymax, 5)
	} else {
		ticks = svgNiceTicks(ymax, 5)
	}
	ytop := ticks[len(ticks)-1]
	x0 := c.XEnd
	if n > 0 {
		x0 = c.X[0]
	}
	xspan := c.XEnd - x0
	if xspan <= 0 {
		xspan = 1
	}
	px := func(x float64) float64 { return left + (x-x0)/xspan*pw }
	py := func(y float64) float64 { return top + ph - y/ytop*ph }

	fmt.Fprintf(&b, `<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" role="img" aria-label="%s">`,
		id, svgNum(W), svgNum(H), svgEsc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title><defs>%s</defs>`, svgEsc(c.Title), defs.String())
	b.WriteString(`<g font-family="sans-serif" font-size="12" fill="#222">`)
	b.WriteString(leg.String())
	// Grid and y axis.
	for _, t := range ticks {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`, svgNum(left), svgNum(y), svgNum(left+pw), svgNum(y))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, svgNum(left-6), svgNum(y+4), svgEsc(yf(t)))
	}
	fmt.Fprintf(&b, `<text transform="translate(14,%s) rotate(-90)" text-anchor="middle">%s</text>`, svgNum(top+ph/2), svgEsc(c.YLabel))
	// Areas: step paths, stacked.
	base := make([]float64, n)
	for i := range c.Values {
		var d strings.Builder
		if n == 0 {
			break
		}
		end := func(j int) float64 {
			if j+1 < n {
				return c.X[j+1]
			}
			return c.XEnd
		}
		fmt.Fprintf(&d, "M%s,%s", svgNum(px(c.X[0])), svgNum(py(base[0])))
		for j := 0; j < n; j++ {
			top := base[j] + c.Values[i][j]
			fmt.Fprintf(&d, " L%s,%s L%s,%s", svgNum(px(c.X[j])), svgNum(py(top)), svgNum(px(end(j))), svgNum(py(top)))
		}
		for j := n - 1; j >= 0; j-- {
			fmt.Fprintf(&d, " L%s,%s L%s,%s", svgNum(px(end(j))), svgNum(py(base[j])), svgNum(px(c.X[j])), svgNum(py(base[j])))
		}
		d.WriteString(" Z")
		fmt.Fprintf(&b, `<path class="mark" d="%s" fill="%s" stroke="%s" stroke-width="0.8"><title>%s</title></path>`,
			d.String(), fills[i], svgChartStyles[i%len(svgChartStyles)].color, svgEsc(c.Series[i]))
		for j := 0; j < n; j++ {
			base[j] += c.Values[i][j]
		}
	}
	// Markers.
	lastLabel := [3]float64{-1e9, -1e9, -1e9}
	lastX := -1e9
	for _, m := range c.Markers {
		if m.X < x0 || m.X > c.XEnd {
			continue
		}
		x := px(m.X)
		fmt.Fprintf(&b, `<line class="marker" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c00" stroke-width="1.5" stroke-dasharray="4 3"><title>%s</title></line>`,
			svgNum(x), svgNum(top), svgNum(x), svgNum(top+ph), svgEsc(m.Label))
		// Label a marker on the first of three lines with room for it
		// (markers drawn on top of each other are labelled once).
		same := x-lastX < 2
		lastX = x
		for row := 0; row < 3 && m.Label != "" && !same; row++ {
			if x-lastLabel[row] > 6*float64(len(m.Label))+8 && x+6*float64(len(m.Label)) < W {
				fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="10" fill="#a00" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`, svgNum(x+3), svgNum(top+10+float64(row)*11), svgEsc(m.Label))
				lastLabel[row] = x
				break
			}
		}
	}
	// X axis.
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>`, svgNum(left), svgNum(top+ph), svgNum(left+pw), svgNum(top+ph))
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>`, svgNum(left), svgNum(top), svgNum(left), svgNum(top+ph))
	nt := int(math.Max(2, math.Min(6, pw/140)))
	for k := 0; k <= nt; k++ {
		v := x0 + xspan*float64(k)/float64(nt)
		x := px(v)
		anchor := "middle"
		if k == 0 {
			anchor = "start"
		} else if k == nt {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>`, svgNum(x), svgNum(top+ph), svgNum(x), svgNum(top+ph+5))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="%s">%s</text>`, svgNum(x), svgNum(top+ph+18), anchor, svgEsc(xf(v)))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, svgNum(left+pw/2), svgNum(H-6), svgEsc(c.XLabel))
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String())
}

// BarRow is one bar: a label and one value per series (stacked).
type BarRow struct {
	Label  string
	Values []float64
	Note   string // shown after the value label
}

// BarChart is a horizontal stacked bar chart with the total written at the
// end of each bar, and an optional reference line (the actual size).
type BarChart struct {
	Title    string
	XLabel   string // axis title, with its unit
	Series   []string
	Rows     []BarRow
	Format   func(float64) string // default format.FormatBytes
	Bytes    bool                 // round ticks in bytes units (default when Format is nil)
	Ref      float64              // reference value, drawn when RefLabel is set
	RefLabel string
	Width    int // viewBox width; default 900
}

// SVG draws the chart, taking its ids from ids, the document's allocator
// (SVG panics if ids is nil).
func (c *BarChart) SVG(ids *ChartIDs) template.HTML {
	id := ids.next()
	W := float64(c.Width)
	if W == 0 {
		W = 900
	}
	f := c.Format
	if f == nil {
		f = format.FormatBytes
	}
	var labelW float64 = 60
	for _, r := range c.Rows {
		labelW = math.Max(labelW, 7*float64(len([]rune(r.Label)))+10)
	}
	labelW = math.Min(labelW, W*0.36)
	const rowH, barH, bottom, right = 24.0, 16.0, 44.0, 12.0
	var b, defs, leg strings.Builder
	fills := make([]string, len(c.Series))
	for i := range c.Series {
		fills[i] = svgFill(&defs, id, i)
	}
	var items []svgLegendItem
	if len(c.Series) > 1 {
		items = svgLegendItems(fills, c.Series, c.RefLabel)
	} else if c.RefLabel != "" {
		items = svgLegendItems(nil, nil, c.RefLabel)
	}
	top := 14.0
	if len(items) > 0 {
		top = svgLegend(&leg, items, labelW, W) + 14
	}
	// Room at the right for the value labels.
	var noteW float64 = 60
	for _, r := range c.Rows {
		var s float64
		for _, v := range r.Values {
			s += v
		}
		l := f(s)
		if r.Note != "" {
			l += ", " + r.Note
		}
		noteW = math.Max(noteW, 6.6*float64(len(l))+10)
	}
	noteW = math.Min(noteW, W*0.3)
	left := labelW
	pw := W - left - right - noteW
	ph := rowH * float64(len(c.Rows))
	H := top + ph + bottom
	var xmax float64
	for _, r := range c.Rows {
		var s float64
		for _, v := range r.Values {
			s += v
		}
		xmax = math.Max(xmax, s)
	}
	if c.RefLabel != "" {
		xmax = math.Max(xmax, c.Ref)
	}
	var ticks []float64
	if c.Bytes || c.Format == nil {
		ticks = svgNiceBytesTicks(xmax, int(math.Max(2, pw/110)))
	} else {
		ticks = svgNiceTicks(xmax, int(math.Max(2, pw/110)))
	}
	xtop := ticks[len(ticks)-1]
	px := func(v float64) float64 { return left + v/xtop*pw }

	fmt.Fprintf(&b, `<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" role="img" aria-label="%s">`,
		id, svgNum(W), svgNum(H), svgEsc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title><defs>%s</defs>`, svgEsc(c.Title), defs.String())
	b.WriteString(`<g font-family="sans-serif" font-size="12" fill="#222">`)
	b.WriteString(leg.String())
	for _, t := range ticks {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`, svgNum(x), svgNum(top), svgNum(x), svgNum(top+ph))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, svgNum(x), svgNum(top+ph+16), svgEsc(f(t)))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, svgNum(left+pw/2), svgNum(H-8), svgEsc(c.XLabel))
	for k, r := range c.Rows {
		y := top + float64(k)*rowH + (rowH-barH)/2
		label := r.Label
		if max := int((labelW - 10) / 7); len([]rune(label)) > max && max > 3 {
			label = string([]rune(label)[:max-1]) + "…"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s<title>%s</title></text>`, svgNum(left-6), svgNum(y+barH-4), svgEsc(label), svgEsc(r.Label))
		x := left
		var sum float64
		for i, v := range r.Values {
			w := v / xtop * pw
			if v > 0 {
				fmt.Fprintf(&b, `<rect class="mark" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="0.8"><title>%s: %s</title></rect>`,
					svgNum(x), svgNum(y), svgNum(math.Max(w, 0.5)), svgNum(barH), fills[i%len(fills)], svgChartStyles[i%len(svgChartStyles)].color,
					svgEsc(r.Label+" "+svgSeriesName(c.Series, i)), svgEsc(f(v)))
			}
			x += w
			sum += v
		}
		l := f(sum)
		if r.Note != "" {
			l += ", " + r.Note
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s</text>`, svgNum(x+5), svgNum(y+barH-4), svgEsc(l))
	}
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>`, svgNum(left), svgNum(top), svgNum(left), svgNum(top+ph))
	if c.RefLabel != "" {
		x := px(c.Ref)
		fmt.Fprintf(&b, `<line class="marker" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c00" stroke-width="2" stroke-dasharray="5 3"/>`,
			svgNum(x), svgNum(top-4), svgNum(x), svgNum(top+ph+4))
	}
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String())
}

func svgSeriesName(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}
