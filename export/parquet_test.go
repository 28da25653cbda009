package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		ss := rec.Column(1).(*array.String)
		ts := rec.Column(2).(*array.Timestamp)
		opt := rec.Column(5).(*array.Uint32)
		for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
			want := testRow(i)
			if ns.Value(j) != want[0].U || ss.Value(j) != want[1].S {
				t.Fatalf("row %d: %d %q, want %+v", i, ns.Value(j), ss.Value(j), want)
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
