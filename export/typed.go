package export

import (
	"errors"
	"fmt"
	"math"
)

// Typed column kinds: the Parquet types of PostgreSQL values (`walscope
// table --format parquet` and `walscope rows --format parquet`, package
// table's ParquetColumns), beside the export tables' own. Each maps to a
// physical type and the logical type that says what it holds
// (parquet-format's LogicalTypes.md):
//
//	Int16      INT32 INTEGER(16, signed)                 U: the value (int64 bits)
//	Float32    FLOAT                                     U: math.Float32bits
//	Float64    DOUBLE                                    U: math.Float64bits
//	Bytes      BYTE_ARRAY, no logical type (binary)      S: the bytes
//	Date       INT32 DATE                                U: days since 1970-01-01 (int64 bits)
//	TimeMicros INT64 TIME(MICROS, isAdjustedToUTC=false) U: microseconds since midnight
//	Timestamp  INT64 TIMESTAMP(MICROS, isAdjustedToUTC=false) U: microseconds since 1970-01-01 00:00, local
//	UUID       FIXED_LEN_BYTE_ARRAY(16) UUID             S: the 16 bytes
//	Decimal    DECIMAL(Precision, Scale): INT64 when Precision <= 18 (U: the
//	           unscaled value, int64 bits), else FIXED_LEN_BYTE_ARRAY(16)
//	           (S: the unscaled value, 16 bytes big-endian two's complement)
//
// Time (TIMESTAMP, isAdjustedToUTC=true) is timestamptz's. These kinds are
// written only to Parquet (Create refuses them for JSONL and CSV). Float,
// UUID and wide decimal chunks carry no min/max statistics (only the null
// count): the writer's integer statistics would order floats' bits wrong.
const (
	Int16 Kind = LSN + 1 + iota
	Float32
	Float64
	Bytes
	Date
	TimeMicros
	Timestamp
	UUID
	Decimal
)

// MaxDecimalPrecision is the largest Decimal precision written: 16 bytes
// hold 38 decimal digits, the most DuckDB, Spark and arrow read.
const MaxDecimalPrecision = 38

// ErrKind is the sentinel of a column the writer cannot write.
var ErrKind = errors.New("column kind not supported")

// typedOnly reports whether k is one of the kinds only Parquet files hold.
func typedOnly(k Kind) bool { return k > LSN && k <= Decimal }

// wideDecimal reports whether a Decimal column is FIXED_LEN_BYTE_ARRAY(16).
func wideDecimal(c FileColumn) bool { return c.Kind == Decimal && c.Precision > 18 }

// checkTyped refuses typed kinds in formats other than Parquet and Decimal
// columns whose precision and scale Parquet cannot hold.
func checkTyped(f Format, s *Schema) error {
	for _, c := range s.Columns {
		if !typedOnly(c.Kind) {
			continue
		}
		if f != Parquet {
			return fmt.Errorf("%w: column %s is written only to Parquet, not %s", ErrKind, c.Name, f)
		}
		if c.Kind == Decimal && (c.Precision < 1 || c.Precision > MaxDecimalPrecision || c.Scale < 0 || c.Scale > c.Precision) {
			return fmt.Errorf("%w: column %s: DECIMAL(%d, %d) (precision 1 to %d, scale 0 to the precision)", ErrKind, c.Name, c.Precision, c.Scale, MaxDecimalPrecision)
		}
	}
	return nil
}

// typedStats reports whether a chunk's min/max statistics are kept: not
// for floats (stored as their bits) nor fixed-length byte arrays.
func typedStats(c FileColumn) bool {
	switch c.Kind {
	case Float32, Float64, UUID, Bytes:
		return false
	case Decimal:
		return !wideDecimal(c)
	}
	return true
}

// Parquet's Type, ConvertedType and LogicalType values of the typed kinds
// (parquet.thrift).
const (
	pqFloat          = 4
	pqDouble         = 5
	pqFixedByteArray = 7

	pqDecimal = 5 // ConvertedType
	pqDate    = 6
	pqInt16   = 16
)

// typedSchemaElement writes the SchemaElement fields of a typed column
// after its name (field 4): converted_type, scale, precision, logicalType.
func typedSchemaElement(t *thriftWriter, c FileColumn) {
	switch c.Kind {
	case Int16:
		t.i32(6, pqInt16)
		t.begin(10) // LogicalType
		t.begin(10) // INTEGER
		t.i8(1, 16)
		t.boolean(2, true)
		t.end()
		t.end()
	case Date:
		t.i32(6, pqDate)
		t.begin(10)
		t.begin(6) // DATE
		t.end()
		t.end()
	case TimeMicros, Timestamp:
		// isAdjustedToUTC=false: no converted type (TIME_MICROS and
		// TIMESTAMP_MICROS mean UTC-adjusted)
		t.begin(10)
		if c.Kind == TimeMicros {
			t.begin(7) // TIME
		} else {
			t.begin(8) // TIMESTAMP
		}
		t.boolean(1, false)
		t.begin(2) // unit
		t.begin(2) // MICROS
		t.end()
		t.end()
		t.end()
		t.end()
	case UUID:
		t.begin(10)
		t.begin(14) // UUID
		t.end()
		t.end()
	case Decimal:
		t.i32(6, pqDecimal)
		t.i32(7, int32(c.Scale))
		t.i32(8, int32(c.Precision))
		t.begin(10)
		t.begin(5) // DECIMAL
		t.i32(1, int32(c.Scale))
		t.i32(2, int32(c.Precision))
		t.end()
		t.end()
	}
}

// typedPhysical is the physical type of a typed kind.
func typedPhysical(c FileColumn) int32 {
	switch c.Kind {
	case Int16, Date:
		return pqInt32
	case Float32:
		return pqFloat
	case Float64:
		return pqDouble
	case Bytes:
		return pqByteArray
	case UUID:
		return pqFixedByteArray
	case Decimal:
		if wideDecimal(c) {
			return pqFixedByteArray
		}
	}
	return pqInt64 // TimeMicros, Timestamp, narrow Decimal
}

// fixedSize is the type_length of a FIXED_LEN_BYTE_ARRAY column, else 0.
func fixedSize(c FileColumn) int {
	if c.Kind == UUID || wideDecimal(c) {
		return 16
	}
	return 0
}

// newTypedColumn returns the buffer of a typed column: integers and float
// bits in the integer columns (PLAIN), byte arrays in stringColumn,
// fixed-length ones in fixedColumn.
func newTypedColumn(c FileColumn, group int) column {
	switch c.Kind {
	case Int16, Date, Float32:
		return &int32Column{group: group}
	case Bytes:
		return &stringColumn{group: group}
	}
	if n := fixedSize(c); n > 0 {
		return &fixedColumn{size: n, group: group}
	}
	return &int64Column{group: group}
}

// fixedColumn is FIXED_LEN_BYTE_ARRAY, PLAIN: size bytes a value, from
// Value.S (shorter values are padded with zeros, longer cut: the callers
// give exactly size).
type fixedColumn struct {
	data  []byte
	n     int
	size  int
	valid validity
	group int
}

func (c *fixedColumn) add(v *Value) {
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(c.n, !v.Null)
	}
	c.n++
	if v.Null {
		return
	}
	at := len(c.data)
	c.data = append(c.data, v.S[:min(len(v.S), c.size)]...)
	for len(c.data) < at+c.size {
		c.data = append(c.data, 0)
	}
}

func (c *fixedColumn) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	b := w.startBody(nullable, &c.valid, n)
	// only valid rows have bytes: those of the first n rows
	valid := n
	if c.valid.nulls > 0 {
		valid = 0
		for i := range n {
			if c.valid.valid(i) {
				valid++
			}
		}
	}
	b = append(b, c.data[:valid*c.size]...)
	w.body = b
	m.enc = encPlain
	m.stats = chunkStats{nulls: int64(c.valid.nulls)}
	return w.page(m, pageData, b, n, encPlain)
}

func (c *fixedColumn) reset() {
	c.data, c.n = c.data[:0], 0
	c.valid.reset()
}

// Float32Value and Float64Value are the Values of float cells.
func Float32Value(f float32) Value { return Value{U: uint64(math.Float32bits(f))} }
func Float64Value(f float64) Value { return Value{U: math.Float64bits(f)} }
