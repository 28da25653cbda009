package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/typeout"
)

// Parquet: each column typed where the Parquet type holds every value of
// the PostgreSQL type exactly, else PostgreSQL's text (docs/commands/table.md
// lists the mapping):
//
//	bool                       BOOLEAN
//	smallint                   INT32 INTEGER(16, signed)
//	integer                    INT32
//	bigint, oid                INT64
//	real, double precision     FLOAT, DOUBLE (NaN and ±Infinity are doubles)
//	bytea                      BYTE_ARRAY (binary)
//	uuid                       FIXED_LEN_BYTE_ARRAY(16) UUID
//	date                       INT32 DATE
//	time                       INT64 TIME(MICROS, not UTC)
//	timestamp                  INT64 TIMESTAMP(MICROS, isAdjustedToUTC=false)
//	timestamptz                INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true): the instant, UTC
//	numeric(p,s), p <= 38      DECIMAL(p, s) (INT64 to 18 digits, else 16 bytes)
//	everything else            UTF8: the output function's text (typeout), as COPY prints it
//
// Domains are their base type (with the domain's typmod). The values a
// typed column cannot hold exactly are date and timestamp ±infinity,
// timestamps after 294247-01-10 (past INT64 microseconds since 1970) and
// numeric NaN (numeric(p,s) admits it): every date, timestamp, timestamptz
// and numeric(p,s) column has a companion text column, its name with
// "_special", null except for those values, where it holds PostgreSQL's
// text ("infinity", "-infinity", "NaN", the far timestamp); the typed
// column is null there. (±infinity was once written as the extreme value,
// ±(2^31-1) days or ±(2^63-1) µs, DuckDB's own infinity: other readers
// take it for a date out of their range, and polars panics printing it.)

// SpecialSuffix ends the name of a typed column's companion text column.
const SpecialSuffix = "_special"

// ErrNotUTF8 is the sentinel of a text value that is not UTF-8 in a
// database whose encoding says it is: Parquet strings are UTF-8. Text of a
// database in another encoding is converted (typeout.AppendUTF8: the
// single-byte and EUC encodings as the server converts them; an error
// wrapping typeout.ErrNoEquivalent, ErrInvalidByteSequence or
// ErrEncodingNotConverted otherwise).
var ErrNotUTF8 = errors.New("text is not valid UTF-8")

// ErrDatumLength is the sentinel of a stored value whose length is not its
// fixed-length type's.
var ErrDatumLength = errors.New("stored value of the wrong length")

// ParquetColumn is how one column of a relation is written to Parquet.
type ParquetColumn struct {
	Name  string // the Parquet column's name
	TypID uint32 // the column's type (a domain's own OID)
	// Kind is the Parquet column's kind (package export), Precision and
	// Scale a Decimal's.
	Kind             export.Kind
	Precision, Scale int
	// Special names the companion text column ("" for none).
	Special string
	base    uint32 // the type, domains resolved
	buf     []byte // the text of the last value (Append is not for concurrent use)
	// encoding is the database's (pg_database.encoding): text columns are
	// converted to UTF-8 from it
	encoding int32
	conv     []byte
}

// Built-in type OIDs (pg_type.dat).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestampTz = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
)

// databaseEncoding is the encoding of c's database (pg_database.encoding),
// UTF8 when the catalog does not say.
func databaseEncoding(c *catalog.Catalog) int32 {
	if c != nil {
		if db := c.Database(c.DatabaseOID); db != nil {
			return db.Encoding
		}
	}
	return typeout.EncodingUTF8
}

// ParquetName returns name, a relation's or a column's name as c's
// database stores it, in UTF-8 as Parquet's names and strings are
// (typeout.NameUTF8: converted as the server converts it for a UTF8
// client).
func ParquetName(c *catalog.Catalog, name string) string {
	return typeout.NameUTF8(name, databaseEncoding(c))
}

// UTF8Text returns text with its output converted from c's database
// encoding to UTF-8, as JSON text must be (RFC 8259) and as the server
// converts row_to_json's output for a UTF8 client (typeout.AppendUTF8: a
// value without a UTF-8 equivalent is an error naming its bytes); text
// itself when the database is in UTF8. Not safe for concurrent use.
func UTF8Text(c *catalog.Catalog, text ValueText) ValueText {
	enc := databaseEncoding(c)
	if enc == typeout.EncodingUTF8 {
		return text
	}
	var buf []byte
	return func(dst []byte, typ uint32, datum []byte) ([]byte, error) {
		var err error
		if buf, err = text(buf[:0], typ, datum); err != nil {
			return dst, err
		}
		return typeout.AppendUTF8(dst, buf, enc)
	}
}

// ParquetColumns returns the Parquet columns of cols (each named prefix
// and its name), their kinds chosen from the catalog as of the target
// (types and typmods), before any row is read: a column's type never
// depends on its values.
func ParquetColumns(c *catalog.Catalog, cols []Column, prefix string) []ParquetColumn {
	out := make([]ParquetColumn, len(cols))
	enc := databaseEncoding(c)
	for i, col := range cols {
		a := col.Attribute
		p := ParquetColumn{Name: prefix + typeout.NameUTF8(a.Name, enc), TypID: a.TypID, Kind: export.String, encoding: enc}
		base, typmod := a.TypID, a.TypMod
		for range 32 { // a domain over a domain: as its base type
			var t *catalog.Type
			if c != nil {
				t = c.Type(base)
			}
			if t == nil || t.Type != 'd' {
				break
			}
			base = t.BaseType
			if typmod < 0 {
				typmod = t.TypMod
			}
		}
		p.base = base
		switch base {
		case oidBool:
			p.Kind = export.Bool
		case oidInt2:
			p.Kind = export.Int16
		case oidInt4:
			p.Kind = export.Int32
		case oidInt8, oidOID:
			p.Kind = export.Int64
		case oidFloat4:
			p.Kind = export.Float32
		case oidFloat8:
			p.Kind = export.Float64
		case oidBytea:
			p.Kind = export.Bytes
		case oidUUID:
			p.Kind = export.UUID
		case oidTime:
			p.Kind = export.TimeMicros
		case oidDate:
			p.Kind, p.Special = export.Date, p.Name+SpecialSuffix
		case oidTimestamp:
			p.Kind, p.Special = export.Timestamp, p.Name+SpecialSuffix
		case oidTimestampTz:
			p.Kind, p.Special = export.Time, p.Name+SpecialSuffix
		case oidNumeric:
			if prec, scale, ok := decimalOf(typmod); ok {
				p.Kind, p.Precision, p.Scale, p.Special = export.Decimal, prec, scale, p.Name+SpecialSuffix
			}
		}
		out[i] = p
	}
	return out
}

// decimalOf returns the Parquet DECIMAL holding every value of numeric
// with typmod: ((precision << 16) | (scale & 0x7ff)) + VARHDRSZ (numeric.c's
// make_numeric_typmod; the scale an 11-bit signed number from PostgreSQL
// 15, 0 to the precision before). A negative scale is DECIMAL(p - s, 0); a
// scale above the precision (15) DECIMAL(s, s).
func decimalOf(typmod int32) (precision, scale int, ok bool) {
	if typmod < 4 {
		return 0, 0, false // unconstrained: any scale, text
	}
	m := typmod - 4
	precision, scale = int(m>>16&0xFFFF), int((m&0x7FF)^1024)-1024
	switch {
	case scale < 0:
		precision, scale = precision-scale, 0
	case scale > precision:
		precision = scale
	}
	return precision, scale, precision >= 1 && precision <= export.MaxDecimalPrecision
}

// ParquetSchema is the schema of a file of the columns fixed and then
// cols' (each followed by its companion text column). A companion whose
// name another column has gets "_" appended until it is unique (cols'
// Special are updated).
func ParquetSchema(name string, fixed []export.Column, cols ...[]ParquetColumn) *export.Schema {
	taken := map[string]bool{}
	for _, f := range fixed {
		taken[f.Name] = true
	}
	for _, g := range cols {
		for _, p := range g {
			taken[p.Name] = true
		}
	}
	s := &export.Schema{Table: name, Columns: append([]export.Column(nil), fixed...)}
	for _, g := range cols {
		for i := range g {
			p := &g[i]
			s.Columns = append(s.Columns, export.Column{Name: p.Name, Kind: p.Kind, Nullable: true, Precision: p.Precision, Scale: p.Scale})
			if p.Special == "" {
				continue
			}
			for taken[p.Special] {
				p.Special += "_"
			}
			taken[p.Special] = true
			s.Columns = append(s.Columns, export.Column{Name: p.Special, Kind: export.String, Nullable: true, Dict: true})
		}
	}
	return s
}

// Microseconds and days between 1970-01-01 and 2000-01-01, PostgreSQL's
// epoch (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE).
const (
	unixEpochDays   = 10957
	unixEpochMicros = unixEpochDays * 86400 * 1_000_000
)

// Append appends the Values of one cell (datum, its plain bytes; null for
// NULL) to dst: the typed value, then the companion's when the column has
// one. text prints the column's type (for text columns and the companion).
func (p *ParquetColumn) Append(dst export.Row, datum []byte, null bool, text ValueText) (export.Row, error) {
	if null {
		dst = append(dst, export.Value{Null: true})
		if p.Special != "" {
			dst = append(dst, export.Value{Null: true})
		}
		return dst, nil
	}
	short := func(n int) error {
		if len(datum) != n {
			return fmt.Errorf("%w: %d bytes, the type's length is %d", ErrDatumLength, len(datum), n)
		}
		return nil
	}
	var v export.Value
	special := false // the typed value is a stand-in: the companion has the text
	switch p.Kind {
	case export.Bool:
		if err := short(1); err != nil {
			return dst, err
		}
		if datum[0] != 0 {
			v.U = 1
		}
	case export.Int16:
		if err := short(2); err != nil {
			return dst, err
		}
		v.U = uint64(int64(int16(binary.LittleEndian.Uint16(datum))))
	case export.Int32, export.Float32:
		if err := short(4); err != nil {
			return dst, err
		}
		if p.Kind == export.Float32 {
			v.U = uint64(binary.LittleEndian.Uint32(datum))
		} else {
			v.U = uint64(int64(int32(binary.LittleEndian.Uint32(datum))))
		}
	case export.Int64:
		if p.base == oidOID {
			if err := short(4); err != nil {
				return dst, err
			}
			v.U = uint64(binary.LittleEndian.Uint32(datum))
			break
		}
		fallthrough
	case export.Float64, export.TimeMicros:
		if err := short(8); err != nil {
			return dst, err
		}
		v.U = binary.LittleEndian.Uint64(datum)
	case export.Bytes:
		v.S = string(datum)
	case export.UUID:
		if err := short(16); err != nil {
			return dst, err
		}
		v.S = string(datum)
	case export.Date:
		if err := short(4); err != nil {
			return dst, err
		}
		d := int32(binary.LittleEndian.Uint32(datum))
		switch d {
		case math.MaxInt32, math.MinInt32: // DATEVAL_NOEND, DATEVAL_NOBEGIN
			v.Null, special = true, true
		default:
			// every finite date fits: the last, 5874897-12-31, is
			// 2145031948 days after 2000
			v.U = uint64(int64(d) + unixEpochDays)
		}
	case export.Timestamp, export.Time:
		if err := short(8); err != nil {
			return dst, err
		}
		ts := int64(binary.LittleEndian.Uint64(datum))
		switch {
		case ts == math.MaxInt64, ts == math.MinInt64: // DT_NOEND, DT_NOBEGIN
			v.Null, special = true, true
		case ts >= math.MaxInt64-unixEpochMicros:
			v.Null, special = true, true // past INT64 microseconds since 1970
		default:
			v.U = uint64(ts + unixEpochMicros)
		}
	case export.Decimal:
		s, err := text(p.buf[:0], p.TypID, datum)
		if err != nil {
			return dst, err
		}
		p.buf = s
		if !p.decimal(&v, s) {
			v, special = export.Value{Null: true}, true
		}
	default: // text
		s, err := text(p.buf[:0], p.TypID, datum)
		if err != nil {
			return dst, err
		}
		p.buf = s
		if p.encoding == typeout.EncodingUTF8 {
			if !utf8.Valid(s) {
				return dst, ErrNotUTF8
			}
			v.S = string(s)
			break
		}
		if p.conv, err = typeout.AppendUTF8(p.conv[:0], s, p.encoding); err != nil {
			return dst, err // it names the encoding and the bytes
		}
		v.S = string(p.conv)
	}
	dst = append(dst, v)
	if p.Special == "" {
		return dst, nil
	}
	if !special {
		return append(dst, export.Value{Null: true}), nil
	}
	s, err := text(p.buf[:0], p.TypID, datum)
	if err != nil {
		return dst, err
	}
	p.buf = s
	return append(dst, export.Value{S: string(s)}), nil
}

// decimal sets v to the unscaled value of s, numeric's text ([-]digits[.digits]),
// at the column's scale; false if s is not a number (NaN, ±Infinity) or
// does not fit the column's precision and scale.
func (p *ParquetColumn) decimal(v *export.Value, s []byte) bool {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var digits []byte
	frac, dot := 0, false
	for _, c := range s {
		switch {
		case c == '.' && !dot:
			dot = true
		case c >= '0' && c <= '9':
			if len(digits) > 0 || c != '0' || dot {
				digits = append(digits, c)
			}
			if dot {
				frac++
			}
		default:
			return false
		}
	}
	if len(s) == 0 || frac > p.Scale {
		return false
	}
	for ; frac < p.Scale; frac++ {
		digits = append(digits, '0')
	}
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		digits = append(digits, '0')
	}
	if len(digits) > p.Precision {
		return false
	}
	if p.Precision <= 18 {
		var u int64
		for _, c := range digits {
			u = u*10 + int64(c-'0')
		}
		if neg {
			u = -u
		}
		v.U = uint64(u)
		return true
	}
	x, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return false
	}
	if neg {
		x.Neg(x)
	}
	v.S = decimalBytes(x)
	return true
}

// decimalBytes is x (at most 38 digits) as 16 bytes, big-endian two's
// complement (Parquet's DECIMAL on FIXED_LEN_BYTE_ARRAY).
func decimalBytes(x *big.Int) string {
	var b [16]byte
	if x.Sign() < 0 {
		x = new(big.Int).Add(x, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	x.FillBytes(b[:])
	return string(b[:])
}

// AppendParquetRow appends the Values of the columns cols of a row
// (indexes into values and nulls, in pcs' order; the row at block, offset)
// to dst; an error is a *RowError naming the row and column.
func AppendParquetRow(dst export.Row, pcs []ParquetColumn, cols []int, block uint32, offset uint16, values [][]byte, nulls []bool, text ValueText) (export.Row, error) {
	for i := range pcs {
		var err error
		if dst, err = pcs[i].Append(dst, values[cols[i]], nulls[cols[i]], text); err != nil {
			return dst, &RowError{Block: block, Offset: offset, Column: pcs[i].Name, Err: err}
		}
	}
	return dst, nil
}
