package typeout_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/internal/pgtest"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
)

const blcksz = 8192

var update = flag.Bool("update", false, "rewrite testdata/golden.txt.zst from PostgreSQL 15 (TestAgainstPostgreSQL15)")

// goldenRows is how many rows of each case and combination the golden file
// keeps (the cases' edge values come first).
const goldenRows = 40

// The catalog as of a target knows pg_range: user-defined ranges and
// multiranges print through it.
var (
	_ typeout.RangeTypes      = (*catalog.Catalog)(nil)
	_ typeout.MultirangeTypes = (*catalog.Catalog)(nil)
)

// oracleServer is a running cluster and what the test knows of it.
type oracleServer struct {
	t     *testing.T
	s     *pgtest.Server
	major int
}

func (o *oracleServer) q(sql string) []string { o.t.Helper(); return o.s.Query(o.t, sql) }

func (o *oracleServer) file(rel string) []byte {
	o.t.Helper()
	b, err := os.ReadFile(filepath.Join(o.s.Dir, rel))
	if err != nil {
		o.t.Fatal(err)
	}
	return b
}

// items returns the tuples of a relation's file, in physical order.
func (o *oracleServer) items(relPath string) [][]byte {
	o.t.Helper()
	f := o.file(relPath)
	var out [][]byte
	var items []tuple.Item
	var err error
	for blk := 0; (blk+1)*blcksz <= len(f); blk++ {
		if items, err = tuple.PageItems(items, f[blk*blcksz:(blk+1)*blcksz]); err != nil {
			o.t.Fatalf("%s block %d: %v", relPath, blk, err)
		}
		for _, it := range items {
			out = append(out, it.Tuple)
		}
	}
	return out
}

// loadCatalog decodes the live rows of pg_type, pg_attribute, pg_enum and
// pg_range from their pages (package catalog): user-defined ranges and
// multiranges print through its pg_range rows.
func (o *oracleServer) loadCatalog() *catalog.Catalog {
	o.t.Helper()
	db, _ := strconv.ParseUint(o.q("SELECT oid FROM pg_database WHERE datname = 'postgres'")[0], 10, 32)
	cat := catalog.New(xlog.Version(o.major), uint32(db))
	for _, c := range []struct {
		name string
		oid  uint32
	}{{"pg_type", catalog.TypeRelationID}, {"pg_attribute", catalog.AttributeRelationID}, {"pg_enum", catalog.EnumRelationID},
		{"pg_range", catalog.RangeRelationID}} {
		live := map[string]bool{}
		for _, l := range o.q("SELECT ctid FROM " + c.name) {
			live[l] = true
		}
		f := o.file(o.q("SELECT pg_relation_filepath('" + c.name + "')")[0])
		n := 0
		for blk := 0; (blk+1)*blcksz <= len(f); blk++ {
			items, err := tuple.PageItems(nil, f[blk*blcksz:(blk+1)*blcksz])
			if err != nil {
				o.t.Fatal(err)
			}
			for _, it := range items {
				if !live[fmt.Sprintf("(%d,%d)", blk, it.Offset)] {
					continue
				}
				if err := cat.Add(c.oid, it.Tuple); err != nil {
					o.t.Fatalf("%s: %v", c.name, err)
				}
				n++
			}
		}
		if n != len(live) {
			o.t.Fatalf("%s: %d live rows, %d read from its file", c.name, len(live), n)
		}
	}
	return cat
}

// setting is one combination of the settings the output functions read.
type setting struct {
	DateStyle, IntervalStyle, TimeZone, ExtraFloatDigits, ByteaOutput string
}

var settingCombos = []setting{
	{"ISO, MDY", "postgres", "UTC", "1", "hex"},
	{"SQL, DMY", "postgres_verbose", "Asia/Kathmandu", "0", "escape"},
	{"SQL, MDY", "sql_standard", "America/St_Johns", "3", "hex"},
	{"Postgres, MDY", "iso_8601", "Europe/Amsterdam", "-15", "escape"},
	{"Postgres, DMY", "postgres", "Pacific/Chatham", "2", "hex"},
	{"German", "postgres_verbose", "America/New_York", "-3", "hex"},
	{"ISO, DMY", "sql_standard", "Australia/Lord_Howe", "0", "hex"},
	{"ISO, YMD", "iso_8601", "Africa/Casablanca", "1", "hex"},
	{"SQL", "postgres", "Europe/Dublin", "-1", "hex"},
	{"Postgres", "postgres", "Asia/Tokyo", "1", "hex"},
}

func (c setting) sql() string {
	return fmt.Sprintf("SET DateStyle = '%s'; SET IntervalStyle = '%s'; SET TimeZone = '%s'; SET extra_float_digits = %s; SET bytea_output = '%s';",
		c.DateStyle, c.IntervalStyle, c.TimeZone, c.ExtraFloatDigits, c.ByteaOutput)
}

func (c setting) settings(t *testing.T, tzdir string) typeout.Settings {
	s := typeout.DefaultSettings()
	s.TZDir = tzdir
	for _, kv := range [][2]string{{"DateStyle", c.DateStyle}, {"IntervalStyle", c.IntervalStyle}, {"TimeZone", c.TimeZone},
		{"extra_float_digits", c.ExtraFloatDigits}, {"bytea_output", c.ByteaOutput}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestAgainstPostgreSQL15 prints every value of a large generated set of
// each type, read from the pages of a real PostgreSQL 15's tables, and
// compares it with COPY's output of the same rows under every combination
// of settings.
func TestAgainstPostgreSQL15(t *testing.T) { checkOracle(t, 15) }

// TestAgainstOtherVersions does the same on the other majors
// scripts/embedded-pg.sh installs: those WALSCOPE_TYPEOUT_VERSIONS lists
// (comma-separated), or all of 10 to 18 with "all".
func TestAgainstOtherVersions(t *testing.T) {
	env := os.Getenv("WALSCOPE_TYPEOUT_VERSIONS")
	if env == "" {
		t.Skip("set WALSCOPE_TYPEOUT_VERSIONS=all (or e.g. 13,17,18) to run other majors too")
	}
	majors := []int{10, 11, 12, 13, 14, 16, 17, 18}
	if env != "all" {
		majors = nil
		for _, f := range strings.Split(env, ",") {
			m, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("WALSCOPE_TYPEOUT_VERSIONS: %v", err)
			}
			majors = append(majors, m)
		}
	}
	for _, m := range majors {
		t.Run(strconv.Itoa(m), func(t *testing.T) { checkOracle(t, m) })
	}
}

func checkOracle(t *testing.T, major int) {
	bin, client := pgtest.Need(t, major)
	work := pgtest.WorkDir(t, "typeout", "WALSCOPE_KEEP")
	s := pgtest.New(t, work, "pg", major, bin, client)
	s.InitDB(t, "", "")
	s.Start(t)
	o := &oracleServer{t: t, s: s, major: major}
	// The zone files the server reads: its own share/timezone, else
	// (Debian's, --with-system-tzdata) the system's.
	tzdir := filepath.Join(bin, "..", "share", "postgresql", "timezone")
	if _, err := os.Stat(tzdir); err != nil {
		tzdir = "/usr/share/zoneinfo"
	}

	cases := oracleCases(major)
	for _, sql := range oracleSetup(major) {
		o.q(sql)
	}
	for i, c := range cases {
		o.q(fmt.Sprintf("CREATE TABLE t%d (v %s)", i, c.typ))
		for _, ins := range c.inserts {
			sql := ins
			if !strings.HasPrefix(strings.ToUpper(ins), "SELECT") {
				sql = "VALUES " + ins
			}
			o.q(fmt.Sprintf("INSERT INTO t%d %s", i, sql))
		}
	}
	o.q("CHECKPOINT")
	types := o.loadCatalog()

	// The datums, from the pages (and TOAST), for every table.
	datums := make([][]*tuple.Value, len(cases))
	stores := make([]tuple.Detoaster, len(cases))
	external, compressed := 0, 0
	typeOIDs := make([]uint32, len(cases))
	for i := range cases {
		rel := fmt.Sprintf("t%d", i)
		relid, _ := strconv.ParseUint(o.q("SELECT '" + rel + "'::regclass::oid")[0], 10, 32)
		desc, err := types.Desc(uint32(relid))
		if err != nil {
			t.Fatal(err)
		}
		typeOIDs[i] = desc[0].TypeOID
		store := tuple.NewToastStore(blcksz)
		stores[i] = store
		if tp := o.q("SELECT reltoastrelid, pg_relation_filepath(reltoastrelid) FROM pg_class WHERE oid = " + strconv.Itoa(int(relid)) + " AND reltoastrelid <> 0"); len(tp) == 1 {
			a, b, _ := strings.Cut(tp[0], "|")
			toid, _ := strconv.ParseUint(a, 10, 32)
			for _, tup := range o.items(b) {
				if err := store.AddTuple(uint32(toid), tup); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, tup := range o.items(o.q("SELECT pg_relation_filepath('" + rel + "')")[0]) {
			vals, _, err := tuple.Deform(nil, tup, desc)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			v := vals[0]
			if v.Form == tuple.External {
				external++
			} else if v.Form == tuple.Compressed {
				compressed++
			}
			datums[i] = append(datums[i], &v)
		}
	}

	t.Logf("PostgreSQL %d: %d values stored external (TOAST), %d compressed inline, detoasted by AppendValue", major, external, compressed)
	if external == 0 || compressed == 0 {
		t.Errorf("the cases have no external (%d) or no compressed (%d) value: AppendValue's detoasting is not exercised", external, compressed)
	}
	checkQuoting(t, o, cases, datums, stores, typeOIDs, types)
	checkUnsupported(t, o, types)

	// With -update, PostgreSQL 15's text of the first rows of every
	// built-in type under every combination is kept for TestGolden.
	var golden *bytes.Buffer
	if *update && major == 15 {
		golden = &bytes.Buffer{}
		defer func() { writeGolden(t, golden.Bytes()) }()
	}

	type count struct{ compared, identical int }
	counts := map[string]*count{}
	var names []string
	for ci, combo := range settingCombos {
		var script strings.Builder
		script.WriteString(combo.sql())
		for i := range cases {
			fmt.Fprintf(&script, "\n\\echo ==== t%d\nCOPY t%d TO STDOUT;", i, i)
		}
		out := o.q(script.String())
		server := map[int][]string{}
		cur := -1
		for _, l := range out {
			if strings.HasPrefix(l, "==== t") {
				cur, _ = strconv.Atoi(l[len("==== t"):])
				continue
			}
			server[cur] = append(server[cur], l)
		}
		f := &typeout.Formatter{Settings: combo.settings(t, tzdir), Types: types, Major: major}
		for i, c := range cases {
			key := c.typ
			if counts[key] == nil {
				counts[key] = &count{}
				names = append(names, key)
			}
			got := server[i]
			if len(got) != len(datums[i]) {
				t.Fatalf("%s: the server printed %d rows, the pages hold %d", c.typ, len(got), len(datums[i]))
			}
			bad := 0
			for r, v := range datums[i] {
				var line []byte
				if v.IsNull() {
					line = []byte(typeout.CopyNull)
				} else {
					text, err := f.AppendValue(nil, typeOIDs[i], *v, stores[i])
					if err != nil {
						t.Errorf("%s row %d (settings %d): %v", c.typ, r, ci, err)
						continue
					}
					line = typeout.AppendCopyText(nil, text, '\t')
				}
				if golden != nil && r < goldenRows && !v.IsNull() && v.Form != tuple.External && v.Form != tuple.Compressed {
					// Built-in types only: the golden test has no catalog.
					if _, err := (&typeout.Formatter{Settings: f.Settings, Major: major}).Append(nil, typeOIDs[i], v.Payload()); err == nil {
						fmt.Fprintf(golden, "%d\t%d\t%x\t%s\n", ci, typeOIDs[i], v.Payload(), got[r])
					}
				}
				counts[key].compared++
				if string(line) == got[r] {
					counts[key].identical++
				} else if bad++; bad <= 5 {
					t.Errorf("PostgreSQL %d %s row %d, settings %+v:\n server %q\n typeout %q", major, c.typ, r, combo, got[r], line)
				}
			}
		}
	}
	sort.Strings(names)
	total, same := 0, 0
	for _, n := range names {
		c := counts[n]
		t.Logf("PostgreSQL %d %-28s %6d values compared over %d settings, %6d identical", major, n, c.compared, len(settingCombos), c.identical)
		total += c.compared
		same += c.identical
	}
	t.Logf("PostgreSQL %d: %d values compared, %d identical", major, total, same)
}

// oracleSetup makes the user-defined types the cases use.
func oracleSetup(major int) []string {
	return []string{
		`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`,
		`ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'`,
		`ALTER TYPE mood ADD VALUE 'with space'`,
		`ALTER TYPE mood ADD VALUE 'quote"d'`,
		`CREATE DOMAIN posint AS int4 CHECK (VALUE > 0)`,
		`CREATE DOMAIN shorttext AS text`,
		`CREATE TYPE textrange AS RANGE (subtype = text, collation = "C")`,
		`CREATE TYPE floatrange AS RANGE (subtype = float8)`,
		`CREATE TYPE comp AS (a int4, b text, c numeric[], d mood, e int4range, f float8)`,
		`CREATE TYPE dropped AS (x int4, gone text, y text)`,
		`ALTER TYPE dropped DROP ATTRIBUTE gone`,
		`CREATE TYPE nested AS (id int8, c comp, cs comp[], ts timestamptz)`,
		`CREATE TABLE unsupported (a tsvector, b regclass, c tsquery)`,
		`INSERT INTO unsupported VALUES ('a fat cat', 'pg_class', 'fat & cat')`,
	}
}

type oracleCase struct {
	typ     string
	inserts []string // VALUES lists or SELECT queries
}

func vals(xs ...string) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + x + ")")
	}
	return b.String()
}

func lit(xs ...string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		if x == "NULL" {
			out[i] = x
		} else {
			out[i] = "'" + strings.ReplaceAll(x, "'", "''") + "'"
		}
	}
	return out
}

var oddStrings = []string{"", "NULL", "null", "a", "a b", ` lead`, `trail `, `quote"d`, `back\slash`, "tab\there", "new\nline", "cr\rx",
	"{brace}", "(paren)", "[bracket]", "comma,here", "semi;colon", "é ü 日本 🎉", "'single'", `\N`, `\.`, "\x01ctl\x1f", "\v\f\b", "x"}

func oracleCases(major int) []oracleCase {
	rng := rand.New(rand.NewSource(27))
	var floats8, floats4 []string
	for i := 0; i < 3000; i++ {
		var f float64
		switch i % 4 {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 3:
			// large integers: where a shortest decimal can sit exactly
			// halfway to the next float
			f = float64(rng.Int63()>>uint(rng.Intn(20))) * math.Pow(2, float64(rng.Intn(30)))
		case 1:
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(40)-20))
		default:
			f = float64(rng.Intn(2000000)-1000000) / math.Pow(10, float64(rng.Intn(8)))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		floats8 = append(floats8, "'"+strconv.FormatFloat(f, 'g', -1, 64)+"'")
		f32 := math.Float32frombits(rng.Uint32())
		switch i % 4 {
		case 1:
			f32 = float32((rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(20)-10)))
		case 3:
			f32 = float32(rng.Int63()>>uint(30+rng.Intn(20))) * float32(math.Pow(2, float64(rng.Intn(10))))
		}
		if !math.IsNaN(float64(f32)) && !math.IsInf(float64(f32), 0) {
			floats4 = append(floats4, "'"+strconv.FormatFloat(float64(f32), 'g', -1, 32)+"'")
		}
	}
	specialFloats := lit("0", "-0", "NaN", "Infinity", "-Infinity", "1", "-1", "0.1", "0.5", "100", "1e15", "1e16", "123456789012345678",
		"1e-4", "1e-5", "0.0001234", "1e22", "1e21", "999999999999999", "9999999999999998", "0.3333333333333333", "NULL")
	f8 := append(append([]string{}, specialFloats...), lit("1e-300", "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "4.9e-324", "2.5e-310")...)
	f4 := append(append([]string{}, specialFloats[:len(specialFloats)-4]...), lit("1e-38", "1.4e-45", "3.4028235e38", "1.17549435e-38", "NULL")...)
	var strs []string
	strs = append(strs, lit(oddStrings...)...)
	strs = append(strs, "NULL")
	cases := []oracleCase{
		{"bool", []string{vals("true", "false", "NULL")}},
		{"int2", []string{vals("-32768", "32767", "0", "-1", "1", "NULL"), "SELECT (random()*65535 - 32768)::int2 FROM generate_series(1, 500)"}},
		{"int4", []string{vals("-2147483648", "2147483647", "0", "-1"), "SELECT (random()*4294967295 - 2147483648)::int4 FROM generate_series(1, 500)"}},
		{"int8", []string{vals("-9223372036854775808", "9223372036854775807", "0", "-1"), "SELECT ((random()-0.5) * 1.8e19)::numeric::int8 FROM generate_series(1, 500)"}},
		{"oid", []string{vals("0", "4294967295", "1", "2147483648", "NULL")}},
		{"float8", []string{vals(f8...), vals(floats8...)}},
		{"float4", []string{vals(f4...), vals(floats4...)}},
		{"numeric", []string{vals(lit("0", "-0", "NaN", "0.000", "1", "-1", "0.0001", "0.00001", "9999.9999", "10000", "-10000.00001",
			"123456789012345678901234567890.123456789", "-0.000000000000000000000000000001", "1e1000", "-1e-1000", "1.000000000000000000000000000000000000000001",
			"99999999999999999999", "100000000000000000000", "0.1", "-0.5", "123.4500", "NULL")...),
			"SELECT round(((random()-0.5) * 10^(random()*60-30))::numeric, (random()*40)::int) FROM generate_series(1, 1000)",
			"SELECT ((random()-0.5) * 10^(random()*8))::numeric(20,4) FROM generate_series(1, 300)",
			"SELECT (10::numeric ^ (g*7)) * (random()::numeric) FROM generate_series(-40, 40) g"}},
		{"text", []string{vals(strs...), "SELECT md5(g::text) || repeat(chr(32 + g % 90), g % 7) FROM generate_series(1, 200) g", "SELECT repeat('long value ' || g, 500) FROM generate_series(1, 3) g",
			"SELECT (SELECT string_agg(md5(i::text || g), '') FROM generate_series(1, 300) i) FROM generate_series(1, 3) g"}},
		{"varchar(40)", []string{vals(strs...)}},
		{"bpchar(12)", []string{vals(lit("", "a", "ab  ", " x", "exactly12chr", "é", "NULL")...)}},
		{"name", []string{vals(lit("", "pg_class", "With Space", `a"b`, strings.Repeat("n", 63), "日本語", "NULL")...)}},
		{`"char"`, []string{"SELECT g::int4::\"char\" FROM generate_series(-128, 127) g", vals("NULL")}},
		{"bytea", []string{vals(lit(`\x`, `\x00`, `\x5c`, `\x5c5c27`, `\x0102037f80fe`, "plain text", `\x7e20`, "NULL")...),
			"SELECT decode(md5(g::text) || md5((g*7)::text), 'hex') FROM generate_series(1, 300) g",
			"SELECT (SELECT decode(string_agg(md5(i::text || g), ''), 'hex') FROM generate_series(1, 300) i) FROM generate_series(1, 3) g"}},
		{"uuid", []string{vals(lit("00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "NULL")...),
			"SELECT md5(g::text)::uuid FROM generate_series(1, 200) g"}},
		{"date", []string{vals(lit("2000-01-01", "4713-11-24 BC", "5874897-12-31", "infinity", "-infinity", "0001-01-01", "0001-12-31 BC", "1999-12-31", "10000-01-01", "2024-02-29", "NULL")...),
			"SELECT date '2000-01-01' + (random()*4000000 - 2000000)::int FROM generate_series(1, 500)"}},
		{"time", []string{vals(lit("00:00", "23:59:59.999999", "24:00:00", "12:00:00.5", "00:00:00.000001", "NULL")...),
			"SELECT time '00:00' + random() * interval '24 hours' FROM generate_series(1, 300)"}},
		{"timetz", []string{vals(lit("12:34:56.789+05:45", "00:00:00-15:59", "23:59:59.999999+15:59", "12:00+00", "12:00-03:30", "24:00:00+01", "NULL")...),
			"SELECT ((time '00:00' + random() * interval '24 hours')::text || to_char((random()*28-14)::int, 'S00') || ':' || lpad(((random()*3)::int*15)::text, 2, '0'))::timetz FROM generate_series(1, 300)"}},
		{"timestamp", []string{vals(lit("2000-01-01", "4713-01-01 00:00:00 BC", "294276-12-31 23:59:59.999999", "infinity", "-infinity", "1900-01-01 12:34:56.5", "0001-01-01 00:00:00", "0001-12-31 23:59:59 BC", "10000-06-15 01:02:03", "NULL")...),
			"SELECT timestamp 'epoch' + (random()-0.5) * 2e11 * interval '1 second' FROM generate_series(1, 400)"}},
		{"timestamptz", []string{vals(lit("2000-01-01 00:00:00+00", "4713-01-01 00:00:00+00 BC", "294276-12-31 23:59:59.999999+00", "infinity", "-infinity", "1800-01-01 00:00:00+00",
			"1883-11-18 17:00:00+00", "1937-07-01 00:00:00+00", "2022-10-30 01:30:00+00", "2038-01-19 03:14:08+00", "2100-06-01 12:00:00+00", "1901-12-13 20:45:52+00", "1000-01-01 00:00:00+00", "0001-01-01 00:00:00+00 BC", "NULL")...),
			"SELECT timestamptz '1970-01-01 00:00:00+00' + (random()-0.5) * 1e10 * interval '1 second' FROM generate_series(1, 500)",
			"SELECT timestamptz '1970-01-01 00:00:00+00' + (random()-0.5) * 2e11 * interval '1 second' FROM generate_series(1, 200)"}},
		{"interval", []string{vals(lit("0", "1 year 2 mons 3 days 04:05:06.789", "-1 year -2 mons +3 days -04:05:06", "-0.000001 sec", "1 day -1 sec", "178000000 years", "-178000000 years",
			"2147483647 days", "-2147483648 days", "1 mon", "-1 mon", "1 sec", "-1 sec", "1.5 sec", "-1 day", "1 day", "00:00:01", "-00:00:00.5", "1 year -1 sec", "-1 year 1 day", "1 mon -1 day", "NULL")...),
			"SELECT make_interval(years => (random()*20-10)::int, months => (random()*30-15)::int, days => (random()*60-30)::int, hours => (random()*50-25)::int, mins => (random()*120-60)::int, secs => ((random()-0.5)*200)::numeric(10,6)::float8) FROM generate_series(1, 400)",
			"SELECT make_interval(days => (random()*3)::int - 1, secs => ((random()-0.5)*100000)::numeric(14,6)::float8) FROM generate_series(1, 200)"}},
		{"json", []string{vals(lit(`{"a": 1,  "b" : [1,2]}`, `[]`, ` "x" `, `1e100`, `{"dup":1,"dup":2}`, "NULL")...)}},
		{"jsonb", []string{vals(lit(`{}`, `[]`, `1`, `"str"`, `null`, `true`, `false`, `{"a":{"b":[1,2,{"c":null}]}, "aa": "x\"y\\z\n\u0001\u00e9\t\b\f\r/"}`, `1e100`, `-0.0`, `0.00000000001`,
			`[1e-10, 12345678901234567890, -1.50, 0]`, `{"dup":1,"dup":2}`, `[[[[[]]]], {}, [{}]]`, `{"":"", "\u0007x":1}`, "NULL")...),
			"SELECT jsonb_build_object('k' || g, g * 1.5, 'arr', jsonb_build_array(g, 'x' || g, g % 2 = 0, NULL), 'n', jsonb_build_object('deep', g::text)) FROM generate_series(1, 200) g",
			"SELECT (SELECT jsonb_object_agg('key' || i || repeat('x', i % 5), i * g) FROM generate_series(1, 40 + g) i) FROM generate_series(1, 20) g",
			"SELECT (SELECT jsonb_agg(CASE WHEN i % 3 = 0 THEN to_jsonb(i) WHEN i % 3 = 1 THEN to_jsonb('s' || i) ELSE to_jsonb(i * 0.25) END) FROM generate_series(1, 35 + g) i) FROM generate_series(1, 20) g"}},
		{"inet", []string{vals(lit("192.168.1.1", "10.0.0.0/8", "10.1.2.3/8", "::1", "::", "::ffff:1.2.3.4", "2001:db8::1/64", "::1.2.3.4", "::0.0.0.1", "1::", "1:0:0:1::1", "1:0:0:1:0:0:0:1", "0.0.0.0/0", "::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "NULL")...),
			"SELECT (((random()*255)::int) || '.' || ((random()*255)::int) || '.' || ((random()*255)::int) || '.' || ((random()*255)::int) || '/' || ((random()*32)::int))::inet FROM generate_series(1, 200)",
			"SELECT (regexp_replace(regexp_replace(md5(g::text), '(....)', '\\1:', 'g'), ':$', '') || '/' || (g % 129))::inet FROM generate_series(1, 200) g",
			"SELECT (regexp_replace(regexp_replace(repeat('0', (g%6)*4) || substr(md5(g::text), 1, 32 - (g%6)*4), '(....)', '\\1:', 'g'), ':$', ''))::inet FROM generate_series(1, 100) g"}},
		{"cidr", []string{vals(lit("10.0.0.0/8", "2001:db8::/32", "0.0.0.0/0", "::/0", "192.168.0.0/16", "192.168.1.1", "::1", "NULL")...),
			"SELECT set_masklen((((random()*255)::int) || '.' || ((random()*255)::int) || '.0.0')::cidr, 16) FROM generate_series(1, 50)"}},
		{"macaddr", []string{vals(lit("08:00:2b:01:02:03", "00:00:00:00:00:00", "NULL")...), "SELECT substr(md5(g::text), 1, 12)::macaddr FROM generate_series(1, 50) g"}},
		{"macaddr8", []string{vals(lit("08:00:2b:01:02:03:04:05", "08:00:2b:01:02:03", "NULL")...), "SELECT substr(md5(g::text), 1, 16)::macaddr8 FROM generate_series(1, 50) g"}},
		{"money", []string{vals(lit("0", "1234.56", "-1.00", "-92233720368547758.08", "92233720368547758.07", "0.01", "-0.01", "1000000", "NULL")...),
			"SELECT ((random()-0.5) * 1e12)::numeric(20,2)::money FROM generate_series(1, 200)"}},
		{"mood", []string{vals(lit("sad", "ok", "happy", "meh", "with space", `quote"d`, "NULL")...)}},
		{"posint", []string{vals("1", "2147483647", "NULL")}},
		{"shorttext", []string{vals(strs...)}},
		{"int4[]", []string{vals(lit("{}", "{1,2,NULL}", "[0:2]={1,2,3}", "{{1,2},{3,4}}", "[-5:-4][2:3]={{1,2},{3,4}}", "{NULL}", "{{{1}},{{2}}}", "[-2147483648:-2147483647]={1,2}", "[100:101]={1,2}", "NULL")...),
			"SELECT array_agg(CASE WHEN i % 7 = 0 THEN NULL ELSE i * g END) FROM generate_series(1, 30) g, generate_series(1, 12) i GROUP BY g"}},
		{"text[]", []string{vals(lit(`{"", "NULL", "null", "a b", "a\"b", "a\\b", "{x}", "a,b", " lead", "Null", "nulls", "é", "tab	x", "semi;colon"}`, `{{a,b},{c,NULL}}`, "{}", "NULL")...),
			"SELECT ARRAY[md5(g::text), NULL, repeat(' ', g % 3)] FROM generate_series(1, 50) g"}},
		{"float8[]", []string{vals(lit("{NaN,Infinity,-Infinity,0,-0,1e-300,0.1}", "NULL")...)}},
		{"numeric[]", []string{vals(lit("{NaN,0,-1.5,1e30,0.000001}", "NULL")...)}},
		{"date[]", []string{vals(lit("{2000-01-01,infinity,\"0044-03-15 BC\"}", "NULL")...)}},
		{"timestamptz[]", []string{vals(lit("{\"2000-01-01 00:00+00\",infinity,\"1066-10-14 09:00+00\",NULL}", "NULL")...)}},
		{"interval[]", []string{vals(lit("{\"1 day\",\"-1 mon\",00:00:01,0}", "NULL")...)}},
		{"jsonb[]", []string{vals(lit(`{"{\"a\": 1}","[1, 2]","\"s\"",null}`, "NULL")...)}},
		{"bytea[]", []string{vals(lit(`{"\\x00ff","\\x"}`, "NULL")...)}},
		{"bool[]", []string{vals(lit("{t,f,NULL}", "NULL")...)}},
		{`"char"[]`, []string{vals(lit(`{a,"\\",",","\""," "}`, "NULL")...)}},
		{"name[]", []string{vals(lit(`{pg_class,"with space",""}`, "NULL")...)}},
		{"uuid[]", []string{vals(lit(`{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}`, "NULL")...)}},
		{"inet[]", []string{vals(lit(`{10.0.0.1/8,::1}`, "NULL")...)}},
		{"mood[]", []string{vals(lit(`{sad,"with space","quote\"d",NULL}`, "NULL")...)}},
		{"money[]", []string{vals(lit(`{1.00,-2.50}`, "NULL")...)}},
		{"timetz[]", []string{vals(lit(`{12:00+05:45,00:00-01}`, "NULL")...)}},
		{"int4range", []string{vals(lit("empty", "[1,5)", "(,5]", "(,)", "[3,]", "(1,2)", "[-2147483648,2147483647)", "NULL")...)}},
		{"int8range", []string{vals(lit("empty", "[1,5]", "(,)", "NULL")...)}},
		{"numrange", []string{vals(lit("(1.5,2.5]", "[0,)", "(,-1e-10)", "empty", "[NaN,NaN]", "NULL")...)}},
		{"daterange", []string{vals(lit("[2000-01-01,2000-02-01)", "(,infinity)", "[-infinity,2000-01-01)", "empty", "NULL")...)}},
		{"tsrange", []string{vals(lit("[2000-01-01 00:00,2000-02-01 12:34:56.789)", "(,)", "NULL")...)}},
		{"tstzrange", []string{vals(lit("[2000-01-01 00:00+00,2000-02-01 12:34:56.789+05:30)", "(,\"2020-01-01 00:00+00\"]", "NULL")...)}},
		{"textrange", []string{vals("textrange('a b', 'c\"d')", "textrange('', 'z')", "textrange(NULL, 'x,y', '(]')", "textrange('[', '\\')", "textrange('(', ')')", "textrange('a', 'a', '[]')", "'empty'", "NULL")}},
		{"floatrange", []string{vals(lit("[1.5,Infinity)", "(-Infinity,0.1]", "[1e-300,1e300]", "NULL")...)}},
		{"int4range[]", []string{vals(lit(`{"[1,2)",empty,"(,)"}`, "NULL")...)}},
		{"comp", []string{vals("ROW(1, 'a b', '{1.5,NULL}', 'happy', '[1,3)', 0.1)", "ROW(NULL, NULL, NULL, NULL, NULL, NULL)", "ROW(2, '', '{}', 'with space', 'empty', 'NaN')",
			"ROW(-3, 'quote\"d and \\ back', NULL, 'quote\"d', '(,)', -0.0)", "ROW(4, '(paren),comma', '{1}', NULL, NULL, 1e300)", "NULL"),
			"SELECT ROW(g, md5(g::text), ARRAY[g, g/2.0], 'ok', int4range(g, g + 10), g * 0.1)::comp FROM generate_series(1, 100) g"}},
		{"dropped", []string{vals("ROW(1, 'y')", "ROW(NULL, 'a b')", "NULL")}},
		{"nested", []string{vals("ROW(1, ROW(1, 'x', '{1}', 'sad', '[1,2)', 1)::comp, ARRAY[ROW(2, 'y\"', NULL, NULL, NULL, NULL)::comp, NULL], '2000-01-01 00:00+00')", "ROW(2, NULL, '{}', NULL)", "NULL")}},
		{"point", []string{vals(lit("(1,2)", "(-0,0.1)", "(NaN,Infinity)", "(1e300,-1e-300)", "(-Infinity,3.3333333333333335)", "NULL")...),
			"SELECT point(random() * 1000 - 500, random() / 3) FROM generate_series(1, 100)"}},
		{"lseg", []string{vals(lit("[(1,2),(3,4)]", "[(0.1,-0.2),(1e20,NaN)]", "NULL")...)}},
		{"box", []string{vals(lit("(1,2),(3,4)", "(0.5,-1e-10),(-3,7)", "NULL")...), "SELECT box(point(random(), random()), point(random() * 100, -random())) FROM generate_series(1, 50)"}},
		{"box[]", []string{vals(lit("{(1,2),(3,4);(5,6),(7,8)}", "NULL")...)}},
		{"path", []string{vals(lit("[(1,2),(3,4),(5,6)]", "((0,0),(1,1),(2,0))", "[(0.1,0.2)]", "NULL")...)}},
		{"polygon", []string{vals(lit("((0,0),(1,1),(2,0))", "((1.5,-2.25))", "NULL")...)}},
		{"line", []string{vals(lit("{1,2,3}", "{0.5,-1,0}", "[(0,0),(1,1)]", "NULL")...)}},
		{"circle", []string{vals(lit("<(1,2),3>", "<(0.1,-0.2),1e-5>", "NULL")...)}},
		{"bit(10)", []string{vals(lit("1010101010", "0000000000", "1111111111", "NULL")...)}},
		{"varbit", []string{vals(lit("", "1", "01", "10101010", "101010101", "NULL")...), "SELECT substr(('x' || md5(g::text))::bit(128)::text, 1, g)::varbit FROM generate_series(1, 60) g"}},
		{"pg_lsn", []string{vals(lit("0/0", "16/B374D848", "FFFFFFFF/FFFFFFFF", "0/1", "NULL")...)}},
		{"tid", []string{vals(lit("(0,0)", "(4294967295,65535)", "(1,2)", "(65536,7)", "NULL")...)}},
		{"int2vector", []string{vals(lit("1 2 3", "", "-32768 32767", "NULL")...)}},
		{"oidvector", []string{vals(lit("1 2 3", "", "4294967295", "NULL")...)}},
		{"comp[]", []string{vals(lit(`{"(1,x,,,,)",NULL,"(,,,,,)"}`, "NULL")...)}},
	}
	if major >= 11 {
		cases = append(cases, oracleCase{"posint[]", []string{vals(lit(`{1,2,3}`, "NULL")...)}}) // arrays of domains: 11
	}
	if major >= 14 {
		cases = append(cases,
			oracleCase{"int4multirange", []string{vals(lit("{}", "{[1,3),[5,8),[10,)}", "{(,)}", "NULL")...), "SELECT (SELECT range_agg(int4range(i * 10, i * 10 + g)) FROM generate_series(1, g) i) FROM generate_series(1, 30) g"}},
			oracleCase{"nummultirange", []string{vals(lit("{[1.5,2.5),(3,4]}", "NULL")...), "SELECT (SELECT range_agg(numrange(i * 10.5, i * 10.5 + g / 3.0)) FROM generate_series(1, g) i) FROM generate_series(1, 12) g"}},
			oracleCase{"datemultirange", []string{vals(lit("{[2000-01-01,2000-02-01),[2001-01-01,infinity)}", "NULL")...)}},
			oracleCase{"tstzmultirange", []string{vals(lit(`{["2000-01-01 00:00+00","2000-02-01 00:00+00"),["2020-01-01 00:00+00",)}`, "NULL")...)}},
			oracleCase{"textmultirange", []string{vals(lit(`{["a b","c""d"),["x,y",z]}`, "{}", "NULL")...), "SELECT (SELECT range_agg(textrange(md5(i::text), md5(i::text) || 'z')) FROM generate_series(1, g) i) FROM generate_series(1, 9) g"}},
			oracleCase{"floatmultirange", []string{vals(lit("{[1.5,2.5),[3,Infinity)}", "NULL")...)}},
		)
		cases = append(cases, oracleCase{"numeric", []string{vals(lit("Infinity", "-Infinity")...)}})
	}
	if major >= 15 {
		// Hours beyond int32: an error on input before 15 (pg_itm).
		cases = append(cases, oracleCase{"interval", []string{vals(lit("2562047788:00:54.775807", "-2562047788:00:54.775807")...)}})
	}
	if major >= 17 {
		cases = append(cases, oracleCase{"interval", []string{vals(lit("infinity", "-infinity")...)}})
	}
	return cases
}

// checkQuoting compares, for every value of every case, CSV.Append with
// COPY's CSV output and AppendLiteral with format('%L') (the output
// function's text, then quote_literal), both printed by the server
// (default settings).
func checkQuoting(t *testing.T, o *oracleServer, cases []oracleCase, datums [][]*tuple.Value, stores []tuple.Detoaster, typeOIDs []uint32, types *catalog.Catalog) {
	var script strings.Builder
	script.WriteString(settingCombos[0].sql())
	for i := range cases {
		fmt.Fprintf(&script, "\n\\echo ==== t%d\nCOPY t%d TO STDOUT (FORMAT csv);\n\\echo ==== q%d\nCOPY (SELECT format('%%L', v) FROM t%d) TO STDOUT;", i, i, i, i)
	}
	out := strings.Join(o.q(script.String()), "\n") + "\n"
	sections := map[string]string{}
	for _, part := range strings.Split(out, "==== ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sections[name] = body
	}
	f := &typeout.Formatter{Settings: settingCombos[0].settings(t, ""), Types: types, Major: o.major}
	csvN, litN := 0, 0
	for i, c := range cases {
		var csv, lits []byte
		for _, v := range datums[i] {
			if v.IsNull() {
				csv = append(csv, typeout.DefaultCSV.Null...)
				lits = append(lits, "NULL"...) // format('%L', NULL)
			} else {
				text, err := f.AppendValue(nil, typeOIDs[i], *v, stores[i])
				if err != nil {
					t.Fatal(err)
				}
				csv = typeout.DefaultCSV.Append(csv, text, false, true)
				lits = typeout.AppendCopyText(lits, typeout.AppendLiteral(nil, text, ""), '\t')
			}
			csv = append(csv, '\n')
			lits = append(lits, '\n')
		}
		if string(csv) != sections[fmt.Sprintf("t%d", i)] {
			t.Errorf("PostgreSQL %d %s: CSV differs:\n server %q\n typeout %q", o.major, c.typ, abbrev(sections[fmt.Sprintf("t%d", i)]), abbrev(string(csv)))
		} else {
			csvN += len(datums[i])
		}
		if string(lits) != sections[fmt.Sprintf("q%d", i)] {
			t.Errorf("PostgreSQL %d %s: format('%%L') differs:\n server %q\n typeout %q", o.major, c.typ, abbrev(sections[fmt.Sprintf("q%d", i)]), abbrev(string(lits)))
		} else {
			litN += len(datums[i])
		}
	}
	t.Logf("PostgreSQL %d: %d values identical as COPY (FORMAT csv) prints them, %d as format('%%L') quotes them", o.major, csvN, litN)
}

func abbrev(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// checkUnsupported: a type without an output function here is an error
// wrapping ErrUnsupported that names it, never a wrong text.
func checkUnsupported(t *testing.T, o *oracleServer, types *catalog.Catalog) {
	// The table is made with the others (oracleSetup), before the catalog
	// is read.
	relid, _ := strconv.ParseUint(o.q("SELECT 'unsupported'::regclass::oid")[0], 10, 32)
	desc, err := types.Desc(uint32(relid))
	if err != nil {
		t.Fatal(err)
	}
	f := &typeout.Formatter{Settings: typeout.DefaultSettings(), Types: types, Major: o.major}
	n := 0
	for _, tup := range o.items(o.q("SELECT pg_relation_filepath('unsupported')")[0]) {
		vals, _, err := tuple.Deform(nil, tup, desc)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range vals {
			name := types.Type(desc[k].TypeOID).Name
			out, err := f.AppendValue(nil, desc[k].TypeOID, v, nil)
			if !errors.Is(err, typeout.ErrUnsupported) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %q, %v; want an error wrapping ErrUnsupported naming %s", name, out, err, name)
			}
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d unsupported values checked, want 3", n)
	}
}
