// Package table reads a relation's rows as of a recovery target: the
// tuples a snapshot there sees (package replay rebuilds the pages, the
// commit state and the catalog), in physical order, deformed with the
// relation's descriptor as of the target (dropped columns skipped, columns
// added later read as their missing value), TOAST values fetched from the
// relation's TOAST table as of the same target and compressed values
// decompressed (package tuple).
package table

import (
	"errors"
	"fmt"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/tuple"
)

// ErrRow is the sentinel of a row that cannot be read (a damaged tuple or
// TOAST value): the error names its ctid; the other rows still read.
var ErrRow = errors.New("row cannot be read")

// RowError is a row that could not be read.
type RowError struct {
	Block  uint32
	Offset uint16
	Column string // "" when the tuple itself is damaged
	Err    error
}

func (e *RowError) Error() string {
	if e.Column != "" {
		return fmt.Sprintf("row (%d,%d), column %s: %v", e.Block, e.Offset, e.Column, e.Err)
	}
	return fmt.Sprintf("row (%d,%d): %v", e.Block, e.Offset, e.Err)
}
func (e *RowError) Unwrap() []error { return []error{ErrRow, e.Err} }

// Column is one column of the relation as of the target.
type Column struct {
	Attribute catalog.Attribute
	Type      *catalog.Type // nil if the catalog has no such type
	index     int           // in the descriptor
}

// Table is a relation's rows as of the replay's target.
type Table struct {
	r       *replay.Replay
	rel     *replay.Relation
	desc    []tuple.Attr
	Columns []Column
	toast   *ToastIndex
	toastID uint32
}

// Open prepares reading rel's rows; the TOAST table's visible chunks are
// indexed now (where each lies, not its bytes: ToastIndex), and read from
// the replay's pages as values are detoasted.
func Open(r *replay.Replay, rel *replay.Relation) (*Table, error) {
	c := rel.Catalog
	desc, err := c.Desc(rel.Class.OID)
	if err != nil {
		return nil, err
	}
	t := &Table{r: r, rel: rel, desc: desc}
	attrs := c.Attributes(rel.Class.OID)
	for i := range attrs {
		a := attrs[i]
		if a.Num <= 0 || a.Dropped || int(a.Num) > len(desc) {
			continue
		}
		t.Columns = append(t.Columns, Column{Attribute: a, Type: c.Type(a.TypID), index: int(a.Num) - 1})
	}
	if tc := c.Toast(rel.Class); tc != nil {
		loc, err := c.Locator(tc)
		if err != nil {
			return nil, err
		}
		if t.toast, err = NewToastIndex(r, loc, tc.OID, tc.Name); err != nil {
			return nil, err
		}
		t.toastID = tc.OID
	}
	return t, nil
}

// Toast is the index of the relation's TOAST values (nil when it has no
// TOAST table).
func (t *Table) Toast() *ToastIndex { return t.toast }

// Relation is the relation read.
func (t *Table) Relation() *replay.Relation { return t.rel }

// Row is one visible row: its ctid and its columns' values (Columns
// order), each the plain datum (detoasted, decompressed; nil for NULL).
type Row struct {
	Block  uint32
	Offset uint16
	Values [][]byte
	Nulls  []bool
}

// Scan calls each with every visible row in physical order (as a
// sequential scan, and so COPY, returns them). A row that cannot be read
// is handed to bad (its error a *RowError) and the scan goes on; a nil bad
// ends the scan with it.
func (t *Table) Scan(each func(*Row) error, bad func(error) error) error {
	var vals []tuple.Value
	row := &Row{Values: make([][]byte, len(t.Columns)), Nulls: make([]bool, len(t.Columns))}
	bufs := make([][]byte, len(t.Columns))
	loc := t.rel.Locator
	return t.r.VisibleTuples(loc, func(blk uint32, off uint16, tup []byte) error {
		var err error
		vals, _, err = tuple.Deform(vals[:0], tup, t.desc)
		if err != nil {
			return t.fail(bad, &RowError{Block: blk, Offset: off, Err: err})
		}
		row.Block, row.Offset = blk, off
		for i, c := range t.Columns {
			v := vals[c.index]
			if v.IsNull() {
				row.Values[i], row.Nulls[i] = nil, true
				continue
			}
			var d tuple.Detoaster
			if t.toast != nil {
				d = t.toast
			}
			bufs[i], err = v.Detoast(bufs[i][:0], d)
			if err != nil {
				return t.fail(bad, &RowError{Block: blk, Offset: off, Column: c.Attribute.Name, Err: err})
			}
			row.Values[i], row.Nulls[i] = bufs[i], false
		}
		return each(row)
	})
}

func (t *Table) fail(bad func(error) error, err error) error {
	if bad == nil {
		return err
	}
	return bad(err)
}

// Locator is where the relation's file is at the target.
func (t *Table) Locator() decode.RelFileLocator { return t.rel.Locator }
