package rows

import (
	"fmt"
	"sort"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/table"
)

// alteration is a table whose definition the transaction changed, and
// how the undo script puts it back. In place (inPlace: no column retyped,
// the table not rewritten, and a key to find the rows by if a column was
// dropped): its definition
// put back first (ddl), the values of a dropped column set back in every
// row of before by its key (restore), then its rows' changes undone one
// by one in the columns of before, and NOT NULL set back on a dropped
// column last (notNull). Else as a whole: emptied (TRUNCATE), its
// definition put back, and its rows as of before the transaction
// inserted again, whatever the transaction did to them (a retyped
// column's values in its new type need not convert back).
type alteration struct {
	rel     *Relation // as the transaction left it; rel.Before as of before
	ddl     []string
	inPlace bool
	restore []int // the columns of before (indexes) the transaction dropped
	notNull []string
	// cannot: why the table cannot be put back (a dropped generated
	// column: its expression is not in the WAL); the script then fails
	cannot string
}

// alter notes table k, existing before the transaction, whose definition
// it changed: its relation as the transaction left it, with Before.
func (b *builder) alter(k relKey) error {
	s := b.cats[k.db]
	if err := b.afterCatalog(s, k.db); err != nil {
		return err
	}
	if s.after.Class(k.oid) == nil {
		return nil
	}
	before, err := b.open(s, s.cat, k)
	if err != nil {
		return err
	}
	rel, err := b.open(s, s.after, k)
	if err != nil {
		return err
	}
	rel.Before = before
	b.rels[k], b.altered[k] = rel, rel
	if !b.wanted(k) {
		return nil
	}
	a := &alteration{rel: rel}
	var notes []string
	a.ddl, notes, a.cannot = undoDefinition(before, rel, a)
	b.res.alters = append(b.res.alters, a)
	for _, n := range notes {
		b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("table %s: %s", before.Name(), n))
	}
	if a.cannot != "" {
		b.res.Skipped = append(b.res.Skipped, fmt.Sprintf("table %s: %s", before.Name(), a.cannot))
	}
	return nil
}

// undoDefinition gives the ALTER TABLE statements that bring the table
// after (emptied) back to the columns and name of before, by attribute
// number: a column the transaction added dropped, one it dropped added
// again (last: its place among the columns is not restored; its default,
// constraints and indexes are not in the WAL read), one it renamed or
// retyped renamed or retyped back (USING NULL: the table is empty), the
// table renamed or moved back. notes say what is not put back exactly;
// cannot, what cannot be put back at all.
func undoDefinition(before, after *Relation, a *alteration) (ddl, notes []string, cannot string) {
	bcols, acols := map[int16]*catalog.Attribute{}, map[int16]*catalog.Attribute{}
	var nums []int16
	var last int16
	for _, c := range before.Table.Columns {
		a := c.Attribute
		bcols[a.Num] = &a
		nums = append(nums, a.Num)
		last = max(last, a.Num)
	}
	for _, c := range after.Table.Columns {
		a := c.Attribute
		acols[a.Num] = &a
		if bcols[a.Num] == nil {
			nums = append(nums, a.Num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	// in place unless a column is retyped, or one is dropped and the rows
	// have no key (or the key lost a column) to set its values back by,
	retyped, dropped := false, false
	for _, n := range nums {
		b, a := bcols[n], acols[n]
		retyped = retyped || b != nil && a != nil && (b.TypID != a.TypID || b.TypMod != a.TypMod)
		dropped = dropped || b != nil && a == nil
	}
	// nor if it was rewritten: a version read after the rewrite is its
	// copy, in the layout the transaction left, without the values of a
	// column it dropped
	a.inPlace = !retyped && before.Locator == after.Locator
	if dropped {
		a.inPlace = a.inPlace && before.Key != nil
		for _, i := range before.Key {
			a.inPlace = a.inPlace && acols[before.Table.Columns[i].Attribute.Num] != nil
		}
	}
	name := after.Name()
	alter := func(format string, args ...any) {
		ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s ", name)+fmt.Sprintf(format, args...)+";")
	}
	// added columns dropped first (freeing their names), then renames,
	// types, and the dropped columns added again
	for _, n := range nums {
		if bcols[n] == nil {
			alter("DROP COLUMN %s", table.QuoteIdent(acols[n].Name))
		}
	}
	for _, n := range nums {
		b, a := bcols[n], acols[n]
		if b != nil && a != nil && b.Name != a.Name {
			alter("RENAME COLUMN %s TO %s", table.QuoteIdent(a.Name), table.QuoteIdent(b.Name))
		}
	}
	for _, n := range nums {
		b, a := bcols[n], acols[n]
		if b != nil && a != nil && (b.TypID != a.TypID || b.TypMod != a.TypMod) {
			alter("ALTER COLUMN %s TYPE %s USING NULL", table.QuoteIdent(b.Name), table.FormatType(before.Catalog, b.TypID, b.TypMod))
		}
	}
	for _, n := range nums {
		b := bcols[n]
		if b == nil || acols[n] != nil {
			continue
		}
		if b.Generated != 0 {
			cannot = fmt.Sprintf("its generated column %s was dropped: its expression is not in the WAL read, so it cannot be added back, and the undo script fails", b.Name)
			continue
		}
		def := table.FormatType(before.Catalog, b.TypID, b.TypMod)
		if b.NotNull && !a.inPlace {
			def += " NOT NULL" // the table is empty
		}
		alter("ADD COLUMN %s %s", table.QuoteIdent(b.Name), def)
		for i, c := range before.Table.Columns {
			if c.Attribute.Num == n {
				a.restore = append(a.restore, i)
			}
		}
		if b.NotNull && a.inPlace {
			a.notNull = append(a.notNull, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL;", before.Name(), table.QuoteIdent(b.Name)))
		}
		if n != last {
			notes = append(notes, fmt.Sprintf("column %s, dropped by the transaction, is added back as the last column, not at its place", b.Name))
		}
		if b.HasDef || b.Identity != 0 {
			notes = append(notes, fmt.Sprintf("column %s, dropped by the transaction, is added back without its default or identity (not in the WAL read), with its values", b.Name))
		}
	}
	bns, ans := before.Catalog.Namespace(before.Class.Namespace), after.Catalog.Namespace(after.Class.Namespace)
	if bns != nil && ans != nil && bns.Name != ans.Name {
		alter("SET SCHEMA %s", table.QuoteIdent(bns.Name))
		name = table.QuoteIdent(bns.Name) + "." + table.QuoteIdent(after.Class.Name)
	}
	if before.Class.Name != after.Class.Name {
		alter("RENAME TO %s", table.QuoteIdent(before.Class.Name))
	}
	return ddl, notes, cannot
}
