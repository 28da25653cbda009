package rows

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/walscope/walscope/table"
)

// WriteUndoPartial writes the undo script of changes read without a backup
// (Result.WALOnly), in one transaction, undoing in reverse order what the
// WAL read gives exactly: an inserted row deleted (found by its key, else
// by all its columns), a deleted row inserted back and an updated one set
// back when its whole old version is known. Each change that cannot be
// undone (its old version, or its new one, not in the WAL) is listed in a
// comment at the top and where it would be, and returned in notUndone; the
// script still commits what it undoes. err is a value that could not be
// written (a type without an output function) or the writer's.
func (f *Format) WriteUndoPartial(w io.Writer, res *Result) (notUndone []string, err error) {
	// the changes are read twice (Result.Backward): what cannot be undone
	// is listed at the top
	for c, err := range res.Backward() {
		if err != nil {
			return nil, err
		}
		if why := CannotUndo(c); why != "" {
			notUndone = append(notUndone, fmt.Sprintf("%s at %s of %s: %s", c.Op, c.LSN, c.Rel.Name(), why))
		}
	}
	for _, m := range res.Missing {
		if m.Rows == 0 { // a file dropped at commit: every row it held
			notUndone = append(notUndone, fmt.Sprintf("every row of %s: %s", m.Relation, m.Reason))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "-- undo of transaction %d (committed at %s), rebuilt by walscope from the WAL alone (no base backup)\n", res.XID, res.CommitLSN)
	fmt.Fprintf(bw, "-- %d changes, undone here in reverse order but for what cannot be undone from the WAL alone:\n", res.Len())
	for _, s := range notUndone {
		fmt.Fprintf(bw, "-- NOT UNDONE: %s\n", s)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(bw, "-- not undone: %s\n", s)
	}
	fmt.Fprintf(bw, "BEGIN;\n%s", f.Settings)
	var line []byte
	for c, rerr := range res.Backward() {
		if rerr != nil {
			return notUndone, rerr
		}
		if why := CannotUndo(c); why != "" {
			fmt.Fprintf(bw, "-- NOT UNDONE: %s at %s of %s: %s\n", c.Op, c.LSN, c.Rel.Name(), why)
			continue
		}
		line = line[:0]
		switch c.Op {
		case Insert:
			line = fmt.Appendf(line, "DELETE FROM %s", c.Rel.Name())
			if line, err = f.appendWhere(line, c.Rel, c.New); err == nil {
				line = append(line, ";\n"...)
			}
		case Delete:
			line, err = f.appendInsert(line, c.Rel, c.Old)
		case Update:
			line = fmt.Appendf(line, "UPDATE %s SET ", c.Rel.Name())
			n := 0
			for k, col := range c.Rel.Table.Columns {
				if c.Old.Nulls[k] == c.New.Nulls[k] && bytes.Equal(c.Old.Values[k], c.New.Values[k]) || col.Attribute.Generated != 0 {
					continue
				}
				if n > 0 {
					line = append(line, ", "...)
				}
				n++
				line = append(line, table.QuoteIdent(col.Attribute.Name)...)
				line = append(line, " = "...)
				if line, err = f.literal(line, c.Rel, c.Old, k); err != nil {
					break
				}
			}
			if n == 0 {
				line = fmt.Appendf(line[:0], "-- %s at %s: an update that changed no column\n", c.Rel.Name(), c.LSN)
				break
			}
			if err == nil {
				if line, err = f.appendWhere(line, c.Rel, c.New); err == nil {
					line = append(line, ";\n"...)
				}
			}
		}
		if err != nil {
			return notUndone, fmt.Errorf("%s at %s (%s): %w", c.Op, c.LSN, c.Rel.Name(), err)
		}
		bw.Write(line)
	}
	bw.WriteString("COMMIT;\n")
	return notUndone, bw.Flush()
}

// CannotUndo says why a change read without a backup cannot be undone
// exactly ("" if it can).
func CannotUndo(c *Change) string {
	if c.Err != nil {
		return c.Err.Error()
	}
	switch c.Op {
	case Insert:
		if !c.New.Complete() {
			return "the new row is not in the WAL: " + c.NewMissing
		}
	case Delete:
		if !c.Old.Complete() {
			return "the deleted row is not in the WAL: " + c.OldMissing
		}
	case Update:
		if !c.Old.Complete() {
			return "the old row is not in the WAL: " + c.OldMissing
		}
		if !c.New.Complete() {
			return "the new row is not in the WAL: " + c.NewMissing
		}
	default:
		return "a " + string(c.Op) + " is not undone without a backup"
	}
	return ""
}
