package typeout_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/typeout"
)

// fuzzTypes is a small catalog for the fuzz targets: the built-in types the
// Formatter knows, their arrays, an enum, a domain, a composite and a
// range over text, described as their pg_type rows are.
type fuzzTypes map[uint32]*catalog.Type

const (
	fuzzEnum   = 90001
	fuzzDomain = 90002
	fuzzComp   = 90003
	fuzzRange  = 90004
	fuzzRel    = 90005
	fuzzCompA  = 90006
)

func newFuzzTypes() fuzzTypes {
	m := fuzzTypes{}
	base := func(oid uint32, l int16, byval bool, align byte) {
		m[oid] = &catalog.Type{OID: oid, Len: l, ByVal: byval, Align: align, Type: 'b', Delim: ','}
	}
	arr := func(oid, elem uint32) {
		m[oid] = &catalog.Type{OID: oid, Len: -1, Align: 'd', Type: 'b', Delim: ',', Elem: elem, Output: 751}
	}
	for _, b := range []struct {
		oid   uint32
		l     int16
		byval bool
		align byte
		arr   uint32
	}{{16, 1, true, 'c', 1000}, {17, -1, false, 'i', 1001}, {18, 1, true, 'c', 1002}, {19, 64, false, 'c', 1003}, {20, 8, true, 'd', 1016},
		{21, 2, true, 's', 1005}, {23, 4, true, 'i', 1007}, {25, -1, false, 'i', 1009}, {26, 4, true, 'i', 1028}, {114, -1, false, 'i', 199},
		{650, -1, false, 'i', 651}, {700, 4, true, 'i', 1021}, {701, 8, true, 'd', 1022}, {774, 8, false, 'i', 775}, {790, 8, true, 'd', 791},
		{829, 6, false, 'i', 1040}, {869, -1, false, 'i', 1041}, {1042, -1, false, 'i', 1014}, {1043, -1, false, 'i', 1015}, {1082, 4, true, 'i', 1182},
		{1083, 8, true, 'd', 1183}, {1114, 8, true, 'd', 1115}, {1184, 8, true, 'd', 1185}, {1186, 16, false, 'd', 1187}, {1266, 12, false, 'd', 1270},
		{1700, -1, false, 'i', 1231}, {2950, 16, false, 'c', 2951}, {3802, -1, false, 'i', 3807}, {3904, -1, false, 'i', 3905}, {3906, -1, false, 'i', 3907}} {
		base(b.oid, b.l, b.byval, b.align)
		arr(b.arr, b.oid)
	}
	for _, r := range []uint32{3904, 3906} {
		m[r].Type, m[r].Output = 'r', 3835
	}
	m[fuzzEnum] = &catalog.Type{OID: fuzzEnum, Len: 4, ByVal: true, Align: 'i', Type: 'e', Delim: ',', Output: 3507}
	m[fuzzDomain] = &catalog.Type{OID: fuzzDomain, Len: -1, Align: 'i', Type: 'd', Delim: ',', BaseType: 25}
	m[fuzzComp] = &catalog.Type{OID: fuzzComp, Len: -1, Align: 'd', Type: 'c', Delim: ',', Relid: fuzzRel, Output: 2291}
	m[fuzzCompA] = &catalog.Type{OID: fuzzCompA, Len: -1, Align: 'd', Type: 'b', Delim: ',', Elem: fuzzComp, Output: 751}
	m[fuzzRange] = &catalog.Type{OID: fuzzRange, Len: -1, Align: 'i', Type: 'r', Delim: ',', Output: 3835}
	return m
}

func (m fuzzTypes) Type(oid uint32) *catalog.Type { return m[oid] }
func (m fuzzTypes) Attributes(relid uint32) []catalog.Attribute {
	if relid != fuzzRel {
		return nil
	}
	return []catalog.Attribute{
		{Relid: fuzzRel, Name: "a", TypID: 23, Len: 4, Num: 1, ByVal: true, Align: 'i'},
		{Relid: fuzzRel, Name: "b", TypID: 25, Len: -1, Num: 2, Align: 'i'},
		{Relid: fuzzRel, Name: "gone", TypID: 0, Len: 8, Num: 3, Align: 'd', Dropped: true},
		{Relid: fuzzRel, Name: "c", TypID: 1231, Len: -1, Num: 4, Align: 'i'},
		{Relid: fuzzRel, Name: "d", TypID: fuzzEnum, Len: 4, Num: 5, ByVal: true, Align: 'i'},
		{Relid: fuzzRel, Name: "e", TypID: fuzzComp, Len: -1, Num: 6, Align: 'd'}, // recursive: depth-limited
	}
}
func (m fuzzTypes) EnumLabels(typid uint32) []catalog.Enum {
	if typid != fuzzEnum {
		return nil
	}
	return []catalog.Enum{{OID: 16390, TypID: fuzzEnum, SortOrder: 1, Label: "sad"}, {OID: 16392, TypID: fuzzEnum, SortOrder: 2, Label: "with space"}}
}
func (m fuzzTypes) RangeSubtype(oid uint32) (uint32, bool) {
	if oid == fuzzRange {
		return 25, true
	}
	return 0, false
}

// fuzzOIDs are the types FuzzAppend picks from with its first byte.
var fuzzOIDs = func() []uint32 {
	var out []uint32
	for oid := range newFuzzTypes() {
		out = append(out, oid)
	}
	out = append(out, 3908, 3910, 3912, 3926, 4451, 4532, 4534, 24, 28, 5069, 2275, 142, 99999)
	sortU32(out)
	return out
}()

func sortU32(x []uint32) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

// seeds are stored datums read from PostgreSQL 15's pages (t_data after
// t_hoff, pageinspect), with their varlena header.
var fuzzSeeds = []struct {
	oid uint32
	hex string
}{
	{3802, "b70200002001000080030000003e00005004000000616b657905000040080000900100000000000040000000301d00005020000000008001007800000001000020010000800d00001062000000280000008080020088137661226c"},
	{1007, "63020000002800000017000000020000000200000000000000010000000d00000000000000010000000300000004000000"},
	{1009, "6301000000200000001900000004000000010000000d000000000000001c00000061206200100000001400000078000000"},
	{3906, "29420f00000f8080010088130f00810200c40902"},
	{869, "27034020010db8000000000000000000000001"},
	{3910, "1d460f0000000000000000000012"},
	{1700, "0f00a1d204e015"},
}

func plainSeed(h string) []byte {
	b, _ := hex.DecodeString(h)
	if len(b) > 0 && b[0]&1 == 1 {
		return b[1:]
	}
	if len(b) >= 4 {
		return b[4:]
	}
	return b
}

// FuzzAppend: any bytes as any type, under any settings: never a panic,
// nothing read outside the datum (given with its capacity cut to its
// length), dst's prefix kept, the same text twice, and every error one of
// the package's sentinels.
func FuzzAppend(f *testing.F) {
	for _, s := range fuzzSeeds {
		for i, oid := range fuzzOIDs {
			if oid == s.oid {
				f.Add(byte(i), byte(0), plainSeed(s.hex))
				f.Add(byte(i), byte(5), plainSeed(s.hex))
			}
		}
	}
	f.Add(byte(0), byte(1), []byte{1})
	f.Fuzz(func(t *testing.T, which, settings byte, data []byte) {
		oid := fuzzOIDs[int(which)%len(fuzzOIDs)]
		fm := &typeout.Formatter{Settings: typeout.DefaultSettings(), Types: newFuzzTypes(), Major: 10 + int(settings>>4)%9}
		fm.Settings.DateStyle = typeout.DateStyle(settings % 4)
		fm.Settings.IntervalStyle = typeout.IntervalStyle(settings >> 2 % 4)
		fm.Settings.ExtraFloatDigits = int(settings%7) - 3
		fm.Settings.ByteaEscape = settings&0x40 != 0
		fm.Settings.TimeZone = []string{"UTC", "Asia/Kathmandu", "America/St_Johns"}[int(settings)%3]
		d := data[:len(data):len(data)]
		prefix := []byte("prefix:")
		out, err := fm.Append(append([]byte(nil), prefix...), oid, d)
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("type %d: dst's prefix lost: %q", oid, out)
		}
		if err != nil {
			if !errors.Is(err, typeout.ErrCorrupt) && !errors.Is(err, typeout.ErrUnsupported) && !errors.Is(err, typeout.ErrUnknownType) && !errors.Is(err, typeout.ErrSetting) {
				t.Fatalf("type %d: error wraps no sentinel: %v", oid, err)
			}
			return
		}
		again, err := fm.Append(nil, oid, d)
		if err != nil || !bytes.Equal(again, out[len(prefix):]) {
			t.Fatalf("type %d: second call %q, %v; first %q", oid, again, err, out)
		}
	})
}

// FuzzParseConf: any configuration text: never a panic; an error wraps
// ErrSetting.
func FuzzParseConf(f *testing.F) {
	f.Add("DateStyle = 'sql, dmy' # c\nIntervalStyle iso_8601\ninclude 'x.conf'\n")
	f.Add("TimeZone='Asia/Kathmandu'\nextra_float_digits = -3\nbytea_output = 'esc\\141pe'\n")
	f.Add("lc_monetary = 'C'\ninclude_dir 'conf.d'\napplication_name = 'it''s'\n")
	f.Fuzz(func(t *testing.T, text string) {
		files := typeout.ConfigFiles{
			ReadFile: func(p string) ([]byte, error) {
				if strings.HasSuffix(p, "x.conf") {
					return []byte(text), nil // includes itself: the depth limit
				}
				return []byte("DateStyle = German\n"), nil
			},
			ReadDir: func(string) ([]string, error) { return []string{"a.conf", ".b.conf", "c.txt"}, nil },
		}
		s := typeout.DefaultSettings()
		if err := s.ParseConf([]byte(text), "/data/postgresql.conf", files); err != nil && !errors.Is(err, typeout.ErrSetting) {
			t.Fatalf("error wraps no ErrSetting: %v", err)
		}
	})
}
