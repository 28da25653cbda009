package typeout

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/tuple"
)

// Sentinel errors; every error of the package wraps one of them.
var (
	// ErrUnsupported: the package has no output function for the type.
	ErrUnsupported = errors.New("type not supported")
	// ErrCorrupt: the datum is not a valid stored value of its type.
	ErrCorrupt = errors.New("malformed datum")
	// ErrUnknownType: the type (or a type it refers to) is not in Types.
	// It wraps ErrUnsupported: either way the caller may print the raw
	// bytes instead.
	ErrUnknownType = fmt.Errorf("%w: not in the catalog", ErrUnsupported)
	// ErrSetting: a setting's value is invalid or not supported.
	ErrSetting = errors.New("invalid setting")
)

// Error is a positioned error: the type the datum was printed as, and the
// sentinel.
type Error struct {
	TypeOID  uint32
	TypeName string // "" when the type is unknown
	Detail   string
	Err      error
}

func (e *Error) Error() string {
	name := e.TypeName
	if name == "" {
		name = "type " + strconv.FormatUint(uint64(e.TypeOID), 10)
	} else {
		name = fmt.Sprintf("type %s (%d)", name, e.TypeOID)
	}
	if e.Detail == "" {
		return name + ": " + e.Err.Error()
	}
	return name + ": " + e.Err.Error() + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Types resolves the types a value's text depends on: package catalog's
// Catalog implements it with the rows as of the target.
type Types interface {
	// Type returns the pg_type row of oid, nil when there is none.
	Type(oid uint32) *catalog.Type
	// Attributes returns the pg_attribute rows of relation relid with
	// attnum > 0, in attnum order (a composite type's typrelid).
	Attributes(relid uint32) []catalog.Attribute
	// EnumLabels returns the pg_enum rows of enum type typid.
	EnumLabels(typid uint32) []catalog.Enum
}

// RangeTypes is implemented by a Types that also knows pg_range: the
// subtype of a range type. Without it only the built-in range types
// (int4range, int8range, numrange, daterange, tsrange, tstzrange) print.
// package catalog's Catalog implements it (and MultirangeTypes) from the
// pg_range rows it decodes.
type RangeTypes interface {
	RangeSubtype(rangeOID uint32) (subtype uint32, ok bool)
}

// MultirangeTypes is implemented by a Types that knows pg_range's
// rngmultitypid: the range type of a multirange type (PostgreSQL 14+).
// Without it only the built-in multiranges print.
type MultirangeTypes interface {
	MultirangeRange(multirangeOID uint32) (rangeOID uint32, ok bool)
}

// Built-in type OIDs (pg_type.dat: the same in every version 10 to 18).
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidRegproc     = 24
	oidText        = 25
	oidOid         = 26
	oidXid         = 28
	oidCid         = 29
	oidJSON        = 114
	oidXML         = 142
	oidCidr        = 650
	oidFloat4      = 700
	oidFloat8      = 701
	oidUnknown     = 705
	oidMacaddr8    = 774
	oidMoney       = 790
	oidMacaddr     = 829
	oidInet        = 869
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidTimetz      = 1266
	oidNumeric     = 1700
	oidCstring     = 2275
	oidUUID        = 2950
	oidJSONB       = 3802
	oidInt4range   = 3904
	oidNumrange    = 3906
	oidTsrange     = 3908
	oidTstzrange   = 3910
	oidDaterange   = 3912
	oidInt8range   = 3926
	oidXid8        = 5069
)

// Output function OIDs (pg_proc.dat) of the polymorphic families.
const (
	procArrayOut  = 751
	procRecordOut = 2291
	procEnumOut   = 3507
	procRangeOut  = 3835
	procMultiOut  = 4232
)

// builtinMultiranges are pg_range.dat's rngmultitypid (14).
var builtinMultiranges = map[uint32]uint32{
	4451: oidInt4range, 4532: oidNumrange, 4533: oidTsrange, 4534: oidTstzrange, 4535: oidDaterange, 4536: oidInt8range,
}

// builtinRanges are pg_range.dat's rows.
var builtinRanges = map[uint32]uint32{
	oidInt4range: oidInt4, oidNumrange: oidNumeric, oidTsrange: oidTimestamp,
	oidTstzrange: oidTimestamptz, oidDaterange: oidDate, oidInt8range: oidInt8,
}

// builtinNames names the built-in types in errors when there is no catalog.
var builtinNames = map[uint32]string{
	oidBool: "bool", oidBytea: "bytea", oidChar: "char", oidName: "name", oidInt8: "int8",
	oidInt2: "int2", oidInt4: "int4", oidText: "text", oidOid: "oid", oidJSON: "json",
	oidCidr: "cidr", oidFloat4: "float4", oidFloat8: "float8", oidMacaddr8: "macaddr8",
	oidMoney: "money", oidMacaddr: "macaddr", oidInet: "inet", oidBpchar: "bpchar",
	oidVarchar: "varchar", oidDate: "date", oidTime: "time", oidTimestamp: "timestamp",
	oidTimestamptz: "timestamptz", oidInterval: "interval", oidTimetz: "timetz",
	oidNumeric: "numeric", oidUUID: "uuid", oidJSONB: "jsonb", oidXML: "xml",
	oidInt2vector: "int2vector", oidTid: "tid", oidOidvector: "oidvector", oidPoint: "point", oidLseg: "lseg",
	oidPath: "path", oidBox: "box", oidPolygon: "polygon", oidLine: "line", oidCircle: "circle", oidBit: "bit",
	oidVarbit: "varbit", oidPgLsn: "pg_lsn",
}

// maxDepth bounds the nesting of arrays of composites of ranges... so that
// a malformed or cyclic catalog cannot recurse without end.
const maxDepth = 64

// Formatter prints datums as the output functions of one server with one
// session's settings would. The zero Formatter prints the built-in scalar
// types with PostgreSQL's default settings (DateStyle ISO, MDY;
// IntervalStyle postgres; TimeZone GMT; extra_float_digits 1; bytea_output
// hex) as version 18 does. A Formatter is not safe for concurrent use (it
// caches the time zone).
type Formatter struct {
	Settings Settings
	// Types resolves arrays' element types, ranges' subtypes, composites'
	// attributes, enums' labels and domains' base types; nil: only the
	// built-in scalar types print.
	Types Types
	// Major is the major version (10 to 18) whose output functions are
	// mirrored where they differ ("char"'s non-ASCII bytes as octal from
	// 15); 0 means 18.
	Major int

	tz    *zoneCache
	elems []tuple.Value // the outermost array's elements
	text  []byte        // an element's text
}

// Append appends the text of datum, a stored value of type typeOID (see
// the package comment for what datum holds), to dst.
func (f *Formatter) Append(dst []byte, typeOID uint32, datum []byte) ([]byte, error) {
	return f.appendDepth(dst, typeOID, datum, 0)
}

// AppendValue appends the text of a column deformed by package tuple:
// compressed and external values are detoasted through d (nil: only
// inline values print), a NULL is an error (the caller prints NULL as its
// format does).
func (f *Formatter) AppendValue(dst []byte, typeOID uint32, v tuple.Value, d tuple.Detoaster) ([]byte, error) {
	if v.IsNull() {
		return dst, f.errorf(typeOID, ErrCorrupt, "NULL has no text")
	}
	t, err := f.storage(typeOID)
	if err != nil {
		return dst, err
	}
	if t.Len != -1 {
		return f.Append(dst, typeOID, v.Raw)
	}
	plain, err := v.Detoast(nil, d)
	if err != nil {
		return dst, f.errorf(typeOID, err, "")
	}
	return f.Append(dst, typeOID, plain)
}

// storage returns the storage facts of a type: its own row, else those of
// the built-in types.
func (f *Formatter) storage(oid uint32) (*catalog.Type, error) {
	if f.Types != nil {
		if t := f.Types.Type(oid); t != nil {
			return t, nil
		}
	}
	if t, ok := builtinStorage[oid]; ok {
		return &t, nil
	}
	return nil, f.errorf(oid, ErrUnknownType, "")
}

// builtinStorage: typlen, typbyval, typalign and typdelim of the built-in
// types, so the zero Formatter knows them (pg_type.dat).
var builtinStorage = func() map[uint32]catalog.Type {
	m := map[uint32]catalog.Type{}
	add := func(oid uint32, l int16, byval bool, align byte) {
		m[oid] = catalog.Type{OID: oid, Name: builtinNames[oid], Len: l, ByVal: byval, Align: align, Delim: ',', Type: 'b'}
	}
	add(oidBool, 1, true, 'c')
	add(oidChar, 1, true, 'c')
	add(oidName, 64, false, 'c')
	add(oidInt2, 2, true, 's')
	add(oidInt4, 4, true, 'i')
	add(oidOid, 4, true, 'i')
	add(oidInt8, 8, true, 'd')
	add(oidFloat4, 4, true, 'i')
	add(oidFloat8, 8, true, 'd')
	add(oidMoney, 8, true, 'd')
	add(oidMacaddr, 6, false, 'i')
	add(oidMacaddr8, 8, false, 'i')
	add(oidDate, 4, true, 'i')
	add(oidTime, 8, true, 'd')
	add(oidTimestamp, 8, true, 'd')
	add(oidTimestamptz, 8, true, 'd')
	add(oidInterval, 16, false, 'd')
	add(oidTimetz, 12, false, 'd')
	add(oidUUID, 16, false, 'c')
	add(oidPoint, 16, false, 'd')
	add(oidLseg, 32, false, 'd')
	add(oidBox, 32, false, 'd')
	add(oidLine, 24, false, 'd')
	add(oidCircle, 24, false, 'd')
	add(oidPgLsn, 8, true, 'd')
	add(oidTid, 6, false, 's')
	for _, oid := range []uint32{oidPath, oidPolygon} {
		add(oid, -1, false, 'd')
	}
	for _, oid := range []uint32{oidBit, oidVarbit, oidInt2vector, oidOidvector} {
		add(oid, -1, false, 'i')
	}
	b := m[oidBox]
	b.Delim = ';' // box's typdelim
	m[oidBox] = b
	for _, oid := range []uint32{oidBytea, oidText, oidJSON, oidCidr, oidInet, oidBpchar, oidVarchar, oidNumeric, oidJSONB, oidXML} {
		add(oid, -1, false, 'i')
	}
	t := m[oidNumeric]
	t.Align = 'i'
	m[oidNumeric] = t
	for r := range builtinRanges {
		m[r] = catalog.Type{OID: r, Len: -1, Align: 'd', Delim: ',', Type: 'r', Output: procRangeOut}
	}
	for r := range builtinMultiranges {
		m[r] = catalog.Type{OID: r, Len: -1, Align: 'd', Delim: ',', Type: 'm', Output: procMultiOut}
	}
	return m
}()

func (f *Formatter) typeName(oid uint32) string {
	if f.Types != nil {
		if t := f.Types.Type(oid); t != nil {
			return t.Name
		}
	}
	return builtinNames[oid]
}

func (f *Formatter) errorf(oid uint32, err error, format string, args ...any) error {
	var e *Error
	if errors.As(err, &e) {
		return err // already names the (inner) type
	}
	return &Error{TypeOID: oid, TypeName: f.typeName(oid), Detail: fmt.Sprintf(format, args...), Err: err}
}

func (f *Formatter) major() int {
	if f.Major == 0 {
		return 18
	}
	return f.Major
}

func (f *Formatter) appendDepth(dst []byte, oid uint32, d []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, f.errorf(oid, ErrCorrupt, "types nested more than %d deep", maxDepth)
	}
	var out []byte
	var err error
	switch oid {
	case oidBool:
		out, err = appendBool(dst, d)
	case oidInt2:
		out, err = appendInt2(dst, d)
	case oidInt4:
		out, err = appendInt4(dst, d)
	case oidInt8:
		out, err = appendInt8(dst, d)
	case oidOid, oidRegproc, oidXid, oidCid:
		// regproc prints the function's name; only its OID is known here.
		if oid == oidRegproc {
			return dst, f.errorf(oid, ErrUnsupported, "")
		}
		out, err = appendOid(dst, d)
	case oidXid8:
		out, err = appendUint8(dst, d)
	case oidFloat4:
		out, err = f.appendFloat4(dst, d)
	case oidFloat8:
		out, err = f.appendFloat8(dst, d)
	case oidNumeric:
		out, err = appendNumeric(dst, d)
	case oidText, oidVarchar, oidBpchar, oidJSON, oidXML, oidUnknown:
		out = append(dst, d...)
	case oidCstring:
		out = appendCString(dst, d)
	case oidName:
		out, err = appendName(dst, d)
	case oidChar:
		out, err = f.appendChar(dst, d)
	case oidBytea:
		out = f.appendBytea(dst, d)
	case oidUUID:
		out, err = appendUUID(dst, d)
	case oidDate:
		out, err = f.appendDate(dst, d)
	case oidTime:
		out, err = f.appendTime(dst, d)
	case oidTimetz:
		out, err = f.appendTimetz(dst, d)
	case oidTimestamp:
		out, err = f.appendTimestamp(dst, d, false)
	case oidTimestamptz:
		out, err = f.appendTimestamp(dst, d, true)
	case oidInterval:
		out, err = f.appendInterval(dst, d)
	case oidJSONB:
		out, err = appendJSONB(dst, d)
	case oidInet:
		out, err = appendInet(dst, d, false)
	case oidCidr:
		out, err = appendInet(dst, d, true)
	case oidMacaddr:
		out, err = appendMacaddr(dst, d, 6)
	case oidMacaddr8:
		out, err = appendMacaddr(dst, d, 8)
	case oidMoney:
		out, err = f.appendMoney(dst, d)
	case oidPoint, oidLseg, oidBox, oidPath, oidPolygon, oidLine, oidCircle:
		out, err = f.appendGeometry(dst, oid, d)
	case oidBit, oidVarbit:
		out, err = appendBits(dst, d)
	case oidPgLsn:
		out, err = appendPgLsn(dst, d)
	case oidTid:
		out, err = appendTid(dst, d)
	case oidInt2vector, oidOidvector:
		out, err = appendVector(dst, d, oid == oidOidvector)
	default:
		return f.appendDerived(dst, oid, d, depth)
	}
	if err != nil {
		return dst, f.errorf(oid, err, "")
	}
	return out, nil
}

// appendDerived prints the types defined over others: domains, enums,
// arrays, ranges and composites.
func (f *Formatter) appendDerived(dst []byte, oid uint32, d []byte, depth int) ([]byte, error) {
	if sub, ok := builtinRanges[oid]; ok {
		return f.appendRange(dst, oid, sub, d, depth)
	}
	if rng, ok := builtinMultiranges[oid]; ok {
		return f.appendMultirange(dst, oid, rng, builtinRanges[rng], d, depth)
	}
	if f.Types == nil {
		return dst, f.errorf(oid, ErrUnsupported, "no catalog to resolve it")
	}
	t := f.Types.Type(oid)
	if t == nil {
		return dst, f.errorf(oid, ErrUnknownType, "")
	}
	switch {
	case t.Type == 'd':
		return f.appendDepth(dst, t.BaseType, d, depth+1)
	case t.Output == procEnumOut || t.Type == 'e':
		return f.appendEnum(dst, t, d)
	case t.Output == procArrayOut:
		return f.appendArray(dst, t, d, depth)
	case t.Output == procRangeOut || t.Type == 'r':
		sub, ok := uint32(0), false
		if rt, is := f.Types.(RangeTypes); is {
			sub, ok = rt.RangeSubtype(oid)
		}
		if !ok {
			return dst, f.errorf(oid, ErrUnsupported, "the range's subtype is unknown (no pg_range)")
		}
		return f.appendRange(dst, oid, sub, d, depth)
	case t.Output == procMultiOut || t.Type == 'm':
		rng, ok := uint32(0), false
		if mt, is := f.Types.(MultirangeTypes); is {
			rng, ok = mt.MultirangeRange(oid)
		}
		sub, subOK := uint32(0), false
		if rt, is := f.Types.(RangeTypes); is && ok {
			sub, subOK = rt.RangeSubtype(rng)
		}
		if !ok || !subOK {
			return dst, f.errorf(oid, ErrUnsupported, "the multirange's range type is unknown (no pg_range)")
		}
		return f.appendMultirange(dst, oid, rng, sub, d, depth)
	case t.Output == procRecordOut || t.Type == 'c':
		return f.appendRecord(dst, t, d, depth)
	}
	return dst, f.errorf(oid, ErrUnsupported, "")
}

func (f *Formatter) appendEnum(dst []byte, t *catalog.Type, d []byte) ([]byte, error) {
	if len(d) != 4 {
		return dst, f.errorf(t.OID, ErrCorrupt, "enum datum of %d bytes", len(d))
	}
	label := le32(d)
	for _, e := range f.Types.EnumLabels(t.OID) {
		if e.OID == label {
			return append(dst, e.Label...), nil
		}
	}
	return dst, f.errorf(t.OID, ErrCorrupt, "no pg_enum row %d", label)
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

// AppendByteaHex appends b as bytea's hex output ("\x" and two lowercase
// hex digits a byte): how a caller may print a value of a type this package
// cannot.
func AppendByteaHex(dst, b []byte) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '\\', 'x')
	for _, c := range b {
		dst = append(dst, hexd[c>>4], hexd[c&15])
	}
	return dst
}
