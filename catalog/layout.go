package catalog

import (
	"fmt"
	"strings"

	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// layouts gives, for each catalog, its columns in each version, from the
// version they first appear in until the next entry: column order and types
// as src/include/catalog/pg_*.h declare them (CATALOG_VARLEN parts last),
// copied from the postgres.bki that genbki.pl makes from those headers in
// each version's build (10.23, 11.22, 12.22, 13.23, 14.23, 15.18, 16.14,
// 17.10, 18.4; TestLayoutsMatchBKI checks them against the builds present).
// Before 12 a catalog's oid is not a column: it is kept in the tuple header
// (HEAP_HASOID), as it is for every catalog but pg_attribute and pg_index.
var layouts = map[string][]struct {
	from    xlog.Version
	columns string
}{
	"pg_class": {
		{xlog.V10, "relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, relhasoids bool, relhaspkey bool, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relfrozenxid xid, relminmxid xid, relacl _aclitem, reloptions _text, relpartbound pg_node_tree"},
		{xlog.V11, "relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, relhasoids bool, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl _aclitem, reloptions _text, relpartbound pg_node_tree"},
		{xlog.V12, "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl _aclitem, reloptions _text, relpartbound pg_node_tree"},
		{xlog.V18, "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, relallfrozen int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl _aclitem, reloptions _text, relpartbound pg_node_tree"},
	},
	"pg_namespace": {
		{xlog.V10, "nspname name, nspowner oid, nspacl _aclitem"},
		{xlog.V12, "oid oid, nspname name, nspowner oid, nspacl _aclitem"},
	},
	"pg_attribute": {
		{xlog.V10, "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attstorage char, attalign char, attnotnull bool, atthasdef bool, attidentity char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, attacl _aclitem, attoptions _text, attfdwoptions _text"},
		{xlog.V11, "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attstorage char, attalign char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
		{xlog.V12, "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attstorage char, attalign char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
		{xlog.V14, "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
		{xlog.V16, "attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, attcacheoff int4, atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int2, attstattarget int2, attcollation oid, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
		{xlog.V17, "attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, attcacheoff int4, atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int2, attcollation oid, attstattarget int2, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
		{xlog.V18, "attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, attisdropped bool, attislocal bool, attinhcount int2, attcollation oid, attstattarget int2, attacl _aclitem, attoptions _text, attfdwoptions _text, attmissingval anyarray"},
	},
	"pg_type": {
		{xlog.V10, "typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl _aclitem"},
		{xlog.V12, "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl _aclitem"},
		{xlog.V14, "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, typsubscript regproc, typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl _aclitem"},
	},
	"pg_enum": {
		{xlog.V10, "enumtypid oid, enumsortorder float4, enumlabel name"},
		{xlog.V12, "oid oid, enumtypid oid, enumsortorder float4, enumlabel name"},
	},
	"pg_range": {
		{xlog.V10, "rngtypid oid, rngsubtype oid, rngcollation oid, rngsubopc oid, rngcanonical regproc, rngsubdiff regproc"},
		{xlog.V14, "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, rngcanonical regproc, rngsubdiff regproc"},
	},
	"pg_index": {
		{xlog.V10, "indexrelid oid, indrelid oid, indnatts int2, indisunique bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"},
		{xlog.V11, "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"},
		{xlog.V15, "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"},
	},
	"pg_database": {
		{xlog.V10, "datname name, datdba oid, encoding int4, datcollate name, datctype name, datistemplate bool, datallowconn bool, datconnlimit int4, datlastsysoid oid, datfrozenxid xid, datminmxid xid, dattablespace oid, datacl _aclitem"},
		{xlog.V12, "oid oid, datname name, datdba oid, encoding int4, datcollate name, datctype name, datistemplate bool, datallowconn bool, datconnlimit int4, datlastsysoid oid, datfrozenxid xid, datminmxid xid, dattablespace oid, datacl _aclitem"},
		{xlog.V15, "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid, datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text, datcollversion text, datacl _aclitem"},
		{xlog.V16, "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid xid, datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text, daticurules text, datcollversion text, datacl _aclitem"},
		{xlog.V17, "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, datallowconn bool, dathasloginevt bool, datconnlimit int4, datfrozenxid xid, datminmxid xid, dattablespace oid, datcollate text, datctype text, datlocale text, daticurules text, datcollversion text, datacl _aclitem"},
	},
	"pg_tablespace": {
		{xlog.V10, "spcname name, spcowner oid, spcacl _aclitem, spcoptions _text"},
		{xlog.V12, "oid oid, spcname name, spcowner oid, spcacl _aclitem, spcoptions _text"},
	},
}

// Catalog oids (the relation oids fixed in pg_*.h's CATALOG lines).
const (
	TypeRelationID       = 1247 // pg_type
	AttributeRelationID  = 1249 // pg_attribute
	RelationRelationID   = 1259 // pg_class
	DatabaseRelationID   = 1262 // pg_database
	TableSpaceRelationID = 1213 // pg_tablespace
	NamespaceRelationID  = 2615 // pg_namespace
	IndexRelationID      = 2610 // pg_index
	EnumRelationID       = 3501 // pg_enum
	RangeRelationID      = 3541 // pg_range

	GlobalTableSpaceOID  = 1664 // pg_global
	DefaultTableSpaceOID = 1663 // pg_default
	PGCatalogNamespace   = 11   // pg_catalog
	PublicNamespace      = 2200 // public
)

// relationOIDs names the catalogs this package decodes by their oid.
var relationOIDs = map[string]uint32{
	"pg_class": RelationRelationID, "pg_namespace": NamespaceRelationID, "pg_attribute": AttributeRelationID,
	"pg_type": TypeRelationID, "pg_enum": EnumRelationID, "pg_range": RangeRelationID, "pg_index": IndexRelationID,
	"pg_database": DatabaseRelationID, "pg_tablespace": TableSpaceRelationID,
}

// columnType is a catalog column type's storage (pg_type's typlen, typalign,
// typbyval, from pg_type.dat; the same in 10 to 18 but for _aclitem, whose
// aclitem grew from 12 to 16 bytes with 'd' alignment in 16).
type columnType struct {
	oid   uint32
	len   int16
	align byte
	byVal bool
}

func typeOf(name string, v xlog.Version) (columnType, bool) {
	switch name {
	case "bool":
		return columnType{16, 1, 'c', true}, true
	case "char":
		return columnType{18, 1, 'c', true}, true
	case "name":
		return columnType{19, NameDataLen, 'c', false}, true
	case "int2":
		return columnType{21, 2, 's', true}, true
	case "int2vector":
		return columnType{22, -1, 'i', false}, true
	case "int4":
		return columnType{23, 4, 'i', true}, true
	case "regproc":
		return columnType{24, 4, 'i', true}, true
	case "text":
		return columnType{25, -1, 'i', false}, true
	case "oid":
		return columnType{26, 4, 'i', true}, true
	case "xid":
		return columnType{28, 4, 'i', true}, true
	case "oidvector":
		return columnType{30, -1, 'i', false}, true
	case "pg_node_tree":
		return columnType{194, -1, 'i', false}, true
	case "float4":
		return columnType{700, 4, 'i', true}, true
	case "_text":
		return columnType{1009, -1, 'i', false}, true
	case "_aclitem":
		if v >= xlog.V16 {
			return columnType{1034, -1, 'd', false}, true
		}
		return columnType{1034, -1, 'i', false}, true
	case "anyarray":
		return columnType{2277, -1, 'd', false}, true
	}
	return columnType{}, false
}

// NameDataLen is NAMEDATALEN, the size of type name (a build option: 64 in
// every build walscope knows).
const NameDataLen = 64

// Layout is one catalog's row layout in one version.
type Layout struct {
	Catalog string // e.g. "pg_class"
	Version xlog.Version
	RelID   uint32       // the catalog's oid
	Attrs   []tuple.Attr // its columns as a tuple descriptor
	// OIDInHeader: before 12 the row's oid is the tuple header's
	// (HEAP_HASOID), not a column.
	OIDInHeader bool
	index       map[string]int
}

// Column returns the index of column name in Attrs, or -1 if the version
// has no such column.
func (l *Layout) Column(name string) int {
	if i, ok := l.index[name]; ok {
		return i
	}
	return -1
}

// ErrVersion is LayoutOf's error for a version or catalog it does not know.
var ErrVersion = fmt.Errorf("no catalog layout")

// LayoutOf returns catalog's layout in version v (10 to 18).
func LayoutOf(catalog string, v xlog.Version) (*Layout, error) {
	key := layoutKey{catalog, v}
	if l, ok := layoutCache[key]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("%s in %v: %w", catalog, v, ErrVersion)
}

type layoutKey struct {
	catalog string
	v       xlog.Version
}

// layoutCache holds every catalog's layout of every version, built once.
var layoutCache = buildLayouts()

func buildLayouts() map[layoutKey]*Layout {
	out := map[layoutKey]*Layout{}
	for catalog, entries := range layouts {
		for v := xlog.V10; v <= xlog.V18; v++ {
			cols := ""
			for _, e := range entries {
				if e.from <= v {
					cols = e.columns
				}
			}
			l := &Layout{Catalog: catalog, Version: v, RelID: relationOIDs[catalog], index: map[string]int{}}
			for _, c := range strings.Split(cols, ", ") {
				name, typ, _ := strings.Cut(c, " ")
				t, ok := typeOf(typ, v)
				if !ok {
					panic("catalog: unknown column type " + typ) // a typo in the table above; TestLayouts builds every one
				}
				l.index[name] = len(l.Attrs)
				l.Attrs = append(l.Attrs, tuple.Attr{Name: name, TypeOID: t.oid, Len: t.len, Align: t.align, ByVal: t.byVal})
			}
			l.OIDInHeader = v < xlog.V12 && catalog != "pg_attribute" && catalog != "pg_index"
			out[layoutKey{catalog, v}] = l
		}
	}
	return out
}
