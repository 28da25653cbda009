package rows

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
	"github.com/walscope/walscope/xlog"
)

// Format turns the changes' values into text. The caller gives the
// output functions (package typeout's Formatter.Append, for instance), so
// that the settings they print with are the caller's choice.
type Format struct {
	// Text appends a datum as its type's output function prints it.
	Text table.ValueText
	// ISOText is Text under DateStyle ISO (row_to_json's dates and
	// timestamps); nil: Text.
	ISOText table.ValueText
	// Literal appends text as an SQL literal cast to typeName (package
	// typeout's AppendLiteral).
	Literal func(dst, text []byte, typeName string) []byte
	// CopyText appends text quoted as COPY's text format quotes a column
	// (package typeout's AppendCopyText with a tab).
	CopyText func(dst, text []byte) []byte
	// Settings are the statements that make the server read the literals
	// back as Text printed them (SET LOCAL DateStyle ..., one a line),
	// written at the top of the undo script's transaction.
	Settings string
	// Name converts a column's or relation's name for the JSON output
	// (nil: as stored; cmd/walscope gives it in UTF-8, as JSON is).
	Name func(string) string

	val []byte
}

func (f *Format) jsonName(name string) []byte {
	if f.Name != nil {
		name = f.Name(name)
	}
	return []byte(name)
}

// AppendRowJSON appends row as row_to_json(x) prints it: an object of the
// relation's columns in order, without spaces.
func (f *Format) AppendRowJSON(dst []byte, rel *Relation, row *Row) ([]byte, error) {
	if row == nil {
		return append(dst, "null"...), nil
	}
	rel = row.layout(rel)
	iso := f.ISOText
	if iso == nil {
		iso = f.Text
	}
	dst = append(dst, '{')
	n := 0
	for i, col := range rel.Table.Columns {
		if row.Unknown != nil && row.Unknown[i] {
			continue // not in the WAL (a key-only old row): left out
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = typeout.AppendJSONString(dst, f.jsonName(col.Attribute.Name))
		dst = append(dst, ':')
		if row.Nulls[i] {
			dst = append(dst, "null"...)
			continue
		}
		var err error
		if dst, err = table.AppendJSONValue(dst, rel.Catalog, col.Attribute.TypID, row.Values[i], f.Text, iso); err != nil {
			return dst, f.columnError(rel, row, i, err)
		}
	}
	return append(dst, '}'), nil
}

func (f *Format) columnError(rel *Relation, row *Row, i int, err error) error {
	return &table.RowError{Block: row.Block, Offset: row.Offset, Column: rel.Table.Columns[i].Attribute.Name, Err: err}
}

// AppendJSON appends one change as a JSON object (no newline):
// {"lsn","xid","relation","op","old","new"}, old and new as row_to_json
// prints the rows (null where there is none).
func (f *Format) AppendJSON(dst []byte, c *Change) ([]byte, error) {
	dst = fmt.Appendf(dst, `{"lsn":"%s","xid":%d,"relation":`, c.LSN, c.XID)
	dst = typeout.AppendJSONString(dst, f.jsonName(c.Rel.Name()))
	dst = fmt.Appendf(dst, `,"op":"%s","old":`, c.Op)
	var err error
	if dst, err = f.AppendRowJSON(dst, c.Rel, c.Old); err != nil {
		return dst, err
	}
	dst = append(dst, `,"new":`...)
	if dst, err = f.AppendRowJSON(dst, c.Rel, c.New); err != nil {
		return dst, err
	}
	// without a backup: where each version came from, why one is missing
	for _, kv := range [...][2]string{{"old_from", string(c.OldFrom)}, {"new_from", string(c.NewFrom)}, {"old_missing", c.OldMissing}, {"new_missing", c.NewMissing}} {
		if kv[1] != "" {
			dst = append(dst, ',')
			dst = typeout.AppendJSONString(dst, []byte(kv[0]))
			dst = append(dst, ':')
			dst = typeout.AppendJSONString(dst, []byte(kv[1]))
		}
	}
	return append(dst, '}'), nil
}

// AppendCopy appends row as a line of COPY's text format (with its
// newline), its generated columns left out as COPY leaves them.
func (f *Format) AppendCopy(dst []byte, rel *Relation, row *Row) ([]byte, error) {
	rel = row.layout(rel)
	n := 0
	for i, col := range rel.Table.Columns {
		if col.Attribute.Generated != 0 {
			continue // COPY with no column list leaves them out (copy.c's CopyGetAttnums)
		}
		if n > 0 {
			dst = append(dst, '\t')
		}
		n++
		if row.Nulls[i] {
			dst = append(dst, `\N`...)
			continue
		}
		var err error
		if f.val, err = f.Text(f.val[:0], col.Attribute.TypID, row.Values[i]); err != nil {
			return dst, f.columnError(rel, row, i, err)
		}
		dst = f.CopyText(dst, f.val)
	}
	return append(dst, '\n'), nil
}

// literal appends column i of row as a cast SQL literal (NULL for null).
func (f *Format) literal(dst []byte, rel *Relation, row *Row, i int) ([]byte, error) {
	if row.Nulls[i] {
		return append(dst, "NULL"...), nil
	}
	a := rel.Table.Columns[i].Attribute
	var err error
	if f.val, err = f.Text(f.val[:0], a.TypID, row.Values[i]); err != nil {
		return dst, f.columnError(rel, row, i, err)
	}
	return f.Literal(dst, f.val, table.FormatType(rel.Catalog, a.TypID, a.TypMod)), nil
}

// noEquality are the types without an equality operator (json, xml,
// point and their arrays): compared as text.
var noEquality = map[uint32]bool{114: true, 199: true, 142: true, 143: true, 600: true, 1017: true}

// appendWhere appends the condition that finds row: by the relation's key
// where it has one (primary key, else replica identity), else by every
// column (IS NOT DISTINCT FROM), one row of several equal ones.
func (f *Format) appendWhere(dst []byte, rel *Relation, row *Row) ([]byte, error) {
	rel = row.layout(rel)
	var err error
	if rel.Key != nil {
		dst = append(dst, " WHERE "...)
		for n, i := range rel.Key {
			if n > 0 {
				dst = append(dst, " AND "...)
			}
			if unknown(row, i) {
				return dst, fmt.Errorf("key column %s of the row is not known", rel.Table.Columns[i].Attribute.Name)
			}
			dst = append(dst, table.QuoteIdent(rel.Table.Columns[i].Attribute.Name)...)
			if row.Nulls[i] {
				dst = append(dst, " IS NULL"...)
				continue
			}
			dst = append(dst, " = "...)
			if dst, err = f.literal(dst, rel, row, i); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	dst = fmt.Appendf(dst, " WHERE ctid = (SELECT ctid FROM %s WHERE ", rel.Name())
	for i, col := range rel.Table.Columns {
		if i > 0 {
			dst = append(dst, " AND "...)
		}
		a := col.Attribute
		name := table.QuoteIdent(a.Name)
		if noEquality[a.TypID] {
			dst = append(dst, name...)
			dst = append(dst, "::text IS NOT DISTINCT FROM "...)
			if row.Nulls[i] {
				dst = append(dst, "NULL"...)
				continue
			}
			if f.val, err = f.Text(f.val[:0], a.TypID, row.Values[i]); err != nil {
				return dst, f.columnError(rel, row, i, err)
			}
			dst = f.Literal(dst, f.val, "text")
			continue
		}
		dst = append(dst, name...)
		dst = append(dst, " IS NOT DISTINCT FROM "...)
		if dst, err = f.literal(dst, rel, row, i); err != nil {
			return dst, err
		}
	}
	return append(dst, " LIMIT 1)"...), nil
}

func (f *Format) appendInsert(dst []byte, rel *Relation, row *Row) ([]byte, error) {
	rel = row.layout(rel)
	dst = fmt.Appendf(dst, "INSERT INTO %s (", rel.Name())
	n := 0
	for _, col := range rel.Table.Columns {
		if col.Attribute.Generated != 0 {
			continue // a generated column is computed again
		}
		if n > 0 {
			dst = append(dst, ", "...)
		}
		n++
		dst = append(dst, table.QuoteIdent(col.Attribute.Name)...)
	}
	dst = append(dst, ')')
	for _, col := range rel.Table.Columns {
		if col.Attribute.Identity == 'a' {
			dst = append(dst, " OVERRIDING SYSTEM VALUE"...) // GENERATED ALWAYS AS IDENTITY: the old value back
			break
		}
	}
	dst = append(dst, " VALUES ("...)
	n = 0
	var err error
	for i, col := range rel.Table.Columns {
		if col.Attribute.Generated != 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, ", "...)
		}
		n++
		if dst, err = f.literal(dst, rel, row, i); err != nil {
			return dst, err
		}
	}
	return append(dst, ");\n"...), nil
}

// writeRestore writes the undo of a table whose definition the
// transaction changed (Relation.Before): TRUNCATE, its definition put
// back, and its rows as of before the transaction (those visible just
// before the commit, in the file of before, in its layout) inserted
// again, in their physical order. TRUNCATE, not DELETE: it fails where
// another table's foreign key references the table, where a DELETE could
// cascade to that table's rows.
func (f *Format) writeRestore(bw *bufio.Writer, res *Result, a *alteration, fail func(*Change, error)) error {
	before := a.rel.Before
	if a.cannot != "" {
		fail(&Change{LSN: res.CommitLSN, Op: Update, Rel: before}, fmt.Errorf("table %s cannot be put back: %s", before.Name(), a.cannot))
		return nil
	}
	if a.inPlace {
		return f.writeInPlace(bw, res, a, fail)
	}
	fmt.Fprintf(bw, "-- the transaction changed the definition of %s (ALTER TABLE: a column retyped, the table rewritten, or a column dropped from a table without a key): the table is emptied, its definition put back and its rows as of before the transaction inserted again (a change made to it since by another transaction is undone too)\n", before.Name())
	fmt.Fprintf(bw, "TRUNCATE %s;\n", a.rel.Name())
	for _, s := range a.ddl {
		bw.WriteString(s)
		bw.WriteByte('\n')
	}
	return f.eachRowBefore(bw, res, before, Truncate, fail, func(line []byte, row *Row) ([]byte, error) {
		return f.appendInsert(line, before, row)
	})
}

// eachRowBefore writes the statement appendRow appends for each row of
// before (a table the transaction altered, as of before it) visible just
// before the commit, in physical order. A row that cannot be decoded or
// written fails the undo as a change of op, and the rest of the table's
// rows are left out with it.
func (f *Format) eachRowBefore(bw *bufio.Writer, res *Result, before *Relation, op Op, fail func(*Change, error), appendRow func(line []byte, row *Row) ([]byte, error)) error {
	var line []byte
	b := res.pages
	var failed error
	err := b.r.VisibleTuples(before.Locator, func(blk uint32, off uint16, tup []byte) error {
		row, err := b.decodeRow(before, tup, blk, off)
		if err == nil {
			line, err = appendRow(line[:0], row)
		}
		if err != nil {
			failed = err
			return errStop
		}
		_, err = bw.Write(line)
		return err
	})
	if failed != nil {
		fail(&Change{LSN: res.CommitLSN, Op: op, Rel: before}, failed)
		return nil
	}
	return err
}

// writeInPlace writes the first part of the undo of a table whose
// definition the transaction changed, in place: the definition put back,
// and the values of the columns it dropped set back in every row it had
// before, by key (a row the transaction deleted or gave another key
// matches none, or one its own changes' undo sets again after).
func (f *Format) writeInPlace(bw *bufio.Writer, res *Result, a *alteration, fail func(*Change, error)) error {
	before := a.rel.Before
	fmt.Fprintf(bw, "-- the transaction changed the definition of %s (ALTER TABLE): put back first, its rows' changes undone below in its columns of before\n", before.Name())
	for _, s := range a.ddl {
		bw.WriteString(s)
		bw.WriteByte('\n')
	}
	if len(a.restore) == 0 {
		return nil
	}
	fmt.Fprintf(bw, "-- the values of the columns the transaction dropped, from the rows as of before it\n")
	return f.eachRowBefore(bw, res, before, Update, fail, func(line []byte, row *Row) ([]byte, error) {
		line = fmt.Appendf(line, "UPDATE %s SET ", before.Name())
		for n, i := range a.restore {
			if n > 0 {
				line = append(line, ", "...)
			}
			line = append(line, table.QuoteIdent(before.Table.Columns[i].Attribute.Name)...)
			line = append(line, " = "...)
			var err error
			if line, err = f.literal(line, before, row, i); err != nil {
				return line, err
			}
		}
		line, err := f.appendWhere(line, before, row)
		return append(line, ";\n"...), err
	})
}

// reshapedDrop tells whether rel is a table the transaction changed the
// columns of and then dropped (rel is then as of before it).
func (res *Result) reshapedDrop(rel *Relation) bool {
	return rel.Before == nil && !rel.Created && res.pages != nil && len(res.pages.attrHist[relKey{rel.Database.OID, rel.Class.OID}]) > 0
}

// inBefore gives a version of rel, a table the transaction altered, in
// the columns of rel.Before, by attribute number: a column its layout
// lacks (dropped by the transaction) is Unknown.
func inBefore(rel *Relation, row *Row) *Row {
	if row == nil || row.Rel == rel.Before {
		return row
	}
	bf := rel.Before
	at := map[int16]int{}
	for i, c := range rel.Table.Columns {
		at[c.Attribute.Num] = i
	}
	n := len(bf.Table.Columns)
	out := &Row{Block: row.Block, Offset: row.Offset, Values: make([][]byte, n), Nulls: make([]bool, n)}
	for i, c := range bf.Table.Columns {
		j, ok := at[c.Attribute.Num]
		if !ok || row.Unknown != nil && row.Unknown[j] {
			if out.Unknown == nil {
				out.Unknown = make([]bool, n)
			}
			out.Nulls[i], out.Unknown[i] = true, true
			continue
		}
		out.Values[i], out.Nulls[i] = row.Values[j], row.Nulls[j]
	}
	return out
}

func unknown(row *Row, i int) bool { return row.Unknown != nil && row.Unknown[i] }

// MaxMissingComments is how many changes that could not be decoded the
// undo script names in a "-- MISSING:" comment each; past them it counts.
const MaxMissingComments = 100

// WriteUndo writes the SQL that undoes the transaction's changes, in one
// transaction: its changes in reverse order, a deleted row inserted back,
// an updated one set back to its old values (the columns that changed)
// where its key finds the new version, an inserted one deleted; a
// TRUNCATE undone by inserting the rows the table had just before it, a
// DROP TABLE by creating the table (its columns and types as of just
// before) and inserting them; a table the transaction created is dropped
// (its rows with it), last. The changes are read back one at a time
// (Result.Backward) and written as they come. A change that could not be
// decoded makes the script end in ROLLBACK, with the reason in a comment,
// and is returned as the error after the script is written.
func (f *Format) WriteUndo(w io.Writer, res *Result) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "-- undo of transaction %d (committed at %s), rebuilt by walscope from the WAL\n-- %d changes, undone in reverse order\nBEGIN;\n%s", res.XID, res.CommitLSN, res.Len(), f.Settings)
	for _, s := range res.Skipped {
		fmt.Fprintf(bw, "-- not undone: %s\n", s)
	}
	var line []byte
	var firstErr error
	failed := 0
	fail := func(c *Change, err error) {
		if firstErr == nil {
			firstErr = fmt.Errorf("%s at %s (%s): %w", c.Op, c.LSN, c.Rel.Name(), err)
		}
		// the first MaxMissingComments are named; the rest counted at
		// the end (millions of damaged rows make no script of comments)
		if failed++; failed <= MaxMissingComments {
			fmt.Fprintf(bw, "-- MISSING: %s at %s of %s: %v\n", c.Op, c.LSN, c.Rel.Name(), err)
		}
	}
	// the rows of one TRUNCATE or DROP come in their physical order
	// (Backward), each inserted back as it comes
	type emptiedKey struct {
		op  Op
		lsn xlog.LSN
		rel *Relation
	}
	inPlace := map[*Relation]bool{}
	for _, a := range res.alters {
		inPlace[a.rel] = a.inPlace && a.cannot == ""
		if err := f.writeRestore(bw, res, a, fail); err != nil {
			return err
		}
	}
	var group emptiedKey
	groupFailed := false
	for c, err := range res.Backward() {
		if err != nil {
			return err
		}
		if c.Rel.Created {
			continue // dropped below, rows and all
		}
		if res.reshapedDrop(c.Rel) {
			// dropped after the transaction changed its columns: its
			// rows at the DROP are in columns of the transaction's, which
			// need not convert back; created again as it was before,
			// with its rows of before (its last change, the DROP, comes
			// first backward; its earlier ones are then left out)
			if k := (emptiedKey{c.Op, c.LSN, c.Rel}); c.Op == Drop && k != group {
				group = k
				fmt.Fprintf(bw, "-- %s was dropped at %s after the transaction changed its columns: created again with its columns of before (constraints, indexes, defaults and grants are not) and its rows as of before the transaction\n", c.Rel.Name(), c.LSN)
				bw.WriteString(c.Rel.Table.CreateTable(c.Rel.Name(), nil))
				if err := f.eachRowBefore(bw, res, c.Rel, Drop, fail, func(line []byte, row *Row) ([]byte, error) {
					return f.appendInsert(line, c.Rel, row)
				}); err != nil {
					return err
				}
			}
			continue
		}
		// a table the transaction altered: put back as a whole above, or
		// in place: its definition is back, its rows' changes undone in
		// the columns of before
		rel, old, nw := c.Rel, c.Old, c.New
		if c.Rel.Before != nil {
			if !inPlace[c.Rel] {
				continue
			}
			rel, old, nw = c.Rel.Before, inBefore(c.Rel, c.Old), inBefore(c.Rel, c.New)
		}
		if c.Op == Truncate || c.Op == Drop {
			if k := (emptiedKey{c.Op, c.LSN, c.Rel}); k != group {
				group, groupFailed = k, false
				line = line[:0]
				if c.Op == Drop {
					line = fmt.Appendf(line, "-- %s was dropped at %s: created again with its columns (constraints, indexes, defaults and grants are not)\n", rel.Name(), c.LSN)
					line = append(line, rel.Table.CreateTable(rel.Name(), nil)...)
				} else {
					line = fmt.Appendf(line, "-- %s was truncated at %s: its %d rows inserted back\n", rel.Name(), c.LSN, c.groupSize)
				}
				bw.Write(line)
			}
			if groupFailed {
				continue
			}
			if c.Err != nil {
				fail(c, c.Err)
				continue
			}
			line, err = f.appendInsert(line[:0], rel, old)
			if err != nil {
				// a value that cannot be written: the rest of the
				// table's rows are left out with it
				fail(c, err)
				groupFailed = true
				continue
			}
			bw.Write(line)
			continue
		}
		group = emptiedKey{}
		if c.Err != nil {
			fail(c, c.Err)
			continue
		}
		line = line[:0]
		switch c.Op {
		case Insert:
			line = fmt.Appendf(line, "DELETE FROM %s", rel.Name())
			if line, err = f.appendWhere(line, rel, nw); err == nil {
				line = append(line, ";\n"...)
			}
		case Delete:
			line, err = f.appendInsert(line, rel, old)
		case Update:
			line = fmt.Appendf(line, "UPDATE %s SET ", rel.Name())
			n := 0
			for k := range rel.Table.Columns {
				// a column the old version lacks (dropped by the
				// transaction before it wrote that version) is set back
				// by an earlier change's undo; one the new version lacks
				// is set from the old one
				if unknown(old, k) || !unknown(nw, k) && old.Nulls[k] == nw.Nulls[k] && bytes.Equal(old.Values[k], nw.Values[k]) || rel.Table.Columns[k].Attribute.Generated != 0 {
					continue
				}
				if n > 0 {
					line = append(line, ", "...)
				}
				n++
				line = append(line, table.QuoteIdent(rel.Table.Columns[k].Attribute.Name)...)
				line = append(line, " = "...)
				if line, err = f.literal(line, rel, old, k); err != nil {
					break
				}
			}
			if n == 0 {
				line = fmt.Appendf(line[:0], "-- %s at %s: an update that changed no column\n", rel.Name(), c.LSN)
				break
			}
			if err == nil {
				if line, err = f.appendWhere(line, rel, nw); err == nil {
					line = append(line, ";\n"...)
				}
			}
		}
		if err != nil {
			fail(c, err)
			continue
		}
		bw.Write(line)
	}
	for _, a := range res.alters {
		for _, st := range a.notNull {
			bw.WriteString(st)
			bw.WriteByte('\n')
		}
	}
	for i := len(res.Created) - 1; i >= 0; i-- {
		name := res.Created[i]
		kind := "TABLE "
		if strings.HasPrefix(name, "MATERIALIZED VIEW ") {
			kind = ""
		}
		fmt.Fprintf(bw, "-- created by the transaction\nDROP %s%s;\n", kind, name)
	}
	if failed > MaxMissingComments {
		fmt.Fprintf(bw, "-- MISSING: %d more changes that could not be decoded (%d in all; the first %d are named above)\n", failed-MaxMissingComments, failed, MaxMissingComments)
	}
	if firstErr != nil {
		bw.WriteString("-- INCOMPLETE: changes that could not be decoded are missing; the transaction is not committed\nROLLBACK;\n")
	} else {
		bw.WriteString("COMMIT;\n")
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return firstErr
}
