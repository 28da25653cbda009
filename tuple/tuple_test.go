package tuple_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/tuple"
)

// The end-to-end proof of this package is catalog's oracle test, which
// deforms real tables of PostgreSQL 10 to 18 (every row, TOAST values
// reassembled, pglz and lz4) and compares them with the server. These tests
// cover what a healthy server never writes: malformed and hostile bytes.

// build makes a tuple: header with natts attributes, HEAP_HASNULL when
// nulls is not nil (nulls[i]: attribute i is NULL), an oid when oid != 0,
// then data at a MAXALIGNed t_hoff.
func build(natts int, nulls []bool, oid uint32, data []byte) []byte {
	h := make([]byte, tuple.SizeofHeapTupleHeader)
	var mask uint16
	if nulls != nil {
		mask |= tuple.HeapHasNull
		bits := make([]byte, (natts+7)/8)
		for i := 0; i < natts; i++ {
			if i >= len(nulls) || !nulls[i] {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		h = append(h, bits...)
	}
	if oid != 0 {
		mask |= tuple.HeapHasOID
		for (len(h)+4)%8 != 0 {
			h = append(h, 0)
		}
		h = binary.LittleEndian.AppendUint32(h, oid)
	}
	for len(h)%8 != 0 {
		h = append(h, 0)
	}
	binary.LittleEndian.PutUint16(h[18:], uint16(natts))
	binary.LittleEndian.PutUint16(h[20:], mask)
	h[22] = byte(len(h))
	return append(h, data...)
}

func short(s string) []byte { return append([]byte{byte((len(s)+1)<<1 | 1)}, s...) }

func long(payload []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(payload)+4)<<2), payload...)
}

// compressedInline makes a 4B_C varlena: header, va_tcinfo, data.
func compressedInline(method tuple.Method, rawSize int, data []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(data)+8)<<2|0x02)
	b = binary.LittleEndian.AppendUint32(b, uint32(rawSize)|uint32(method)<<30)
	return append(b, data...)
}

var (
	int4  = tuple.Attr{Name: "i", TypeOID: 23, Len: 4, Align: 'i', ByVal: true}
	int8  = tuple.Attr{Name: "l", TypeOID: 20, Len: 8, Align: 'd', ByVal: true}
	int2  = tuple.Attr{Name: "s", TypeOID: 21, Len: 2, Align: 's', ByVal: true}
	text  = tuple.Attr{Name: "t", TypeOID: 25, Len: -1, Align: 'i'}
	cstr  = tuple.Attr{Name: "c", TypeOID: 2275, Len: -2, Align: 'c'}
	boolA = tuple.Attr{Name: "b", TypeOID: 16, Len: 1, Align: 'c', ByVal: true}
)

func TestDeformAlignmentAndForms(t *testing.T) {
	// bool @0, int8 aligned to 8, short text right after (no padding), int2
	// aligned to 2, a 4-byte-header text aligned to 4, a cstring.
	var d []byte
	d = append(d, 1)
	d = append(d, make([]byte, 7)...)
	d = binary.LittleEndian.AppendUint64(d, 1<<40)
	d = append(d, short("ab")...)                   // @16, 3 bytes
	d = append(d, 0)                                // pad to 20
	d = binary.LittleEndian.AppendUint16(d, 0xBEEF) // @20
	d = append(d, 0, 0)                             // pad to 24
	d = append(d, long([]byte("long"))...)          // @24
	d = append(d, "cs\x00"...)
	tup := build(6, nil, 0, d)
	vals, h, err := tuple.Deform(nil, tup, []tuple.Attr{boolA, int8, text, int2, text, cstr})
	if err != nil {
		t.Fatal(err)
	}
	if h.Natts() != 6 || h.HasOID {
		t.Fatalf("header %+v", h)
	}
	want := []struct {
		form    tuple.Form
		payload string
	}{
		{tuple.Fixed, "\x01"}, {tuple.Fixed, string(binary.LittleEndian.AppendUint64(nil, 1<<40))},
		{tuple.Short, "ab"}, {tuple.Fixed, "\xef\xbe"}, {tuple.Long, "long"}, {tuple.CString, "cs"},
	}
	for i, w := range want {
		if vals[i].Form != w.form || string(vals[i].Payload()) != w.payload {
			t.Errorf("attribute %d: %s %q, want %s %q", i+1, vals[i].Form, vals[i].Payload(), w.form, w.payload)
		}
		if !bytes.Equal(tup[vals[i].Offset:vals[i].Offset+len(vals[i].Raw)], vals[i].Raw) {
			t.Errorf("attribute %d: Offset %d does not locate Raw", i+1, vals[i].Offset)
		}
	}
}

func TestDeformNullsMissingAndOID(t *testing.T) {
	d := binary.LittleEndian.AppendUint32(nil, 7) // int4 = 7; attribute 2 NULL
	tup := build(2, []bool{false, true}, 4242, d)
	desc := []tuple.Attr{int4, text,
		{Name: "added", Len: 8, Align: 'd', ByVal: true, HasMissing: true, Missing: binary.LittleEndian.AppendUint64(nil, 42)},
		{Name: "added_t", Len: -1, Align: 'i', HasMissing: true, Missing: long([]byte("hello"))},
		{Name: "added_null", Len: 4, Align: 'i', HasMissing: true},
		{Name: "plain", Len: 4, Align: 'i'},
	}
	vals, h, err := tuple.Deform(nil, tup, desc)
	if err != nil {
		t.Fatal(err)
	}
	if !h.HasOID || h.OID != 4242 {
		t.Errorf("oid %d %v, want 4242", h.OID, h.HasOID)
	}
	if binary.LittleEndian.Uint32(vals[0].Raw) != 7 || !vals[1].IsNull() || vals[1].Missing {
		t.Errorf("stored attributes: %+v %+v", vals[0], vals[1])
	}
	if !vals[2].Missing || binary.LittleEndian.Uint64(vals[2].Raw) != 42 {
		t.Errorf("added: %+v", vals[2])
	}
	if p, _ := vals[3].Detoast(nil, nil); !vals[3].Missing || string(p) != "hello" {
		t.Errorf("added_t: %+v %q", vals[3], p)
	}
	for _, k := range []int{4, 5} {
		if !vals[k].IsNull() || !vals[k].Missing {
			t.Errorf("attribute %d: %+v, want a missing NULL", k+1, vals[k])
		}
	}
}

func TestDecompressInline(t *testing.T) {
	raw := []byte(strings.Repeat("walscope reads WAL; ", 200))
	pg, ok := decode.PGLZCompress(nil, raw)
	if !ok {
		t.Fatal("pglz did not compress")
	}
	l4 := make([]byte, lz4.CompressBlockBound(len(raw)))
	var c lz4.Compressor
	n, err := c.CompressBlock(raw, l4)
	if err != nil || n == 0 {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method tuple.Method
		data   []byte
	}{{tuple.PGLZ, pg}, {tuple.LZ4, l4[:n]}} {
		tup := build(1, nil, 0, compressedInline(tc.method, len(raw), tc.data))
		vals, _, err := tuple.Deform(nil, tup, []tuple.Attr{text})
		if err != nil {
			t.Fatal(err)
		}
		if m, size, ok := vals[0].Compression(); !ok || m != tc.method || size != len(raw) {
			t.Errorf("%s: Compression() = %s %d %v", tc.method, m, size, ok)
		}
		got, err := vals[0].Detoast(nil, nil)
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s: %v, %d bytes", tc.method, err, len(got))
		}
		// a raw size one off is corrupt, as pglz_decompress with
		// check_complete and LZ4_decompress_safe's count say
		bad := build(1, nil, 0, compressedInline(tc.method, len(raw)+1, tc.data))
		vals, _, _ = tuple.Deform(nil, bad, []tuple.Attr{text})
		if _, err := vals[0].Detoast(nil, nil); !errors.Is(err, tuple.ErrCorrupt) {
			t.Errorf("%s with a wrong raw size: %v, want ErrCorrupt", tc.method, err)
		}
	}
	// method 2 is TOAST_INVALID_COMPRESSION_ID
	vals, _, _ := tuple.Deform(nil, build(1, nil, 0, compressedInline(2, 10, []byte{1, 2, 3, 4})), []tuple.Attr{text})
	if _, err := vals[0].Detoast(nil, nil); !errors.Is(err, tuple.ErrUnsupported) {
		t.Errorf("method 2: %v, want ErrUnsupported", err)
	}
}

// external makes an on-disk TOAST pointer.
func external(rawSize int32, extInfo, valueID, toastRelid uint32) []byte {
	b := []byte{0x01, 18}
	b = binary.LittleEndian.AppendUint32(b, uint32(rawSize))
	b = binary.LittleEndian.AppendUint32(b, extInfo)
	b = binary.LittleEndian.AppendUint32(b, valueID)
	return binary.LittleEndian.AppendUint32(b, toastRelid)
}

func TestExternalThroughToastStore(t *testing.T) {
	value := bytes.Repeat([]byte("0123456789abcdef"), 300) // 4800 bytes: 3 chunks of 1996, 1996, 808
	store := tuple.NewToastStore(8192)
	for seq, off := 2, 2*1996; seq >= 0; seq, off = seq-1, off-1996 { // out of order, as a heap scan may give them
		end := min(off+1996, len(value))
		row := binary.LittleEndian.AppendUint32(nil, 99)
		row = binary.LittleEndian.AppendUint32(row, uint32(seq))
		row = append(row, long(value[off:end])...)
		if err := store.AddTuple(16400, build(3, nil, 0, row)); err != nil {
			t.Fatal(err)
		}
	}
	vals, _, err := tuple.Deform(nil, build(1, nil, 0, external(int32(len(value)+4), uint32(len(value)), 99, 16400)), []tuple.Attr{text})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := vals[0].External()
	if !ok || p.ValueID != 99 || p.ToastRelid != 16400 || p.ExtSize() != len(value) || p.IsCompressed() {
		t.Fatalf("pointer %+v", p)
	}
	got, err := vals[0].Detoast(nil, store)
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("%v, %d bytes", err, len(got))
	}
	if _, err := vals[0].Detoast(nil, nil); !errors.Is(err, tuple.ErrNoToast) {
		t.Errorf("no detoaster: %v", err)
	}
	other, _, _ := tuple.Deform(nil, build(1, nil, 0, external(int32(len(value)+4), uint32(len(value)), 100, 16400)), []tuple.Attr{text})
	if _, err := other[0].Detoast(nil, store); !errors.Is(err, tuple.ErrNoToast) {
		t.Errorf("unknown value: %v", err)
	}
}

func TestAssembleChunks(t *testing.T) {
	c := func(seq int32, n int) tuple.Chunk { return tuple.Chunk{Seq: seq, Data: make([]byte, n)} }
	for _, tc := range []struct {
		name   string
		size   int
		chunks []tuple.Chunk
		err    string
	}{
		{"whole", 25, []tuple.Chunk{c(1, 10), c(0, 10), c(2, 5)}, ""},
		{"exact multiple", 20, []tuple.Chunk{c(0, 10), c(1, 10)}, ""},
		{"missing middle", 25, []tuple.Chunk{c(0, 10), c(2, 5)}, "missing chunk number 1"},
		{"missing last", 25, []tuple.Chunk{c(0, 10), c(1, 10)}, "missing chunk number 2"},
		{"twice", 25, []tuple.Chunk{c(0, 10), c(1, 10), c(1, 10), c(2, 5)}, "chunk number 1 twice"},
		{"beyond", 25, []tuple.Chunk{c(0, 10), c(1, 10), c(2, 5), c(3, 1)}, "out of range"},
		{"short chunk", 25, []tuple.Chunk{c(0, 10), c(1, 9), c(2, 5)}, "unexpected chunk size 9"},
		{"long last", 25, []tuple.Chunk{c(0, 10), c(1, 10), c(2, 6)}, "unexpected chunk size 6"},
		{"negative", 25, []tuple.Chunk{c(-1, 10), c(0, 10), c(1, 10), c(2, 5)}, "unexpected chunk number -1"},
		{"none", 25, nil, "missing chunk number 0"},
	} {
		out, err := tuple.AssembleChunks(nil, 7, tc.size, 10, tc.chunks)
		if tc.err == "" {
			if err != nil || len(out) != tc.size {
				t.Errorf("%s: %v, %d bytes", tc.name, err, len(out))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, tuple.ErrCorrupt) {
			t.Errorf("%s: %v, want %q wrapping ErrCorrupt", tc.name, err, tc.err)
		}
	}
}

func TestMaxChunkSize(t *testing.T) {
	// pg_controldata of every 8 kB cluster prints "Maximum size of a TOAST
	// chunk: 1996" (catalog's oracle test reads it from the real server);
	// other block sizes follow the same formula, unchecked here for want of
	// such a build.
	if got := tuple.MaxChunkSize(8192); got != 1996 {
		t.Errorf("MaxChunkSize(8192) = %d, want 1996", got)
	}
}

func TestMalformed(t *testing.T) {
	desc := []tuple.Attr{int4, text}
	ok := build(2, nil, 0, append(binary.LittleEndian.AppendUint32(nil, 1), short("x")...))
	for _, tc := range []struct {
		name string
		tup  []byte
		desc []tuple.Attr
		want error
	}{
		{"short header", ok[:22], desc, tuple.ErrCorrupt},
		{"t_hoff past the end", func() []byte { b := bytes.Clone(ok[:24]); b[22] = 32; return b }(), desc, tuple.ErrCorrupt},
		{"t_hoff inside the header", func() []byte { b := bytes.Clone(ok); b[22] = 8; return b }(), desc, tuple.ErrCorrupt},
		{"fixed cut", ok[:26], desc, tuple.ErrCorrupt},
		{"varlena at the end", ok[:28], desc, tuple.ErrCorrupt},
		{"short varlena cut", ok[:29], desc, tuple.ErrCorrupt},
		{"4-byte header cut", build(1, nil, 0, []byte{0x40, 0}), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"4-byte size past the end", build(1, nil, 0, long([]byte("abcdef"))[:8]), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"4-byte size below its header", build(1, nil, 0, []byte{0x08, 0, 0, 0}), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"compressed below 8", build(1, nil, 0, []byte{0x1A, 0, 0, 0, 0, 0}), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"indirect pointer", build(1, nil, 0, []byte{0x01, 1, 0, 0, 0, 0, 0, 0, 0, 0}), []tuple.Attr{text}, tuple.ErrUnsupported},
		{"expanded pointer", build(1, nil, 0, []byte{0x01, 3, 0, 0, 0, 0, 0, 0, 0, 0}), []tuple.Attr{text}, tuple.ErrUnsupported},
		{"unknown vartag", build(1, nil, 0, []byte{0x01, 7, 0}), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"TOAST pointer cut", build(1, nil, 0, external(100, 50, 1, 2)[:17]), []tuple.Attr{text}, tuple.ErrCorrupt},
		{"cstring without NUL", build(1, nil, 0, []byte("abc")), []tuple.Attr{cstr}, tuple.ErrCorrupt},
		{"bad attalign", build(1, nil, 0, []byte{1, 2, 3, 4}), []tuple.Attr{{Len: 4, Align: 'x'}}, tuple.ErrCorrupt},
		{"bad attlen", build(1, nil, 0, []byte{1, 2, 3, 4}), []tuple.Attr{{Len: -3, Align: 'i'}}, tuple.ErrCorrupt},
		{"missing value too short", build(0, nil, 0, nil), []tuple.Attr{{Len: 8, Align: 'd', HasMissing: true, Missing: []byte{1}}}, tuple.ErrCorrupt},
	} {
		_, _, err := tuple.Deform(nil, tc.tup, tc.desc)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var te *tuple.Error
		if err != nil && !errors.As(err, &te) {
			t.Errorf("%s: %T is not a *tuple.Error", tc.name, err)
		}
	}
}

func TestExternalPointerSizes(t *testing.T) {
	// a raw size that the stored size cannot hold, or above 1 GB
	for _, p := range [][]byte{external(10, 100, 1, 2), external(2, 0, 1, 2), external(-5, 0, 1, 2)} {
		vals, _, err := tuple.Deform(nil, build(1, nil, 0, p), []tuple.Attr{text})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := vals[0].Detoast(nil, tuple.NewToastStore(8192)); !errors.Is(err, tuple.ErrCorrupt) {
			t.Errorf("%x: %v, want ErrCorrupt", p, err)
		}
	}
	// compressed beyond what its bytes can expand to
	vals, _, _ := tuple.Deform(nil, build(1, nil, 0, compressedInline(tuple.PGLZ, 1<<29, []byte{0, 1, 2, 3})), []tuple.Attr{text})
	if _, err := vals[0].Detoast(nil, nil); !errors.Is(err, tuple.ErrCorrupt) {
		t.Errorf("1<<29 from 4 bytes: %v", err)
	}
}

func TestPageItems(t *testing.T) {
	page := make([]byte, 8192)
	if items, err := tuple.PageItems(nil, page); err != nil || len(items) != 0 {
		t.Fatalf("new page: %v %d", err, len(items))
	}
	tup := build(1, nil, 0, binary.LittleEndian.AppendUint32(nil, 5))
	le := binary.LittleEndian
	off := 8192 - 32
	copy(page[off:], tup)
	le.PutUint16(page[12:], 24+8)        // pd_lower: two line pointers
	le.PutUint16(page[14:], uint16(off)) // pd_upper
	le.PutUint16(page[16:], 8192)        // pd_special
	le.PutUint16(page[18:], 8192|4)      // pd_pagesize_version
	le.PutUint32(page[24:], 0)           // LP_UNUSED
	le.PutUint32(page[28:], uint32(off)|1<<15|uint32(len(tup))<<17)
	items, err := tuple.PageItems(nil, page)
	if err != nil || len(items) != 1 || items[0].Offset != 2 || !bytes.Equal(items[0].Tuple, tup) {
		t.Fatalf("%v %+v", err, items)
	}
	le.PutUint32(page[28:], uint32(off)|1<<15|uint32(64)<<17) // runs past pd_special
	if _, err := tuple.PageItems(nil, page); !errors.Is(err, tuple.ErrCorrupt) {
		t.Errorf("line pointer past the page: %v", err)
	}
	le.PutUint16(page[18:], 4096|4)
	if _, err := tuple.PageItems(nil, page); !errors.Is(err, tuple.ErrCorrupt) {
		t.Errorf("page size 4096 in an 8192-byte page: %v", err)
	}
}

func TestArray(t *testing.T) {
	// '{1,NULL,3}'::int4[] as array_in builds it (1 dimension, a null
	// bitmap, data at MAXALIGN(16+8+1) = 32)
	var a []byte
	a = binary.LittleEndian.AppendUint32(a, 1)  // ndim
	a = binary.LittleEndian.AppendUint32(a, 32) // dataoffset
	a = binary.LittleEndian.AppendUint32(a, 23) // elemtype
	a = binary.LittleEndian.AppendUint32(a, 3)  // dims
	a = binary.LittleEndian.AppendUint32(a, 1)  // lbound
	a = append(a, 0b101, 0, 0, 0, 0, 0, 0, 0)   // bitmap, pad to 32 (payload 28)
	a = binary.LittleEndian.AppendUint32(a, 1)
	a = binary.LittleEndian.AppendUint32(a, 3)
	arr, err := tuple.ParseArray(a)
	if err != nil {
		t.Fatal(err)
	}
	els, err := arr.Elements(nil, int4)
	if err != nil || len(els) != 3 || !els[1].IsNull() || binary.LittleEndian.Uint32(els[2].Raw) != 3 {
		t.Fatalf("%v %+v", err, els)
	}
	for _, cut := range []int{0, 11, 20, 27, 30} {
		arr, err := tuple.ParseArray(a[:cut])
		if err == nil {
			_, err = arr.Elements(nil, int4)
		}
		if !errors.Is(err, tuple.ErrCorrupt) {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
}

func TestDeformDataEqualsDeform(t *testing.T) {
	// WAL records carry the bitmap and the data apart from the header
	d := binary.LittleEndian.AppendUint32(nil, 3)
	d = append(d, short("wal")...)
	tup := build(3, []bool{false, false, true}, 0, d)
	desc := []tuple.Attr{int4, text, int8}
	whole, h, err := tuple.Deform(nil, tup, desc)
	if err != nil {
		t.Fatal(err)
	}
	part, err := tuple.DeformData(nil, tup[h.Hoff:], h.Bits, h.Natts(), desc)
	if err != nil {
		t.Fatal(err)
	}
	for k := range whole {
		if whole[k].Form != part[k].Form || !bytes.Equal(whole[k].Raw, part[k].Raw) || part[k].Offset >= 0 && whole[k].Offset != part[k].Offset+int(h.Hoff) {
			t.Errorf("attribute %d: Deform %+v, DeformData %+v", k+1, whole[k], part[k])
		}
	}
	if _, err := tuple.DeformData(nil, tup[h.Hoff:], []byte{}, 3, desc); !errors.Is(err, tuple.ErrCorrupt) {
		t.Errorf("bitmap shorter than natts: %v", err)
	}
}

func BenchmarkDeform(b *testing.B) {
	var d []byte
	d = binary.LittleEndian.AppendUint32(d, 1)
	d = append(d, short("some text")...)
	for len(d)%8 != 0 {
		d = append(d, 0)
	}
	d = binary.LittleEndian.AppendUint64(d, 2)
	d = binary.LittleEndian.AppendUint16(d, 3)
	d = append(d, "cstring\x00"...)
	tup := build(5, nil, 0, d)
	desc := []tuple.Attr{int4, text, int8, int2, cstr}
	vals := make([]tuple.Value, 0, len(desc))
	b.SetBytes(int64(len(tup)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		vals, _, err = tuple.Deform(vals, tup, desc)
		if err != nil {
			b.Fatal(err)
		}
	}
}
