package format

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
)

// Table is a rectangular result: column names and rows of cells, printed as
// aligned text, CSV with a header row, or JSON (an array of objects whose
// numeric cells are numbers).
type Table struct {
	Columns []string
	Numeric []bool // per column: the cells are numbers
	Rows    [][]string
}

// WriteText writes the table with columns aligned, numbers to the right.
func (t *Table) WriteText(w io.Writer) error {
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		width[i] = len(c)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len(c))
			if i < len(t.Numeric) && t.Numeric[i] {
				b.WriteString(pad + c)
			} else if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		b.WriteByte('\n')
	}
	line(t.Columns)
	dashes := make([]string, len(t.Columns))
	for i := range dashes {
		dashes[i] = strings.Repeat("-", width[i])
	}
	line(dashes)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes a header row and the rows.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(t.Columns)
	cw.WriteAll(t.Rows)
	return cw.Error()
}

// WriteJSON writes an array of objects keyed by column name.
func (t *Table) WriteJSON(w io.Writer) error {
	out := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		m := make(map[string]any, len(r))
		for i, c := range r {
			if i < len(t.Numeric) && t.Numeric[i] && c != "" {
				m[t.Columns[i]] = json.Number(c)
			} else {
				m[t.Columns[i]] = c
			}
		}
		out = append(out, m)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Write writes the table in format "text", "csv" or "json".
func (t *Table) Write(w io.Writer, format string) error {
	switch format {
	case "csv":
		return t.WriteCSV(w)
	case "json":
		return t.WriteJSON(w)
	}
	return t.WriteText(w)
}
