package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var testSchema = &Schema{Table: "t", Columns: []Column{
	{Name: "n", Kind: Uint64},
	{Name: "s", Kind: String, Dict: true},
	{Name: "ts", Kind: Time, Nullable: true},
	{Name: "b", Kind: Bool},
	{Name: "small", Kind: Uint16},
	{Name: "opt", Kind: Uint32, Nullable: true},
}}

func testRow(i int) Row {
	r := Row{{U: uint64(i)}, {S: []string{"Heap", "Btree", "XLOG"}[i%3]}, {Null: true}, {U: uint64(i % 2)}, {U: uint64(i % 65536)}, {Null: i%5 == 0, U: uint64(i)}}
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
		ns := rec.Column(0).(*array.Uint64)
		ss := stringColumnOf(t, rec.Column(1))
		ts := rec.Column(2).(*array.Timestamp)
		opt := rec.Column(5).(*array.Uint32)
		for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
			want := testRow(i)
			if ns.Value(j) != want[0].U || ss(j) != want[1].S {
				t.Fatalf("row %d: %d %q, want %+v", i, ns.Value(j), ss(j), want)
			}
			if ts.IsNull(j) != want[2].Null || !want[2].Null && uint64(ts.Value(j)) != want[2].U {
				t.Fatalf("row %d: ts %v", i, ts.Value(j))
			}
			if opt.IsNull(j) != want[5].Null {
				t.Fatalf("row %d: opt null %v", i, opt.IsNull(j))
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
	kinds := []Kind{Uint64, Uint32, Uint16, Uint8, Int32, Bool, String, Time}
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
			case Uint32:
				v.U &= 0xFFFFFFFF
			case Uint16:
				v.U &= 0xFFFF
			case Uint8:
				v.U &= 0xFF
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
				case *array.Uint64:
					got.U = x.Value(j)
				case *array.Uint32:
					got.U = uint64(x.Value(j))
				case *array.Uint16:
					got.U = uint64(x.Value(j))
				case *array.Uint8:
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
		if f == CSV && lines[1] != "0,Heap,2023-11-14T22:13:20Z,false,0," {
			t.Errorf("csv row %q", lines[1])
		}
		if f == JSONL && lines[0] != `{"n":0,"s":"Heap","ts":"2023-11-14T22:13:20Z","b":false,"small":0,"opt":null}` {
			t.Errorf("jsonl row %q", lines[0])
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
