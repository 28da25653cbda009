package format

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
)

func pct(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

// AppendStatsTable appends pg_waldump's --stats (or --stats=record) table
// (XLogDumpDisplayStats in src/bin/pg_waldump/pg_waldump.c). PostgreSQL 14
// and earlier print no "WAL statistics between" line.
func AppendStatsTable(dst []byte, s *stats.Stats, perRecord bool) []byte {
	if s.Count == 0 {
		return dst // pg_waldump leaves when no record was counted
	}
	t := s.Totals()
	totalLen := t.RecLen + t.FPILen
	if s.Version >= xlog.V15 {
		dst = fmt.Appendf(dst, "WAL statistics between %s and %s:\n", s.Start, s.End)
	}
	dst = fmt.Appendf(dst, "%-27s %20s %8s %20s %8s %20s %8s %20s %8s\n%-27s %20s %8s %20s %8s %20s %8s %20s %8s\n",
		"Type", "N", "(%)", "Record size", "(%)", "FPI size", "(%)", "Combined size", "(%)",
		"----", "-", "---", "-----------", "---", "--------", "---", "-------------", "---")
	for _, r := range s.Rows(perRecord) {
		dst = fmt.Appendf(dst, "%-27s %20d (%6.02f) %20d (%6.02f) %20d (%6.02f) %20d (%6.02f)\n",
			r.Name, r.Count, pct(r.Count, t.Count), r.RecLen, pct(r.RecLen, t.RecLen),
			r.FPILen, pct(r.FPILen, t.FPILen), r.Total(), pct(r.Total(), totalLen))
	}
	dst = fmt.Appendf(dst, "%-27s %20s %8s %20s %8s %20s %8s %20s\n",
		"", "--------", "", "--------", "", "--------", "", "--------")
	return fmt.Appendf(dst, "%-27s %20d %-9s%20d %-9s%20d %-9s%20d %-6s\n",
		"Total", s.Count, "",
		t.RecLen, fmt.Sprintf("[%.02f%%]", pct(t.RecLen, totalLen)),
		t.FPILen, fmt.Sprintf("[%.02f%%]", pct(t.FPILen, totalLen)),
		totalLen, "[100%]")
}

// StatsRow is the machine-readable form of one statistics row.
type StatsRow struct {
	Type            string  `json:"type"`
	Rmgr            string  `json:"rmgr"`
	RecordType      string  `json:"record_type,omitempty"`
	Count           uint64  `json:"count"`
	CountPct        float64 `json:"count_pct"`
	RecordSize      uint64  `json:"record_size"`
	RecordSizePct   float64 `json:"record_size_pct"`
	FPISize         uint64  `json:"fpi_size"`
	FPISizePct      float64 `json:"fpi_size_pct"`
	CombinedSize    uint64  `json:"combined_size"`
	CombinedSizePct float64 `json:"combined_size_pct"`
}

// StatsDoc is the JSON document of `walscope stats --format json`.
type StatsDoc struct {
	Start   string     `json:"start_lsn"`
	End     string     `json:"end_lsn"`
	Version int        `json:"pg_version"`
	Rows    []StatsRow `json:"rows"`
	Total   StatsRow   `json:"total"`
}

func statsRows(s *stats.Stats, perRecord bool) ([]StatsRow, StatsRow) {
	t := s.Totals()
	totalLen := t.RecLen + t.FPILen
	var rows []StatsRow
	for _, r := range s.Rows(perRecord) {
		rows = append(rows, StatsRow{
			Type: r.Name, Rmgr: r.Rmgr, RecordType: r.RecordType,
			Count: r.Count, CountPct: pct(r.Count, t.Count),
			RecordSize: r.RecLen, RecordSizePct: pct(r.RecLen, t.RecLen),
			FPISize: r.FPILen, FPISizePct: pct(r.FPILen, t.FPILen),
			CombinedSize: r.Total(), CombinedSizePct: pct(r.Total(), totalLen),
		})
	}
	total := StatsRow{Type: "Total", Count: s.Count,
		RecordSize: t.RecLen, RecordSizePct: pct(t.RecLen, totalLen),
		FPISize: t.FPILen, FPISizePct: pct(t.FPILen, totalLen),
		CombinedSize: totalLen, CombinedSizePct: 100, CountPct: 100}
	return rows, total
}

// WriteStatsJSON writes the statistics as one JSON document.
func WriteStatsJSON(w io.Writer, s *stats.Stats, perRecord bool) error {
	rows, total := statsRows(s, perRecord)
	doc := StatsDoc{Start: s.Start.String(), End: s.End.String(), Version: int(s.Version), Rows: rows, Total: total}
	if doc.Rows == nil {
		doc.Rows = []StatsRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WriteStatsCSV writes the statistics as CSV with a header row; the last row
// is the total.
func WriteStatsCSV(w io.Writer, s *stats.Stats, perRecord bool) error {
	rows, total := statsRows(s, perRecord)
	cw := csv.NewWriter(w)
	cw.Write([]string{"type", "rmgr", "record_type", "count", "count_pct", "record_size", "record_size_pct",
		"fpi_size", "fpi_size_pct", "combined_size", "combined_size_pct"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, r := range append(rows, total) {
		cw.Write([]string{r.Type, r.Rmgr, r.RecordType, u(r.Count), f(r.CountPct), u(r.RecordSize), f(r.RecordSizePct),
			u(r.FPISize), f(r.FPISizePct), u(r.CombinedSize), f(r.CombinedSizePct)})
	}
	cw.Flush()
	return cw.Error()
}
