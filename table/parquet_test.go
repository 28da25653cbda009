package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/export"
	"github.com/walscope/walscope/xlog"
)

// numericTypmod is numeric(p,s)'s typmod as make_numeric_typmod
// (numeric.c) makes it.
func numericTypmod(p, s int) int32 { return int32(p<<16|s&0x7FF) + 4 }

// TestDecimalOf: the DECIMAL each numeric typmod is written as, including
// PostgreSQL 15's negative scales and scales above the precision.
func TestDecimalOf(t *testing.T) {
	for _, c := range []struct {
		typmod     int32
		prec, scal int
		ok         bool
	}{
		{numericTypmod(10, 2), 10, 2, true},
		{numericTypmod(38, 0), 38, 0, true},
		{numericTypmod(38, 38), 38, 38, true},
		{numericTypmod(3, -2), 5, 0, true},
		{numericTypmod(2, 4), 4, 4, true},
		{numericTypmod(37, -2), 39, 0, false},
		{numericTypmod(40, 5), 40, 5, false},
		{numericTypmod(1000, 0), 1000, 0, false},
		{numericTypmod(1, 1000), 1000, 1000, false},
		{numericTypmod(5, -1000), 1005, 0, false},
		{-1, 0, 0, false},
	} {
		p, s, ok := decimalOf(c.typmod)
		if ok != c.ok || ok && (p != c.prec || s != c.scal) {
			t.Errorf("typmod %d: DECIMAL(%d, %d) %v, want DECIMAL(%d, %d) %v", c.typmod, p, s, ok, c.prec, c.scal, c.ok)
		}
	}
}

// TestDecimalValue: numeric's text as the unscaled value of the column's
// DECIMAL, or false for what it cannot hold.
func TestDecimalValue(t *testing.T) {
	narrow := &ParquetColumn{Kind: export.Decimal, Precision: 10, Scale: 2}
	wide := &ParquetColumn{Kind: export.Decimal, Precision: 38, Scale: 5}
	for _, c := range []struct {
		col  *ParquetColumn
		text string
		want string // the unscaled value; "" for false
	}{
		{narrow, "3.14", "314"},
		{narrow, "-0.01", "-1"},
		{narrow, "0", "0"},
		{narrow, "0.00", "0"},
		{narrow, "99999999.99", "9999999999"},
		{narrow, "-99999999.99", "-9999999999"},
		{narrow, "7", "700"},
		{narrow, "123456789.00", ""}, // 11 digits
		{narrow, "1.234", ""},        // scale 3
		{narrow, "NaN", ""},
		{narrow, "Infinity", ""},
		{narrow, "-Infinity", ""},
		{narrow, "", ""},
		{narrow, "-", "0"},
		{narrow, "1.2.3", ""},
		{wide, "123456789012345678901234567890123.12345", "12345678901234567890123456789012312345"},
		{wide, "-123456789012345678901234567890123.12345", "-12345678901234567890123456789012312345"},
		{wide, "0.00001", "1"},
		{wide, "0", "0"},
		{wide, "1234567890123456789012345678901234", ""}, // 39 digits at scale 5
	} {
		var v export.Value
		ok := c.col.decimal(&v, []byte(c.text))
		got := ""
		if ok {
			if c.col.Precision <= 18 {
				got = fmt.Sprint(int64(v.U))
			} else {
				x := new(big.Int).SetBytes([]byte(v.S))
				if len(v.S) != 16 {
					t.Fatalf("%q: %d bytes", c.text, len(v.S))
				}
				if v.S[0]&0x80 != 0 {
					x.Sub(x, new(big.Int).Lsh(big.NewInt(1), 128))
				}
				got = x.String()
			}
		}
		if c.text == "-" {
			continue // not numeric's output; only not to panic
		}
		if got != c.want {
			t.Errorf("DECIMAL(%d, %d) of %q: %q, want %q", c.col.Precision, c.col.Scale, c.text, got, c.want)
		}
	}
}

// parquetKinds is one column of each typed kind (and text), as
// ParquetColumns makes them for the built-in types.
func parquetKinds() []ParquetColumn {
	var cols []Column
	for i, typ := range []uint32{oidBool, oidInt2, oidInt4, oidInt8, oidOID, oidFloat4, oidFloat8, oidBytea, oidUUID, oidDate, oidTime, oidTimestamp, oidTimestampTz, oidNumeric, oidNumeric, oidNumeric, 25} {
		a := catalog.Attribute{Name: fmt.Sprint("c", i), TypID: typ, TypMod: -1}
		if i == 14 {
			a.TypMod = numericTypmod(10, 2)
		}
		if i == 15 {
			a.TypMod = numericTypmod(30, 3)
		}
		cols = append(cols, Column{Attribute: a})
	}
	return ParquetColumns(nil, cols, "")
}

// TestParquetSpecialValues: infinities, NaN and far timestamps null, each
// with its text in the companion; a plain value's companion null.
func TestParquetSpecialValues(t *testing.T) {
	pcs := parquetKinds()
	byKind := func(k export.Kind, special bool) *ParquetColumn {
		for i := range pcs {
			if pcs[i].Kind == k && (pcs[i].Special != "") == special {
				return &pcs[i]
			}
		}
		t.Fatalf("no column of kind %d", k)
		return nil
	}
	text := func(dst []byte, _ uint32, datum []byte) ([]byte, error) {
		return append(dst, fmt.Sprintf("text of %x", datum)...), nil
	}
	le32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	for _, c := range []struct {
		col     *ParquetColumn
		datum   []byte
		want    export.Value
		special bool
	}{
		{byKind(export.Date, true), le32(math.MaxInt32), export.Value{Null: true}, true},
		{byKind(export.Date, true), le32(math.MinInt32), export.Value{Null: true}, true},
		{byKind(export.Date, true), le32(0), export.Value{U: unixEpochDays}, false},
		{byKind(export.Timestamp, true), le64(math.MaxInt64), export.Value{Null: true}, true},
		{byKind(export.Time, true), le64(math.MinInt64), export.Value{Null: true}, true},
		{byKind(export.Time, true), le64(math.MaxInt64 - unixEpochMicros), export.Value{Null: true}, true},
		{byKind(export.Time, true), le64(-unixEpochMicros), export.Value{U: 0}, false},
		{byKind(export.Int64, false), le64(-5), export.Value{U: uint64(1<<64 - 5)}, false},
	} {
		got, err := c.col.Append(nil, c.datum, false, text)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1+btoi(c.col.Special != "") || got[0] != c.want {
			t.Errorf("%s of %x: %+v, want %+v", c.col.Name, c.datum, got, c.want)
			continue
		}
		if c.col.Special != "" && (got[1].Null == c.special || c.special && got[1].S != fmt.Sprintf("text of %x", c.datum)) {
			t.Errorf("%s of %x: companion %+v", c.col.Name, c.datum, got[1])
		}
	}
	if _, err := byKind(export.UUID, false).Append(nil, make([]byte, 15), false, text); !errors.Is(err, ErrDatumLength) {
		t.Errorf("a 15-byte uuid: %v", err)
	}
	bad := func(dst []byte, _ uint32, _ []byte) ([]byte, error) { return append(dst, 0xff, 0xfe), nil }
	if _, err := byKind(export.String, false).Append(nil, []byte("x"), false, bad); !errors.Is(err, ErrNotUTF8) {
		t.Errorf("text not UTF-8: %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzParquetAppend: any stored bytes, in a column of any kind, give an
// error or one Value (two with a companion): never a panic, never a value
// of the wrong shape.
func FuzzParquetAppend(f *testing.F) {
	f.Add(0, []byte{1})
	f.Add(9, []byte{0xff, 0xff, 0xff, 0x7f})
	f.Add(13, []byte("NaN"))
	f.Add(15, []byte("-123456789012345678901234567.123"))
	pcs := parquetKinds()
	f.Fuzz(func(t *testing.T, which int, datum []byte) {
		p := &pcs[uint(which)%uint(len(pcs))]
		// the text is the datum itself: numbers' texts come from the fuzzer too
		text := func(dst []byte, _ uint32, d []byte) ([]byte, error) { return append(dst, d...), nil }
		got, err := p.Append(nil, datum, false, text)
		if err != nil {
			return
		}
		if len(got) != 1+btoi(p.Special != "") {
			t.Fatalf("%d values", len(got))
		}
		switch p.Kind {
		case export.UUID:
			if len(got[0].S) != 16 {
				t.Fatalf("uuid of %d bytes", len(got[0].S))
			}
		case export.Decimal:
			if p.Precision > 18 && !got[0].Null && len(got[0].S) != 16 {
				t.Fatalf("wide decimal of %d bytes", len(got[0].S))
			}
			if got[0].Null == got[1].Null {
				t.Fatalf("decimal %+v and companion %+v", got[0], got[1])
			}
		}
	})
}

// ExampleParquetColumn_Append: a timestamptz column's values, the instant
// as microseconds since 1970 and, for infinity, null with the text in the
// companion column.
func ExampleParquetColumn_Append() {
	col := ParquetColumns(nil, []Column{{Attribute: catalog.Attribute{Name: "at", TypID: 1184, TypMod: -1}}}, "")[0]
	text := func(dst []byte, _ uint32, datum []byte) ([]byte, error) { return append(dst, "infinity"...), nil }
	for _, micros := range []int64{0, math.MaxInt64} { // 2000-01-01 00:00 UTC; infinity
		row, _ := col.Append(nil, binary.LittleEndian.AppendUint64(nil, uint64(micros)), false, text)
		fmt.Printf("%s=%d (null=%v) %s=%q (null=%v)\n", col.Name, int64(row[0].U), row[0].Null, col.Special, row[1].S, row[1].Null)
	}
	// Output:
	// at=946684800000000 (null=false) at_special="" (null=true)
	// at=0 (null=true) at_special="infinity" (null=false)
}

// TestParquetEncoding: a text column of a database in another encoding is
// converted to UTF-8 (the mapping is the server's: typeout's
// TestSingleByteEncodingsAgainstServer; end to end: duckdbtest's
// TestTableParquetEncodings); a character with no equivalent, or
// MULE_INTERNAL text (which the server does not convert), is an error
// naming the encoding.
func TestParquetEncoding(t *testing.T) {
	text := func(dst []byte, _ uint32, datum []byte) ([]byte, error) { return append(dst, datum...), nil }
	for _, c := range []struct {
		enc   int32
		datum string
		want  string
		err   string
	}{
		{8, "caf\xe9", "café", ""},                          // LATIN1
		{24, "\x80 \x93q\x94", "€ “q”", ""},                 // WIN1252
		{24, "\x81", "", "0x81 in encoding WIN1252"},        // undefined in WIN1252
		{1, "\xa4\xa2c", "あc", ""},                          // EUC_JP
		{1, "\xa9\xa1", "", "0xa9 0xa1 in encoding EUC_JP"}, // no equivalent (PostgreSQL 15: 22P05)
		{7, "abc", "", "MULE_INTERNAL"},                     // no conversion on the server either
		{6, "\xff", "", "not valid UTF-8"},
	} {
		cat := catalog.New(xlog.V15, 5)
		cat.AddDatabase(catalog.Database{OID: 5, Encoding: c.enc})
		col := ParquetColumns(cat, []Column{{Attribute: catalog.Attribute{Name: "t", TypID: 25, TypMod: -1}}}, "")[0]
		got, err := col.Append(nil, []byte(c.datum), false, text)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q in encoding %d: %v, want an error saying %q", c.datum, c.enc, err, c.err)
		case c.err == "" && (err != nil || len(got) != 1 || got[0].S != c.want):
			t.Errorf("%q in encoding %d: %+v, %v; want %q", c.datum, c.enc, got, err, c.want)
		}
	}
}
