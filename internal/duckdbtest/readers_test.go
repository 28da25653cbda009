package duckdbtest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/walscope/walscope/export"
)

// readersDir holds the Node readers (testdata/readers: package.json and
// package-lock.json; `npm ci` there installs them, as .ci/run does).
func readersDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "readers")
	_, errNode := exec.LookPath("node")
	_, errMods := os.Stat(filepath.Join(dir, "node_modules", "nodejs-polars"))
	if errNode != nil || errMods != nil {
		msg := fmt.Sprintf("the Node readers are not installed (node: %v; run npm ci in %s: %v)", errNode, dir, errMods)
		if os.Getenv("WALSCOPE_REQUIRE_READERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// columnSums is what a reader says of one table.
type columnSums struct {
	Files   int                `json:"files"`
	Rows    string             `json:"rows"`
	Columns map[string]*colSum `json:"columns"`
	order   []string           // DuckDB's column order
	types   map[string]string  // DuckDB's types
}

type colSum struct {
	Type  string `json:"type"`
	Nulls string `json:"nulls"`
	Sum   string `json:"sum"`
}

// duckSums reads each table whole with DuckDB (the files' own columns:
// hive_partitioning off) and sums every column as read.cjs does.
func duckSums(t *testing.T, db *sql.DB, out string, tables []string) map[string]*columnSums {
	t.Helper()
	res := map[string]*columnSums{}
	for _, table := range tables {
		src := fmt.Sprintf("read_parquet('%s', hive_partitioning = false)", filepath.Join(out, table, "**", "*.parquet"))
		rows, err := db.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM " + src + ")")
		if err != nil {
			t.Fatal(err)
		}
		cs := &columnSums{Columns: map[string]*colSum{}, types: map[string]string{}}
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				t.Fatal(err)
			}
			cs.order = append(cs.order, name)
			cs.types[name] = typ
		}
		rows.Close()
		cs.Rows = scalar[string](t, db, "SELECT count(*)::VARCHAR FROM "+src)
		for _, name := range cs.order {
			col := `"` + name + `"`
			var sum string
			switch typ := cs.types[name]; {
			case typ == "BIGINT" || typ == "INTEGER":
				sum = "sum(" + col + ")::HUGEINT"
			case strings.HasPrefix(typ, "TIMESTAMP"):
				sum = "sum(epoch_us(" + col + "))::HUGEINT"
			case typ == "BOOLEAN":
				sum = "count(*) FILTER (" + col + ")"
			case typ == "VARCHAR":
				sum = "sum(length(" + col + "))::HUGEINT"
			default:
				t.Errorf("%s.%s: DuckDB reads type %s, not one of the export's", table, name, typ)
				continue
			}
			var c colSum
			c.Type = cs.types[name]
			if err := db.QueryRow("SELECT (count(*) - count("+col+"))::VARCHAR, coalesce("+sum+", 0)::VARCHAR FROM "+src).Scan(&c.Nulls, &c.Sum); err != nil {
				t.Fatalf("%s.%s: %v", table, name, err)
			}
			cs.Columns[name] = &c
		}
		res[table] = cs
	}
	return res
}

// TestThreeReaders exports every table of a fixture (with --desc and
// --label) and reads each whole with three independent Parquet readers,
// DuckDB (its own C++ reader), polars (nodejs-polars: Rust) and arrow-rs
// (parquet-wasm: arrow-rs compiled to WebAssembly, read back through
// apache-arrow JS): they must see the same columns, rows, nulls and sums of
// every column, and only the types the export promises.
func TestThreeReaders(t *testing.T) {
	dir := readersDir(t)
	fx := extract(t, "pg15-replica-lz4")
	out := filepath.Join(t.TempDir(), "out")
	run(t, "export", "--out", out, "-j", "2", "--desc", "--label", "run1", "--row-group", "5000", filepath.Join(fx, "archive"))
	db := openDB(t)
	want := duckSums(t, db, out, export.Tables)
	// The types each reader may give a column (anything else is a type an
	// engine could read differently).
	readerTypes := map[string][]string{
		"polars":   {"DataType(Int64)", "DataType(Int32)", "DataType(Bool)", "DataType(String)", "DataType(Datetime(us,UTC))"},
		"arrow-rs": {"Int64", "Int32", "Bool", "Utf8", "Timestamp<MICROSECOND, UTC>"},
	}
	for _, reader := range []string{"polars", "arrow-rs"} {
		cmd := exec.Command("node", append([]string{filepath.Join(dir, "read.cjs"), reader, out}, export.Tables...)...)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", reader, err)
		}
		var got map[string]*columnSums
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v\n%s", reader, err, b)
		}
		for _, table := range export.Tables {
			w, g := want[table], got[table]
			if g == nil || g.Files == 0 {
				t.Errorf("%s read no file of %s", reader, table)
				continue
			}
			if g.Rows != w.Rows || w.Rows == "0" {
				t.Errorf("%s %s: %s rows, DuckDB %s", reader, table, g.Rows, w.Rows)
			}
			names := make([]string, 0, len(g.Columns))
			for n := range g.Columns {
				names = append(names, n)
			}
			sort.Strings(names)
			wantNames := append([]string(nil), w.order...)
			sort.Strings(wantNames)
			if strings.Join(names, ",") != strings.Join(wantNames, ",") {
				t.Errorf("%s %s: columns %v, DuckDB %v", reader, table, names, wantNames)
			}
			for _, n := range w.order {
				wc, gc := w.Columns[n], g.Columns[n]
				if wc == nil || gc == nil {
					continue
				}
				if gc.Nulls != wc.Nulls || gc.Sum != wc.Sum {
					t.Errorf("%s %s.%s: %s nulls, sum %s; DuckDB %s nulls, sum %s", reader, table, n, gc.Nulls, gc.Sum, wc.Nulls, wc.Sum)
				}
				ok := false
				for _, ty := range readerTypes[reader] {
					ok = ok || gc.Type == ty
				}
				if !ok {
					t.Errorf("%s %s.%s: type %s", reader, table, n, gc.Type)
				}
			}
			t.Logf("%s %s: %s rows, %d columns agree with DuckDB", reader, table, g.Rows, len(g.Columns))
		}
	}
}

// TestPortableTypes checks, from the Parquet schema of every file of an
// export, that each column is of a type Spark 3, Hive and Trino read
// natively: INT32 and INT64 without an unsigned (or any integer) logical
// type, BOOLEAN, UTF8 strings, and microsecond UTC timestamps (no INT96,
// no nanoseconds, no unsigned integers).
func TestPortableTypes(t *testing.T) {
	fx := extract(t, "pg15-replica-lz4")
	out := filepath.Join(t.TempDir(), "out")
	run(t, "export", "--out", out, "--desc", "--label", "run1", filepath.Join(fx, "archive"))
	db := openDB(t)
	rows, err := db.Query(fmt.Sprintf(`SELECT DISTINCT name, type, coalesce(converted_type, ''), coalesce(logical_type::VARCHAR, '')
FROM parquet_schema('%s') WHERE num_children IS NULL OR num_children = 0 ORDER BY ALL`, filepath.Join(out, "*", "**", "*.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	allowed := map[string]bool{
		"INT64||":          true,
		"INT32||":          true,
		"BOOLEAN||":        true,
		"BYTE_ARRAY|UTF8|": true, // logical_type StringType
		"INT64|TIMESTAMP_MICROS|TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))": true,
	}
	n := 0
	for rows.Next() {
		var name, typ, conv, logical string
		if err := rows.Scan(&name, &typ, &conv, &logical); err != nil {
			t.Fatal(err)
		}
		n++
		key := typ + "|" + conv + "|"
		if typ == "BYTE_ARRAY" && strings.HasPrefix(logical, "StringType") {
			logical = ""
		}
		if !allowed[key+logical] {
			t.Errorf("column %s: %s %s %s: not a type every engine reads", name, typ, conv, logical)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Errorf("%d columns in the schemas", n)
	}
}
