package typeout

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/tuple"
)

func alignOf(a byte) int {
	switch a {
	case 's':
		return 2
	case 'i':
		return 4
	case 'd':
		return 8
	}
	return 1
}

func attrOf(t *catalog.Type) tuple.Attr {
	return tuple.Attr{Name: t.Name, TypeOID: t.OID, Len: t.Len, Align: t.Align, ByVal: t.ByVal}
}

// elementDatum is an element's or attribute's datum as Append takes it:
// fixed and cstring values as stored, varlena payloads without their
// header (an element is never compressed or external; a composite's
// attribute may be compressed inline, and is decompressed).
func elementDatum(v tuple.Value) ([]byte, error) {
	switch v.Form {
	case tuple.Fixed, tuple.Short, tuple.Long, tuple.CString:
		return v.Payload(), nil
	case tuple.Compressed:
		return v.Detoast(nil, nil)
	}
	return nil, fmt.Errorf("%w: a %s value inside a value", ErrCorrupt, v.Form)
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// appendArray is array_out (arrayfuncs.c): "{}" when empty, the
// dimensions "[lo:hi]..." and "=" first when a lower bound is not 1,
// elements separated by the element type's typdelim, NULL bare, an
// element quoted (with " and \ escaped by a backslash) when it is empty,
// is NULL in any case, or holds a quote, backslash, brace, the delimiter
// or white space.
func (f *Formatter) appendArray(dst []byte, t *catalog.Type, d []byte, depth int) ([]byte, error) {
	a, err := tuple.ParseArray(d)
	if err != nil {
		return dst, f.errorf(t.OID, ErrCorrupt, "%v", err)
	}
	n := a.Len()
	if n == 0 {
		return append(dst, '{', '}'), nil
	}
	elemOID := a.ElemType
	et, err := f.storage(elemOID)
	if err != nil {
		return dst, err
	}
	// The Formatter's buffers serve the outermost array only: an element
	// may be (or hold) an array itself.
	var elems []tuple.Value
	var text []byte
	if depth == 0 {
		elems, text = f.elems[:0], f.text[:0]
	}
	elems, err = a.Elements(elems, attrOf(et))
	if err != nil {
		return dst, f.errorf(t.OID, ErrCorrupt, "%v", err)
	}
	delim := et.Delim
	for _, lb := range a.LBounds {
		if lb != 1 {
			for j := range a.Dims {
				dst = append(dst, '[')
				dst = strconv.AppendInt(dst, int64(a.LBounds[j]), 10)
				dst = append(dst, ':')
				dst = strconv.AppendInt(dst, int64(a.LBounds[j])+int64(a.Dims[j])-1, 10)
				dst = append(dst, ']')
			}
			dst = append(dst, '=')
			break
		}
	}
	var indx [6]int32 // MAXDIM: ParseArray allows no more
	dst = append(dst, '{')
	j, k := 0, 0
	for {
		for i := j; i < a.NDim-1; i++ {
			dst = append(dst, '{')
		}
		v := elems[k]
		if v.IsNull() {
			dst = append(dst, "NULL"...)
		} else {
			datum, err := elementDatum(v)
			if err != nil {
				return dst, f.errorf(elemOID, err, "array element %d", k+1)
			}
			text, err = f.appendDepth(text[:0], elemOID, datum, depth+1)
			if err != nil {
				return dst, err
			}
			dst = appendArrayElement(dst, text, delim)
		}
		k++
		i := a.NDim - 1
		for ; i >= 0; i-- {
			indx[i]++
			if indx[i] < a.Dims[i] {
				dst = append(dst, delim)
				break
			}
			indx[i] = 0
			dst = append(dst, '}')
		}
		j = i
		if j == -1 {
			break
		}
	}
	if depth == 0 {
		f.elems, f.text = elems[:0], text[:0]
	}
	return dst, nil
}

func appendArrayElement(dst, s []byte, delim byte) []byte {
	quote := len(s) == 0 || bytes.EqualFold(s, []byte("NULL"))
	for _, c := range s {
		if c == '"' || c == '\\' || c == '{' || c == '}' || c == delim || isArraySpace(c) {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// Range flags (RANGE_* in utils/rangetypes.h).
const (
	rangeEmpty = 0x01
	rangeLBInc = 0x02
	rangeUBInc = 0x04
	rangeLBInf = 0x08
	rangeUBInf = 0x10
	rangeLBNul = 0x20
	rangeUBNul = 0x40
)

// appendRange is range_out (rangetypes.c): range_deserialize's walk of
// RangeType (vl_len_, rangetypid, the bounds each aligned to the subtype's
// typalign, the flags byte last), then range_deparse: "empty", or "[" or
// "(", the lower bound, ",", the upper bound, "]" or ")", an infinite
// bound empty, a bound's text quoted as range_bound_escape does.
func (f *Formatter) appendRange(dst []byte, oid, sub uint32, d []byte, depth int) ([]byte, error) {
	if len(d) < 5 {
		return dst, f.errorf(oid, ErrCorrupt, "range of %d bytes", len(d))
	}
	return f.appendRangeBounds(dst, oid, sub, d[4:len(d)-1], d[len(d)-1], depth)
}

// appendRangeBounds prints a range from its flags and the bytes of its
// bounds (from the range's offset 8, which is MAXALIGNed; anything after
// the bounds is ignored).
func (f *Formatter) appendRangeBounds(dst []byte, oid, sub uint32, body []byte, flags byte, depth int) ([]byte, error) {
	if flags&rangeEmpty != 0 {
		return append(dst, "empty"...), nil
	}
	st, err := f.storage(sub)
	if err != nil {
		return dst, err
	}
	off := 0 // from the range's offset 8: alignment is the same
	bound := func() ([]byte, error) {
		if st.Len != -1 || (off < len(body) && body[off] == 0) {
			off = (off + alignOf(st.Align) - 1) &^ (alignOf(st.Align) - 1)
		}
		if off > len(body) {
			return nil, fmt.Errorf("%w: range bound at %d past %d bytes", ErrCorrupt, off+8, len(body)+8)
		}
		rest := body[off:]
		var v []byte
		switch {
		case st.Len > 0:
			if int(st.Len) > len(rest) {
				return nil, fmt.Errorf("%w: range bound cut short", ErrCorrupt)
			}
			v = rest[:st.Len]
			off += int(st.Len)
		case st.Len == -1:
			payload, err := varlenaPayload(rest)
			if err != nil {
				return nil, err
			}
			off += varlenaHeaderSize(rest) + len(payload)
			v = payload
		case st.Len == -2:
			z := bytes.IndexByte(rest, 0)
			if z < 0 {
				return nil, fmt.Errorf("%w: range bound cstring without its NUL", ErrCorrupt)
			}
			v = rest[:z]
			off += z + 1
		default:
			return nil, fmt.Errorf("%w: subtype typlen %d", ErrCorrupt, st.Len)
		}
		return v, nil
	}
	var lower, upper []byte
	hasLower := flags&(rangeLBInf|rangeLBNul) == 0
	hasUpper := flags&(rangeUBInf|rangeUBNul) == 0
	if hasLower {
		if lower, err = bound(); err != nil {
			return dst, f.errorf(oid, err, "lower bound")
		}
	}
	if hasUpper {
		if upper, err = bound(); err != nil {
			return dst, f.errorf(oid, err, "upper bound")
		}
	}
	if flags&rangeLBInc != 0 {
		dst = append(dst, '[')
	} else {
		dst = append(dst, '(')
	}
	var scratch [64]byte
	text := scratch[:0]
	if hasLower {
		if text, err = f.appendDepth(text, sub, lower, depth+1); err != nil {
			return dst, err
		}
		dst = appendQuoted(dst, text, "\"\\()[],")
	}
	dst = append(dst, ',')
	if hasUpper {
		if text, err = f.appendDepth(text[:0], sub, upper, depth+1); err != nil {
			return dst, err
		}
		dst = appendQuoted(dst, text, "\"\\()[],")
	}
	if flags&rangeUBInc != 0 {
		dst = append(dst, ']')
	} else {
		dst = append(dst, ')')
	}
	return dst, nil
}

// appendQuoted is range_bound_escape (rangetypes.c) and record_out's
// quoting (rowtypes.c): the text in double quotes when it is empty or
// holds one of special or white space (isspace), with " and \ doubled.
func appendQuoted(dst, s []byte, special string) []byte {
	quote := len(s) == 0
	for _, c := range s {
		if bytes.IndexByte([]byte(special), c) >= 0 || isArraySpace(c) {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			dst = append(dst, c)
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// appendRecord is record_out (rowtypes.c) for a named composite type: the
// datum is a HeapTupleHeader (its datum_len_ the varlena header), deformed
// with the attributes of the type's relation; "(" the attributes
// separated by ",", a NULL empty, a value quoted when empty or holding
// " \ ( ) , or white space, dropped attributes left out, ")".
func (f *Formatter) appendRecord(dst []byte, t *catalog.Type, d []byte, depth int) ([]byte, error) {
	if t.Relid == 0 {
		return dst, f.errorf(t.OID, ErrUnsupported, "anonymous record")
	}
	atts := f.Types.Attributes(t.Relid)
	desc := make([]tuple.Attr, len(atts))
	for i := range atts {
		desc[i] = atts[i].Attr()
	}
	tup := make([]byte, 4+len(d))
	copy(tup[4:], d)
	vals, _, err := tuple.Deform(nil, tup, desc)
	if err != nil {
		return dst, f.errorf(t.OID, ErrCorrupt, "%v", err)
	}
	dst = append(dst, '(')
	comma := false
	var text []byte
	for i, v := range vals {
		if i >= len(atts) || atts[i].Dropped {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		if v.IsNull() {
			continue
		}
		datum, err := elementDatum(v)
		if err != nil {
			return dst, f.errorf(atts[i].TypID, err, "attribute %s", atts[i].Name)
		}
		if text, err = f.appendDepth(text[:0], atts[i].TypID, datum, depth+1); err != nil {
			return dst, err
		}
		dst = appendQuoted(dst, text, "\"\\(),")
	}
	return append(dst, ')'), nil
}

// appendMultirange is multirange_out (multirangetypes.c): "{" the ranges
// as range_out prints them, separated by ",", "}". MultirangeType is
// vl_len_, multirangetypid, rangeCount, then rangeCount-1 items (every
// fourth the bounds' offset with MULTIRANGE_ITEM_OFF_BIT, the others the
// previous range's length), rangeCount flag bytes, and from the next
// subtype-aligned offset each range's bounds as a range stores them
// (multirange_get_range).
func (f *Formatter) appendMultirange(dst []byte, oid, rangeOID, sub uint32, d []byte, depth int) ([]byte, error) {
	if len(d) < 8 {
		return dst, f.errorf(oid, ErrCorrupt, "multirange of %d bytes", len(d))
	}
	count := int(le32(d[4:]))
	if count == 0 {
		return append(dst, '{', '}'), nil
	}
	if count > len(d) {
		return dst, f.errorf(oid, ErrCorrupt, "multirange of %d ranges in %d bytes", count, len(d))
	}
	st, err := f.storage(sub)
	if err != nil {
		return dst, err
	}
	align := alignOf(st.Align)
	itemsAt := 8                                      // payload index of the items (offset 12)
	flagsAt := itemsAt + 4*(count-1)                  // MultirangeGetFlagsPtr
	begin := (flagsAt+count+4+align-1)&^(align-1) - 4 // att_align_nominal from vl_len_
	if begin > len(d) {
		return dst, f.errorf(oid, ErrCorrupt, "multirange of %d ranges cut at %d bytes", count, len(d))
	}
	bounds := d[begin:]
	dst = append(dst, '{')
	off := 0
	for i := 0; i < count; i++ {
		if i > 0 {
			dst = append(dst, ',')
			// multirange_get_bounds_offset, kept running: an item is the
			// offset itself (MULTIRANGE_ITEM_OFF_BIT) or the length since
			// the previous range's.
			item := le32(d[itemsAt+4*(i-1):])
			if item&0x80000000 != 0 {
				off = int(item & 0x7FFFFFFF)
			} else {
				off += int(item & 0x7FFFFFFF)
			}
		}
		if off < 0 || off > len(bounds) {
			return dst, f.errorf(oid, ErrCorrupt, "multirange range %d at %d past %d bytes", i, off, len(bounds))
		}
		// multirange_get_range: the bounds at begin+off, aligned as in a
		// range since begin is.
		if dst, err = f.appendRangeBounds(dst, rangeOID, sub, bounds[off:], d[flagsAt+i], depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}
