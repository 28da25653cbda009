package rows_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rows"
	"github.com/walscope/walscope/xlog"
)

// TestParquetChanges: the changes of fixtures/rows' mixed incident to
// table loose (an identity column, a generated one, json, an enum, arrays;
// updates, deletes and inserts), written with NewParquet's layout and read
// back with arrow-go: one row per change in order, lsn and xid the
// change's, has_old and has_new its images, every old_ and new_ column
// null exactly where the change has no such row or the value is NULL.
// (internal/duckdbtest compares the values with --format jsonl.)
func TestParquetChanges(t *testing.T) {
	b, wal, _ := fixture(t)
	res, err := rows.Changes(rows.Config{Backup: replay.OpenBackup(b), WAL: wal, Options: xlog.Options{FollowHistory: true}, XID: 823, Relation: "loose"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if len(res.Relations) != 1 || len(res.Changes) == 0 {
		t.Fatalf("%d relations, %d changes", len(res.Relations), len(res.Changes))
	}
	rel := res.Relations[0]
	p := rows.NewParquet(rel)
	text := func(dst []byte, typ uint32, datum []byte) ([]byte, error) { return fmt.Appendf(dst, "%x", datum), nil }
	path := filepath.Join(t.TempDir(), "loose.parquet")
	w, err := export.Create(path, export.Parquet, p.Schema, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var r export.Row
	for i := range res.Changes {
		if r, err = p.Append(r[:0], &res.Changes[i], text); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(r); err != nil {
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
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if int(tbl.NumRows()) != len(res.Changes) {
		t.Fatalf("%d rows, %d changes", tbl.NumRows(), len(res.Changes))
	}
	rec := array.NewTableReader(tbl, tbl.NumRows())
	defer rec.Release()
	rec.Next()
	batch := rec.RecordBatch()
	col := func(name string) arrow.Array {
		idx := batch.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s in %v", name, batch.Schema())
		}
		return batch.Column(idx[0])
	}
	checked := 0
	for i, c := range res.Changes {
		if got := col("lsn").(*array.Int64).Value(i); got != int64(c.LSN) {
			t.Errorf("change %d: lsn %d, want %d", i, got, c.LSN)
		}
		if got := col("lsn_text").(*array.String).Value(i); got != c.LSN.String() {
			t.Errorf("change %d: lsn_text %s, want %s", i, got, c.LSN)
		}
		if got := col("xid").(*array.Int64).Value(i); got != int64(c.XID) {
			t.Errorf("change %d: xid %d, want %d", i, got, c.XID)
		}
		if got := col("op").(*array.String).Value(i); got != string(c.Op) {
			t.Errorf("change %d: op %s, want %s", i, got, c.Op)
		}
		if col("has_old").(*array.Boolean).Value(i) != (c.Old != nil) || col("has_new").(*array.Boolean).Value(i) != (c.New != nil) {
			t.Errorf("change %d (%s): has_old/has_new wrong", i, c.Op)
		}
		for _, img := range []struct {
			prefix string
			row    *rows.Row
		}{{"old_", c.Old}, {"new_", c.New}} {
			for k, tc := range rel.Table.Columns {
				wantNull := img.row == nil || img.row.Nulls[k]
				if got := col(img.prefix + tc.Attribute.Name).IsNull(i); got != wantNull {
					t.Errorf("change %d %s%s: null %v, want %v", i, img.prefix, tc.Attribute.Name, got, wantNull)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
	t.Logf("%d changes, %d old_/new_ cells null where they should be", len(res.Changes), checked)
}
