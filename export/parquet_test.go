package export

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

var testSchema = &Schema{Table: "t", Columns: []Column{
	{Name: "n", Kind: Int64},
	{Name: "s", Kind: String, Dict: true},
	{Name: "ts", Kind: Time, Nullable: true},
	{Name: "b", Kind: Bool},
	{Name: "small", Kind: Int32},
	{Name: "opt", Kind: LSN, Nullable: true},
}}

func testRow(i int) Row {
	r := Row{{U: uint64(i) * 0x9E3779B9}, {S: []string{"Heap", "Btree", "XLOG"}[i%3]}, {Null: true}, {U: uint64(i % 2)}, {U: uint64(i % 65536)}, {Null: i%5 == 0, U: uint64(i) << 28}}
	if i%7 == 0 {
		r[2] = Value{U: uint64(1700000000000000 + i)}
	}
	return r
}

// TestParquetReadBack writes rows over several row groups and reads them
// back with pqarrow: values, nulls, row group lengths and the schema
// version in the key-value metadata.
func TestParquetReadBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "part-0.parquet")
	w, err := Create(path, Parquet, testSchema, Options{RowGroupRows: 1000, Metadata: map[string]string{"walscope.label": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	for i := range n {
		if err := w.Write(testRow(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(TempName(path)); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if got := pf.NumRowGroups(); got != 3 {
		t.Errorf("%d row groups, want 3", got)
	}
	kv := pf.MetaData().KeyValueMetadata()
	if v := kv.FindValue("walscope.schema_version"); v == nil || *v != SchemaVersion {
		t.Errorf("schema version %v", v)
	}
	if v := kv.FindValue("walscope.label"); v == nil || *v != "x" {
		t.Errorf("label %v", v)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != n {
		t.Fatalf("%d rows, want %d", tbl.NumRows(), n)
	}
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	i := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		ns := rec.Column(0).(*array.Int64)
		ss := stringColumnOf(t, rec.Column(1))
		ts := rec.Column(2).(*array.Timestamp)
		opt := rec.Column(5).(*array.Int64)
		optText := rec.Column(6).(*array.String)
		for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
			want := testRow(i)
			if uint64(ns.Value(j)) != want[0].U || ss(j) != want[1].S {
				t.Fatalf("row %d: %d %q, want %+v", i, ns.Value(j), ss(j), want)
			}
			if ts.IsNull(j) != want[2].Null || !want[2].Null && uint64(ts.Value(j)) != want[2].U {
				t.Fatalf("row %d: ts %v", i, ts.Value(j))
			}
			if opt.IsNull(j) != want[5].Null || optText.IsNull(j) != want[5].Null {
				t.Fatalf("row %d: opt null %v", i, opt.IsNull(j))
			}
			if !want[5].Null && (uint64(opt.Value(j)) != want[5].U || optText.Value(j) != fmt.Sprintf("%X/%X", want[5].U>>32, uint32(want[5].U))) {
				t.Fatalf("row %d: opt %d %q, want %d", i, opt.Value(j), optText.Value(j), want[5].U)
			}
		}
	}
	if i != n {
		t.Errorf("read %d rows", i)
	}
}

// stringColumnOf returns a reader of a string column, plain or dictionary.
func stringColumnOf(t *testing.T, a arrow.Array) func(int) string {
	switch x := a.(type) {
	case *array.String:
		return x.Value
	case *array.Dictionary:
		d := x.Dictionary().(*array.String)
		return func(j int) string { return d.Value(x.GetValueIndex(j)) }
	}
	t.Fatalf("not a string column: %s", a.DataType())
	return nil
}

// TestParquetEveryKind writes every column kind, nullable and not, over
// row groups whose dictionaries differ (values appearing, disappearing and
// reordered, nulls in dictionary and free-text columns, empty strings), and
// checks every cell read back, and that dictionary columns are stored with
// a dictionary page.
func TestParquetEveryKind(t *testing.T) {
	kinds := []Kind{Int64, Int32, Bool, String, Time}
	s := &Schema{Table: "k"}
	for _, k := range kinds {
		for _, null := range []bool{false, true} {
			name := fmt.Sprintf("k%d_%v", k, null)
			s.Columns = append(s.Columns, Column{Name: name, Kind: k, Nullable: null})
			if k == String {
				s.Columns = append(s.Columns, Column{Name: name + "_dict", Kind: k, Nullable: null, Dict: true})
			}
		}
	}
	row := func(i int) Row {
		r := make(Row, len(s.Columns))
		for c, col := range s.Columns {
			v := Value{U: uint64(i*31+c) * 0x9E3779B97F4A7C15}
			switch col.Kind {
			case Int32:
				v.U = uint64(uint32(int32(v.U)))
			case Bool:
				v.U &= 1
			case Time:
				v.U = uint64(1700000000000000 + i*1000 + c)
			case String:
				if col.Dict {
					// a few distinct values, shifting from one row group to the next
					v = Value{S: []string{"Heap", "Btree", "", "XLOG", "Transaction", "Heap2"}[(i/7+i/300)%6]}
				} else {
					v = Value{S: strings.Repeat("x", i%5) + fmt.Sprint(i)}
					if i%11 == 0 {
						v.S = ""
					}
				}
			}
			if col.Nullable && (i%3 == 0 || i >= 600 && i < 700) {
				v = Value{Null: true}
			}
			r[c] = v
		}
		return r
	}
	path := filepath.Join(t.TempDir(), "k.parquet")
	w, err := Create(path, Parquet, s, Options{RowGroupRows: 256})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if err := w.Write(row(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != 4 {
		t.Errorf("%d row groups, want 4", pf.NumRowGroups())
	}
	for c, col := range s.Columns {
		cm, err := pf.MetaData().RowGroup(0).ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if col.Dict != cm.HasDictionaryPage() {
			t.Errorf("%s: dictionary page %v", col.Name, cm.HasDictionaryPage())
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 333)
	defer tr.Release()
	i := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
			want := row(i)
			for c, col := range s.Columns {
				a := rec.Column(c)
				if a.IsNull(j) != want[c].Null {
					t.Fatalf("row %d %s: null %v, want %v", i, col.Name, a.IsNull(j), want[c].Null)
				}
				if want[c].Null {
					continue
				}
				var got Value
				switch x := a.(type) {
				case *array.Int64:
					got.U = uint64(x.Value(j))
				case *array.Int32:
					got.U = uint64(uint32(x.Value(j)))
				case *array.Boolean:
					if x.Value(j) {
						got.U = 1
					}
				case *array.Timestamp:
					got.U = uint64(x.Value(j))
				default:
					got.S = stringColumnOf(t, a)(j)
				}
				if got != want[c] {
					t.Fatalf("row %d %s: %+v, want %+v", i, col.Name, got, want[c])
				}
			}
		}
	}
	if i != n {
		t.Errorf("read %d rows, want %d", i, n)
	}
}

// TestInterruptedWrite: until Close, the file exists only under its
// temporary name, which no reader's *.parquet glob matches; Abort removes it.
func TestInterruptedWrite(t *testing.T) {
	for _, f := range []Format{Parquet, JSONL, CSV} {
		dir := t.TempDir()
		path := filepath.Join(dir, "records", "part-0"+f.Ext())
		w, err := Create(path, f, testSchema, Options{RowGroupRows: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			w.Write(testRow(i))
		}
		// Interrupted here: nothing looks complete.
		matches, _ := filepath.Glob(filepath.Join(dir, "records", "*"+f.Ext()))
		if len(matches) != 0 {
			t.Errorf("%s: complete-looking files before Close: %v", f, matches)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, "records"))
		if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".") || !strings.HasSuffix(ents[0].Name(), ".tmp") {
			t.Errorf("%s: files while writing: %v", f, ents)
		}
		w.Abort()
		ents, _ = os.ReadDir(filepath.Join(dir, "records"))
		if len(ents) != 0 {
			t.Errorf("%s: files after Abort: %v", f, ents)
		}
	}
}

func TestTextFormats(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []Format{JSONL, CSV} {
		path := filepath.Join(dir, "x"+f.Ext())
		w, err := Create(path, f, testSchema, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			w.Write(testRow(i))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if f == JSONL && len(lines) != 3 || f == CSV && len(lines) != 4 {
			t.Errorf("%s: %q", f, b)
		}
		if f == CSV && (lines[0] != "n,s,ts,b,small,opt,opt_text" || lines[1] != "0,Heap,2023-11-14T22:13:20Z,false,0,," || lines[2] != "2654435769,Btree,,true,1,268435456,0/10000000") {
			t.Errorf("csv rows %q", lines[:3])
		}
		if f == JSONL && (lines[0] != `{"n":0,"s":"Heap","ts":"2023-11-14T22:13:20Z","b":false,"small":0,"opt":null,"opt_text":null}` ||
			lines[1] != `{"n":2654435769,"s":"Btree","ts":null,"b":true,"small":1,"opt":268435456,"opt_text":"0/10000000"}`) {
			t.Errorf("jsonl rows %q", lines[:2])
		}
	}
}

// benchRecords makes rows shaped like a records table of OLTP WAL: LSNs
// rising by record lengths, constant geometry, segments changing every
// 100k rows, a few rmgrs and record types, xids rising with zeros between.
// Rows are made as they are written, into one Row, as the exporter does
// (300k rows kept as Values would make the benchmark measure the GC).
type benchRecords struct {
	lsn, xid, seed uint64
	i              int
	segs           map[uint64]string
}

var (
	benchRmgrs = []string{"Heap", "Btree", "Transaction", "Heap2", "XLOG", "Standby"}
	benchTypes = []string{"UPDATE", "HOT_UPDATE", "INSERT", "INSERT_LEAF", "COMMIT", "LOCK", "PRUNE", "FPI", "RUNNING_XACTS", "INSERT+INIT"}
)

func newBenchRecords() *benchRecords {
	return &benchRecords{lsn: 0x3000000, xid: 1000, seed: 1, segs: map[uint64]string{}}
}

func (g *benchRecords) next() uint64 {
	g.seed = g.seed*6364136223846793005 + 1442695040888963407
	return g.seed >> 33
}

func (g *benchRecords) fill(r Row) {
	l := 50 + g.next()%200
	x := uint64(0)
	if g.next()%4 != 0 {
		x = g.xid
	}
	if g.next()%7 == 0 {
		g.xid++
	}
	seg, ok := g.segs[g.lsn>>24]
	if !ok {
		seg = fmt.Sprintf("0000000100000000%08X", g.lsn>>24)
		g.segs[g.lsn>>24] = seg
	}
	r[RecLSN], r[RecEndLSN], r[RecPrevLSN] = Value{U: g.lsn}, Value{U: g.lsn + l}, Value{U: g.lsn - 100}
	r[RecTimeline], r[RecSegment], r[RecXID], r[RecToplevelXID] = Value{U: 1}, Value{S: seg}, Value{U: x}, Value{}
	k := g.next() % uint64(len(benchTypes))
	r[RecRmgr], r[RecRecordType] = Value{S: benchRmgrs[k%uint64(len(benchRmgrs))]}, Value{S: benchTypes[k]}
	r[RecTotalLength], r[RecMainDataLength] = Value{U: l}, Value{U: g.next() % 20}
	r[RecBlockCount], r[RecImageCount] = Value{U: g.next() % 3}, Value{U: b2u(g.next()%50 == 0)}
	r[RecImageBytes], r[RecImageBytesUncompressed] = Value{}, Value{}
	r[RecCompression] = Value{S: "none"}
	r[RecCheckpointCycle] = Value{U: 0x2000000 + uint64(g.i/200000)*0x1000000}
	r[RecXactTime] = Value{Null: true}
	if k == 4 {
		r[RecXactTime] = Value{U: 1700000000000000 + uint64(g.i)*50}
	}
	r[RecPGVersion], r[RecXlogBlcksz], r[RecSegmentSize], r[RecInfo] = Value{U: 15}, Value{U: 8192}, Value{U: 16 << 20}, Value{U: k << 4}
	g.lsn += (l + 7) &^ 7
	g.i++
}

// BenchmarkParquetRecords measures the Parquet writer alone on records-like
// rows (ns per row, including making the row; the file size per row too).
func BenchmarkParquetRecords(b *testing.B) {
	const n = 300_000
	dir := b.TempDir()
	var size int64
	row := make(Row, len(RecordsSchema.Columns))
	for i := range b.N {
		g := newBenchRecords()
		path := filepath.Join(dir, fmt.Sprintf("r%d.parquet", i))
		w, err := Create(path, Parquet, RecordsSchema, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for range n {
			g.fill(row)
			if err := w.Write(row); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		st, _ := os.Stat(path)
		size = st.Size()
		os.Remove(path)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
	b.ReportMetric(float64(size)/float64(n), "bytes/row")
}

// TestPortableSchemas writes each table's schema (with --desc's and
// --label's columns) and checks, from the Parquet footer as arrow-go reads
// it, that every column is of a type Spark 3, Hive and Trino read natively:
// signed INT32 or INT64 without an integer logical type, BOOLEAN, UTF8
// strings, or INT64 timestamps in microseconds adjusted to UTC; and that
// every LSN column has its text twin beside it.
func TestPortableSchemas(t *testing.T) {
	for _, table := range Tables {
		s := SchemaOf(table).With(DescriptionColumn, LabelColumn)
		path := filepath.Join(t.TempDir(), table+".parquet")
		w, err := Create(path, Parquet, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(make(Row, len(s.Columns))); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		sc := pf.MetaData().Schema
		if sc.NumColumns() != len(s.FileColumns()) {
			t.Errorf("%s: %d columns, want %d", table, sc.NumColumns(), len(s.FileColumns()))
		}
		for i := range sc.NumColumns() {
			c := sc.Column(i)
			lt := c.LogicalType()
			ok := false
			switch c.PhysicalType() {
			case parquet.Types.Int32, parquet.Types.Int64:
				ok = lt.IsNone()
				if ts, isTS := lt.(schema.TimestampLogicalType); isTS {
					ok = c.PhysicalType() == parquet.Types.Int64 && ts.IsAdjustedToUTC() && ts.TimeUnit() == schema.TimeUnitMicros
				}
			case parquet.Types.Boolean:
				ok = lt.IsNone()
			case parquet.Types.ByteArray:
				_, ok = lt.(schema.StringLogicalType)
			}
			if !ok {
				t.Errorf("%s.%s: %s %s", table, c.Name(), c.PhysicalType(), lt)
			}
		}
		for _, c := range s.Columns {
			if c.Kind == LSN && sc.ColumnIndexByName(c.Name+TextSuffix) != sc.ColumnIndexByName(c.Name)+1 {
				t.Errorf("%s.%s: no text twin beside it", table, c.Name)
			}
		}
		pf.Close()
	}
}

func TestAppendLSN(t *testing.T) {
	for _, c := range []struct {
		lsn  uint64
		want string
	}{
		{0, "0/0"},
		{0x16B3748, "0/16B3748"},
		{0x16_B374D848, "16/B374D848"},
		{0xFFFFFFFF_FFFFFFFF, "FFFFFFFF/FFFFFFFF"},
		{1 << 32, "1/0"},
	} {
		if got := string(AppendLSN(nil, c.lsn)); got != c.want {
			t.Errorf("AppendLSN(%#x) = %s, want %s", c.lsn, got, c.want)
		}
	}
}

func ExampleAppendLSN() {
	fmt.Println(string(AppendLSN(nil, 0x16_B374D848)))
	// Output: 16/B374D848
}

// TestParquetEncodingEdges writes what the encoders must get right at
// their edges and reads it back with arrow-go: dictionaries wider than a
// byte, runs of equal indices long and short, bit-packed runs longer than
// one header allows (63 groups), nulls inside runs; deltas of the whole
// int64 range; lengths that end inside a miniblock, a block, a group.
func TestParquetEncodingEdges(t *testing.T) {
	s := &Schema{Table: "e", Columns: []Column{
		{Name: "d", Kind: String, Dict: true, Nullable: true},
		{Name: "x", Kind: Int64, Delta: true},
		{Name: "l", Kind: LSN, Nullable: true},
	}}
	row := func(i int) Row {
		d := Value{S: fmt.Sprint("v", i%700)} // 700 distinct: 10-bit indices
		if i%2000 < 900 {
			d = Value{S: "run"} // a run of 900
		}
		if i%13 == 5 {
			d = Value{Null: true}
		}
		x := []uint64{0, 1 << 63, 1<<63 - 1, 1, ^uint64(0)}[i%5]
		if i > 3000 {
			x = uint64(i) * 1000
		}
		l := Value{U: uint64(i) << 20}
		if i%3 == 0 {
			l = Value{Null: true}
		}
		return Row{d, {U: x}, l}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 33, 128, 129, 4999, 5000} {
		path := filepath.Join(t.TempDir(), "e.parquet")
		w, err := Create(path, Parquet, s, Options{RowGroupRows: 2500})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := w.Write(row(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1000)
		i := 0
		for tr.Next() {
			rec := tr.RecordBatch()
			d, x := rec.Column(0), rec.Column(1).(*array.Int64)
			l, lt := rec.Column(2).(*array.Int64), rec.Column(3).(*array.String)
			for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
				want := row(i)
				if d.IsNull(j) != want[0].Null || !want[0].Null && stringColumnOf(t, d)(j) != want[0].S {
					t.Fatalf("n=%d row %d: d %v, want %+v", n, i, d.ValueStr(j), want[0])
				}
				if uint64(x.Value(j)) != want[1].U {
					t.Fatalf("n=%d row %d: x %d, want %d", n, i, x.Value(j), int64(want[1].U))
				}
				if l.IsNull(j) != want[2].Null || lt.IsNull(j) != want[2].Null ||
					!want[2].Null && (uint64(l.Value(j)) != want[2].U || lt.Value(j) != string(AppendLSN(nil, want[2].U))) {
					t.Fatalf("n=%d row %d: l %v %v, want %+v", n, i, l.ValueStr(j), lt.ValueStr(j), want[2])
				}
			}
		}
		tr.Release()
		tbl.Release()
		pf.Close()
		if i != n {
			t.Errorf("n=%d: read %d rows", n, i)
		}
	}
}

// ExampleCreate writes a small table as Parquet: an LSN column becomes two,
// the number and its X/Y text.
func ExampleCreate() {
	dir, _ := os.MkdirTemp("", "export-example-")
	defer os.RemoveAll(dir)
	s := &Schema{Table: "example", Columns: []Column{
		{Name: "lsn", Kind: LSN},
		{Name: "rmgr", Kind: String, Dict: true},
		{Name: "total_length", Kind: Int64},
	}}
	w, err := Create(filepath.Join(dir, "part-0.parquet"), Parquet, s, Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Write(Row{{U: 0x16_B374D848}, {S: "Heap"}, {U: 72}})
	w.Write(Row{{U: 0x16_B374D890}, {S: "Btree"}, {U: 64}})
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, c := range s.FileColumns() {
		names = append(names, c.Name)
	}
	fmt.Println(strings.Join(names, " "))
	fmt.Println(w.Rows(), "rows")
	// Output:
	// lsn lsn_text rmgr total_length
	// 2 rows
}

// TestParquetWriteAllocs: writing a row into a row group whose buffers
// have grown allocates nothing (the export's hot path).
func TestParquetWriteAllocs(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "a.parquet"), Parquet, RecordsSchema, Options{RowGroupRows: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	g := newBenchRecords()
	row := make(Row, len(RecordsSchema.Columns))
	for range 5000 {
		g.fill(row)
		w.Write(row)
	}
	g.fill(row)
	if n := testing.AllocsPerRun(1000, func() { w.Write(row) }); n != 0 {
		t.Errorf("%v allocations per row written", n)
	}
}

// TestAppendJSONString: the fast path writes what encoding/json writes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "Heap", "INSERT+INIT", "off 3, flags 0x00", `a"b`, `a\b`, "tab\there", "<x>&", "é", "\x7f", "rel 1663/5/16384 blk 0 FPW"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// TestPushGrowth: a column buffer jumps to a whole row group past its first
// thousand values only up to the default's length, then doubles: with a
// row group of 2^24 rows every column of every span's file took 2^24 slots
// for a few thousand rows (457 MB for 22,360 records at 2^31).
func TestPushGrowth(t *testing.T) {
	for _, group := range []int{DefaultRowGroupRows, MaxRowGroupRows} {
		var s []int64
		for i := range 3000 {
			s = push(s, int64(i), group)
		}
		if cap(s) > DefaultRowGroupRows {
			t.Errorf("group %d: 3,000 values in a buffer of %d", group, cap(s))
		}
		if group == DefaultRowGroupRows && cap(s) != DefaultRowGroupRows {
			t.Errorf("default group: buffer of %d after 3,000 values, want the whole group at once (%d)", cap(s), DefaultRowGroupRows)
		}
	}
}
