package export

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var typedSchema = &Schema{Table: "typed", Columns: []Column{
	{Name: "i16", Kind: Int16, Nullable: true},
	{Name: "f32", Kind: Float32, Nullable: true},
	{Name: "f64", Kind: Float64, Nullable: true},
	{Name: "by", Kind: Bytes, Nullable: true},
	{Name: "d", Kind: Date, Nullable: true},
	{Name: "tm", Kind: TimeMicros, Nullable: true},
	{Name: "ts", Kind: Timestamp, Nullable: true},
	{Name: "tstz", Kind: Time, Nullable: true},
	{Name: "u", Kind: UUID, Nullable: true},
	{Name: "dec", Kind: Decimal, Precision: 10, Scale: 2, Nullable: true},
	{Name: "wide", Kind: Decimal, Precision: 38, Scale: 5, Nullable: true},
	{Name: "req", Kind: Float64},
}}

// typedWant is row i's values: a plain Go value per column (nil for null).
func typedWant(i int) []any {
	f32 := []float32{1.5, float32(math.NaN()), float32(math.Inf(-1)), -0.0, math.MaxFloat32}[i%5]
	f64 := []float64{0.1, math.NaN(), math.Inf(1), 1e-300, -2.5}[i%5]
	wide := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i%37)), nil)
	if i%2 == 1 {
		wide.Neg(wide)
	}
	r := []any{int16(i*97 - 32768), f32, f64, []byte(fmt.Sprintf("\x00\xff%d", i)), int32(i*1000 - 500000),
		int64(i) * 3_600_000_000 % 86_400_000_000, int64(i)*1e12 - 9e15, int64(i) * 7e11, uuidOf(i), int64(i*12345 - 6_000_000), wide, f64}
	if i%4 == 3 {
		for c := range len(r) - 1 {
			r[c] = nil
		}
	}
	return r
}

func uuidOf(i int) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(b[8:], ^uint64(i))
	return b
}

// bigBytes16 is x as 16 bytes big-endian two's complement.
func bigBytes16(x *big.Int) string {
	var b [16]byte
	v := new(big.Int).Set(x)
	if v.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	v.FillBytes(b[:])
	return string(b[:])
}

func typedRow(i int) Row {
	w := typedWant(i)
	r := make(Row, len(w))
	for c, x := range w {
		switch x := x.(type) {
		case nil:
			r[c] = Value{Null: true}
		case int16:
			r[c] = Value{U: uint64(int64(x))}
		case int32:
			r[c] = Value{U: uint64(int64(x))}
		case int64:
			r[c] = Value{U: uint64(x)}
		case float32:
			r[c] = Float32Value(x)
		case float64:
			r[c] = Float64Value(x)
		case []byte:
			r[c] = Value{S: string(x)}
		case *big.Int:
			r[c] = Value{S: bigBytes16(x)}
		}
	}
	return r
}

// TestParquetTypedKinds writes every typed kind over several row groups
// (nulls included) and reads it back with arrow-go's pqarrow: the arrow
// types the logical types map to, and every value (float bits, NaN
// included).
func TestParquetTypedKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typed.parquet")
	w, err := Create(path, Parquet, typedSchema, Options{RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	const n = 350
	for i := range n {
		if err := w.Write(typedRow(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	wantTypes := []string{"int16", "float32", "float64", "binary", "date32", "time64[us]", "timestamp[us]", "timestamp[us, tz=UTC]",
		"extension<arrow.uuid>", "decimal(10, 2)", "decimal(38, 5)", "float64"}
	for c, f := range tbl.Schema().Fields() {
		if f.Type.String() != wantTypes[c] {
			t.Errorf("column %s: arrow type %s, want %s", f.Name, f.Type, wantTypes[c])
		}
	}
	tr := array.NewTableReader(tbl, 128)
	defer tr.Release()
	i := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		for j := 0; j < int(rec.NumRows()); j, i = j+1, i+1 {
			want := typedWant(i)
			for c := range want {
				a := rec.Column(c)
				if a.IsNull(j) != (want[c] == nil) {
					t.Fatalf("row %d column %d: null %v", i, c, a.IsNull(j))
				}
				if want[c] == nil {
					continue
				}
				var got any
				switch x := a.(type) {
				case *array.Int16:
					got = x.Value(j)
				case *array.Float32:
					got = x.Value(j)
				case *array.Float64:
					got = x.Value(j)
				case *array.Binary:
					got = x.Value(j)
				case *array.Date32:
					got = int32(x.Value(j))
				case *array.Time64:
					got = int64(x.Value(j))
				case *array.Timestamp:
					got = int64(x.Value(j))
				case *array.Decimal128:
					got = x.Value(j).BigInt() // the unscaled value
					if c == 9 {
						got = got.(*big.Int).Int64()
					}
				case array.ExtensionArray:
					got = x.Storage().(*array.FixedSizeBinary).Value(j)
				default:
					t.Fatalf("column %d: %T", c, a)
				}
				if !sameValue(got, want[c]) {
					t.Fatalf("row %d column %s: %v, want %v", i, tbl.Schema().Field(c).Name, got, want[c])
				}
			}
		}
	}
	if i != n {
		t.Errorf("read %d rows, want %d", i, n)
	}
}

func sameValue(got, want any) bool {
	switch w := want.(type) {
	case float32:
		return math.Float32bits(got.(float32)) == math.Float32bits(w)
	case float64:
		return math.Float64bits(got.(float64)) == math.Float64bits(w)
	case []byte:
		return string(got.([]byte)) == string(w)
	case *big.Int:
		return got.(*big.Int).Cmp(w) == 0
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// TestTypedRefused: typed kinds only in Parquet, and decimals Parquet can
// hold.
func TestTypedRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(filepath.Join(dir, "a.jsonl"), JSONL, typedSchema, Options{}); !errors.Is(err, ErrKind) {
		t.Errorf("JSONL of typed columns: %v", err)
	}
	for _, c := range []Column{{Name: "x", Kind: Decimal, Precision: 39}, {Name: "x", Kind: Decimal, Precision: 5, Scale: 6}, {Name: "x", Kind: Decimal}} {
		s := &Schema{Table: "t", Columns: []Column{c}}
		if _, err := Create(filepath.Join(dir, "a.parquet"), Parquet, s, Options{}); !errors.Is(err, ErrKind) {
			t.Errorf("DECIMAL(%d, %d): %v", c.Precision, c.Scale, err)
		}
	}
}
