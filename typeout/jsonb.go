package typeout

import "fmt"

// The jsonb container header and JEntry (utils/jsonb.h).
const (
	jbCountMask   = 0x0FFFFFFF
	jbScalar      = 0x10000000
	jbObject      = 0x20000000
	jbArray       = 0x40000000
	jeOffLenMask  = 0x0FFFFFFF
	jeTypeMask    = 0x70000000
	jeHasOff      = 0x80000000
	jeString      = 0x00000000
	jeNumeric     = 0x10000000
	jeFalse       = 0x20000000
	jeTrue        = 0x30000000
	jeNull        = 0x40000000
	jeContainer   = 0x50000000
	maxJSONBDepth = 10000
)

// appendJSONB is jsonb_out (JsonbToCString, jsonb.c) over the stored
// binary form (JsonbContainer, JEntry; jsonb_util.c): objects as
// {"key": value, ...} with keys in their stored order, arrays as
// [a, b], a root scalar (a one-element array flagged JB_FSCALAR) bare,
// strings escaped as escape_json, numbers as numeric_out.
func appendJSONB(dst, d []byte) ([]byte, error) {
	return appendJSONBContainer(dst, d, true, 0)
}

func appendJSONBContainer(dst, c []byte, root bool, depth int) ([]byte, error) {
	if depth > maxJSONBDepth {
		return dst, fmt.Errorf("%w: jsonb nested more than %d deep", ErrCorrupt, maxJSONBDepth)
	}
	if len(c) < 4 {
		return dst, fmt.Errorf("%w: jsonb container of %d bytes", ErrCorrupt, len(c))
	}
	h := le32(c)
	count := int(h & jbCountMask)
	object := h&jbObject != 0
	isArray := h&jbArray != 0
	if object == isArray {
		return dst, fmt.Errorf("%w: jsonb container header %#08x", ErrCorrupt, h)
	}
	n := count
	if object {
		n = 2 * count
	}
	if n > (len(c)-4)/4 {
		return dst, fmt.Errorf("%w: jsonb container of %d entries in %d bytes", ErrCorrupt, n, len(c))
	}
	entries := c[4 : 4+4*n]
	data := c[4+4*n:]
	// entry returns entry i's JEntry and the offset in data after it, from
	// the offset before it (JBE_ADVANCE_OFFSET: an entry holds its end
	// offset or its length).
	entry := func(i, off int) (je uint32, end int) {
		je = le32(entries[4*i:])
		if je&jeHasOff != 0 {
			return je, int(je & jeOffLenMask)
		}
		return je, off + int(je&jeOffLenMask)
	}
	value := func(dst []byte, i, off int) ([]byte, error) {
		je, end := entry(i, off)
		length := end - off
		if off < 0 || length < 0 || end > len(data) {
			return dst, fmt.Errorf("%w: jsonb entry %d at %d+%d beyond %d bytes", ErrCorrupt, i, off, length, len(data))
		}
		switch je & jeTypeMask {
		case jeString:
			return AppendJSONString(dst, data[off:off+length]), nil
		case jeNull:
			return append(dst, "null"...), nil
		case jeTrue:
			return append(dst, "true"...), nil
		case jeFalse:
			return append(dst, "false"...), nil
		case jeNumeric, jeContainer:
			pad := (4 - off%4) % 4 // INTALIGN(offset)
			if pad > length {
				return dst, fmt.Errorf("%w: jsonb entry %d: padding beyond its length", ErrCorrupt, i)
			}
			v := data[off+pad : off+length]
			if je&jeTypeMask == jeContainer {
				return appendJSONBContainer(dst, v, false, depth+1)
			}
			payload, err := varlenaPayload(v)
			if err != nil {
				return dst, err
			}
			return appendNumeric(dst, payload)
		}
		return dst, fmt.Errorf("%w: jsonb entry %d of type %#x", ErrCorrupt, i, je&jeTypeMask)
	}
	var err error
	if isArray && h&jbScalar != 0 {
		if !root || count != 1 {
			return dst, fmt.Errorf("%w: jsonb scalar container of %d elements", ErrCorrupt, count)
		}
		return value(dst, 0, 0)
	}
	if object {
		// The values' data follows the keys': their first offset is the
		// keys' end.
		valOff := 0
		for i := 0; i < count; i++ {
			_, valOff = entry(i, valOff)
		}
		keyOff := 0
		dst = append(dst, '{')
		for i := 0; i < count; i++ {
			if i > 0 {
				dst = append(dst, ',', ' ')
			}
			je, keyEnd := entry(i, keyOff)
			if je&jeTypeMask != jeString {
				return dst, fmt.Errorf("%w: jsonb key %d is not a string", ErrCorrupt, i)
			}
			if dst, err = value(dst, i, keyOff); err != nil {
				return dst, err
			}
			dst = append(dst, ':', ' ')
			_, valEnd := entry(i+count, valOff)
			if dst, err = value(dst, i+count, valOff); err != nil {
				return dst, err
			}
			keyOff, valOff = keyEnd, valEnd
		}
		return append(dst, '}'), nil
	}
	off := 0
	dst = append(dst, '[')
	for i := 0; i < count; i++ {
		if i > 0 {
			dst = append(dst, ',', ' ')
		}
		if dst, err = value(dst, i, off); err != nil {
			return dst, err
		}
		_, off = entry(i, off)
	}
	return append(dst, ']'), nil
}

// varlenaPayload strips an inline, uncompressed varlena's 1- or 4-byte
// header (varatt.h), checking the length it gives.
func varlenaPayload(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: empty varlena", ErrCorrupt)
	}
	if v[0]&1 == 1 {
		if v[0] == 1 {
			return nil, fmt.Errorf("%w: external varlena inside a value", ErrCorrupt)
		}
		n := int(v[0] >> 1)
		if n < 1 || n > len(v) {
			return nil, fmt.Errorf("%w: varlena of %d bytes in %d", ErrCorrupt, n, len(v))
		}
		return v[1:n], nil
	}
	if len(v) < 4 {
		return nil, fmt.Errorf("%w: varlena header cut short", ErrCorrupt)
	}
	h := le32(v)
	if h&3 != 0 {
		return nil, fmt.Errorf("%w: compressed varlena inside a value", ErrCorrupt)
	}
	n := int(h >> 2)
	if n < 4 || n > len(v) {
		return nil, fmt.Errorf("%w: varlena of %d bytes in %d", ErrCorrupt, n, len(v))
	}
	return v[4:n], nil
}

// AppendJSONString appends s as a JSON string, as escape_json (json.c)
// quotes it.
func AppendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			if c < ' ' {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// varlenaHeaderSize is the size of the header varlenaPayload strips.
func varlenaHeaderSize(v []byte) int {
	if v[0]&1 == 1 {
		return 1
	}
	return 4
}
