package table_test

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/table"
	"github.com/walscope/walscope/typeout"
)

// jsonTypes is a small catalog for FuzzAppendJSONValue: built-in types of
// every JSON category but json and jsonb (printed as their own text, which
// for arbitrary bytes need not be JSON), their arrays, a domain, and a
// composite holding an int, a text, a dropped column, a timestamptz array
// and itself (depth-limited by the datum's size).
type jsonTypes map[uint32]*catalog.Type

const (
	jsonComp   = 90003
	jsonRel    = 90005
	jsonDomain = 90002
	jsonCompA  = 90006
)

func newJSONTypes() jsonTypes {
	m := jsonTypes{}
	for _, b := range []struct {
		oid   uint32
		l     int16
		byval bool
		align byte
		arr   uint32
	}{{16, 1, true, 'c', 1000}, {20, 8, true, 'd', 1016}, {21, 2, true, 's', 1005}, {23, 4, true, 'i', 1007}, {25, -1, false, 'i', 1009},
		{700, 4, true, 'i', 1021}, {701, 8, true, 'd', 1022}, {1082, 4, true, 'i', 1182}, {1114, 8, true, 'd', 1115},
		{1184, 8, true, 'd', 1185}, {1186, 16, false, 'd', 1187}, {1700, -1, false, 'i', 1231}, {2950, 16, false, 'c', 2951}} {
		m[b.oid] = &catalog.Type{OID: b.oid, Len: b.l, ByVal: b.byval, Align: b.align, Type: 'b', Delim: ','}
		m[b.arr] = &catalog.Type{OID: b.arr, Len: -1, Align: 'd', Type: 'b', Category: 'A', Delim: ',', Elem: b.oid, Output: 751}
	}
	m[jsonDomain] = &catalog.Type{OID: jsonDomain, Len: -1, Align: 'i', Type: 'd', Delim: ',', BaseType: 1700}
	m[jsonComp] = &catalog.Type{OID: jsonComp, Name: "pair", Len: -1, Align: 'd', Type: 'c', Delim: ',', Relid: jsonRel, Output: 2291}
	m[jsonCompA] = &catalog.Type{OID: jsonCompA, Len: -1, Align: 'd', Type: 'b', Category: 'A', Delim: ',', Elem: jsonComp, Output: 751}
	return m
}

func (m jsonTypes) Type(oid uint32) *catalog.Type { return m[oid] }
func (m jsonTypes) Attributes(relid uint32) []catalog.Attribute {
	if relid != jsonRel {
		return nil
	}
	return []catalog.Attribute{
		{Relid: jsonRel, Name: "a", TypID: 23, Len: 4, Num: 1, ByVal: true, Align: 'i'},
		{Relid: jsonRel, Name: "b\"q", TypID: 25, Len: -1, Num: 2, Align: 'i'},
		{Relid: jsonRel, Name: "gone", TypID: 0, Len: 8, Num: 3, Align: 'd', Dropped: true},
		{Relid: jsonRel, Name: "c", TypID: 1185, Len: -1, Num: 4, Align: 'd'},
		{Relid: jsonRel, Name: "d", TypID: jsonDomain, Len: -1, Num: 5, Align: 'i'},
		{Relid: jsonRel, Name: "e", TypID: jsonComp, Len: -1, Num: 6, Align: 'd'},
	}
}
func (m jsonTypes) EnumLabels(uint32) []catalog.Enum { return nil }

// compositeDatum is a value of the composite (a, "b""q", gone, c, d, e)
// with a = 7, "b""q" = 'x', the rest NULL, as a datum's payload: a
// HeapTupleHeader without its first 4 bytes (datum_len_, the varlena
// header).
func compositeDatum() []byte {
	tup := make([]byte, 24)
	binary.LittleEndian.PutUint16(tup[18:], 6)      // t_infomask2: 6 attributes
	binary.LittleEndian.PutUint16(tup[20:], 0x0001) // t_infomask: HEAP_HASNULL
	tup[22] = 24                                    // t_hoff: 23 bytes and the bitmap
	tup[23] = 0x03                                  // the null bitmap: a and "b""q" present
	tup = append(tup, 7, 0, 0, 0, (2<<1)|1, 'x')    // a, then "b""q" as a 1-byte varlena
	return tup[4:]
}

// TestAppendJSONComposite: a composite is composite_to_json's object,
// attribute names escaped, the dropped one left out, NULLs as null; an
// array of it an array of such objects.
func TestAppendJSONComposite(t *testing.T) {
	types := newJSONTypes()
	tf := &typeout.Formatter{Settings: typeout.DefaultSettings(), Types: types, Major: 17}
	out, err := table.AppendJSONValue(nil, types, jsonComp, compositeDatum(), tf.Append, tf.Append)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":7,"b\"q":"x","c":null,"d":null,"e":null}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

// FuzzAppendJSONValue: arbitrary bytes as a datum of each type never panic,
// and whatever AppendJSONValue writes without an error is one JSON value
// (encoding/json.Valid), appended after what dst held.
func FuzzAppendJSONValue(f *testing.F) {
	types := newJSONTypes()
	st := typeout.DefaultSettings()
	tf := &typeout.Formatter{Settings: st, Types: types, Major: 17}
	iso := &typeout.Formatter{Settings: st, Types: types, Major: 17}
	var oids []uint32
	for oid := range types {
		oids = append(oids, oid)
	}
	f.Add(uint32(jsonComp), compositeDatum())
	f.Add(uint32(1700), []byte{0, 0, 0, 0xc0})               // numeric NaN
	f.Add(uint32(701), []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}) // float8 +Infinity
	f.Add(uint32(1184), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint32(1007), []byte{1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0})
	f.Fuzz(func(t *testing.T, typ uint32, datum []byte) {
		if types[typ] == nil {
			typ = oids[int(typ)%len(oids)]
		}
		prefix := []byte("x")
		out, err := table.AppendJSONValue(prefix, types, typ, datum, tf.Append, iso.Append)
		if err != nil {
			return
		}
		if string(out[:1]) != "x" {
			t.Fatalf("type %d: the prefix was overwritten: %q", typ, out)
		}
		if !json.Valid(out[1:]) {
			t.Fatalf("type %d, datum %x: not JSON: %q", typ, datum, out[1:])
		}
	})
}
