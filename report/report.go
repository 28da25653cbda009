package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/format"
	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
)

// LSNBins sums WAL bytes, split into image and other bytes, in equal
// stretches of LSN between Start and End.
type LSNBins struct {
	Start, End xlog.LSN
	Width      uint64
	Record     []uint64 // WAL bytes that are not image bytes: headers, data, page headers, padding
	Image      []uint64 // stored image bytes
}

// NewLSNBins makes n bins (at most) over [start, end).
func NewLSNBins(start, end xlog.LSN, n int) *LSNBins {
	if end <= start {
		end = start + 1
	}
	w := max(1, (uint64(end-start)+uint64(n)-1)/uint64(n))
	n = int((uint64(end-start) + w - 1) / w)
	return &LSNBins{Start: start, End: end, Width: w, Record: make([]uint64, n), Image: make([]uint64, n)}
}

// Add counts one record in the bin where it starts.
func (l *LSNBins) Add(rec *decode.Record) {
	if rec.LSN < l.Start {
		return
	}
	i := min(int(uint64(rec.LSN-l.Start)/l.Width), len(l.Record)-1)
	size := uint64(rec.EndLSN - rec.LSN)
	img := min(uint64(rec.FPILen), size)
	l.Image[i] += img
	// The rest is spread over the LSN it spans (a segment switch pads to
	// the end of its segment).
	rest := size - img
	pos := uint64(rec.LSN-l.Start) + img
	for rest > 0 {
		j := min(int(pos/l.Width), len(l.Record)-1)
		n := rest
		if j < len(l.Record)-1 {
			n = min(rest, uint64(j+1)*l.Width-pos)
		}
		l.Record[j] += n
		rest -= n
		pos += n
	}
}

// ReportSide is everything the report shows of one stream.
type ReportSide struct {
	Name      string // the input, as given
	BlockSize int    // BLCKSZ (not in the WAL: the --blcksz flag)
	// WalLevel is the wal_level the WAL states (PARAMETER_CHANGE, or
	// checkpoints from 17 on) or, if WalLevelStated is false, infers.
	WalLevel       xlog.WalLevel
	WalLevelStated bool
	// FullPageWrites lists the full_page_writes values the checkpoint
	// records carry ("on", "off"), in order of appearance.
	FullPageWrites []string
	Stats          *stats.Stats
	Breakdown      *stats.Breakdown // finished
	Actual         whatif.Scenario
	Scenarios      []whatif.Scenario
	Verify         *verify.VerifyReport
	LSN            *LSNBins
	Catalog        names.Catalog
	EndNote        string // how reading ended, if not cleanly
	// Events is the timeline (walscope events); nil: no events section.
	Events *incident.Events
	// WALNames, if set, are the names the WAL carries (dropped schemas are
	// named from them).
	WALNames *names.WALNames
	// Advice is walscope advise's (whatif.Advise); nil: no advice section.
	Advice *whatif.Advice
}

// Report is the HTML report of one stream, or of two side by side.
type Report struct {
	Title     string
	Generated time.Time
	Sides     []*ReportSide
}

// view models for the template.
type reportKV struct{ K, V string }

type reportTable struct {
	Columns []string
	Numeric []bool
	Rows    [][]string
	// Code marks columns of commands: monospace, one per line (nil: none).
	Code []bool
}

type reportSideView struct {
	Name     string
	Summary  []reportKV
	Settings []reportKV
	OverTime template.HTML
	TimeNote string
	OverLSN  template.HTML
	Cycles   template.HTML
	CycleTab reportTable
	RmgrB    template.HTML
	RmgrN    template.HTML
	RecB     template.HTML
	RecN     template.HTML
	RelWAL   template.HTML
	RelImg   template.HTML
	RelNote  string
	WhatIf   template.HTML
	WhatTab  reportTable
	Advice   reportTable
	AdviceN  []string
	Verify   []reportKV
	TLTab    reportTable
	Problems reportTable
	EndNote  string
	Events   reportTable
	EventsN  string
}

// WriteReport renders the report as one self-contained HTML page: inline
// CSS and SVG, and a few lines of inline script that check the charts drew.
func WriteReport(w io.Writer, r *Report) error {
	ids := &ChartIDs{}
	width := 900
	if len(r.Sides) > 1 {
		width = 640
	}
	var views []reportSideView
	hasEvents := false
	for _, s := range r.Sides {
		v := buildReportSide(s, ids, width)
		if s.Events != nil {
			v.Events, v.EventsN = eventsTable(s)
			hasEvents = true
		}
		views = append(views, v)
	}
	return reportTemplate().Execute(w, struct {
		Title     string
		Generated string
		Sides     []reportSideView
		Cols      int
		HasEvents bool
	}{r.Title, r.Generated.UTC().Format("2006-01-02 15:04:05 UTC"), views, len(views), hasEvents})
}

func reportCount(v uint64) string { return format.FormatCount(float64(v)) }

func reportPct(part, whole uint64) string {
	if whole == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + "%"
}

func reportRelLabel(b *stats.Breakdown, cat names.Catalog, r stats.RelKey) string {
	id := fmt.Sprintf("%d/%d/%d", r.SpcOID, r.DBOID, r.RelNumber)
	if r.Fork != decode.ForkMain {
		id += " " + r.Fork.Name()
	}
	name := cat.Name(r.RelFileLocator)
	if orig, changed := b.Original(r.RelFileLocator); changed {
		if n := cat.Name(orig); n != "" && name == "" {
			name = n
		}
		if name == "" {
			name = fmt.Sprintf("replaced %d", orig.RelNumber)
		}
	}
	if name != "" {
		return name + " (" + id + ")"
	}
	return id
}

func buildReportSide(s *ReportSide, ids *ChartIDs, width int) reportSideView {
	v := reportSideView{Name: s.Name, EndNote: s.EndNote}
	b := s.Breakdown
	st := s.Stats
	tot := b.Total
	vr := s.Verify
	two := []string{"record bytes", "image bytes"}
	// Summary and settings.
	v.Summary = []reportKV{
		{"records", reportCount(tot.Records)},
		{"WAL bytes (LSN distance)", format.FormatBytes(float64(tot.WALBytes))},
		{"record bytes (xl_tot_len)", format.FormatBytes(float64(tot.RecordBytes))},
		{"image bytes", format.FormatBytes(float64(tot.ImageBytes)) + " (" + reportPct(tot.ImageBytes, tot.WALBytes) + " of WAL, " + reportCount(tot.Images) + " images)"},
		{"checkpoint cycles", strconv.Itoa(len(b.Cycles))},
	}
	if s.LSN != nil {
		v.Summary = append(v.Summary, reportKV{"LSN range", s.LSN.Start.String() + " to " + s.LSN.End.String()})
	}
	level := s.WalLevel.String()
	if !s.WalLevelStated {
		level += " (inferred from the records: no record states it)"
	}
	fpw := "unknown (no checkpoint record)"
	if len(s.FullPageWrites) > 0 {
		fpw = ""
		for i, f := range s.FullPageWrites {
			if i > 0 {
				fpw += ", then "
			}
			fpw += f
		}
		fpw += " (from the checkpoint records)"
	}
	if vr != nil {
		v.Settings = []reportKV{
			{"PostgreSQL version", strconv.Itoa(vr.Version)},
			{"system identifier", strconv.FormatUint(vr.SystemID, 10)},
			{"wal_level", level},
			{"full_page_writes", fpw},
			{"XLOG_BLCKSZ (WAL page size)", format.FormatCount(float64(vr.PageSize)) + " bytes"},
			{"wal_segment_size", format.FormatBytes(float64(vr.SegmentSize))},
			{"BLCKSZ (data page size, --blcksz; not in the WAL)", format.FormatCount(float64(s.BlockSize)) + " bytes"},
		}
	}

	// Over time.
	var keys []int64
	for k, tb := range b.Buckets {
		if !tb.Start.IsZero() {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	if len(keys) > 0 {
		bw := int64(b.Bucket / time.Second)
		if bw < 1 {
			bw = 1
		}
		first, last := keys[0], keys[len(keys)-1]
		var xs []float64
		vals := [][]float64{nil, nil}
		for k := first; k <= last; k += bw {
			xs = append(xs, float64(k))
			var rec, img float64
			if tb := b.Buckets[k]; tb != nil {
				img = float64(tb.ImageBytes)
				rec = float64(tb.WALBytes) - img
			}
			vals[0] = append(vals[0], math.Max(rec, 0))
			vals[1] = append(vals[1], img)
		}
		span := last + bw - first
		tf := "15:04:05"
		if span > 86400 {
			tf = "01-02 15:04"
		}
		var marks []Marker
		for _, c := range b.Cycles {
			if c.Checkpoint != 0 && !c.Time.IsZero() {
				marks = append(marks, Marker{X: float64(c.Time.Unix()), Label: "ckpt " + c.Time.UTC().Format("15:04:05")})
			}
		}
		ch := &AreaChart{Title: "WAL bytes over time", XLabel: "time (UTC), starting " + time.Unix(first, 0).UTC().Format("2006-01-02 15:04:05"),
			YLabel: "WAL bytes per " + b.Bucket.String(), X: xs, XEnd: float64(last + bw), Series: two, Values: vals,
			XFormat: func(x float64) string { return time.Unix(int64(x), 0).UTC().Format(tf) },
			Markers: marks, MarkerName: "checkpoint completed", Width: width}
		v.OverTime = ch.SVG(ids)
		if ub := b.Buckets[-1<<62]; ub != nil {
			v.TimeNote = format.FormatBytes(float64(ub.WALBytes)) + " of WAL carry no timestamp and are not shown."
		}
	} else {
		v.TimeNote = "The WAL carries no timestamp (no commit or checkpoint record): nothing to draw over time."
	}
	// Over LSN.
	if l := s.LSN; l != nil && len(l.Record) > 0 {
		xs := make([]float64, len(l.Record))
		vals := [][]float64{make([]float64, len(xs)), make([]float64, len(xs))}
		for i := range xs {
			xs[i] = float64(uint64(l.Start) + uint64(i)*l.Width)
			vals[0][i] = float64(l.Record[i])
			vals[1][i] = float64(l.Image[i])
		}
		var marks []Marker
		for _, c := range b.Cycles {
			if c.Checkpoint != 0 {
				marks = append(marks, Marker{X: float64(c.Redo), Label: "redo " + c.Redo.String()})
			}
		}
		ch := &AreaChart{Title: "WAL bytes over LSN", XLabel: "WAL position (LSN)", YLabel: "WAL bytes per " + format.FormatBytes(float64(l.Width)) + " of LSN",
			X: xs, XEnd: float64(uint64(l.Start) + uint64(len(xs))*l.Width), Series: two, Values: vals,
			XFormat: func(x float64) string { return xlog.LSN(uint64(x)).String() },
			Markers: marks, MarkerName: "checkpoint redo point", Width: width}
		v.OverLSN = ch.SVG(ids)
	}
	// Checkpoint cycles.
	{
		ch := &BarChart{Title: "WAL per checkpoint cycle", XLabel: "WAL bytes in the cycle (note: image share, distinct blocks imaged)",
			Series: two, Width: width}
		v.CycleTab = reportTable{Columns: []string{"#", "redo point", "end", "checkpoint time", "cause", "records", "WAL bytes", "image bytes", "image share", "distinct blocks imaged", "image bytes per tenth of the cycle"},
			Numeric: []bool{true, false, false, false, false, true, true, true, true, true, false}}
		for i, c := range b.Cycles {
			label := fmt.Sprintf("#%d redo %s", i+1, c.Redo)
			when, cause := "", ""
			if c.Checkpoint == 0 {
				label = fmt.Sprintf("#%d before the first redo", i+1)
			} else if !c.Time.IsZero() {
				when = c.Time.UTC().Format("2006-01-02 15:04:05")
			}
			if c.Checkpoint != 0 {
				cause = c.Cause.String() // time, wal, requested, shutdown, ...
			}
			img := float64(c.ImageBytes)
			ch.Rows = append(ch.Rows, BarRow{Label: label, Values: []float64{math.Max(float64(c.WALBytes)-img, 0), img},
				Note: reportPct(c.ImageBytes, c.WALBytes) + " images, " + format.FormatCount(float64(c.DistinctBlocks)) + " blocks"})
			tenths := ""
			for k, t := range c.Tenths {
				if k > 0 {
					tenths += " "
				}
				tenths += reportPct(t, c.ImageBytes)
			}
			v.CycleTab.Rows = append(v.CycleTab.Rows, []string{strconv.Itoa(i + 1), c.Redo.String(), c.End.String(), when, cause, reportCount(c.Records),
				reportCount(c.WALBytes), reportCount(c.ImageBytes), reportPct(c.ImageBytes, c.WALBytes), reportCount(uint64(c.DistinctBlocks)), tenths})
		}
		if len(ch.Rows) > 0 {
			v.Cycles = ch.SVG(ids)
		}
	}
	// Resource managers and record types.
	rmgrRows := st.Rows(false)
	recRows := st.Rows(true)
	stackRows := func(rows []stats.Row, limit int) ([]BarRow, []BarRow) {
		rows = append([]stats.Row(nil), rows...)
		var kept []stats.Row
		for _, r := range rows {
			if r.Count > 0 {
				kept = append(kept, r)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].Total() > kept[j].Total() })
		if limit > 0 && len(kept) > limit {
			kept = kept[:limit]
		}
		var bytes, counts []BarRow
		all := st.Totals()
		for _, r := range kept {
			bytes = append(bytes, BarRow{Label: r.Name, Values: []float64{float64(r.RecLen), float64(r.FPILen)}, Note: reportPct(r.Total(), all.Total())})
		}
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].Count > kept[j].Count })
		for _, r := range kept {
			counts = append(counts, BarRow{Label: r.Name, Values: []float64{float64(r.Count)}, Note: reportPct(r.Count, all.Count)})
		}
		return bytes, counts
	}
	recSeries := []string{"record bytes (rec)", "image bytes (fpi)"}
	if rb, rn := stackRows(rmgrRows, 0); len(rb) > 0 {
		v.RmgrB = (&BarChart{Title: "bytes per resource manager", XLabel: "bytes (xl_tot_len, as pg_waldump --stats)", Series: recSeries, Rows: rb, Width: width}).SVG(ids)
		v.RmgrN = (&BarChart{Title: "records per resource manager", XLabel: "records", Series: []string{"records"}, Rows: rn, Format: format.FormatCount, Width: width}).SVG(ids)
	}
	if rb, rn := stackRows(recRows, 20); len(rb) > 0 {
		v.RecB = (&BarChart{Title: "bytes per record type (top 20)", XLabel: "bytes (xl_tot_len)", Series: recSeries, Rows: rb, Width: width}).SVG(ids)
		v.RecN = (&BarChart{Title: "records per record type (top 20 by bytes)", XLabel: "records", Series: []string{"records"}, Rows: rn, Format: format.FormatCount, Width: width}).SVG(ids)
	}
	// Relations.
	{
		rels := make([]*stats.RelVolume, 0, len(b.Relations))
		for _, r := range b.Relations {
			rels = append(rels, r)
		}
		key := func(r *stats.RelVolume) string { return fmt.Sprint(r.Rel) }
		sort.Slice(rels, func(i, j int) bool {
			if rels[i].WALBytes != rels[j].WALBytes {
				return rels[i].WALBytes > rels[j].WALBytes
			}
			return key(rels[i]) < key(rels[j])
		})
		var rows []BarRow
		for i, r := range rels {
			if i >= 15 {
				break
			}
			img := float64(r.ImageBytes)
			rows = append(rows, BarRow{Label: reportRelLabel(b, s.Catalog, r.Rel), Values: []float64{math.Max(float64(r.WALBytes)-img, 0), img},
				Note: reportPct(r.WALBytes, tot.WALBytes)})
		}
		if len(rows) > 0 {
			v.RelWAL = (&BarChart{Title: "top relations by WAL bytes", XLabel: "WAL bytes (a record counts for its first block's relation, an image for its own)",
				Series: two, Rows: rows, Width: width}).SVG(ids)
		}
		sort.SliceStable(rels, func(i, j int) bool { return rels[i].ImageBytes > rels[j].ImageBytes })
		rows = nil
		for i, r := range rels {
			if i >= 15 || r.ImageBytes == 0 {
				break
			}
			rows = append(rows, BarRow{Label: reportRelLabel(b, s.Catalog, r.Rel), Values: []float64{float64(r.ImageBytes)},
				Note: reportCount(r.Images) + " images"})
		}
		if len(rows) > 0 {
			v.RelImg = (&BarChart{Title: "top relations by image bytes", XLabel: "stored image bytes", Series: []string{"image bytes"}, Rows: rows, Width: width}).SVG(ids)
		}
		if b.NoRel.Records > 0 {
			v.RelNote = fmt.Sprintf("Records without block references (commits, checkpoints, ...): %s records, %s of WAL.", reportCount(b.NoRel.Records), format.FormatBytes(float64(b.NoRel.WALBytes)))
		}
		if s.Catalog == nil {
			v.RelNote += " Relations are shown by tablespace/database/relfilenode; give --catalog to name them."
		}
	}
	// What-if.
	if s.Actual.WALBytes > 0 {
		a := s.Actual
		ch := &BarChart{Title: "what-if: WAL under other settings", XLabel: "estimated WAL bytes (LSN distance)",
			Series: []string{"other bytes", "image bytes"}, Ref: float64(a.WALBytes), RefLabel: "actual WAL size", Width: width}
		v.WhatTab = reportTable{Columns: []string{"setting", "value", "WAL bytes", "image bytes", "record bytes", "flush write bytes", "WAL ratio", "checkpoints", "most pg_wal"},
			Numeric: []bool{false, false, true, true, true, true, true, true, true}}
		for _, sc := range append([]whatif.Scenario{a}, s.Scenarios...) {
			label := sc.Setting + " = " + sc.Value
			if sc.Setting == "actual" {
				label = "actual"
			}
			ratio := float64(sc.WALBytes) / float64(a.WALBytes)
			img := math.Min(float64(sc.ImageBytes), float64(sc.WALBytes))
			ch.Rows = append(ch.Rows, BarRow{Label: label, Values: []float64{float64(sc.WALBytes) - img, img}, Note: "×" + strconv.FormatFloat(ratio, 'f', 2, 64)})
			pgwal := ""
			if sc.PgWALBytes > 0 {
				pgwal = format.FormatBytes(float64(sc.PgWALBytes))
			}
			v.WhatTab.Rows = append(v.WhatTab.Rows, []string{sc.Setting, sc.Value, reportCount(sc.WALBytes), reportCount(sc.ImageBytes), reportCount(sc.RecordBytes), reportCount(sc.FlushWriteBytes),
				strconv.FormatFloat(ratio, 'f', 3, 64), strconv.Itoa(sc.Checkpoints), pgwal})
		}
		v.WhatIf = ch.SVG(ids)
	}
	// Advice (walscope advise).
	if a := s.Advice; a != nil {
		v.Advice, v.AdviceN = adviceView(a)
	}
	// Verification.
	if vr != nil {
		status := "no problems found"
		if !vr.OK() {
			status = fmt.Sprintf("%d problems found", len(vr.Problems))
		}
		v.Verify = []reportKV{{"result", status}, {"segments checked", strconv.Itoa(vr.Segments)}, {"records", reportCount(vr.Records)},
			{"record bytes", reportCount(vr.RecordBytes)}}
		gaps := "none"
		var missing []string
		for _, p := range vr.Problems {
			if p.Class == verify.ClassMissingSegment {
				missing = append(missing, p.LSNStr+" ("+p.Message+")")
			}
		}
		if len(missing) > 0 {
			gaps = fmt.Sprintf("%d: %s", len(missing), strings.Join(missing, "; "))
		}
		v.Verify = append(v.Verify, reportKV{"gaps (missing segments)", gaps})
		if vr.End != nil {
			v.Verify = append(v.Verify, reportKV{"end of WAL", vr.End.LSNStr + ": " + vr.End.Message})
		}
		for _, p := range vr.AfterEnd {
			v.Verify = append(v.Verify, reportKV{"after the end (not a problem)", fmt.Sprintf("%s: file %s, offset %d: %s", p.Class, p.File, p.Offset, p.Message)})
		}
		v.TLTab = reportTable{Columns: []string{"timeline", "start", "end", "records"}, Numeric: []bool{true, false, false, true}}
		for _, t := range vr.Timelines {
			v.TLTab.Rows = append(v.TLTab.Rows, []string{strconv.Itoa(int(t.TLI)), t.Start, t.End, reportCount(t.Records)})
		}
		if a := vr.Archive; a != nil {
			v.Verify = append(v.Verify, reportKV{"archive", fmt.Sprintf("%d files, %s stored, %s of WAL", a.Files, format.FormatBytes(float64(a.StoredBytes)), format.FormatBytes(float64(a.Bytes)))})
			for _, t := range a.Timelines {
				v.Verify = append(v.Verify, reportKV{fmt.Sprintf("archive timeline %d", t.TLI), fmt.Sprintf("%d segments (%s to %s), %d partial", t.Segments, t.First, t.Last, t.Partial)})
			}
		}
		v.Problems = reportTable{Columns: []string{"class", "file", "offset", "LSN", "message", "resumed at"}, Numeric: []bool{false, false, true, false, false, false}}
		for _, p := range vr.Problems {
			v.Problems.Rows = append(v.Problems.Rows, []string{string(p.Class), p.File, strconv.FormatInt(p.Offset, 10), p.LSNStr, p.Message, p.Resume})
		}
	}
	return v
}

// reportTail ends both pages (the run's and the dataset's): the self-check
// the Chromium tests read (every chart drew marks) and the table template.
const reportTail = `<script>
(function () {
  var charts = document.querySelectorAll("svg.chart"), empty = [];
  for (var i = 0; i < charts.length; i++) {
    if (charts[i].querySelectorAll(".mark").length === 0) { empty.push(charts[i].id); }
  }
  var d = document.createElement("div");
  d.id = "walscope-selfcheck";
  d.hidden = true;
  d.textContent = (empty.length ? "EMPTY " + empty.join(" ") : "OK") + " charts=" + charts.length;
  document.body.appendChild(d);
})();
</script>
</body>
</html>
{{define "table"}}<table><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>{{$svgNum := .Numeric}}{{$code := .Code}}{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if index $svgNum $i}} class="n"{{else if and $code (index $code $i)}} class="code"{{end}}>{{$c}}</td>{{end}}</tr>{{end}}</table>{{end}}
`

// reportTemplate is parsed on first use, not at package initialisation: every
// walscope command links this package, and parsing the page took 0.2 ms and
// 900 allocations at each start (issue 16).
var reportTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(reportHTML))
})

const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; color: #222; margin: 0 auto; padding: 16px 24px; max-width: 1320px; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0; }
h2 { font-size: 1.25em; border-bottom: 2px solid #4e79a7; padding-bottom: 3px; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin: 0.8em 0 0.3em; }
.sides { display: grid; grid-template-columns: repeat({{.Cols}}, minmax(0, 1fr)); gap: 28px; }
.side { min-width: 0; }
svg.chart { width: 100%; max-width: 980px; height: auto; display: block; margin: 6px 0 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef2f7; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.code { font-family: monospace; font-size: 0.85em; white-space: pre-line; user-select: all; }
table.kv th { width: 16em; font-weight: normal; background: #f5f5f5; }
.note { color: #555; font-size: 13px; }
.scroll { overflow-x: auto; }
nav a { margin-right: 1em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="note">Generated by walscope on {{.Generated}} from the WAL alone. Sizes in bytes, kB, MB (powers of 1024).</p>
<nav><a href="#summary">summary</a><a href="#settings">settings</a><a href="#time">over time</a><a href="#lsn">over LSN</a><a href="#cycles">checkpoint cycles</a><a href="#rmgr">resource managers</a><a href="#relations">relations</a><a href="#whatif">what-if</a><a href="#advice">advice</a><a href="#verify">verification</a>{{if .HasEvents}}<a href="#events">events</a>{{end}}</nav>

<h2 id="summary">Summary</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>
<table class="kv">{{range .Summary}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
{{with .EndNote}}<p class="note">{{.}}</p>{{end}}</div>{{end}}</div>

<h2 id="settings">Settings the WAL records</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>
<table class="kv">{{range .Settings}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table></div>{{end}}</div>

<h2 id="time">WAL over time</h2>
<p class="note">WAL written per interval, dated by the commit and checkpoint timestamps the WAL carries, split into page image bytes and record bytes (the rest: record headers and data, page headers, and the padding of segment switches); dashed lines mark checkpoints.</p>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.OverTime}}{{with .TimeNote}}<p class="note">{{.}}</p>{{end}}</div>{{end}}</div>

<h2 id="lsn">WAL over LSN: the checkpoint sawtooth</h2>
<p class="note">After each redo point (dashed line) the first change to every page writes its full image, so image bytes jump and then decay until the next checkpoint.</p>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.OverLSN}}</div>{{end}}</div>

<h2 id="cycles">Checkpoint cycles</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.Cycles}}
<div class="scroll">{{template "table" .CycleTab}}</div></div>{{end}}</div>

<h2 id="rmgr">Resource managers and record types</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.RmgrB}}{{.RmgrN}}{{.RecB}}{{.RecN}}</div>{{end}}</div>

<h2 id="relations">Relations</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.RelWAL}}{{.RelImg}}{{with .RelNote}}<p class="note">{{.}}</p>{{end}}</div>{{end}}</div>

<h2 id="whatif">What if: the same workload under other settings</h2>
<p class="note">Estimates, record by record, of the WAL this stream would have been (walscope whatif); the dashed line is the actual size.</p>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{.WhatIf}}<div class="scroll">{{template "table" .WhatTab}}</div></div>{{end}}</div>

<h2 id="advice">Advice: max_wal_size, checkpoint_timeout, wal_compression</h2>
<p class="note">walscope advise: each setting's advised value with the WAL it predicts (per day at the rate of the WAL read), against the stream now. Settings the WAL does not show are assumptions.</p>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{if .Advice.Rows}}<div class="scroll">{{template "table" .Advice}}</div>{{range .AdviceN}}<p class="note">{{.}}</p>{{end}}{{else}}<p>No advice: the what-if had no checkpoint settings scenarios.</p>{{end}}</div>{{end}}</div>

<h2 id="verify">Verification</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>
<table class="kv">{{range .Verify}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
<h3>Timelines</h3>{{template "table" .TLTab}}
<h3>Problems</h3>{{if .Problems.Rows}}<div class="scroll">{{template "table" .Problems}}</div>{{else}}<p>None.</p>{{end}}</div>{{end}}</div>
{{if .HasEvents}}
<h2 id="events">Events: what happened</h2>
<div class="sides">{{range .Sides}}<div class="side"><h3>{{.Name}}</h3>{{with .EventsN}}<p class="note">{{.}}</p>{{end}}{{if .Events.Rows}}<div class="scroll">{{template "table" .Events}}</div>{{end}}</div>{{end}}</div>
{{end}}
` + reportTail

// adviceView lays out walscope advise's advice: a row for the stream now
// and one per setting, then the reasons and the settings taken.
func adviceView(a *whatif.Advice) (reportTable, []string) {
	t := reportTable{Columns: []string{"setting", "current", "advised", "WAL per day", "image share", "checkpoints per hour", "most pg_wal"},
		Numeric: []bool{false, false, false, true, true, true, true}}
	row := func(setting, cur, adv string, p whatif.Projection) {
		t.Rows = append(t.Rows, []string{setting, cur, adv, format.FormatBytes(p.WALBytesPerDay),
			strconv.FormatFloat(100*p.ImageShare, 'f', 1, 64) + "%", strconv.FormatFloat(p.CheckpointsPerHour, 'f', 1, 64),
			format.FormatBytes(float64(p.PgWALBytes))})
	}
	row("(now)", "", "", a.Now)
	var notes []string
	for _, r := range a.Recommendations {
		row(r.Setting, r.Current, r.Advised, r.Predicted)
		notes = append(notes, r.Setting+" "+r.Advised+": "+r.Why)
	}
	keys := make([]string, 0, len(a.Settings))
	for k := range a.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assumed := map[string]bool{}
	for _, k := range a.Assumed {
		assumed[k] = true
	}
	taken := "Settings taken:"
	for _, k := range keys {
		taken += " " + k + "=" + a.Settings[k]
		if assumed[k] {
			taken += " (assumed)"
		}
	}
	return t, append(append(notes, a.Notes...), taken)
}
