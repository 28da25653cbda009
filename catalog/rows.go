package catalog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/xlog"
)

// Class is a pg_class row (FormData_pg_class, pg_class.h). Fields a version
// lacks are zero.
type Class struct {
	OID          uint32
	Name         string // relname
	Namespace    uint32 // relnamespace
	Type         uint32 // reltype
	OfType       uint32 // reloftype
	Owner        uint32 // relowner
	Am           uint32 // relam
	RelFileNode  uint32 // relfilenode: 0 for a mapped catalog (see Catalog.Locator)
	Tablespace   uint32 // reltablespace: 0 for the database's default
	Pages        int32  // relpages
	Tuples       float32
	AllVisible   int32 // relallvisible
	AllFrozen    int32 // relallfrozen (18)
	ToastRelid   uint32
	HasIndex     bool
	IsShared     bool
	Persistence  byte // relpersistence: 'p', 'u', 't'
	Kind         byte // relkind: 'r', 'i', 'S', 't', 'v', 'm', 'c', 'f', 'p', 'I'
	Natts        int16
	Checks       int16
	HasOIDs      bool // relhasoids (10, 11)
	HasRules     bool
	HasTriggers  bool
	HasSubclass  bool
	RowSecurity  bool
	ForceRowSec  bool
	IsPopulated  bool
	ReplIdent    byte
	IsPartition  bool
	Rewrite      uint32 // relrewrite (11)
	FrozenXID    uint32
	MinMXID      uint32
	HasACL       bool     // relacl is not NULL
	Options      []string // reloptions ("fillfactor=70", ...), nil when NULL
	HasPartBound bool     // relpartbound is not NULL
}

// Namespace is a pg_namespace row.
type Namespace struct {
	OID   uint32
	Name  string
	Owner uint32
}

// Attribute is a pg_attribute row (FormData_pg_attribute, pg_attribute.h).
type Attribute struct {
	Relid       uint32 // attrelid
	Name        string
	TypID       uint32 // atttypid
	StatTarget  int32  // attstattarget (int2 from 16, NULL from 17 reads -1)
	Len         int16
	Num         int16 // attnum
	Ndims       int32
	TypMod      int32
	ByVal       bool
	Align       byte
	Storage     byte
	Compression byte // attcompression (14): 'p', 'l' or 0
	NotNull     bool
	HasDef      bool
	HasMissing  bool // atthasmissing (11)
	Identity    byte
	Generated   byte // attgenerated (12)
	Dropped     bool // attisdropped
	IsLocal     bool
	InhCount    int32
	Collation   uint32
	HasACL      bool // attacl is not NULL
	// MissingVal is attmissingval's array as stored (its plain bytes,
	// without the varlena header), nil when NULL; Missing is its single
	// element, as a datum is stored in a tuple (varlena header included).
	MissingVal []byte
	Missing    []byte
}

// Attr is the attribute as a tuple descriptor entry.
func (a *Attribute) Attr() tuple.Attr {
	return tuple.Attr{Name: a.Name, TypeOID: a.TypID, Len: a.Len, Align: a.Align, ByVal: a.ByVal, Dropped: a.Dropped,
		HasMissing: a.HasMissing, Missing: a.Missing, NotNull: a.NotNull}
}

// Type is a pg_type row (FormData_pg_type, pg_type.h).
type Type struct {
	OID         uint32
	Name        string
	Namespace   uint32
	Owner       uint32
	Len         int16
	ByVal       bool
	Type        byte // typtype: 'b', 'c', 'd', 'e', 'p', 'r', 'm'
	Category    byte
	IsPreferred bool
	IsDefined   bool
	Delim       byte
	Relid       uint32
	Subscript   uint32 // typsubscript (14)
	Elem        uint32
	Array       uint32
	Input       uint32 // typinput (regproc)
	Output      uint32
	Receive     uint32
	Send        uint32
	Align       byte
	Storage     byte
	NotNull     bool
	BaseType    uint32
	TypMod      int32
	NDims       int32
	Collation   uint32
	Default     string // typdefault, the default's text
	HasDefault  bool
}

// Enum is a pg_enum row.
type Enum struct {
	OID       uint32
	TypID     uint32
	SortOrder float32
	Label     string
}

// Range is a pg_range row (FormData_pg_range, pg_range.h): a range type's
// subtype and, from 14, its multirange type.
type Range struct {
	TypID      uint32 // rngtypid
	Subtype    uint32 // rngsubtype
	Multirange uint32 // rngmultitypid; 0 before 14
	Collation  uint32 // rngcollation: the subtype's collation, 0 if it has none
	SubOpc     uint32 // rngsubopc: the subtype's B-tree operator class
	Canonical  uint32 // rngcanonical (regproc): the canonical function, 0 if none
	SubDiff    uint32 // rngsubdiff (regproc): the subtype difference function, 0 if none
}

// Index is a pg_index row (FormData_pg_index, pg_index.h).
type Index struct {
	IndexRelid       uint32
	Relid            uint32
	Natts            int16
	NKeyAtts         int16 // indnkeyatts (11; Natts before)
	IsUnique         bool
	NullsNotDistinct bool // indnullsnotdistinct (15)
	IsPrimary        bool
	IsExclusion      bool
	Immediate        bool
	IsClustered      bool
	IsValid          bool
	CheckXmin        bool
	IsReady          bool
	IsLive           bool
	IsReplIdent      bool
	Key              []int16  // indkey (int2vector)
	Collation        []uint32 // indcollation (oidvector)
	Class            []uint32 // indclass (oidvector)
	Option           []int16  // indoption (int2vector)
	HasExprs         bool     // indexprs is not NULL
	HasPred          bool     // indpred is not NULL
}

// Database is a pg_database row (FormData_pg_database, pg_database.h).
type Database struct {
	OID          uint32
	Name         string
	DBA          uint32
	Encoding     int32
	LocProvider  byte // datlocprovider (15)
	IsTemplate   bool
	AllowConn    bool
	HasLoginEvt  bool // dathasloginevt (17)
	ConnLimit    int32
	LastSysOID   uint32 // datlastsysoid (before 15)
	FrozenXID    uint32
	MinMXID      uint32
	Tablespace   uint32
	Collate      string // datcollate (name before 15, text from 15)
	Ctype        string
	Locale       string // daticulocale (15, 16), datlocale (17)
	HasLocale    bool
	ICURules     string // daticurules (16)
	HasICURules  bool
	CollVersion  string // datcollversion (15)
	HasCollVersn bool
}

// Tablespace is a pg_tablespace row.
type Tablespace struct {
	OID   uint32
	Name  string
	Owner uint32
}

// Decoder decodes catalog tuples of one version. It is not safe for
// concurrent use; its results share nothing with the tuples.
type Decoder struct {
	Version xlog.Version
	// Toast fetches external values (pg_database's and pg_class's text
	// columns can be external in a large cluster); nil: such a value is an
	// error wrapping tuple.ErrNoToast.
	Toast tuple.Detoaster
	vals  []tuple.Value
	elems []tuple.Value
	buf   []byte
}

// NewDecoder returns a decoder for version v.
func NewDecoder(v xlog.Version) *Decoder { return &Decoder{Version: v} }

// ErrRow wraps every decoding error: a tuple that is not a well-formed row of
// its catalog.
var ErrRow = fmt.Errorf("bad catalog row")

// row is one deformed catalog tuple.
type row struct {
	d   *Decoder
	l   *Layout
	h   tuple.Header
	err error
}

func (d *Decoder) deform(catalog string, tup []byte) (*row, error) {
	l, err := LayoutOf(catalog, d.Version)
	if err != nil {
		return nil, err
	}
	r := &row{d: d, l: l}
	d.vals, r.h, err = tuple.Deform(d.vals, tup, l.Attrs)
	if err != nil {
		return nil, fmt.Errorf("%s row: %w", catalog, err)
	}
	return r, nil
}

func (r *row) fail(col, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s row, column %s: %s: %w", r.l.Catalog, col, fmt.Sprintf(format, args...), ErrRow)
	}
}

// fixed returns column col's bytes when it is present, not NULL and n bytes.
func (r *row) fixed(col string, n int) []byte {
	i := r.l.Column(col)
	if i < 0 {
		return nil
	}
	v := r.d.vals[i]
	if v.IsNull() {
		return nil
	}
	if v.Form != tuple.Fixed || len(v.Raw) != n {
		r.fail(col, "%s datum of %d bytes, expected %d fixed", v.Form, len(v.Raw), n)
		return nil
	}
	return v.Raw
}

func (r *row) u32(col string) uint32 {
	if b := r.fixed(col, 4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *row) i32(col string) int32 { return int32(r.u32(col)) }

func (r *row) i16(col string) int16 {
	if b := r.fixed(col, 2); b != nil {
		return int16(binary.LittleEndian.Uint16(b))
	}
	return 0
}

func (r *row) f32(col string) float32 { return math.Float32frombits(r.u32(col)) }

func (r *row) char(col string) byte {
	if b := r.fixed(col, 1); b != nil {
		return b[0]
	}
	return 0
}

func (r *row) bool(col string) bool { return r.char(col) != 0 }

// name reads a NameData: NUL-padded NAMEDATALEN bytes.
func (r *row) name(col string) string {
	b := r.fixed(col, NameDataLen)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// null reports whether column col is NULL (or absent in this version).
func (r *row) null(col string) bool {
	i := r.l.Column(col)
	return i < 0 || r.d.vals[i].IsNull()
}

// plain returns a varlena column's plain bytes (decompressed, fetched),
// valid until the next call; nil when NULL or absent.
func (r *row) plain(col string) []byte {
	i := r.l.Column(col)
	if i < 0 || r.d.vals[i].IsNull() {
		return nil
	}
	var err error
	r.d.buf, err = r.d.vals[i].Detoast(r.d.buf[:0], r.d.Toast)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("%s row, column %s: %w", r.l.Catalog, col, err)
		}
		return nil
	}
	return r.d.buf
}

// text reads a text column (name before 15 for pg_database's collations).
func (r *row) text(col string) string {
	i := r.l.Column(col)
	if i >= 0 && r.l.Attrs[i].Len == NameDataLen {
		return r.name(col)
	}
	return string(r.plain(col))
}

// vector reads an int2vector or oidvector (one-dimensional arrays without
// NULLs) as its elements' bytes.
func (r *row) vector(col string, elemLen int16) [][]byte {
	p := r.plain(col)
	if p == nil {
		return nil
	}
	a, err := tuple.ParseArray(p)
	if err == nil && a.NDim > 1 {
		err = fmt.Errorf("%d dimensions", a.NDim)
	}
	if err == nil {
		align := byte('i')
		if elemLen == 2 {
			align = 's'
		}
		r.d.elems, err = a.Elements(r.d.elems, tuple.Attr{Len: elemLen, Align: align})
	}
	if err != nil {
		r.fail(col, "%v", err)
		return nil
	}
	out := make([][]byte, 0, len(r.d.elems))
	for _, e := range r.d.elems {
		if e.IsNull() {
			r.fail(col, "NULL element in a vector")
			return nil
		}
		out = append(out, e.Raw)
	}
	return out
}

// textArray reads a one-dimensional text[] column; nil when NULL.
func (r *row) textArray(col string) []string {
	p := r.plain(col)
	if p == nil {
		return nil
	}
	a, err := tuple.ParseArray(p)
	if err == nil && a.NDim > 1 {
		err = fmt.Errorf("%d dimensions", a.NDim)
	}
	if err == nil {
		r.d.elems, err = a.Elements(r.d.elems, tuple.Attr{Len: -1, Align: 'i'})
	}
	if err != nil {
		r.fail(col, "%v", err)
		return nil
	}
	out := make([]string, 0, len(r.d.elems))
	for _, e := range r.d.elems {
		if e.IsNull() {
			r.fail(col, "NULL element")
			return nil
		}
		b, err := e.Detoast(nil, nil)
		if err != nil {
			r.fail(col, "%v", err)
			return nil
		}
		out = append(out, string(b))
	}
	return out
}

func (r *row) int2vector(col string) []int16 {
	var out []int16
	for _, e := range r.vector(col, 2) {
		out = append(out, int16(binary.LittleEndian.Uint16(e)))
	}
	return out
}

func (r *row) oidvector(col string) []uint32 {
	var out []uint32
	for _, e := range r.vector(col, 4) {
		out = append(out, binary.LittleEndian.Uint32(e))
	}
	return out
}

func (r *row) oid() uint32 {
	if r.l.OIDInHeader {
		if !r.h.HasOID {
			r.fail("oid", "no HEAP_HASOID oid in the header")
		}
		return r.h.OID
	}
	return r.u32("oid")
}

// Class decodes a pg_class tuple.
func (d *Decoder) Class(tup []byte) (Class, error) {
	r, err := d.deform("pg_class", tup)
	if err != nil {
		return Class{}, err
	}
	c := Class{
		OID: r.oid(), Name: r.name("relname"), Namespace: r.u32("relnamespace"), Type: r.u32("reltype"),
		OfType: r.u32("reloftype"), Owner: r.u32("relowner"), Am: r.u32("relam"), RelFileNode: r.u32("relfilenode"),
		Tablespace: r.u32("reltablespace"), Pages: r.i32("relpages"), Tuples: r.f32("reltuples"),
		AllVisible: r.i32("relallvisible"), AllFrozen: r.i32("relallfrozen"), ToastRelid: r.u32("reltoastrelid"),
		HasIndex: r.bool("relhasindex"), IsShared: r.bool("relisshared"), Persistence: r.char("relpersistence"),
		Kind: r.char("relkind"), Natts: r.i16("relnatts"), Checks: r.i16("relchecks"), HasOIDs: r.bool("relhasoids"),
		HasRules: r.bool("relhasrules"), HasTriggers: r.bool("relhastriggers"), HasSubclass: r.bool("relhassubclass"),
		RowSecurity: r.bool("relrowsecurity"), ForceRowSec: r.bool("relforcerowsecurity"),
		IsPopulated: r.bool("relispopulated"), ReplIdent: r.char("relreplident"), IsPartition: r.bool("relispartition"),
		Rewrite: r.u32("relrewrite"), FrozenXID: r.u32("relfrozenxid"), MinMXID: r.u32("relminmxid"),
		HasACL: !r.null("relacl"), HasPartBound: !r.null("relpartbound"),
	}
	c.Options = r.textArray("reloptions")
	return c, r.err
}

// Namespace decodes a pg_namespace tuple.
func (d *Decoder) Namespace(tup []byte) (Namespace, error) {
	r, err := d.deform("pg_namespace", tup)
	if err != nil {
		return Namespace{}, err
	}
	return Namespace{OID: r.oid(), Name: r.name("nspname"), Owner: r.u32("nspowner")}, r.err
}

// Tablespace decodes a pg_tablespace tuple.
func (d *Decoder) Tablespace(tup []byte) (Tablespace, error) {
	r, err := d.deform("pg_tablespace", tup)
	if err != nil {
		return Tablespace{}, err
	}
	return Tablespace{OID: r.oid(), Name: r.name("spcname"), Owner: r.u32("spcowner")}, r.err
}

// Enum decodes a pg_enum tuple.
func (d *Decoder) Enum(tup []byte) (Enum, error) {
	r, err := d.deform("pg_enum", tup)
	if err != nil {
		return Enum{}, err
	}
	return Enum{OID: r.oid(), TypID: r.u32("enumtypid"), SortOrder: r.f32("enumsortorder"), Label: r.name("enumlabel")}, r.err
}

// Range decodes a pg_range tuple.
func (d *Decoder) Range(tup []byte) (Range, error) {
	r, err := d.deform("pg_range", tup)
	if err != nil {
		return Range{}, err
	}
	return Range{TypID: r.u32("rngtypid"), Subtype: r.u32("rngsubtype"), Multirange: r.u32("rngmultitypid"),
		Collation: r.u32("rngcollation"), SubOpc: r.u32("rngsubopc"), Canonical: r.u32("rngcanonical"),
		SubDiff: r.u32("rngsubdiff")}, r.err
}

// Type decodes a pg_type tuple.
func (d *Decoder) Type(tup []byte) (Type, error) {
	r, err := d.deform("pg_type", tup)
	if err != nil {
		return Type{}, err
	}
	t := Type{
		OID: r.oid(), Name: r.name("typname"), Namespace: r.u32("typnamespace"), Owner: r.u32("typowner"),
		Len: r.i16("typlen"), ByVal: r.bool("typbyval"), Type: r.char("typtype"), Category: r.char("typcategory"),
		IsPreferred: r.bool("typispreferred"), IsDefined: r.bool("typisdefined"), Delim: r.char("typdelim"),
		Relid: r.u32("typrelid"), Subscript: r.u32("typsubscript"), Elem: r.u32("typelem"), Array: r.u32("typarray"),
		Input: r.u32("typinput"), Output: r.u32("typoutput"), Receive: r.u32("typreceive"), Send: r.u32("typsend"),
		Align: r.char("typalign"), Storage: r.char("typstorage"), NotNull: r.bool("typnotnull"),
		BaseType: r.u32("typbasetype"), TypMod: r.i32("typtypmod"), NDims: r.i32("typndims"), Collation: r.u32("typcollation"),
	}
	if !r.null("typdefault") {
		t.Default, t.HasDefault = r.text("typdefault"), true
	}
	return t, r.err
}

// Index decodes a pg_index tuple.
func (d *Decoder) Index(tup []byte) (Index, error) {
	r, err := d.deform("pg_index", tup)
	if err != nil {
		return Index{}, err
	}
	x := Index{
		IndexRelid: r.u32("indexrelid"), Relid: r.u32("indrelid"), Natts: r.i16("indnatts"), NKeyAtts: r.i16("indnkeyatts"),
		IsUnique: r.bool("indisunique"), NullsNotDistinct: r.bool("indnullsnotdistinct"), IsPrimary: r.bool("indisprimary"),
		IsExclusion: r.bool("indisexclusion"), Immediate: r.bool("indimmediate"), IsClustered: r.bool("indisclustered"),
		IsValid: r.bool("indisvalid"), CheckXmin: r.bool("indcheckxmin"), IsReady: r.bool("indisready"),
		IsLive: r.bool("indislive"), IsReplIdent: r.bool("indisreplident"),
		HasExprs: !r.null("indexprs"), HasPred: !r.null("indpred"),
	}
	if r.l.Column("indnkeyatts") < 0 {
		x.NKeyAtts = x.Natts // before 11 every column is a key
	}
	x.Key = r.int2vector("indkey")
	x.Collation = r.oidvector("indcollation")
	x.Class = r.oidvector("indclass")
	x.Option = r.int2vector("indoption")
	return x, r.err
}

// Database decodes a pg_database tuple.
func (d *Decoder) Database(tup []byte) (Database, error) {
	r, err := d.deform("pg_database", tup)
	if err != nil {
		return Database{}, err
	}
	db := Database{
		OID: r.oid(), Name: r.name("datname"), DBA: r.u32("datdba"), Encoding: r.i32("encoding"),
		LocProvider: r.char("datlocprovider"), IsTemplate: r.bool("datistemplate"), AllowConn: r.bool("datallowconn"),
		HasLoginEvt: r.bool("dathasloginevt"), ConnLimit: r.i32("datconnlimit"), LastSysOID: r.u32("datlastsysoid"),
		FrozenXID: r.u32("datfrozenxid"), MinMXID: r.u32("datminmxid"), Tablespace: r.u32("dattablespace"),
	}
	db.Collate, db.Ctype = r.text("datcollate"), r.text("datctype")
	for _, col := range []string{"daticulocale", "datlocale"} {
		if !r.null(col) {
			db.Locale, db.HasLocale = r.text(col), true
		}
	}
	if !r.null("daticurules") {
		db.ICURules, db.HasICURules = r.text("daticurules"), true
	}
	if !r.null("datcollversion") {
		db.CollVersion, db.HasCollVersn = r.text("datcollversion"), true
	}
	return db, r.err
}

// Attribute decodes a pg_attribute tuple, attmissingval's element included.
func (d *Decoder) Attribute(tup []byte) (Attribute, error) {
	r, err := d.deform("pg_attribute", tup)
	if err != nil {
		return Attribute{}, err
	}
	a := Attribute{
		Relid: r.u32("attrelid"), Name: r.name("attname"), TypID: r.u32("atttypid"),
		Len: r.i16("attlen"), Num: r.i16("attnum"), TypMod: r.i32("atttypmod"),
		ByVal: r.bool("attbyval"), Align: r.char("attalign"), Storage: r.char("attstorage"),
		Compression: r.char("attcompression"), NotNull: r.bool("attnotnull"), HasDef: r.bool("atthasdef"),
		HasMissing: r.bool("atthasmissing"), Identity: r.char("attidentity"), Generated: r.char("attgenerated"),
		Dropped: r.bool("attisdropped"), IsLocal: r.bool("attislocal"), Collation: r.u32("attcollation"),
		HasACL: !r.null("attacl"),
	}
	// attstattarget, attndims and attinhcount became int2 in 16 (17 moved
	// attstattarget and made it nullable).
	if i := r.l.Column("attstattarget"); i >= 0 && r.l.Attrs[i].Len == 2 {
		a.StatTarget = -1
		if !r.null("attstattarget") {
			a.StatTarget = int32(r.i16("attstattarget"))
		}
		a.Ndims, a.InhCount = int32(r.i16("attndims")), int32(r.i16("attinhcount"))
	} else {
		a.StatTarget, a.Ndims, a.InhCount = r.i32("attstattarget"), r.i32("attndims"), r.i32("attinhcount")
	}
	if p := r.plain("attmissingval"); p != nil {
		a.MissingVal = bytes.Clone(p)
		arr, err := tuple.ParseArray(a.MissingVal)
		if err == nil && arr.Len() != 1 {
			err = fmt.Errorf("%d elements, not one", arr.Len())
		}
		if err == nil {
			d.elems, err = arr.Elements(d.elems, tuple.Attr{Len: a.Len, Align: a.Align})
		}
		if err != nil {
			r.fail("attmissingval", "%v", err)
		} else if !d.elems[0].IsNull() {
			a.Missing = d.elems[0].Raw
		}
	}
	return a, r.err
}
