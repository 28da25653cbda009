package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeTestFile writes rows lo..hi-1 of testRow as a Parquet file of
// schema s in row groups of 700 rows.
func writeTestFile(t *testing.T, path string, s *Schema, lo, hi int) []byte {
	t.Helper()
	w, err := Create(path, Parquet, s, Options{RowGroupRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	for i := lo; i < hi; i++ {
		r := testRow(i)
		if len(s.Columns) > len(r) {
			r = append(r, Value{S: "extra"})
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAllRows reads a Parquet file with arrow-go (not walscope's code) into
// its rows' text.
func readAllRows(t *testing.T, path string) (rows []string, groups int) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	cells := make([][]string, tbl.NumRows())
	for c := 0; c < int(tbl.NumCols()); c++ {
		i := 0
		for _, ch := range tbl.Column(c).Data().Chunks() {
			for j := 0; j < ch.Len(); j++ {
				cells[i] = append(cells[i], ch.ValueStr(j))
				i++
			}
		}
	}
	for _, r := range cells {
		rows = append(rows, strings.Join(r, "|"))
	}
	return rows, pf.NumRowGroups()
}

// TestConcatParquet: three files of walscope's writer concatenated by
// copying their row groups read back with arrow-go as the rows of one file
// written whole, in order, every row group kept; the footer's Thrift is
// decoded and encoded again byte for byte; another schema is refused.
func TestConcatParquet(t *testing.T) {
	dir := t.TempDir()
	var inputs [][]byte
	bounds := []int{0, 1500, 1501, 4000}
	for i := 0; i+1 < len(bounds); i++ {
		inputs = append(inputs, writeTestFile(t, filepath.Join(dir, "in", string(rune('a'+i))+".parquet"), testSchema, bounds[i], bounds[i+1]))
	}
	// The footer as decoded and encoded again: the same bytes.
	for i, in := range inputs {
		fields, end, err := parquetFooter(in)
		if err != nil {
			t.Fatal(err)
		}
		var w thriftWriter
		w.reset()
		thriftEncode(&w, fields)
		if got := in[end : len(in)-8]; string(w.b) != string(got) {
			t.Errorf("input %d: footer of %d bytes encoded again as %d", i, len(got), len(w.b))
		}
	}
	out := filepath.Join(dir, "merged.parquet")
	if err := ConcatParquet(out, inputs); err != nil {
		t.Fatal(err)
	}
	got, groups := readAllRows(t, out)
	want, _ := readAllRows(t, func() string {
		p := filepath.Join(dir, "whole.parquet")
		writeTestFile(t, p, testSchema, 0, 4000)
		return p
	}())
	if !slices.Equal(got, want) {
		t.Errorf("merged: %d rows, whole: %d (or they differ)", len(got), len(want))
	}
	// 1500 rows: 3 groups; 1: 1; 2499: 4
	if groups != 8 {
		t.Errorf("%d row groups, want 8 (3+1+4)", groups)
	}
	if _, err := os.Stat(TempName(out)); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}

	other := testSchema.With(Column{Name: "extra", Kind: String})
	odd := writeTestFile(t, filepath.Join(dir, "other.parquet"), other, 0, 10)
	if err := ConcatParquet(filepath.Join(dir, "bad.parquet"), [][]byte{inputs[0], odd}); !errors.Is(err, ErrConcat) {
		t.Errorf("another schema: %v, want ErrConcat", err)
	}
	if err := ConcatParquet(filepath.Join(dir, "bad.parquet"), [][]byte{inputs[0], []byte("PAR1 not a footer PAR1")}); !errors.Is(err, ErrConcat) {
		t.Errorf("damaged: %v, want ErrConcat", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.parquet")); !os.IsNotExist(err) {
		t.Errorf("a refused concatenation wrote its output: %v", err)
	}
}

// TestSupersedes: the files of a superseded batch are not read; a batch
// superseded twice, a batch superseding itself or a later one, and a file
// outside the batch directories of batches up to its own are refused.
func TestSupersedes(t *testing.T) {
	b1, b2, b3 := testBatch(1, 1), testBatch(2, 1), testBatch(3, 1)
	// batch 3 merges 1 and 2: carries 1's file, wrote its own
	b3.Supersedes = []int{1, 2}
	b3.Tables = map[string]BatchTable{TableRecords: {Rows: 30, Files: []MarkerFile{
		b1.Tables[TableRecords].Files[0],
		{Path: BatchDir(TableRecords, 3) + "/day=2026-12-01/part-0000000002000028.parquet", Rows: 20},
	}}}
	m, err := ReadManifest(manifestFS(b1, b2, b3))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Files(TableRecords); len(got) != 2 || got[0] != b1.Tables[TableRecords].Files[0].Path {
		t.Errorf("files %v", got)
	}
	if by, ok := m.Superseded(2); !ok || by != 3 {
		t.Errorf("batch 2 superseded by %d %v", by, ok)
	}
	files, markers, _ := m.SupersededFiles([]int{1, 2}, &m.Batches[2])
	if len(files) != 1 || files[0] != b2.Tables[TableRecords].Files[0].Path || len(markers) != 2 {
		t.Errorf("to remove: %v, markers %v (batch 1's file is carried by 3)", files, markers)
	}

	b4 := testBatch(4, 1)
	b4.Supersedes = []int{2}
	if _, err := ReadManifest(manifestFS(b1, b2, b3, b4)); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "superseded by batches 3 and 4") {
		t.Errorf("superseded twice: %v", err)
	}
	for _, sup := range [][]int{{4}, {0}, {2, 1}, {1, 1}} {
		b4.Supersedes = sup
		if _, err := ParseBatch(b4.Encode()); !errors.Is(err, ErrManifest) {
			t.Errorf("supersedes %v: %v", sup, err)
		}
	}
	b4.Supersedes = nil
	for _, p := range []string{"records/batch=5/day=x/part.parquet", "records/batch=03/part.parquet", "blocks/batch=1/part.parquet", "records/batch=1/../x"} {
		b4.Tables = map[string]BatchTable{TableRecords: {Files: []MarkerFile{{Path: p}}}}
		if _, err := ParseBatch(b4.Encode()); !errors.Is(err, ErrManifest) {
			t.Errorf("file %s: %v", p, err)
		}
	}
}

// TestMergeCandidates: the run of small live batches at the end, while
// their bytes add up to less than the threshold, of one format and of the
// tables written; a manifest without sizes ends it.
func TestMergeCandidates(t *testing.T) {
	sized := func(id int, bytes int64) *Batch {
		b := testBatch(id, 1)
		bt := b.Tables[TableRecords]
		bt.Files[0].Bytes = bytes
		return b
	}
	recs := []string{TableRecords}
	m, err := ReadManifest(manifestFS(sized(1, 500), sized(2, 100), sized(3, 200), sized(4, 300)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		below int64
		want  []int
	}{{1000, []int{2, 3, 4}}, {601, []int{2, 3, 4}}, {600, []int{3, 4}}, {301, []int{4}}, {300, nil}, {0, nil}} {
		if got := m.MergeCandidates(c.below, ".parquet", recs); !slices.Equal(got, c.want) {
			t.Errorf("below %d: %v, want %v", c.below, got, c.want)
		}
	}
	if got := m.MergeCandidates(1000, ".jsonl", recs); got != nil {
		t.Errorf("another format: %v", got)
	}
	if got := m.MergeCandidates(1000, ".parquet", []string{TableBlocks}); got != nil {
		t.Errorf("other tables: %v", got)
	}
	// an old manifest (no bytes) ends the run; a superseded batch too
	old := testBatch(3, 1)
	if got := must(ReadManifest(manifestFS(sized(1, 5), sized(2, 5), old, sized(4, 5)))).MergeCandidates(1000, ".parquet", recs); !slices.Equal(got, []int{4}) {
		t.Errorf("after a manifest without sizes: %v", got)
	}
	b3 := sized(3, 5)
	b3.Supersedes = []int{2}
	if got := must(ReadManifest(manifestFS(sized(1, 5), sized(2, 5), b3, sized(4, 5)))).MergeCandidates(1000, ".parquet", recs); !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("with batch 2 superseded: %v", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
