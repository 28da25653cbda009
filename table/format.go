package table

import (
	"fmt"
	"strconv"
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

func categorize(c *catalog.Catalog, typid uint32) (jsonCategory, *catalog.Type) {
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
// arrays as JSON arrays element by element, other types as JSON strings
// of their text.
func AppendJSONValue(dst []byte, c *catalog.Catalog, typid uint32, datum []byte, text, isoText ValueText) ([]byte, error) {
	cat, t := categorize(c, typid)
	if t != nil {
		typid = t.OID
	}
	var err error
	switch cat {
	case jsonArray:
		return appendJSONArray(dst, c, t, datum, text, isoText)
	case jsonComposite:
		return dst, fmt.Errorf("type %s: composite values in JSON: %w", t.Name, errUnsupportedJSON)
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
		if _, err := strconv.ParseFloat(string(s), 64); err == nil && !strings.ContainsAny(string(s), "nNiI") {
			return append(dst, s...), nil
		}
		return typeout.AppendJSONString(dst, s), nil
	case jsonJSON:
		return append(dst, s...), nil
	}
	return typeout.AppendJSONString(dst, s), nil
}

var errUnsupportedJSON = fmt.Errorf("not supported")

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

func appendJSONArray(dst []byte, c *catalog.Catalog, t *catalog.Type, datum []byte, text, isoText ValueText) ([]byte, error) {
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
