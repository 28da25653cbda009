package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// Catalog collects the decoded rows of one database's catalogs (and the
// shared ones) and answers the questions a reader of its relation files
// asks: which relation a name means, its attributes as a tuple descriptor,
// its TOAST relation, its files.
type Catalog struct {
	Version xlog.Version
	// DatabaseOID is the database whose catalogs these are; its
	// pg_database row gives the default tablespace.
	DatabaseOID uint32
	// User is the name "$user" stands for in the search path ("": no
	// such schema is searched).
	User string
	// SharedMap and LocalMap are global/pg_filenode.map and the database's
	// pg_filenode.map: the relfilenodes of mapped catalogs.
	SharedMap, LocalMap *RelMap

	dec         *Decoder
	classes     map[uint32]*Class
	byName      map[nameKey]uint32
	namespaces  map[uint32]*Namespace
	nsByName    map[string]uint32
	attributes  map[uint32][]Attribute
	types       map[uint32]*Type
	enums       map[uint32][]Enum
	ranges      map[uint32]Range // by rngtypid
	multiranges map[uint32]Range // by rngmultitypid
	indexes     map[uint32]*Index
	databases   map[uint32]*Database
	tablespaces map[uint32]*Tablespace
}

type nameKey struct {
	ns   uint32
	name string
}

// New returns an empty catalog of version v for database db.
func New(v xlog.Version, db uint32) *Catalog {
	return &Catalog{
		Version: v, DatabaseOID: db, dec: NewDecoder(v),
		classes: map[uint32]*Class{}, byName: map[nameKey]uint32{}, namespaces: map[uint32]*Namespace{},
		nsByName: map[string]uint32{}, attributes: map[uint32][]Attribute{}, types: map[uint32]*Type{},
		enums: map[uint32][]Enum{}, ranges: map[uint32]Range{}, multiranges: map[uint32]Range{}, indexes: map[uint32]*Index{}, databases: map[uint32]*Database{},
		tablespaces: map[uint32]*Tablespace{},
	}
}

// Decoder returns the catalog's decoder (set its Toast to read external
// values).
func (c *Catalog) Decoder() *Decoder { return c.dec }

// Add decodes tup, a visible tuple of the catalog whose oid is catalogOID
// (pg_class 1259, pg_namespace 2615, pg_attribute 1249, pg_type 1247,
// pg_enum 3501, pg_range 3541, pg_index 2610, pg_database 1262, pg_tablespace 1213), and
// keeps the row. Tuples of other relations are an error.
func (c *Catalog) Add(catalogOID uint32, tup []byte) error {
	switch catalogOID {
	case RelationRelationID:
		x, err := c.dec.Class(tup)
		if err != nil {
			return err
		}
		c.AddClass(x)
	case NamespaceRelationID:
		x, err := c.dec.Namespace(tup)
		if err != nil {
			return err
		}
		c.namespaces[x.OID] = &x
		c.nsByName[x.Name] = x.OID
	case AttributeRelationID:
		x, err := c.dec.Attribute(tup)
		if err != nil {
			return err
		}
		c.attributes[x.Relid] = append(c.attributes[x.Relid], x)
	case TypeRelationID:
		x, err := c.dec.Type(tup)
		if err != nil {
			return err
		}
		c.types[x.OID] = &x
	case EnumRelationID:
		x, err := c.dec.Enum(tup)
		if err != nil {
			return err
		}
		c.enums[x.TypID] = append(c.enums[x.TypID], x)
	case RangeRelationID:
		x, err := c.dec.Range(tup)
		if err != nil {
			return err
		}
		c.ranges[x.TypID] = x
		if x.Multirange != 0 {
			c.multiranges[x.Multirange] = x
		}
	case IndexRelationID:
		x, err := c.dec.Index(tup)
		if err != nil {
			return err
		}
		c.indexes[x.IndexRelid] = &x
	case DatabaseRelationID:
		x, err := c.dec.Database(tup)
		if err != nil {
			return err
		}
		c.databases[x.OID] = &x
	case TableSpaceRelationID:
		x, err := c.dec.Tablespace(tup)
		if err != nil {
			return err
		}
		c.tablespaces[x.OID] = &x
	default:
		return fmt.Errorf("relation %d is not a catalog this package decodes: %w", catalogOID, ErrVersion)
	}
	return nil
}

// AddClass keeps a pg_class row.
func (c *Catalog) AddClass(x Class) {
	c.classes[x.OID] = &x
	c.byName[nameKey{x.Namespace, x.Name}] = x.OID
}

// Class returns the class with oid, or nil.
func (c *Catalog) Class(oid uint32) *Class { return c.classes[oid] }

// Namespace returns the namespace with oid, or nil.
func (c *Catalog) Namespace(oid uint32) *Namespace { return c.namespaces[oid] }

// Type returns the type with oid, or nil.
func (c *Catalog) Type(oid uint32) *Type { return c.types[oid] }

// Index returns the pg_index row of index oid, or nil.
func (c *Catalog) Index(oid uint32) *Index { return c.indexes[oid] }

// Database returns the database with oid, or nil.
func (c *Catalog) Database(oid uint32) *Database { return c.databases[oid] }

// Tablespace returns the tablespace with oid, or nil.
func (c *Catalog) Tablespace(oid uint32) *Tablespace { return c.tablespaces[oid] }

// Classes returns every class, by oid.
func (c *Catalog) Classes() []*Class {
	out := make([]*Class, 0, len(c.classes))
	for _, x := range c.classes {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b *Class) int { return cmp(a.OID, b.OID) })
	return out
}

func cmp(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Range returns range type rangeOID's pg_range row, and whether there is
// one.
func (c *Catalog) Range(rangeOID uint32) (Range, bool) {
	r, ok := c.ranges[rangeOID]
	return r, ok
}

// RangeSubtype returns the subtype of range type rangeOID (pg_range's
// rngsubtype), and whether pg_range has the type.
func (c *Catalog) RangeSubtype(rangeOID uint32) (subtype uint32, ok bool) {
	r, ok := c.ranges[rangeOID]
	return r.Subtype, ok
}

// MultirangeRange returns the range type of multirange type
// multirangeOID (the pg_range row whose rngmultitypid it is, 14+), and
// whether there is one.
func (c *Catalog) MultirangeRange(multirangeOID uint32) (rangeOID uint32, ok bool) {
	r, ok := c.multiranges[multirangeOID]
	return r.TypID, ok
}

// EnumLabels returns enum type typid's members in their sort order.
func (c *Catalog) EnumLabels(typid uint32) []Enum {
	out := slices.Clone(c.enums[typid])
	slices.SortFunc(out, func(a, b Enum) int {
		switch {
		case a.SortOrder < b.SortOrder:
			return -1
		case a.SortOrder > b.SortOrder:
			return 1
		}
		return 0
	})
	return out
}

// Attributes returns relation relid's user attributes (attnum > 0, dropped
// ones included: their bytes are still in older tuples) in attnum order.
func (c *Catalog) Attributes(relid uint32) []Attribute {
	var out []Attribute
	for _, a := range c.attributes[relid] {
		if a.Num > 0 {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Attribute) int { return int(a.Num) - int(b.Num) })
	return out
}

// ErrNotFound: no relation (or attribute set) answers the question.
var ErrNotFound = errors.New("not found in the catalog")

// Desc returns relation relid's tuple descriptor: attributes 1 to relnatts,
// each present once. A relation neither pg_class nor pg_attribute has is an
// error wrapping ErrNotFound (an empty descriptor would read every tuple as
// having no columns).
func (c *Catalog) Desc(relid uint32) ([]tuple.Attr, error) {
	attrs := c.Attributes(relid)
	if len(attrs) == 0 && c.classes[relid] == nil {
		return nil, fmt.Errorf("relation %d: not in pg_class: %w", relid, ErrNotFound)
	}
	out := make([]tuple.Attr, 0, len(attrs))
	for i, a := range attrs {
		if int(a.Num) != i+1 {
			return nil, fmt.Errorf("relation %d: attribute %d missing from pg_attribute: %w", relid, i+1, ErrNotFound)
		}
		out = append(out, a.Attr())
	}
	if cls := c.classes[relid]; cls != nil && int(cls.Natts) != len(out) {
		return nil, fmt.Errorf("relation %d (%s): relnatts %d, %d attributes in pg_attribute: %w", relid, cls.Name, cls.Natts, len(out), ErrNotFound)
	}
	return out, nil
}

// Toast returns the class's TOAST relation, or nil.
func (c *Catalog) Toast(cls *Class) *Class {
	if cls == nil || cls.ToastRelid == 0 {
		return nil
	}
	return c.classes[cls.ToastRelid]
}

// Locator returns where the class's files are (RelFileLocator): its
// tablespace (the database's default for 0, pg_global for a shared one),
// its database (0 for a shared one) and its relfilenode, from the relation
// map for a mapped catalog (relfilenode 0).
func (c *Catalog) Locator(cls *Class) (decode.RelFileLocator, error) {
	loc := decode.RelFileLocator{SpcOID: cls.Tablespace, DBOID: c.DatabaseOID, RelNumber: cls.RelFileNode}
	if cls.IsShared {
		loc.DBOID = 0
		if loc.SpcOID == 0 {
			loc.SpcOID = GlobalTableSpaceOID
		}
	} else if loc.SpcOID == 0 {
		loc.SpcOID = DefaultTableSpaceOID
		if db := c.databases[c.DatabaseOID]; db != nil && db.Tablespace != 0 {
			loc.SpcOID = db.Tablespace
		}
	}
	if loc.RelNumber == 0 {
		m, which := c.LocalMap, "the database's pg_filenode.map"
		if cls.IsShared {
			m, which = c.SharedMap, "global/pg_filenode.map"
		}
		n, ok := m.FileNode(cls.OID)
		if !ok {
			return loc, fmt.Errorf("relation %d (%s) is mapped and %s does not have it: %w", cls.OID, cls.Name, which, ErrNotFound)
		}
		loc.RelNumber = n
	}
	return loc, nil
}

// ErrName reports a relation name that does not parse.
var ErrName = errors.New("invalid relation name")

// maxIdentifier is NAMEDATALEN - 1: longer identifiers are truncated
// (truncate_identifier).
const maxIdentifier = NameDataLen - 1

// ParseQualifiedName splits a possibly qualified name as PostgreSQL reads
// one ('a.b'::regclass: stringToQualifiedNameList and SplitIdentifierString,
// varlena.c): parts separated by dots, optional whitespace around them,
// unquoted parts folded to lower case, "double-quoted" parts kept as written
// with "" standing for one quote, each truncated to 63 bytes.
func ParseQualifiedName(s string) ([]string, error) {
	var parts []string
	i := 0
	space := func() {
		for i < len(s) && strings.IndexByte(" \t\n\r\f\v", s[i]) >= 0 {
			i++
		}
	}
	space()
	if i == len(s) {
		return nil, fmt.Errorf("empty name: %w", ErrName)
	}
	for {
		var part string
		if s[i] == '"' {
			var b strings.Builder
			i++
			for {
				j := strings.IndexByte(s[i:], '"')
				if j < 0 {
					return nil, fmt.Errorf("%q: unterminated quoted identifier: %w", s, ErrName)
				}
				b.WriteString(s[i : i+j])
				i += j + 1
				if i < len(s) && s[i] == '"' { // "" inside quotes
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			part = b.String()
			if part == "" {
				return nil, fmt.Errorf("%q: zero-length quoted identifier: %w", s, ErrName)
			}
		} else {
			j := i
			for j < len(s) && s[j] != '.' && strings.IndexByte(" \t\n\r\f\v", s[j]) < 0 {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("%q: empty identifier: %w", s, ErrName)
			}
			part = downcase(s[i:j])
			i = j
		}
		parts = append(parts, truncateIdentifier(part))
		space()
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return nil, fmt.Errorf("%q: unexpected %q after an identifier: %w", s, s[i], ErrName)
		}
		i++
		space()
		if i == len(s) {
			return nil, fmt.Errorf("%q: ends with a dot: %w", s, ErrName)
		}
	}
	return parts, nil
}

// downcase folds ASCII letters, as downcase_identifier does in a multibyte
// encoding such as UTF-8.
func downcase(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// truncateIdentifier cuts s to 63 bytes at a character boundary.
func truncateIdentifier(s string) string {
	if len(s) <= maxIdentifier {
		return s
	}
	n := maxIdentifier
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// NameInUTF8 converts a name stored in a database of encoding enc
// (pg_database.encoding) to UTF-8; package typeout registers its NameUTF8
// (typeout imports catalog, so catalog cannot call it). Resolve uses it
// to find a relation of a database in another encoding by the UTF-8 name
// a terminal gives. Nil: names are compared as stored only.
var NameInUTF8 func(name string, enc int32) string

// Resolve finds the relation a name means, as PostgreSQL resolves
// 'name'::regclass with the default search_path ("$user", public, and
// pg_catalog searched first as it implicitly is): "table", "schema.table"
// or "database.schema.table" (the database must be this catalog's). A
// session's temporary schema (pg_temp_N), which PostgreSQL searches first,
// is not: a reader of files has no session.
func (c *Catalog) Resolve(name string) (*Class, error) {
	parts, err := ParseQualifiedName(name)
	if err != nil {
		return nil, err
	}
	switch len(parts) {
	case 1:
		path := []string{"pg_catalog"}
		if c.User != "" {
			path = append(path, c.User)
		}
		path = append(path, "public")
		for _, ns := range path {
			nsOID, ok := c.nsByName[ns]
			if !ok {
				continue
			}
			if oid, ok := c.byName[nameKey{nsOID, parts[0]}]; ok {
				return c.classes[oid], nil
			}
			if oid, ok := c.byUTF8Name(nsOID, parts[0]); ok {
				return c.classes[oid], nil
			}
		}
		return nil, fmt.Errorf("relation %q does not exist (search path pg_catalog, \"$user\", public): %w", parts[0], ErrNotFound)
	case 3:
		if db := c.databases[c.DatabaseOID]; db == nil || db.Name != parts[0] {
			return nil, fmt.Errorf("cross-database references are not implemented: %q: %w", name, ErrNotFound)
		}
		parts = parts[1:]
		fallthrough
	case 2:
		nsOID, ok := c.nsByName[parts[0]]
		if !ok {
			if nsOID, ok = c.schemaByUTF8Name(parts[0]); !ok {
				return nil, fmt.Errorf("schema %q does not exist: %w", parts[0], ErrNotFound)
			}
		}
		if oid, ok := c.byName[nameKey{nsOID, parts[1]}]; ok {
			return c.classes[oid], nil
		}
		if oid, ok := c.byUTF8Name(nsOID, parts[1]); ok {
			return c.classes[oid], nil
		}
		return nil, fmt.Errorf("relation %q.%q does not exist: %w", parts[0], parts[1], ErrNotFound)
	}
	return nil, fmt.Errorf("improper relation name (too many dotted names): %q: %w", name, ErrName)
}

// utf8Names tells whether name, given by a user, may be the UTF-8 form of
// a name stored in another encoding: it is not ASCII, the database's
// encoding is known and NameInUTF8 is registered.
func (c *Catalog) utf8Names(name string) (enc int32, ok bool) {
	db := c.databases[c.DatabaseOID]
	if NameInUTF8 == nil || db == nil {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return db.Encoding, true
		}
	}
	return 0, false
}

// byUTF8Name finds the relation of schema nsOID whose stored name is
// name in UTF-8 (one of a database in another encoding).
func (c *Catalog) byUTF8Name(nsOID uint32, name string) (uint32, bool) {
	enc, ok := c.utf8Names(name)
	if !ok {
		return 0, false
	}
	for k, oid := range c.byName {
		if k.ns == nsOID && NameInUTF8(k.name, enc) == name {
			return oid, true
		}
	}
	return 0, false
}

// schemaByUTF8Name is byUTF8Name for a schema.
func (c *Catalog) schemaByUTF8Name(name string) (uint32, bool) {
	enc, ok := c.utf8Names(name)
	if !ok {
		return 0, false
	}
	for n, oid := range c.nsByName {
		if NameInUTF8(n, enc) == name {
			return oid, true
		}
	}
	return 0, false
}
