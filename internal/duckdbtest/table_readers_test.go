package duckdbtest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTableParquetThreeReaders: the typed Parquet files of `walscope table`
// (every table of fixtures/pages at each restore point: the kinds table has
// every type of the issue) and of `walscope rows` (every incident and table
// of fixtures/rows), read by DuckDB, polars (nodejs-polars: the Rust
// reader) and arrow-rs (parquet-wasm), give every value the same in all
// three: integers, booleans and text exactly, floats bit for bit, dates as
// days, times and timestamps as microseconds, decimals as their unscaled
// integer, binary and uuid as bytes (polars' times through its integer
// nanoseconds: its text of a time drops the fraction of a second, which
// is how this test first failed). polars' JavaScript binding cannot hand
// binary columns to JavaScript (bytea, uuid: nodejs-polars 0.25.2's "DataType
// Binary is not supported for JS conversion"): those are compared for DuckDB
// and arrow-rs only, and counted.
func TestTableParquetThreeReaders(t *testing.T) {
	dir := readersDir(t)
	db := openDB(t)
	out := t.TempDir()
	var files []string
	fx, src := fixtureDir(t, "pages", "archive.tar.zst")
	targets, err := os.ReadFile(filepath.Join(src, "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range strings.Fields(string(targets)) {
		for _, tab := range []string{"acct", "hist", "kinds", "doomed"} {
			file := filepath.Join(out, "table-"+target+"-"+tab+".parquet")
			cmd := exec.Command(walscopeBin, "table", "--backup", filepath.Join(src, "base.tar.gz"), "--relation", tab, "--target-name", target, "--format", "parquet", "--out", file, filepath.Join(fx, "archive"))
			if err := cmd.Run(); err != nil {
				continue // a table not there at that target (exit 4)
			}
			files = append(files, file)
		}
	}
	rfx, rsrc := fixtureDir(t, "rows", "archive.tar.zst")
	for _, f := range rowsFacts(t, rsrc) {
		for _, tab := range f.Tables {
			file := filepath.Join(out, "rows-"+f.Name+"-"+tab+".parquet")
			run(t, "rows", "--backup", filepath.Join(rsrc, "base.tar.gz"), "--xid", fmt.Sprint(f.XID), "--relation", tab, "--format", "parquet", "--out", file, filepath.Join(rfx, "archive"))
			files = append(files, file)
		}
	}
	if len(files) < 30 {
		t.Fatalf("only %d files written", len(files))
	}
	readers := map[string]map[string]map[string]readerColumn{}
	for _, reader := range []string{"polars", "arrow-rs"} {
		cmd := exec.Command("node", append([]string{filepath.Join(dir, "values.cjs"), reader}, files...)...)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", reader, err)
		}
		var got map[string]map[string]readerColumn
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", reader, err)
		}
		readers[reader] = got
	}
	compared := map[string]int{}
	unsupported := map[string]int{}
	for _, file := range files {
		cols := describe(t, db, file)
		for _, c := range cols {
			want := duckValues(t, db, file, c)
			for _, reader := range []string{"polars", "arrow-rs"} {
				rc, ok := readers[reader][file][c.name]
				if !ok {
					t.Errorf("%s: %s has no column %s", filepath.Base(file), reader, c.name)
					continue
				}
				if rc.Unsupported != "" {
					if reader != "polars" || c.typ != "BLOB" && c.typ != "UUID" {
						t.Errorf("%s %s: %s could not read it: %s", filepath.Base(file), c.name, reader, rc.Unsupported)
					}
					unsupported[reader] += len(want)
					continue
				}
				if len(rc.Values) != len(want) {
					t.Errorf("%s %s: %s has %d values, DuckDB %d", filepath.Base(file), c.name, reader, len(rc.Values), len(want))
					continue
				}
				for i, v := range rc.Values {
					var g string
					if v != nil {
						g = canonicalValue(t, c.typ, reader, *v)
					}
					if (v == nil) != (want[i] == nil) || v != nil && g != *want[i] {
						t.Errorf("%s row %d column %s (%s): %s %s, DuckDB %s", filepath.Base(file), i+1, c.name, c.typ, reader, showPG(v), showPG(want[i]))
						continue
					}
					compared[reader]++
				}
			}
		}
	}
	if compared["polars"] < 10000 || compared["arrow-rs"] < 10000 {
		t.Fatalf("too little compared: %v", compared)
	}
	t.Logf("%d files: values identical to DuckDB's: polars %d, arrow-rs %d (binary columns polars' JavaScript binding cannot give: %d values)",
		len(files), compared["polars"], compared["arrow-rs"], unsupported["polars"])
}

// readerColumn is one column as values.cjs prints it.
type readerColumn struct {
	Type        string    `json:"type"`
	Values      []*string `json:"values"`
	Unsupported string    `json:"unsupported"`
}

// duckValues reads one column with DuckDB, each value in canonicalValue's
// form.
func duckValues(t *testing.T, db *sql.DB, file string, c duckColumn) []*string {
	t.Helper()
	q := `"` + c.name + `"`
	expr := "CAST(" + q + " AS VARCHAR)"
	switch {
	case c.typ == "BLOB":
		expr = "lower(hex(" + q + "))"
	case c.typ == "UUID":
		expr = "replace(CAST(" + q + " AS VARCHAR), '-', '')"
	case c.typ == "DATE":
		expr = "CAST(" + q + " - DATE '1970-01-01' AS VARCHAR)"
	case strings.HasPrefix(c.typ, "TIMESTAMP"):
		expr = "CAST(epoch_us(" + q + ") AS VARCHAR)"
	}
	rows, err := db.Query("SELECT " + expr + " FROM read_parquet('" + file + "')")
	if err != nil {
		t.Fatalf("%s %s: %v", filepath.Base(file), c.name, err)
	}
	defer rows.Close()
	var out []*string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if !s.Valid {
			out = append(out, nil)
			continue
		}
		v := canonicalValue(t, c.typ, "duckdb", s.String)
		out = append(out, &v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// canonicalValue turns one reader's text of a value of a column of DuckDB
// type typ into one form for all: floats as their bits (NaN as NaN), dates
// as days since 1970, times and timestamps as microseconds, decimals as
// the unscaled integer; the rest as it is. arrow-rs gives the stored
// values already (values.cjs); DuckDB's and polars' text is parsed.
func canonicalValue(t *testing.T, typ, reader, s string) string {
	t.Helper()
	switch {
	case typ == "FLOAT" || typ == "DOUBLE":
		bits := 64
		if typ == "FLOAT" {
			bits = 32
		}
		switch strings.ToLower(s) {
		case "nan":
			return "NaN"
		case "inf", "infinity":
			s = "+Inf"
		case "-inf", "-infinity":
			s = "-Inf"
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			t.Fatalf("%s %s: %v", reader, typ, err)
		}
		if bits == 32 {
			return fmt.Sprintf("%08x", math.Float32bits(float32(f)))
		}
		return fmt.Sprintf("%016x", math.Float64bits(f))
	case strings.HasPrefix(typ, "DECIMAL("):
		if reader == "arrow-rs" {
			return s
		}
		var p, sc int
		fmt.Sscanf(typ, "DECIMAL(%d,%d)", &p, &sc)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		whole, frac, _ := strings.Cut(s, ".")
		for len(frac) < sc {
			frac += "0"
		}
		n, ok := new(big.Int).SetString("0"+whole+frac, 10)
		if !ok || len(frac) != sc {
			t.Fatalf("%s %s: %q", reader, typ, s)
		}
		if neg {
			n.Neg(n)
		}
		return n.String()
	case typ == "DATE" && reader == "polars":
		return strconv.FormatInt(civilDays(t, s), 10)
	case typ == "TIME" && reader == "polars":
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ns%1000 != 0 {
			t.Fatalf("polars TIME %q: not whole microseconds", s)
		}
		return strconv.FormatInt(ns/1000, 10)
	case typ == "TIME" && reader == "duckdb":
		return strconv.FormatInt(clockMicros(t, s), 10)
	case strings.HasPrefix(typ, "TIMESTAMP") && reader == "polars":
		s = strings.TrimSuffix(s, "+00:00")
		d, clock, ok := strings.Cut(s, " ")
		if !ok {
			t.Fatalf("polars %s: %q", typ, s)
		}
		return strconv.FormatInt(civilDays(t, d)*86_400_000_000+clockMicros(t, clock), 10)
	}
	return s
}

// civilDays is the days since 1970-01-01 of a proleptic Gregorian date
// Y-M-D (astronomical years: -4712 is 4713 BC).
func civilDays(t *testing.T, s string) int64 {
	t.Helper()
	neg := strings.HasPrefix(s, "-")
	parts := strings.Split(strings.TrimPrefix(s, "-"), "-")
	if len(parts) != 3 {
		t.Fatalf("date %q", s)
	}
	y, _ := strconv.Atoi(parts[0])
	m, _ := strconv.Atoi(parts[1])
	d, _ := strconv.Atoi(parts[2])
	if neg {
		y = -y
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// clockMicros is the microseconds since midnight of HH:MM:SS[.ffffff].
func clockMicros(t *testing.T, s string) int64 {
	t.Helper()
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		t.Fatalf("time %q", s)
	}
	var n [3]int64
	for i, p := range parts {
		n[i], _ = strconv.ParseInt(p, 10, 64)
	}
	for len(frac) < 6 {
		frac += "0"
	}
	us, _ := strconv.ParseInt(frac[:6], 10, 64)
	return ((n[0]*60+n[1])*60+n[2])*1_000_000 + us
}
