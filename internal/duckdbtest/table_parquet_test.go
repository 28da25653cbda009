package duckdbtest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/internal/testwal"
)

// fixtureDir unpacks the named archives of fixtures/<name> into a temporary
// directory and returns it and the fixture's own directory.
func fixtureDir(t *testing.T, name string, archives ...string) (dst, src string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src = filepath.Join(filepath.Dir(file), "..", "..", "fixtures", name)
	dst = t.TempDir()
	for _, a := range archives {
		if err := testwal.UntarZstd(filepath.Join(src, a), dst); err != nil {
			t.Fatal(err)
		}
	}
	return dst, src
}

// duckColumn is a column of a Parquet file as DuckDB reads it.
type duckColumn struct{ name, typ string }

func describe(t *testing.T, db *sql.DB, file string) []duckColumn {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('%s'))", file))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []duckColumn
	for rows.Next() {
		var c duckColumn
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// duckText is the SQL that turns a column as DuckDB read it into text
// comparable with PostgreSQL's (canonical does the rest): booleans as t/f,
// bytea as \x and lower-case hex, timestamps as microseconds since 1970;
// floats are scanned as they are.
func duckText(c duckColumn) string {
	q := `"` + c.name + `"`
	switch {
	case c.typ == "BOOLEAN":
		return "CASE WHEN " + q + " THEN 't' WHEN NOT " + q + " THEN 'f' END"
	case c.typ == "BLOB":
		return `'\x' || lower(hex(` + q + "))"
	case c.typ == "FLOAT" || c.typ == "DOUBLE":
		return q
	case strings.HasPrefix(c.typ, "TIMESTAMP"):
		return "CAST(epoch_us(" + q + ") AS VARCHAR)"
	}
	return "CAST(" + q + " AS VARCHAR)"
}

// readDuck reads every column of file in its row order, each through
// duckText: nil for NULL, a string, or a float32/float64.
func readDuck(t *testing.T, db *sql.DB, file string, cols []duckColumn) [][]any {
	t.Helper()
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, duckText(c))
	}
	q := fmt.Sprintf("SELECT %s FROM read_parquet('%s', file_row_number = true) ORDER BY file_row_number", strings.Join(exprs, ", "), file)
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// duckType is the DuckDB type a column of PostgreSQL type pgType (as
// format_type prints it) must be read as: the types walscope writes typed,
// everything else text.
func duckType(pgType string) string {
	switch pgType {
	case "boolean":
		return "BOOLEAN"
	case "smallint":
		return "SMALLINT"
	case "integer":
		return "INTEGER"
	case "bigint", "oid":
		return "BIGINT"
	case "real":
		return "FLOAT"
	case "double precision":
		return "DOUBLE"
	case "bytea":
		return "BLOB"
	case "uuid":
		return "UUID"
	case "date":
		return "DATE"
	case "time without time zone":
		return "TIME"
	case "timestamp without time zone":
		return "TIMESTAMP"
	case "timestamp with time zone":
		return "TIMESTAMP WITH TIME ZONE"
	}
	if m := regexp.MustCompile(`^numeric\((\d+),(\d+)\)$`).FindStringSubmatch(pgType); m != nil {
		if p, _ := strconv.Atoi(m[1]); p <= 38 {
			return "DECIMAL(" + m[1] + "," + m[2] + ")"
		}
	}
	return "VARCHAR"
}

// hasSpecial reports whether a column of DuckDB type typ has a _special
// companion.
func hasSpecial(typ string) bool {
	return typ == "DATE" || strings.HasPrefix(typ, "TIMESTAMP") || strings.HasPrefix(typ, "DECIMAL")
}

var pgTimestampRE = regexp.MustCompile(`^(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::?(\d\d))?(?::(\d\d))?)?( BC)?$`)

// pgMicros is a PostgreSQL ISO timestamp's text (timestamptz's with its
// offset; BC years too) as microseconds since 1970-01-01 UTC, and whether
// they fit an INT64 short of DuckDB's infinities.
func pgMicros(t *testing.T, s string) (string, bool) {
	m := pgTimestampRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("timestamp %q: not an ISO timestamp", s)
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	year := n(1)
	if m[12] != "" {
		year = 1 - year // 1 BC is year 0
	}
	secs := ((daysFromCivil(year, n(2), n(3))*24+n(4))*60+n(5))*60 + n(6)
	if m[8] != "" {
		off := n(9)*3600 + n(10)*60 + n(11)
		if m[8] == "+" {
			secs -= off
		} else {
			secs += off
		}
	}
	us := new(big.Int).Mul(big.NewInt(secs), big.NewInt(1_000_000))
	if m[7] != "" {
		f, _ := strconv.ParseInt((m[7] + "00000")[:6], 10, 64)
		us.Add(us, big.NewInt(f))
	}
	fits := us.IsInt64() && us.Int64() != math.MaxInt64 && us.Int64() > -math.MaxInt64
	return us.String(), fits
}

// daysFromCivil is the days from 1970-01-01 to y-m-d (proleptic
// Gregorian, astronomical years; Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era-- // floor
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// timeMicros is "HH:MM:SS[.ffffff]" as microseconds since midnight.
func timeMicros(t *testing.T, s string) string {
	var h, mi, sec int64
	frac := ""
	main, f, _ := strings.Cut(s, ".")
	if _, err := fmt.Sscanf(main, "%d:%d:%d", &h, &mi, &sec); err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	if f != "" {
		frac = (f + "00000")[:6]
	} else {
		frac = "0"
	}
	fv, _ := strconv.ParseInt(frac, 10, 64)
	return strconv.FormatInt(((h*60+mi)*60+sec)*1_000_000+fv, 10)
}

// sameValue compares what DuckDB read (duck, through duckText) of a column
// of DuckDB type typ with PostgreSQL's text of the value (pg; nil: NULL);
// it returns a description of the difference, or "".
func sameValue(t *testing.T, typ string, duck any, pg *string) string {
	if pg == nil || duck == nil {
		if (pg == nil) != (duck == nil) {
			return fmt.Sprintf("DuckDB %v, PostgreSQL %v", showDuck(duck), showPG(pg))
		}
		return ""
	}
	want := *pg
	var got string
	switch x := duck.(type) {
	case float32:
		w, err := strconv.ParseFloat(want, 32)
		if err != nil || math.Float32bits(float32(w)) != math.Float32bits(x) && !(x != x && w != w) {
			return fmt.Sprintf("DuckDB %v, PostgreSQL %q", x, want)
		}
		return ""
	case float64:
		w, err := strconv.ParseFloat(want, 64)
		if err != nil || math.Float64bits(w) != math.Float64bits(x) && !(x != x && w != w) {
			return fmt.Sprintf("DuckDB %v, PostgreSQL %q", x, want)
		}
		return ""
	case string:
		got = x
	case []byte:
		got = string(x)
	default:
		got = fmt.Sprint(x)
	}
	switch {
	case strings.HasPrefix(typ, "TIMESTAMP"):
		want, _ = pgMicros(t, want)
	case typ == "TIME":
		want, got = timeMicros(t, want), timeMicros(t, got)
	case typ == "DATE":
		got = strings.Replace(got, " (BC)", " BC", 1)
	case strings.HasPrefix(typ, "DECIMAL("):
		// DuckDB prints DECIMAL(p,p) without the 0 before the point
		if strings.HasPrefix(got, ".") || strings.HasPrefix(got, "-.") {
			got = strings.Replace(got, ".", "0.", 1)
		}
	}
	if got != want {
		return fmt.Sprintf("DuckDB %q, PostgreSQL %q", got, want)
	}
	return ""
}

func showDuck(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}

func showPG(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}

// tally counts what was compared.
type tally struct {
	files, rows, values, specials int
	typed                         map[string]int // non-null typed values by DuckDB type
}

// specialValue reports whether PostgreSQL's text of a value of a column of
// DuckDB type typ is one the typed column cannot hold as a plain value
// (its _special companion then holds the text), and whether the typed
// column is then null (it always is: NaN, ±infinity, timestamps past INT64
// microseconds since 1970).
func specialValue(t *testing.T, typ, text string) (special, null bool) {
	switch {
	case strings.HasPrefix(typ, "DECIMAL"):
		return text == "NaN", true
	case typ == "DATE":
		return text == "infinity" || text == "-infinity", true
	case strings.HasPrefix(typ, "TIMESTAMP"):
		if text == "infinity" || text == "-infinity" {
			return true, true
		}
		_, fits := pgMicros(t, text)
		return !fits, true
	}
	return false, false
}

// compareWithCopy reads file with DuckDB and compares it with the lines of
// COPY's text output of the same rows: the columns DuckDB reads must be
// want, and each value the server's (sameValue), each _special companion
// null but for the values specialValue says.
func compareWithCopy(t *testing.T, db *sql.DB, file, label string, want []duckColumn, lines []string, n *tally) {
	t.Helper()
	cols := describe(t, db, file)
	if fmt.Sprint(cols) != fmt.Sprint(want) {
		t.Fatalf("%s: DuckDB reads the columns\n%v\nwant\n%v", label, cols, want)
	}
	got := readDuck(t, db, file, cols)
	if len(got) != len(lines) {
		t.Fatalf("%s: DuckDB reads %d rows, the server's COPY has %d", label, len(got), len(lines))
	}
	for i, l := range lines {
		fields := pgtest.CopyFields(l)
		c := 0
		for _, f := range fields {
			if c >= len(cols) {
				break
			}
			col := cols[c]
			pg := f
			companion := hasSpecial(col.typ)
			special := false
			if companion && f != nil {
				var null bool
				if special, null = specialValue(t, col.typ, *f); special && null {
					pg = nil
				}
			}
			if d := sameValue(t, col.typ, got[i][c], pg); d != "" {
				t.Errorf("%s row %d column %s (%s): %s", label, i+1, col.name, col.typ, d)
			}
			if col.typ != "VARCHAR" && f != nil {
				n.typed[col.typ]++
			}
			n.values++
			c++
			if companion {
				var wantSpecial *string
				if special {
					wantSpecial = f
					n.specials++
				}
				if d := sameValue(t, "VARCHAR", got[i][c], wantSpecial); d != "" {
					t.Errorf("%s row %d column %s: %s", label, i+1, cols[c].name, d)
				}
				c++
			}
		}
		if c != len(cols) {
			t.Fatalf("%s row %d: %d COPY fields for %d Parquet columns", label, i+1, len(fields), len(cols))
		}
		n.rows++
	}
}

// TestTableParquetAgainstRecovery: `walscope table --format parquet` of
// every table of fixtures/pages at each of its restore points, read by
// DuckDB, holds exactly what the real standby restored there printed for
// `COPY t TO STDOUT` (expected/<target>/<table>.copy), value by value: the
// typed columns compared as numbers, instants and bytes (floats bit for
// bit, NaN and infinities included; timestamps as microseconds since
// 1970; dates, uuids and decimals as DuckDB prints them), the rest as the
// server's text; each column of the DuckDB type its PostgreSQL type maps
// to (expected/<target>/<table>.types, format_type's names); each
// _special companion null except for infinity and NaN, where it holds
// the server's text.
func TestTableParquetAgainstRecovery(t *testing.T) {
	fx, src := fixtureDir(t, "pages", "archive.tar.zst", "expected.tar.zst")
	targetsText, err := os.ReadFile(filepath.Join(src, "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(src, "base.tar.gz")
	db := openDB(t)
	out := t.TempDir()
	n := tally{typed: map[string]int{}}
	for _, target := range strings.Fields(string(targetsText)) {
		for _, tab := range []string{"acct", "hist", "kinds", "doomed"} {
			exp := filepath.Join(fx, "expected", target, tab)
			copyText, err := os.ReadFile(exp + ".copy")
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			typesText, err := os.ReadFile(exp + ".types")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(out, target+"-"+tab+".parquet")
			run(t, "table", "--backup", base, "--relation", tab, "--target-name", target, "--format", "parquet", "--out", file, filepath.Join(fx, "archive"))
			n.files++
			// the schema: each column's DuckDB type, companions after theirs
			var want []duckColumn
			for _, l := range strings.Split(strings.TrimSpace(string(typesText)), "\n") {
				name, pgType, _ := strings.Cut(l, " ")
				c := duckColumn{name, duckType(pgType)}
				want = append(want, c)
				if hasSpecial(c.typ) {
					want = append(want, duckColumn{name + "_special", "VARCHAR"})
				}
			}
			var lines []string
			if s := strings.TrimSuffix(string(copyText), "\n"); s != "" {
				lines = strings.Split(s, "\n")
			}
			compareWithCopy(t, db, file, target+" "+tab, want, lines, &n)
		}
	}
	if n.rows == 0 || n.specials == 0 || len(n.typed) < 12 {
		t.Fatalf("too little compared: %+v", n)
	}
	t.Logf("%d files, %d rows, %d values identical to the standby's COPY (%d infinity/NaN in _special columns); non-null typed values per DuckDB type: %v",
		n.files, n.rows, n.values, n.specials, n.typed)
}

// TestRowsParquetAgainstJSONL: for each incident of fixtures/rows and each
// table it changed, `walscope rows --format parquet --relation T`, read by
// DuckDB, has one row per change of `--format jsonl` (whose rows
// cmd/walscope's TestRowsAgainstServer checks against the primary's
// row_to_json), in the same order: lsn, xid, relation, op, has_old and
// has_new as the JSON says, and every old_ and new_ column the JSON value
// (its text: numbers as written, strings as they are; arrays and
// composites, which row_to_json writes as JSON, only not null), null where
// the change has no such row; and every old_ column (but the generated
// ones, which COPY leaves out) exactly the text `--format copy` prints for
// the change's old row.
func TestRowsParquetAgainstJSONL(t *testing.T) {
	fx, src := fixtureDir(t, "rows", "archive.tar.zst")
	facts := rowsFacts(t, src)
	base := filepath.Join(src, "base.tar.gz")
	db := openDB(t)
	out := t.TempDir()
	changes, values, nonNull, structured, copied := 0, 0, 0, 0, 0
	for _, f := range facts {
		for _, tab := range f.Tables {
			args := []string{"rows", "--backup", base, "--xid", fmt.Sprint(f.XID), "--relation", tab, filepath.Join(fx, "archive")}
			jsonl := run(t, append(args, "--format", "jsonl")...)
			file := filepath.Join(out, f.Name+"-"+tab+".parquet")
			run(t, append(args, "--format", "parquet", "--out", file)...)
			cols := describe(t, db, file)
			fixed := []duckColumn{{"lsn", "BIGINT"}, {"lsn_text", "VARCHAR"}, {"xid", "BIGINT"}, {"relation", "VARCHAR"}, {"op", "VARCHAR"}, {"has_old", "BOOLEAN"}, {"has_new", "BOOLEAN"}}
			if len(cols) < len(fixed) || fmt.Sprint(cols[:len(fixed)]) != fmt.Sprint(fixed) {
				t.Fatalf("%s %s: columns %v", f.Name, tab, cols)
			}
			got := readDuck(t, db, file, cols)
			index := map[string]int{}
			for i, c := range cols {
				index[c.name] = i
			}
			// the old rows as COPY prints them (generated columns left
			// out: the table's CSV header at the restore point before the
			// transaction names the others)
			oldCopy := strings.Split(strings.TrimSuffix(run(t, append(args, "--format", "copy")...), "\n"), "\n")
			header, _, _ := strings.Cut(run(t, "table", "--backup", base, "--relation", tab, "--target-name", f.RestorePoint, "--format", "csv", filepath.Join(fx, "archive")), "\n")
			copyCols := strings.Split(header, ",")
			nextOld := 0
			lines := strings.Split(strings.TrimSuffix(jsonl, "\n"), "\n")
			if len(got) != len(lines) {
				t.Fatalf("%s %s: %d Parquet rows, %d JSON lines", f.Name, tab, len(got), len(lines))
			}
			for i, l := range lines {
				var ch struct {
					LSN, Relation, Op string
					XID               json.Number
					Old, New          map[string]json.RawMessage
				}
				dec := json.NewDecoder(strings.NewReader(l))
				dec.UseNumber()
				var obj map[string]json.RawMessage
				if err := dec.Decode(&obj); err != nil {
					t.Fatal(err)
				}
				json.Unmarshal(obj["lsn"], &ch.LSN)
				json.Unmarshal(obj["relation"], &ch.Relation)
				json.Unmarshal(obj["op"], &ch.Op)
				ch.XID = json.Number(obj["xid"])
				json.Unmarshal(obj["old"], &ch.Old)
				json.Unmarshal(obj["new"], &ch.New)
				row := got[i]
				if ch.Old != nil {
					if nextOld >= len(oldCopy) {
						t.Fatalf("%s %s: more old rows than --format copy prints", f.Name, tab)
					}
					fields := pgtest.CopyFields(oldCopy[nextOld])
					nextOld++
					if len(fields) != len(copyCols) {
						t.Fatalf("%s %s: %d COPY fields, %d columns %v", f.Name, tab, len(fields), len(copyCols), copyCols)
					}
					for k, name := range copyCols {
						c := cols[index["old_"+name]]
						if d := sameValue(t, c.typ, row[index[c.name]], fields[k]); d != "" {
							t.Errorf("%s %s change %d column %s (%s) against COPY: %s", f.Name, tab, i+1, c.name, c.typ, d)
						}
						copied++
					}
				}
				for _, fc := range []struct {
					col  string
					want string
				}{{"lsn_text", ch.LSN}, {"xid", ch.XID.String()}, {"relation", ch.Relation}, {"op", ch.Op},
					{"has_old", map[bool]string{true: "t", false: "f"}[ch.Old != nil]}, {"has_new", map[bool]string{true: "t", false: "f"}[ch.New != nil]}} {
					if g := fmt.Sprint(row[index[fc.col]]); g != fc.want {
						t.Errorf("%s %s change %d: %s %q, JSON %q", f.Name, tab, i+1, fc.col, g, fc.want)
					}
				}
				for _, img := range []struct {
					prefix string
					vals   map[string]json.RawMessage
				}{{"old_", ch.Old}, {"new_", ch.New}} {
					for _, c := range cols[len(fixed):] {
						if !strings.HasPrefix(c.name, img.prefix) || strings.HasSuffix(c.name, "_special") {
							continue
						}
						var want *string
						if raw, ok := img.vals[strings.TrimPrefix(c.name, img.prefix)]; ok && !bytes.Equal(raw, []byte("null")) {
							if raw[0] == '[' || raw[0] == '{' {
								// an array or composite: row_to_json's JSON is not
								// the text (TestTableParquetAgainstRecovery compares
								// those with the server's COPY); only not null
								if row[index[c.name]] == nil {
									t.Errorf("%s %s change %d column %s: NULL, JSON %s", f.Name, tab, i+1, c.name, raw)
								}
								structured++
								continue
							}
							s := jsonText(t, raw)
							want = &s
							nonNull++
						} else if img.vals != nil && !ok {
							t.Fatalf("%s %s change %d: column %s not in the JSON", f.Name, tab, i+1, c.name)
						}
						if d := sameValue(t, c.typ, row[index[c.name]], want); d != "" {
							t.Errorf("%s %s change %d column %s (%s): %s", f.Name, tab, i+1, c.name, c.typ, d)
						}
						values++
					}
				}
				changes++
			}
			if nextOld != len(oldCopy) && !(nextOld == 0 && oldCopy[0] == "") {
				t.Errorf("%s %s: %d old rows in Parquet, %d lines of --format copy", f.Name, tab, nextOld, len(oldCopy))
			}
		}
	}
	if changes == 0 || nonNull == 0 {
		t.Fatal("nothing compared")
	}
	if copied == 0 {
		t.Fatal("no old row compared with COPY")
	}
	t.Logf("%d changes, %d old_/new_ values (%d not null) identical to rows --format jsonl (%d arrays and composites only not null there); %d old_ values identical to rows --format copy", changes, values, nonNull, structured, copied)
}

// jsonText is a row_to_json value as PostgreSQL's text: a string's
// contents, a number as written, true and false as t and f.
func jsonText(t *testing.T, raw json.RawMessage) string {
	switch s := string(raw); {
	case s == "true":
		return "t"
	case s == "false":
		return "f"
	case strings.HasPrefix(s, `"`):
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	default:
		return s
	}
}

// TestTableParquetEdges: the values at the edges of each typed column,
// made by a real PostgreSQL 15 (numeric(p,s) NaN, 38 digits, a negative
// scale and a scale above the precision, more than 38 digits as text, a
// domain over numeric(5,1); timestamps past 294247 AD and BC, infinities,
// the microsecond before 1970; dates in 5874897 AD and BC; time 24:00:00;
// int2 and oid extremes; the smallest floats, -0, NaN, -Infinity; empty
// bytea and text, non-ASCII text), archived with a restore point after
// them: `walscope table --format parquet` at that restore point, read by
// DuckDB, is the server's own `COPY edges TO STDOUT` value for value, each
// column of the type the mapping promises.
func TestTableParquetEdges(t *testing.T) {
	s, archive, base := archivingServer(t, "edges", "timezone = 'Asia/Kolkata'\n")
	s.Query(t, `create domain dec51 as numeric(5,1);
create table edges (id int, n102 numeric(10,2), n405 numeric(40,5), nneg numeric(3,-2), nsmall numeric(2,4), n38 numeric(38,0),
  dm dec51, ts timestamp, tstz timestamptz, d date, t time, i2 int2, o oid, f4 real, f8 double precision, by bytea, txt text);
insert into edges values
 (1, 'NaN', '12345678901234567890123456789012345.12345', 12300, 0.0012, '99999999999999999999999999999999999999', 1234.5,
  '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00', '5874897-12-31', '24:00:00', 32767, 4294967295,
  '1.17549435e-38', '4.9e-324', '\x', 'é ünïcode ✓ 日本'),
 (2, -99999999.99, '-12345678901234567890123456789012345.12345', -99900, -0.0099, '-99999999999999999999999999999999999999', -9999.9,
  '4713-01-01 00:00:00 BC', 'infinity', '-infinity', '00:00:00', -32768, 0, '-Infinity', 'NaN', '\xdeadbeef', ''),
 (3, 0, 0, 0, 0, 0, 0, '1970-01-01', '1969-12-31 23:59:59.999999+00', '0001-01-01 BC', '12:34:56.000001', 0, 2147483648, '-0', '-0', null, null),
 (4, null, null, null, null, null, null, '-infinity', '294246-12-31 23:59:59.999999+00', 'infinity', null, null, null, 'NaN', 'Infinity', null, 'x'),
 (5, 0.01, 1e-5, 100, 0.0001, 1, 0.1, '2026-12-04 10:00:00.5', '2026-12-04 10:00:00.5+05:30', '2024-02-29', '23:59:59.999999', -1, 1, 3.4028235e38, 1.7976931348623157e308, '\x00', E'tab\there')`)
	s.Query(t, "select pg_create_restore_point('edges')")
	s.Query(t, "select pg_switch_wal()")
	lines := s.Query(t, "copy edges to stdout")
	if err := s.Stop("fast"); err != nil { // the archiver archives the switched segment first
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "edges.parquet")
	run(t, "table", "--backup", base, "--relation", "edges", "--target-name", "edges", "--format", "parquet", "--out", file, archive)
	want := []duckColumn{{"id", "INTEGER"},
		{"n102", "DECIMAL(10,2)"}, {"n102_special", "VARCHAR"},
		{"n405", "VARCHAR"},
		{"nneg", "DECIMAL(5,0)"}, {"nneg_special", "VARCHAR"},
		{"nsmall", "DECIMAL(4,4)"}, {"nsmall_special", "VARCHAR"},
		{"n38", "DECIMAL(38,0)"}, {"n38_special", "VARCHAR"},
		{"dm", "DECIMAL(5,1)"}, {"dm_special", "VARCHAR"},
		{"ts", "TIMESTAMP"}, {"ts_special", "VARCHAR"},
		{"tstz", "TIMESTAMP WITH TIME ZONE"}, {"tstz_special", "VARCHAR"},
		{"d", "DATE"}, {"d_special", "VARCHAR"},
		{"t", "TIME"}, {"i2", "SMALLINT"}, {"o", "BIGINT"}, {"f4", "FLOAT"}, {"f8", "DOUBLE"}, {"by", "BLOB"}, {"txt", "VARCHAR"}}
	n := tally{typed: map[string]int{}}
	compareWithCopy(t, openDB(t), file, "edges", want, lines, &n)
	if n.rows != 5 || n.specials < 7 {
		t.Fatalf("compared %+v, want 5 rows and at least 7 special values", n)
	}
	t.Logf("%d rows, %d values identical to the server's COPY (%d in _special columns); non-null typed values: %v", n.rows, n.values, n.specials, n.typed)
}

// TestTableParquetEncodings: text of databases in single-byte encodings
// (LATIN1, WIN1252, KOI8R, ISO_8859_7) is stored in them; Parquet strings
// are UTF-8, so `walscope table --format parquet` converts it as the
// server does for client_encoding UTF8: read by DuckDB, each value is the
// server's `COPY ... TO STDOUT` with client_encoding UTF8, while
// `--format copy` gives the stored bytes, as COPY does for a client in the
// database's encoding.
func TestTableParquetEncodings(t *testing.T) {
	s, archive, base := archivingServer(t, "enc", "")
	texts := map[string]string{ // characters each encoding has
		"LATIN1":     "'café', 'Ærøskøbing ½ §', 'naïve «quoted»'",
		"WIN1252":    "'€ “curly” — dash', 'Œuvre ™', 'plain'",
		"KOI8R":      "'Съешь же ещё', 'мягких булок', 'ёЁ'",
		"ISO_8859_7": "'Ελληνικά', 'αβγ ΩΨ', 'ά'",
	}
	encs := []string{"LATIN1", "WIN1252", "KOI8R", "ISO_8859_7"}
	for _, e := range encs {
		db := strings.ToLower(e)
		s.Query(t, "create database "+db+" encoding '"+e+"' lc_collate 'C' lc_ctype 'C' template template0")
		s.QueryDB(t, db, "set client_encoding = 'UTF8'; create table enc (id serial, txt text, vc varchar(20), arr text[]); insert into enc (txt, vc, arr) select v, left(v, 20), array[v, null] from (values ("+strings.ReplaceAll(texts[e], ", ", "), (")+")) x(v)")
	}
	s.Query(t, "select pg_create_restore_point('enc')")
	s.Query(t, "select pg_switch_wal()")
	want := map[string][]string{}
	for _, e := range encs {
		want[e] = s.QueryDB(t, strings.ToLower(e), "set client_encoding = 'UTF8'; copy enc to stdout")
	}
	if err := s.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	values := 0
	for _, e := range encs {
		file := filepath.Join(t.TempDir(), e+".parquet")
		run(t, "table", "--backup", base, "--relation", strings.ToLower(e)+".public.enc", "--target-name", "enc", "--format", "parquet", "--out", file, archive)
		n := tally{typed: map[string]int{}}
		compareWithCopy(t, db, file, e, []duckColumn{{"id", "INTEGER"}, {"txt", "VARCHAR"}, {"vc", "VARCHAR"}, {"arr", "VARCHAR"}}, want[e], &n)
		if n.rows != 3 {
			t.Fatalf("%s: %d rows compared", e, n.rows)
		}
		values += n.values
		// --format copy: the bytes as stored, not UTF-8 (but for ASCII)
		stored := run(t, "table", "--backup", base, "--relation", strings.ToLower(e)+".public.enc", "--target-name", "enc", archive)
		if stored == strings.Join(want[e], "\n")+"\n" {
			t.Errorf("%s: --format copy printed UTF-8, not the database's encoding", e)
		}
	}
	t.Logf("%d encodings, %d values identical to the server's COPY with client_encoding UTF8", len(encs), values)
}

// archivingServer starts a real PostgreSQL 15 archiving its WAL to
// archive, with conf added, and takes a base backup of it (base).
func archivingServer(t *testing.T, name, conf string) (s *pgtest.Server, archive, base string) {
	t.Helper()
	server, client := pgtest.Need(t, 15)
	work := pgtest.WorkDir(t, "walscope-parquet-"+name+"-", "WALSCOPE_KEEP")
	archive = filepath.Join(work, "archive")
	if err := os.Mkdir(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	pgtest.ChownPG(t, archive)
	s = pgtest.New(t, work, "primary", 15, server, client)
	s.InitDB(t, "", fmt.Sprintf("wal_level = replica\narchive_mode = on\narchive_command = 'cp %%p %s/%%f'\n%s", archive, conf))
	s.Start(t)
	base = filepath.Join(work, "base")
	s.BaseBackup(t, base)
	return s, archive, base
}

// rowsFact is one incident of fixtures/rows (its facts.json).
type rowsFact struct {
	Name         string   `json:"name"`
	XID          uint32   `json:"xid"`
	RestorePoint string   `json:"restore_point"`
	Tables       []string `json:"tables"`
}

// rowsFacts reads fixtures/rows' facts.json from its unpacked directory.
func rowsFacts(t *testing.T, src string) []rowsFact {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(src, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts []rowsFact
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	return facts
}
