package table

import (
	"fmt"
	"strings"

	"github.com/walscope/walscope/catalog"
	"github.com/walscope/walscope/tuple"
	"github.com/walscope/walscope/typeout"
)

// JSON Lines as row_to_json writes the values (COPY's text, CSV and SQL
// literals are package typeout's).

// ValueText prints one stored datum of a type as its output function does.
type ValueText func(dst []byte, typeOID uint32, datum []byte) ([]byte, error)

// jsonCategory is json_categorize_type's (json.c) category of a type.
type jsonCategory uint8

const (
	jsonOther jsonCategory = iota
	jsonBool
	jsonNumeric
	jsonDate
	jsonTimestamp
	jsonTimestampTz
	jsonJSON
	jsonArray
	jsonComposite
)

func categorize(c typeout.Types, typid uint32) (jsonCategory, *catalog.Type) {
	t := c.Type(typid)
	for t != nil && t.Type == 'd' { // a domain: as its base type
		t = c.Type(t.BaseType)
	}
	if t == nil {
		return jsonOther, nil
	}
	switch t.OID {
	case 16:
		return jsonBool, t
	case 20, 21, 23, 700, 701, 1700:
		return jsonNumeric, t
	case 1082:
		return jsonDate, t
	case 1114:
		return jsonTimestamp, t
	case 1184:
		return jsonTimestampTz, t
	case 114, 3802:
		return jsonJSON, t
	}
	switch {
	case t.Category == 'A' && t.Elem != 0:
		return jsonArray, t
	case t.Type == 'c':
		return jsonComposite, t
	}
	return jsonOther, t
}

// AppendJSONValue appends a datum of type typid as datum_to_json (json.c)
// writes it for row_to_json: booleans and numbers bare (NaN and infinities
// quoted), json and jsonb as their text, dates and timestamps in ISO 8601
// (JsonEncodeDateTime: isoText is the value's text under DateStyle ISO),
// arrays as JSON arrays element by element, composites as objects of
// their attributes (composite_to_json), other types as JSON strings of
// their text. c resolves the types (a *catalog.Catalog as of the target).
func AppendJSONValue(dst []byte, c typeout.Types, typid uint32, datum []byte, text, isoText ValueText) ([]byte, error) {
	cat, t := categorize(c, typid)
	if t != nil {
		typid = t.OID
	}
	var err error
	switch cat {
	case jsonArray:
		return appendJSONArray(dst, c, t, datum, text, isoText)
	case jsonComposite:
		return appendJSONComposite(dst, c, t, datum, text, isoText)
	case jsonDate, jsonTimestamp, jsonTimestampTz:
		var s []byte
		if s, err = isoText(nil, typid, datum); err != nil {
			return dst, err
		}
		return typeout.AppendJSONString(dst, isoDateTime(s, cat)), nil
	}
	start := len(dst)
	if dst, err = text(dst, typid, datum); err != nil {
		return dst, err
	}
	s := append([]byte(nil), dst[start:]...)
	dst = dst[:start]
	switch cat {
	case jsonBool:
		if string(s) == "t" {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case jsonNumeric:
		if isJSONNumber(s) {
			return append(dst, s...), nil
		}
		return typeout.AppendJSONString(dst, s), nil
	case jsonJSON:
		return append(dst, s...), nil
	}
	return typeout.AppendJSONString(dst, s), nil
}

// appendJSONComposite is composite_to_json (json.c) without line feeds:
// the datum is a HeapTupleHeader (its datum_len_ the varlena header),
// deformed with the attributes of the type's relation; "{", each
// attribute not dropped as its name, ":" and its value as datum_to_json
// writes it (null for NULL), separated by ",", "}".
func appendJSONComposite(dst []byte, c typeout.Types, t *catalog.Type, datum []byte, text, isoText ValueText) ([]byte, error) {
	if t.Relid == 0 {
		return dst, fmt.Errorf("type %s: an anonymous record", t.Name)
	}
	atts := c.Attributes(t.Relid)
	desc := make([]tuple.Attr, len(atts))
	for i := range atts {
		desc[i] = atts[i].Attr()
	}
	tup := make([]byte, 4+len(datum)) // the varlena header stripped: back in place of datum_len_
	copy(tup[4:], datum)
	vals, _, err := tuple.Deform(nil, tup, desc)
	if err != nil {
		return dst, fmt.Errorf("type %s: %w", t.Name, err)
	}
	dst = append(dst, '{')
	comma := false
	for i, v := range vals {
		if i >= len(atts) || atts[i].Dropped {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = typeout.AppendJSONString(dst, []byte(atts[i].Name))
		dst = append(dst, ':')
		if v.IsNull() {
			dst = append(dst, "null"...)
			continue
		}
		var d []byte
		switch v.Form {
		case tuple.Compressed: // an inline compressed value stays so inside a composite
			if d, err = v.Detoast(nil, nil); err != nil {
				return dst, fmt.Errorf("type %s, attribute %s: %w", t.Name, atts[i].Name, err)
			}
		case tuple.External:
			return dst, fmt.Errorf("type %s, attribute %s: an external TOAST pointer inside a composite value", t.Name, atts[i].Name)
		default:
			d = v.Payload()
		}
		if dst, err = AppendJSONValue(dst, c, atts[i].TypID, d, text, isoText); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// isJSONNumber is IsValidJsonNumber (json.c, json_lex_number): JSON's
// number grammar, an optional minus, 0 or digits not starting with 0, an
// optional fraction, an optional exponent. A grammar, not a parse: float8's
// 1.79769313486232e+308 (extra_float_digits 0) is beyond float64 but a
// number to PostgreSQL; NaN and Infinity are not.
func isJSONNumber(s []byte) bool {
	i, n := 0, len(s)
	digits := func() int {
		start := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i < n && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == n
}

// isoDateTime turns ISO-DateStyle text into JsonEncodeDateTime's: a T
// between date and time, a time zone as +HH:MM.
func isoDateTime(s []byte, cat jsonCategory) []byte {
	str := string(s)
	if str == "infinity" || str == "-infinity" || cat == jsonDate {
		return s
	}
	bc := strings.HasSuffix(str, " BC")
	str = strings.TrimSuffix(str, " BC")
	str = strings.Replace(str, " ", "T", 1)
	if cat == jsonTimestampTz {
		// the zone: the last + or - after the time
		if i := strings.LastIndexAny(str, "+-"); i > strings.IndexByte(str, 'T') {
			zone := str[i+1:]
			if len(zone) == 2 {
				zone += ":00"
			}
			str = str[:i+1] + zone
		}
	}
	if bc {
		str += " BC"
	}
	return []byte(str)
}

func appendJSONArray(dst []byte, c typeout.Types, t *catalog.Type, datum []byte, text, isoText ValueText) ([]byte, error) {
	a, err := tuple.ParseArray(datum)
	if err != nil {
		return dst, err
	}
	et := c.Type(t.Elem)
	if et == nil {
		return dst, fmt.Errorf("array of type %d: element type not in the catalog", t.Elem)
	}
	elems, err := a.Elements(nil, tuple.Attr{Name: et.Name, TypeOID: et.OID, Len: et.Len, Align: et.Align, ByVal: et.ByVal})
	if err != nil {
		return dst, err
	}
	if a.NDim == 0 {
		return append(dst, '[', ']'), nil
	}
	i := 0
	var dim func(d int) ([]byte, error)
	dim = func(d int) ([]byte, error) {
		dst = append(dst, '[')
		for k := int32(0); k < a.Dims[d]; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			if d+1 < a.NDim {
				if _, err := dim(d + 1); err != nil {
					return dst, err
				}
				continue
			}
			e := elems[i]
			i++
			if e.IsNull() {
				dst = append(dst, "null"...)
				continue
			}
			var err error
			if dst, err = AppendJSONValue(dst, c, et.OID, e.Payload(), text, isoText); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
		return dst, nil
	}
	return dim(0)
}
