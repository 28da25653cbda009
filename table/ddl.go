package table

import (
	"fmt"
	"strings"

	"github.com/walscope/walscope/catalog"
)

// pg_catalog's oid (pg_namespace.dat).
const pgCatalogNamespace = 11

// FormatType names a column's type as format_type(atttypid, atttypmod)
// does (format_type.c), so that CREATE TABLE takes it back: the SQL
// standard's names for the built-in types that have one ("character
// varying(10)", "numeric(10,2)", "timestamp(3) with time zone"), others by
// name (schema-qualified outside pg_catalog), "[]" for arrays.
func FormatType(c *catalog.Catalog, typid uint32, typmod int32) string {
	t := c.Type(typid)
	if t == nil {
		return fmt.Sprintf("%d", typid) // an oid the catalog lacks: cast by oid is not SQL; the caller reports it
	}
	if t.Elem != 0 && t.Len == -1 && t.Category == 'A' {
		return FormatType(c, t.Elem, typmod) + "[]"
	}
	prec := func() string {
		if typmod >= 0 {
			return fmt.Sprintf("(%d)", typmod)
		}
		return ""
	}
	if t.Namespace == pgCatalogNamespace {
		switch t.Name {
		case "bool":
			return "boolean"
		case "int2":
			return "smallint"
		case "int4":
			return "integer"
		case "int8":
			return "bigint"
		case "float4":
			return "real"
		case "float8":
			return "double precision"
		case "bpchar":
			if typmod >= 4 {
				return fmt.Sprintf("character(%d)", typmod-4)
			}
			return "bpchar"
		case "varchar":
			if typmod >= 4 {
				return fmt.Sprintf("character varying(%d)", typmod-4)
			}
			return "character varying"
		case "numeric":
			if typmod >= 4 {
				m := typmod - 4
				return fmt.Sprintf("numeric(%d,%d)", (m>>16)&0xFFFF, int16(m&0xFFFF))
			}
			return "numeric"
		case "bit":
			if typmod >= 0 {
				return fmt.Sprintf("bit(%d)", typmod)
			}
			return "bit"
		case "varbit":
			if typmod >= 0 {
				return fmt.Sprintf("bit varying(%d)", typmod)
			}
			return "bit varying"
		case "time":
			return "time" + prec() + " without time zone"
		case "timetz":
			return "time" + prec() + " with time zone"
		case "timestamp":
			return "timestamp" + prec() + " without time zone"
		case "timestamptz":
			return "timestamp" + prec() + " with time zone"
		case "interval":
			return intervalType(typmod)
		case "char":
			return `"char"`
		}
		return quoteIdent(t.Name)
	}
	// qualified where the default search path ("$user", public) does not
	// see it, as format_type's TypeIsVisible test decides
	if ns := c.Namespace(t.Namespace); ns != nil && ns.Name != "public" {
		return quoteIdent(ns.Name) + "." + quoteIdent(t.Name)
	}
	return quoteIdent(t.Name)
}

// intervalType is format_type's interval with its fields and precision
// (INTERVAL_RANGE and INTERVAL_PRECISION of the typmod, datetime.h).
func intervalType(typmod int32) string {
	if typmod < 0 {
		return "interval"
	}
	const fullPrecision = 0xFFFF
	rng, precision := (typmod>>16)&0x7FFF, typmod&0xFFFF
	fields := map[int32]string{
		1 << 2: " year", 1 << 1: " month", 1 << 3: " day", 1 << 10: " hour", 1 << 11: " minute", 1 << 12: " second",
		1<<2 | 1<<1: " year to month", 1<<3 | 1<<10: " day to hour", 1<<3 | 1<<10 | 1<<11: " day to minute",
		1<<3 | 1<<10 | 1<<11 | 1<<12: " day to second", 1<<10 | 1<<11: " hour to minute",
		1<<10 | 1<<11 | 1<<12: " hour to second", 1<<11 | 1<<12: " minute to second",
	}
	s := "interval" + fields[rng]
	if precision != fullPrecision {
		s += fmt.Sprintf("(%d)", precision)
	}
	return s
}

// quoteIdent quotes an identifier as quote_ident does: only when it is not
// a plain lower-case name (keywords are quoted too, for the few that a
// column or table name can clash with).
func quoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			plain = false
			break
		}
	}
	if plain && !reserved[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// reserved are PostgreSQL's reserved key words (kwlist.h, RESERVED_KEYWORD
// and the column names that TYPE_FUNC_NAME_KEYWORD and COL_NAME_KEYWORD
// make ambiguous in CREATE TABLE).
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast check collate column
		constraint create current_catalog current_date current_role current_time current_timestamp current_user default
		deferrable desc distinct do else end except false fetch for foreign from grant group having in initially intersect
		into lateral leading limit localtime localtimestamp not null offset on only or order placing primary references
		returning select session_user some symmetric system_user table then to trailing true union unique user using variadic when
		where window with authorization binary collation concurrently cross current_schema freeze full ilike inner is isnull
		join left like natural notnull outer overlaps right similar tablesample verbose between bigint bit boolean char character
		coalesce dec decimal exists extract float greatest grouping inout int integer interval least national nchar none
		normalize nullif numeric out overlay position precision real row setof smallint substring time timestamp treat trim
		values varchar xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot
		xmlserialize xmltable`) {
		reserved[w] = true
	}
}

// QuoteIdent quotes an identifier for SQL as quote_ident does.
func QuoteIdent(s string) string { return quoteIdent(s) }

// CreateTable is a CREATE TABLE statement for the table's columns (those
// of Columns at the indexes cols, all when nil) under name (already quoted
// as the caller wants it), NOT NULL kept; defaults, constraints and
// indexes are not.
func (t *Table) CreateTable(name string, cols []int) string {
	if cols == nil {
		for i := range t.Columns {
			cols = append(cols, i)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", name)
	for i, ci := range cols {
		a := t.Columns[ci].Attribute
		fmt.Fprintf(&b, "    %s %s", quoteIdent(a.Name), FormatType(t.rel.Catalog, a.TypID, a.TypMod))
		if a.NotNull {
			b.WriteString(" NOT NULL")
		}
		if i < len(cols)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(");\n")
	return b.String()
}

// QualifiedName is the relation's name as of the target, schema-qualified
// and quoted.
func (t *Table) QualifiedName() string {
	c := t.rel.Catalog
	if ns := c.Namespace(t.rel.Class.Namespace); ns != nil {
		return quoteIdent(ns.Name) + "." + quoteIdent(t.rel.Class.Name)
	}
	return quoteIdent(t.rel.Class.Name)
}
