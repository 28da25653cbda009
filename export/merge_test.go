package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	return writeTestRows(t, path, Parquet, s, lo, hi, Options{RowGroupRows: 700})
}

// writeTestRows writes testRow(lo..hi-1) in format f (a column more than
// testRow's given "extra") and returns the file's bytes.
func writeTestRows(t *testing.T, path string, f Format, s *Schema, lo, hi int, opts Options) []byte {
	t.Helper()
	w, err := Create(path, f, s, opts)
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
// walked and copied byte for byte; another schema is refused.
func TestConcatParquet(t *testing.T) {
	dir := t.TempDir()
	var inputs [][]byte
	bounds := []int{0, 1500, 1501, 4000}
	for i := 0; i+1 < len(bounds); i++ {
		inputs = append(inputs, writeTestFile(t, filepath.Join(dir, "in", string(rune('a'+i))+".parquet"), testSchema, bounds[i], bounds[i+1]))
	}
	// An input concatenated alone: the same bytes (its footer walked and
	// copied, every offset moved by 0).
	for i, in := range inputs {
		alone := filepath.Join(dir, "alone.parquet")
		if err := ConcatParquet(alone, [][]byte{in}); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(alone); err != nil || !bytes.Equal(got, in) {
			t.Errorf("input %d alone: %d bytes, not the input's %d (%v)", i, len(got), len(in), err)
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

// TestReplaces: a replaced file is not read; a file replaced twice, one
// no earlier batch lists, one of the batch itself or of a later batch, and
// a file outside the batch's own directory are refused.
func TestReplaces(t *testing.T) {
	b1, b2, b3 := testBatch(1, 1), testBatch(2, 1), testBatch(3, 1)
	f1, f2 := b1.Tables[TableRecords].Files[0].Path, b2.Tables[TableRecords].Files[0].Path
	// batch 3 merged batch 2's file into its own
	b3.Replaces = []string{f2}
	m, err := ReadManifest(manifestFS(b1, b2, b3))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Files(TableRecords); len(got) != 2 || got[0] != f1 || got[1] != b3.Tables[TableRecords].Files[0].Path {
		t.Errorf("files %v", got)
	}
	if by, ok := m.Replaced(f2); !ok || by != 3 {
		t.Errorf("batch 2's file replaced by %d %v", by, ok)
	}
	if _, ok := m.Replaced(f1); ok {
		t.Errorf("batch 1's file replaced")
	}
	markers, files := ReplacedFiles(&m.Batches[2])
	if !slices.Equal(files, []string{f2}) || !slices.Equal(markers, []string{"records/batch=2/" + MarkerName}) {
		t.Errorf("to remove: %v, markers %v", files, markers)
	}

	b4 := testBatch(4, 1)
	b4.Replaces = []string{f2}
	if _, err := ReadManifest(manifestFS(b1, b2, b3, b4)); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "replaced by batches 3 and 4") {
		t.Errorf("replaced twice: %v", err)
	}
	b4.Replaces = []string{"records/batch=2/day=2026-12-01/part-0.parquet"}
	if _, err := ReadManifest(manifestFS(b1, b2, b3, b4)); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "no batch before it lists") {
		t.Errorf("a file never listed: %v", err)
	}
	for _, p := range []string{"records/batch=4/day=x/part.parquet", "records/batch=5/part.parquet", "records/batch=03/part.parquet", "nosuch/batch=1/part.parquet", "records/batch=1/../x"} {
		b4.Replaces = []string{p}
		if _, err := ParseBatch(b4.Encode()); !errors.Is(err, ErrManifest) {
			t.Errorf("replaces %s: %v", p, err)
		}
	}
	b4.Replaces = nil
	b4.Tables = map[string]BatchTable{TableRecords: {Files: []MarkerFile{{Path: f1}}}}
	if _, err := ParseBatch(b4.Encode()); !errors.Is(err, ErrManifest) {
		t.Errorf("a file in batch 1's directory listed by batch 4: %v", err)
	}
}

// TestMergeInput: the live files below the threshold (or of no known
// size) and of the format, by table and day, in batch order.
func TestMergeInput(t *testing.T) {
	sized := func(id int, bytes int64) *Batch {
		b := testBatch(id, 1)
		b.Tables[TableRecords].Files[0].Bytes = bytes
		return b
	}
	b4 := sized(4, 300)
	b4.Replaces = []string{sized(2, 0).Tables[TableRecords].Files[0].Path}
	m, err := ReadManifest(manifestFS(sized(1, 500), sized(2, 100), testBatch(3, 1), b4))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.MergeInput(nil, 400, ".parquet").Live[TableRecords]["day=2026-12-01"] {
		got = append(got, f.Path)
	}
	// 1: too big; 2: replaced; 3: no size (a walscope before merging):
	// kept, stat'ed by mergeStaged
	if want := []string{testBatch(3, 1).Tables[TableRecords].Files[0].Path, b4.Tables[TableRecords].Files[0].Path}; !slices.Equal(got, want) {
		t.Errorf("live small files %v, want %v", got, want)
	}
	if n := len(m.MergeInput(nil, 1000, ".jsonl").Live); n != 0 {
		t.Errorf("another format: %d tables", n)
	}
}

// TestMergeRuns: from the last file backwards, runs of at most the bytes
// and rows; the earlier files before the first run without one of the
// batch's stay.
func TestMergeRuns(t *testing.T) {
	in := func(name string, bytes, rows int64, earlier bool) mergeInput {
		return mergeInput{f: MarkerFile{Path: name, Rows: rows}, bytes: bytes, earlier: earlier}
	}
	files := []mergeInput{in("e1", 60, 6, true), in("e2", 3, 1, true), in("e3", 5, 1, true), in("o1", 2, 1, false), in("o2", 1, 1, false)}
	show := func(runs [][]mergeInput) string {
		var s []string
		for _, r := range runs {
			var names []string
			for _, x := range r {
				names = append(names, x.f.Path)
			}
			s = append(s, strings.Join(names, "+"))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		below, rows int64
		want        string
	}{
		{64, 0, "e2+e3+o1+o2"},      // e1 stays: 60 more would pass 64
		{71, 0, "e2+e3+o1+o2"},      // e1 stays: more than 8 times the night's 3 bytes, and than 71/16
		{1000, 0, "e1+e2+e3+o1+o2"}, // e1 is less than 1000/16
		{8, 0, "e3+o1+o2"},
		{2, 0, "o1 o2"},  // nothing fits with another: as they are
		{64, 2, "o1+o2"}, // two rows a file: e3 stays
		{64, 3, "e3+o1+o2"},
	} {
		if got := show(mergeRuns(files, c.below, c.rows)); got != c.want {
			t.Errorf("below %d rows %d: %s, want %s", c.below, c.rows, got, c.want)
		}
	}
	// e3 is 5 bytes: more than 8 times the night's 0, and than 64/16
	if got := show(mergeRuns([]mergeInput{in("e3", 5, 1, true), in("o", 0, 1, false)}, 64, 0)); got != "o" {
		t.Errorf("a night of nothing: %q", got)
	}
	if got := show(mergeRuns(files[:3], 100, 0)); got != "" {
		t.Errorf("no file of the batch: %q", got)
	}
}

// TestConcatText: JSON Lines and CSV files of one table's columns are
// joined (a CSV header once); files of other columns are refused.
func TestConcatText(t *testing.T) {
	dir := t.TempDir()
	write := func(f Format, s *Schema, lo, hi int) []byte {
		p := filepath.Join(dir, fmt.Sprintf("%s-%d-%d%s", s.Table, lo, len(s.Columns), f.Ext()))
		return writeTestRows(t, p, f, s, lo, hi, Options{})
	}
	other := testSchema.With(Column{Name: "extra", Kind: String})
	for _, f := range []Format{JSONL, CSV} {
		out := filepath.Join(dir, "merged"+f.Ext())
		if err := concatText(out, f, [][]byte{write(f, testSchema, 0, 10), write(f, testSchema, 10, 25)}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(out)
		if want := write(f, testSchema, 0, 25); string(got) != string(want) {
			t.Errorf("%s: merged %d bytes, one file of the same rows %d", f, len(got), len(want))
		}
		if err := concatText(filepath.Join(dir, "bad"+f.Ext()), f, [][]byte{write(f, testSchema, 0, 10), write(f, other, 0, 10)}); !errors.Is(err, ErrConcat) {
			t.Errorf("%s of other columns: %v", f, err)
		}
	}
}
