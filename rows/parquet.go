package rows

import (
	"fmt"

	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/table"
)

// Parquet writes the changes of one relation as rows of a Parquet file
// (`walscope rows --format parquet`): one row per change, in WAL order,
// with the columns
//
//	lsn, lsn_text   the record's LSN (INT64, and PostgreSQL's X/Y text)
//	xid             the (sub)transaction whose record it is
//	relation        the relation's schema-qualified name
//	op              insert, update, delete, truncate or drop
//	has_old         whether the change has an old row (update, delete, truncate, drop)
//	has_new         whether it has a new row (insert, update)
//	old_<column>... the old row's columns, typed as `walscope table
//	new_<column>... --format parquet` types them (package table's
//	                ParquetColumns, companion _special columns included);
//	                null where the change has no such row
type Parquet struct {
	// Schema is the file's schema (its table name the relation's).
	Schema   *export.Schema
	rel      *Relation
	name     string // the relation's qualified name, in UTF-8
	old, new []table.ParquetColumn
	cols     []int
	nulls    []bool   // all true: a missing image
	none     [][]byte // its values
}

// Fixed columns of a rows Parquet file, before the old and new images.
var parquetFixed = []export.Column{
	{Name: "lsn", Kind: export.LSN},
	{Name: "xid", Kind: export.Int64},
	{Name: "relation", Kind: export.String, Dict: true},
	{Name: "op", Kind: export.String, Dict: true},
	{Name: "has_old", Kind: export.Bool},
	{Name: "has_new", Kind: export.Bool},
}

// NewParquet returns the Parquet layout of rel's changes: every column of
// the relation as of just before the commit (generated ones included, as
// row_to_json has them).
func NewParquet(rel *Relation) *Parquet {
	cols := rel.Table.Columns
	p := &Parquet{rel: rel,
		old: table.ParquetColumns(rel.Catalog, cols, "old_"),
		new: table.ParquetColumns(rel.Catalog, cols, "new_"),
	}
	p.Schema = table.ParquetSchema(table.ParquetName(rel.Catalog, rel.Class.Name), parquetFixed, p.old, p.new)
	for i := range cols {
		p.cols = append(p.cols, i)
		p.nulls = append(p.nulls, true)
	}
	p.none = make([][]byte, len(cols))
	p.name = table.ParquetName(rel.Catalog, rel.Name())
	return p
}

// Append appends the Values of one change of the relation to dst (text
// prints the columns Parquet holds as text); an error is a
// *table.RowError naming the row and column.
func (p *Parquet) Append(dst export.Row, c *Change, text table.ValueText) (export.Row, error) {
	dst = append(dst,
		export.Value{U: uint64(c.LSN)},
		export.Value{U: uint64(c.XID)},
		export.Value{S: p.name},
		export.Value{S: string(c.Op)},
		export.Value{U: b2u(c.Old != nil)},
		export.Value{U: b2u(c.New != nil)})
	var err error
	for _, img := range []struct {
		row  *Row
		cols []table.ParquetColumn
	}{{c.Old, p.old}, {c.New, p.new}} {
		if img.row != nil && img.row.Rel != nil {
			return dst, fmt.Errorf("%s at %s: the transaction changed the columns of %s, and its %s version is in the columns of before: a Parquet file has one set of columns (--format jsonl gives both)", c.Op, c.LSN, c.Rel.Name(), map[bool]string{true: "old", false: "new"}[img.row == c.Old])
		}
		if img.row == nil {
			dst, err = table.AppendParquetRow(dst, img.cols, p.cols, 0, 0, p.none, p.nulls, text)
		} else {
			dst, err = table.AppendParquetRow(dst, img.cols, p.cols, img.row.Block, img.row.Offset, img.row.Values, img.row.Nulls, text)
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
