package tuple_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/walscope/walscope/tuple"
)

// within reports whether sub lies inside buf's memory.
func within(sub, buf []byte) bool {
	if len(sub) == 0 {
		return true
	}
	if len(buf) == 0 {
		return false
	}
	s, b := uintptr(unsafe.Pointer(unsafe.SliceData(sub))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return s >= b && s+uintptr(len(sub)) <= b+uintptr(len(buf))
}

// fuzzDescs are descriptors the fuzzer picks from: every alignment, every
// attlen kind, dropped and missing attributes.
var fuzzDescs = [][]tuple.Attr{
	{int4, text, int8, text},
	{boolA, int2, text, cstr, int8},
	{text, text, text, text, text, text},
	{int4, {Name: "gone", Len: 8, Align: 'd', Dropped: true}, text,
		{Name: "m", Len: -1, Align: 'i', HasMissing: true, Missing: long([]byte("missing"))}},
	tuple.ToastDesc,
}

// FuzzDeform deforms arbitrary bytes with each descriptor and checks that
// it never panics, that every value lies inside the tuple where Offset says
// (nothing read outside it), that varlena forms are consistent with their
// headers, and that Detoast of any value either fails with a package error
// or returns at most 256 times the bytes it was given.
func FuzzDeform(f *testing.F) {
	f.Add(build(4, nil, 0, append(binary.LittleEndian.AppendUint32(nil, 1), short("abc")...)), uint8(0))
	f.Add(build(2, []bool{false, true}, 77, binary.LittleEndian.AppendUint32(nil, 9)), uint8(0))
	f.Add(build(1, nil, 0, compressedInline(tuple.PGLZ, 40, []byte{0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 1, 0x0f, 0x08})), uint8(2))
	f.Add(build(1, nil, 0, compressedInline(tuple.LZ4, 40, []byte{0x1f, 'a', 1, 0, 0x0f, 0x0a})), uint8(2))
	f.Add(build(1, nil, 0, external(5000, 4000, 1, 2)), uint8(2))
	f.Add(build(3, nil, 0, nil), uint8(3))
	f.Fuzz(func(t *testing.T, tup []byte, which uint8) {
		desc := fuzzDescs[int(which)%len(fuzzDescs)]
		vals, h, err := tuple.Deform(nil, tup, desc)
		if err != nil {
			var te *tuple.Error
			if !errors.As(err, &te) || !(errors.Is(err, tuple.ErrCorrupt) || errors.Is(err, tuple.ErrUnsupported)) {
				t.Fatalf("error %v (%T) is not a positioned ErrCorrupt/ErrUnsupported", err, err)
			}
			return
		}
		if len(vals) != len(desc) {
			t.Fatalf("%d values for %d attributes", len(vals), len(desc))
		}
		store := tuple.NewToastStore(8192)
		for i, v := range vals {
			if v.Missing {
				if i < h.Natts() {
					t.Fatalf("attribute %d missing though the tuple has %d", i+1, h.Natts())
				}
				continue
			}
			if v.IsNull() {
				continue
			}
			if v.Offset < int(h.Hoff) || v.Offset+len(v.Raw) > len(tup) || !within(v.Raw, tup) ||
				!bytes.Equal(tup[v.Offset:v.Offset+len(v.Raw)], v.Raw) {
				t.Fatalf("attribute %d: Raw (%d bytes at %d) outside the tuple's %d bytes", i+1, len(v.Raw), v.Offset, len(tup))
			}
			if len(v.Payload()) > len(v.Raw) {
				t.Fatalf("attribute %d: payload longer than the datum", i+1)
			}
			out, err := v.Detoast(nil, store)
			if err != nil {
				if !(errors.Is(err, tuple.ErrCorrupt) || errors.Is(err, tuple.ErrUnsupported) || errors.Is(err, tuple.ErrNoToast)) {
					t.Fatalf("attribute %d: Detoast error %v wraps no sentinel", i+1, err)
				}
				continue
			}
			if len(out) > 256*len(v.Raw)+64 {
				t.Fatalf("attribute %d: %d bytes from a %d-byte datum", i+1, len(out), len(v.Raw))
			}
		}
	})
}

// FuzzArray parses arbitrary array bytes and walks their elements, which
// must lie inside the array.
func FuzzArray(f *testing.F) {
	var a []byte
	for _, x := range []uint32{1, 0, 23, 2, 1} {
		a = binary.LittleEndian.AppendUint32(a, x)
	}
	a = append(a, make([]byte, 4)...)
	a = binary.LittleEndian.AppendUint32(a, 5)
	a = binary.LittleEndian.AppendUint32(a, 6)
	f.Add(a, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		arr, err := tuple.ParseArray(b)
		if err != nil {
			if !errors.Is(err, tuple.ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		elem := []tuple.Attr{int4, text, int8, cstr, int2}[int(which)%5]
		els, err := arr.Elements(nil, elem)
		if err != nil {
			if !errors.Is(err, tuple.ErrCorrupt) && !errors.Is(err, tuple.ErrUnsupported) {
				t.Fatal(err)
			}
			return
		}
		for _, e := range els {
			if !within(e.Raw, b) {
				t.Fatalf("element outside the array")
			}
		}
	})
}
