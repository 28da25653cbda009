package rows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/xlog"
)

// CatalogQuery is the query whose one value is a catalog file (ReadCatalog):
// run in the database the transaction wrote in, on the live database or a
// restored copy, by
//
//	walscope rows --catalog-query | psql -XAtq -d DB -o walscope-catalog.json
//
// (psql -XAtq prints the value alone, unquoted, on one line). It gives, as
// their catalogs' rows in JSON (to_jsonb of the row: every column the
// server's version has, so that the same query runs on 10 to 18), the
// database, every schema, the relations and attributes of user objects
// (oid from FirstNormalObjectId 16384: tables, their TOAST tables,
// indexes, composite types), every type, enum label and range, and the
// indexes that are a primary key or a replica identity.
const CatalogQuery = `SELECT json_build_object(
  'walscope_catalog', 1,
  'server_version_num', current_setting('server_version_num')::int,
  'database', (SELECT to_jsonb(d) - 'datacl' || jsonb_build_object('oid', d.oid) FROM pg_database d WHERE d.datname = current_database()),
  'namespaces', (SELECT jsonb_agg(jsonb_build_object('oid', n.oid, 'nspname', n.nspname)) FROM pg_namespace n),
  'classes', (SELECT jsonb_agg(to_jsonb(c) - 'relacl' - 'reloptions' - 'relpartbound' || jsonb_build_object('oid', c.oid)) FROM pg_class c WHERE c.oid >= 16384),
  'attributes', (SELECT jsonb_agg(to_jsonb(a) - 'attacl' - 'attoptions' - 'attfdwoptions' - 'attmissingval'
      || jsonb_build_object('attmissingval', (to_jsonb(a) -> 'attmissingval') #>> '{}'))
    FROM pg_attribute a WHERE a.attrelid >= 16384 AND a.attnum > 0),
  'types', (SELECT jsonb_agg(to_jsonb(t) - 'typacl' - 'typdefaultbin' || jsonb_build_object('oid', t.oid)) FROM pg_type t),
  'enums', (SELECT jsonb_agg(to_jsonb(e) || jsonb_build_object('oid', e.oid)) FROM pg_enum e),
  'ranges', (SELECT jsonb_agg(to_jsonb(r)) FROM pg_range r),
  'indexes', (SELECT jsonb_agg(to_jsonb(i) - 'indexprs' - 'indpred'
      || jsonb_build_object('hasexprs', i.indexprs IS NOT NULL, 'haspred', i.indpred IS NOT NULL))
    FROM pg_index i WHERE i.indrelid >= 16384 AND (i.indisprimary OR i.indisreplident)))`

// ErrCatalogFile wraps what is wrong with a catalog file.
var ErrCatalogFile = errors.New("not a walscope catalog file (walscope rows --catalog-query | psql -XAtq -d DB -o FILE)")

// catalogFile is CatalogQuery's value.
type catalogFile struct {
	Magic      int              `json:"walscope_catalog"`
	Version    int              `json:"server_version_num"`
	Database   map[string]any   `json:"database"`
	Namespaces []map[string]any `json:"namespaces"`
	Classes    []map[string]any `json:"classes"`
	Attributes []map[string]any `json:"attributes"`
	Types      []map[string]any `json:"types"`
	Enums      []map[string]any `json:"enums"`
	Ranges     []map[string]any `json:"ranges"`
	Indexes    []map[string]any `json:"indexes"`
}

// jrow reads one catalog row's columns.
type jrow map[string]any

func (r jrow) u32(k string) uint32 {
	switch v := r[k].(type) {
	case json.Number:
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return uint32(n)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return uint32(n)
	}
	return 0
}
func (r jrow) i32(k string) int32 { return int32(r.u32(k)) }
func (r jrow) i16(k string) int16 { return int16(r.u32(k)) }
func (r jrow) str(k string) string {
	s, _ := r[k].(string)
	return s
}
func (r jrow) char(k string) byte {
	if s := r.str(k); s != "" {
		return s[0]
	}
	return 0
}
func (r jrow) boolean(k string) bool {
	b, _ := r[k].(bool)
	return b
}
func (r jrow) has(k string) bool { _, ok := r[k]; return ok && r[k] != nil }
func (r jrow) f32(k string) float32 {
	if n, ok := r[k].(json.Number); ok {
		f, _ := strconv.ParseFloat(string(n), 32)
		return float32(f)
	}
	return 0
}

// vector reads an int2vector column: a JSON array, or its text ("1 2").
func (r jrow) vector(k string) []int16 {
	var out []int16
	if a, ok := r[k].([]any); ok { // jsonb gives an int2vector as an array (15)
		for _, v := range a {
			x := jrow{"v": v}
			out = append(out, x.i16("v"))
		}
		return out
	}
	for _, f := range strings.Fields(r.str(k)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		out = append(out, int16(n))
	}
	return out
}

// CatalogFile is a catalog read from a file of CatalogQuery's output: the
// catalog of one database, and attribute values it cannot give.
type CatalogFile struct {
	*catalog.Catalog
	// MissingText holds, by relation and attribute number, the text of
	// attmissingval (the value of a column added with a default, for the
	// rows stored before): the file gives it as text, not as the datum
	// stored, so rows lacking such a column report it unknown.
	MissingText map[[2]uint32]string
}

// ReadCatalog reads a catalog file (CatalogQuery's output) into a catalog of
// its database, for the WAL of PostgreSQL version v (its major version
// must be the file's).
func ReadCatalog(r io.Reader, v xlog.Version) (*CatalogFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(data)))
	dec.UseNumber()
	var f catalogFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCatalogFile, err)
	}
	if f.Magic != 1 || f.Database == nil {
		return nil, ErrCatalogFile
	}
	if major := f.Version / 10000; major < 10 || major > 18 {
		return nil, fmt.Errorf("%w: server_version_num %d (PostgreSQL 10 to 18 are read)", ErrCatalogFile, f.Version)
	}
	if major := f.Version / 10000; v != 0 && major != int(v) {
		return nil, fmt.Errorf("%w: the file is of PostgreSQL %d, the WAL of %d", ErrCatalogFile, major, v)
	}
	if v == 0 {
		v = xlog.Version(f.Version / 10000)
	}
	d := jrow(f.Database)
	c := catalog.New(v, d.u32("oid"))
	out := &CatalogFile{Catalog: c, MissingText: map[[2]uint32]string{}}
	c.AddDatabase(catalog.Database{OID: d.u32("oid"), Name: d.str("datname"), Tablespace: d.u32("dattablespace"), Encoding: d.i32("encoding")})
	for _, m := range f.Namespaces {
		x := jrow(m)
		c.AddNamespace(catalog.Namespace{OID: x.u32("oid"), Name: x.str("nspname")})
	}
	for _, m := range f.Classes {
		x := jrow(m)
		c.AddClass(catalog.Class{OID: x.u32("oid"), Name: x.str("relname"), Namespace: x.u32("relnamespace"), Type: x.u32("reltype"),
			RelFileNode: x.u32("relfilenode"), Tablespace: x.u32("reltablespace"), ToastRelid: x.u32("reltoastrelid"),
			HasIndex: x.boolean("relhasindex"), IsShared: x.boolean("relisshared"), Persistence: x.char("relpersistence"),
			Kind: x.char("relkind"), Natts: x.i16("relnatts"), HasOIDs: x.boolean("relhasoids"), ReplIdent: x.char("relreplident"),
			IsPartition: x.boolean("relispartition"), Am: x.u32("relam")})
	}
	for _, m := range f.Attributes {
		x := jrow(m)
		a := catalog.Attribute{Relid: x.u32("attrelid"), Name: x.str("attname"), TypID: x.u32("atttypid"), Len: x.i16("attlen"),
			Num: x.i16("attnum"), Ndims: x.i32("attndims"), TypMod: x.i32("atttypmod"), ByVal: x.boolean("attbyval"),
			Align: x.char("attalign"), Storage: x.char("attstorage"), Compression: x.char("attcompression"), NotNull: x.boolean("attnotnull"),
			HasDef: x.boolean("atthasdef"), HasMissing: x.boolean("atthasmissing"), Identity: x.char("attidentity"),
			Generated: x.char("attgenerated"), Dropped: x.boolean("attisdropped"), IsLocal: x.boolean("attislocal"),
			Collation: x.u32("attcollation")}
		if a.HasMissing && x.has("attmissingval") {
			out.MissingText[[2]uint32{a.Relid, uint32(a.Num)}] = x.str("attmissingval")
			// the stored datum is not in the file: Deform must not make
			// one up; rows lacking the column get it as unknown
			a.HasMissing = false
		}
		c.AddAttribute(a)
	}
	for _, m := range f.Types {
		x := jrow(m)
		c.AddType(catalog.Type{OID: x.u32("oid"), Name: x.str("typname"), Namespace: x.u32("typnamespace"), Len: x.i16("typlen"),
			ByVal: x.boolean("typbyval"), Type: x.char("typtype"), Category: x.char("typcategory"), IsPreferred: x.boolean("typispreferred"),
			IsDefined: x.boolean("typisdefined"), Delim: x.char("typdelim"), Relid: x.u32("typrelid"), Elem: x.u32("typelem"),
			Array: x.u32("typarray"), Align: x.char("typalign"), Storage: x.char("typstorage"), NotNull: x.boolean("typnotnull"),
			BaseType: x.u32("typbasetype"), TypMod: x.i32("typtypmod"), NDims: x.i32("typndims"), Collation: x.u32("typcollation")})
	}
	for _, m := range f.Enums {
		x := jrow(m)
		c.AddEnum(catalog.Enum{OID: x.u32("oid"), TypID: x.u32("enumtypid"), SortOrder: x.f32("enumsortorder"), Label: x.str("enumlabel")})
	}
	for _, m := range f.Ranges {
		x := jrow(m)
		c.AddRange(catalog.Range{TypID: x.u32("rngtypid"), Subtype: x.u32("rngsubtype"), Multirange: x.u32("rngmultitypid"), Collation: x.u32("rngcollation")})
	}
	for _, m := range f.Indexes {
		x := jrow(m)
		ix := catalog.Index{IndexRelid: x.u32("indexrelid"), Relid: x.u32("indrelid"), Natts: x.i16("indnatts"), NKeyAtts: x.i16("indnkeyatts"),
			IsUnique: x.boolean("indisunique"), IsPrimary: x.boolean("indisprimary"), IsValid: x.boolean("indisvalid"),
			IsReplIdent: x.boolean("indisreplident"), Key: x.vector("indkey"), HasExprs: x.boolean("hasexprs"), HasPred: x.boolean("haspred"),
			IsReady: x.boolean("indisready"), IsLive: x.boolean("indislive")}
		if !x.has("indnkeyatts") {
			ix.NKeyAtts = ix.Natts // 10: no INCLUDE columns
		}
		c.AddIndex(ix)
	}
	return out, nil
}
