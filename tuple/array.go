package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Array is an array value's header (ArrayType, src/include/utils/array.h):
//
//	vl_len_ i32 @0, ndim i32 @4, dataoffset i32 @8 (0: no null bitmap),
//	elemtype Oid @12, dims[ndim] i32, lbound[ndim] i32, null bitmap,
//	data from dataoffset (or MAXALIGN(16 + 8*ndim) without a bitmap)
//
// Offsets count from vl_len_: ParseArray takes the array's plain bytes
// (Value.Detoast's output, the header left out) and keeps that numbering.
type Array struct {
	NDim     int
	ElemType uint32
	Dims     []int32
	LBounds  []int32
	Nulls    []byte // the null bitmap, nil without one
	data     []byte // the whole payload: array offset k is data[k-4]
	dataOff  int    // ARR_DATA_OFFSET
}

const maxArrayDims = 6 // MAXDIM

// ParseArray reads an array from its plain bytes (without the varlena
// header).
func ParseArray(payload []byte) (Array, error) {
	var a Array
	if len(payload) < 12 {
		return a, fmt.Errorf("array of %d bytes: %w", len(payload), ErrCorrupt)
	}
	le := binary.LittleEndian
	ndim, dataOff := int32(le.Uint32(payload)), int32(le.Uint32(payload[4:]))
	a.ElemType, a.data = le.Uint32(payload[8:]), payload
	if ndim < 0 || ndim > maxArrayDims {
		return a, fmt.Errorf("array with %d dimensions: %w", ndim, ErrCorrupt)
	}
	a.NDim = int(ndim)
	end := 16 + 8*a.NDim // in array offsets
	if end-4 > len(payload) {
		return a, fmt.Errorf("array of %d dimensions cut at %d bytes: %w", ndim, len(payload), ErrCorrupt)
	}
	n := int64(1)
	if a.NDim == 0 {
		n = 0
	}
	for i := 0; i < a.NDim; i++ {
		d := int32(le.Uint32(payload[12+4*i:]))
		if d < 0 || int64(d)*n > 1<<27 { // MaxArraySize
			return a, fmt.Errorf("array dimension %d of %d: %w", i+1, d, ErrCorrupt)
		}
		n *= int64(d)
		a.Dims = append(a.Dims, d)
		a.LBounds = append(a.LBounds, int32(le.Uint32(payload[12+4*a.NDim+4*i:])))
	}
	if dataOff != 0 {
		bitmapEnd := end + int(n+7)/8
		if int(dataOff) < bitmapEnd || int(dataOff)-4 > len(payload) {
			return a, fmt.Errorf("array dataoffset %d outside %d..%d: %w", dataOff, bitmapEnd, len(payload)+4, ErrCorrupt)
		}
		a.Nulls = payload[end-4 : bitmapEnd-4]
		a.dataOff = int(dataOff)
	} else {
		a.dataOff = alignUp(end, 8) // ARR_OVERHEAD_NONULLS
		if a.dataOff-4 > len(payload) {
			return a, fmt.Errorf("array data offset %d past its %d bytes: %w", a.dataOff, len(payload)+4, ErrCorrupt)
		}
	}
	return a, nil
}

// Len is the number of elements (ArrayGetNItems).
func (a Array) Len() int {
	if a.NDim == 0 {
		return 0
	}
	n := 1
	for _, d := range a.Dims {
		n *= int(d)
	}
	return n
}

// Elements appends the array's elements to dst[:0], each as a Value whose
// Raw is the element as stored (array_iter's walk: each element aligned to
// the element type's typalign, NULLs from the bitmap). elem describes the
// element type (Len, Align; its name is used in errors).
func (a Array) Elements(dst []Value, elem Attr) ([]Value, error) {
	dst = dst[:0]
	align := elem.alignment()
	if align == 0 {
		return dst, fmt.Errorf("array element type with typalign %q: %w", elem.Align, ErrCorrupt)
	}
	off := a.dataOff // array offsets
	for i, n := 0, a.Len(); i < n; i++ {
		if a.Nulls != nil && a.Nulls[i>>3]&(1<<(i&7)) == 0 {
			dst = append(dst, Value{Form: Null, Offset: -1})
			continue
		}
		off = alignUp(off, align)
		p := off - 4
		if p > len(a.data) {
			return dst, fmt.Errorf("array element %d at offset %d past the array's %d bytes: %w", i+1, off, len(a.data)+4, ErrCorrupt)
		}
		rest := a.data[p:]
		var v Value
		switch {
		case elem.Len > 0:
			if int(elem.Len) > len(rest) {
				return dst, fmt.Errorf("array element %d: %d bytes cut at %d: %w", i+1, elem.Len, len(rest), ErrCorrupt)
			}
			v = Value{Form: Fixed, Raw: rest[:elem.Len:elem.Len]}
		case elem.Len == -1:
			form, size, derr := classify(rest)
			if derr != nil {
				return dst, fmt.Errorf("array element %d: %s: %w", i+1, derr.msg, derr.err)
			}
			v = Value{Form: form, Raw: rest[:size:size]}
		case elem.Len == -2:
			z := bytes.IndexByte(rest, 0)
			if z < 0 {
				return dst, fmt.Errorf("array element %d: cstring without its NUL: %w", i+1, ErrCorrupt)
			}
			v = Value{Form: CString, Raw: rest[: z+1 : z+1]}
		default:
			return dst, fmt.Errorf("array element type with typlen %d: %w", elem.Len, ErrCorrupt)
		}
		v.Offset = p
		dst = append(dst, v)
		off += len(v.Raw)
	}
	return dst, nil
}
