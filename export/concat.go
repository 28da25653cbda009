package export

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Merging small batches (merge.go) concatenates their files without
// decoding a row: a Parquet file's row groups are self-contained (each
// column chunk's pages, dictionary first), and only the footer, the Thrift
// FileMetaData (parquet-format's parquet.thrift), says where they are. So
// the merged file is "PAR1", the bytes between the magic and the footer of
// each input in turn, and a footer that lists every input's row groups with
// their offsets moved by where that input's bytes landed. The inputs must
// have the same schema (byte for byte, as walscope's writer writes one
// table's); the key-value metadata is the first input's. JSON Lines are
// concatenated as they are, CSV files without the header of every file but
// the first.

// ErrConcat reports inputs that cannot be concatenated: not Parquet, a
// damaged footer, another schema.
var ErrConcat = errors.New("files cannot be concatenated")

// thrift compact protocol field types beyond thriftWriter's
const (
	thriftI16    = 4
	thriftDouble = 7
	thriftSet    = 10
	thriftMap    = 11
)

// tField is one field of a decoded Thrift struct: its id, its type and its
// value (ints for the integer types and booleans, raw for binary, fields
// for a struct, elems for a list or set), kept in the order read.
type tField struct {
	id  int16
	typ byte
	v   tValue
}

type tValue struct {
	i      int64
	raw    []byte
	fields []tField
	elem   byte // a list's element type
	elems  []tValue
}

// thriftReader decodes the compact protocol into tFields.
type thriftReader struct {
	b   []byte
	off int
	err error
}

func (r *thriftReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: footer at byte %d: %s", ErrConcat, r.off, fmt.Sprintf(format, a...))
	}
}

func (r *thriftReader) byte1() byte {
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *thriftReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[min(r.off, len(r.b)):])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

func (r *thriftReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// value reads a value of type typ (a struct's boolean field has its value
// in its type: handled by structFields).
func (r *thriftReader) value(typ byte, depth int) tValue {
	if depth > 32 {
		r.fail("nested too deep")
		return tValue{}
	}
	switch typ {
	case thriftTrue, thriftFalse, thriftByte:
		return tValue{i: int64(r.byte1())}
	case thriftI16, thriftI32, thriftI64:
		return tValue{i: r.varint()}
	case thriftDouble:
		if r.off+8 > len(r.b) {
			r.fail("truncated double")
			return tValue{}
		}
		v := tValue{raw: r.b[r.off : r.off+8]}
		r.off += 8
		return v
	case thriftBinary:
		n := r.uvarint()
		if n > uint64(len(r.b)-r.off) {
			r.fail("binary of %d bytes", n)
			return tValue{}
		}
		v := tValue{raw: r.b[r.off : r.off+int(n)]}
		r.off += int(n)
		return v
	case thriftList, thriftSet:
		h := r.byte1()
		n := uint64(h >> 4)
		if n == 15 {
			n = r.uvarint()
		}
		if n > uint64(len(r.b)) {
			r.fail("list of %d elements", n)
			return tValue{}
		}
		v := tValue{elem: h & 0x0F}
		for range n {
			if r.err != nil {
				break
			}
			v.elems = append(v.elems, r.value(v.elem, depth+1))
		}
		return v
	case thriftStruct:
		return tValue{fields: r.structFields(depth + 1)}
	}
	r.fail("field type %d", typ)
	return tValue{}
}

func (r *thriftReader) structFields(depth int) []tField {
	var out []tField
	var last int16
	for r.err == nil {
		h := r.byte1()
		if h == 0 {
			return out
		}
		typ := h & 0x0F
		id := last + int16(h>>4)
		if h>>4 == 0 {
			id = int16(r.varint())
		}
		last = id
		var v tValue
		if typ == thriftTrue || typ == thriftFalse {
			v.i = int64(2 - typ) // 1 true, 0 false
		} else {
			v = r.value(typ, depth)
		}
		out = append(out, tField{id, typ, v})
	}
	return out
}

// thriftEncode writes fields as a struct (its stop byte included).
func thriftEncode(t *thriftWriter, fields []tField) {
	for _, f := range fields {
		switch f.typ {
		case thriftTrue, thriftFalse:
			t.boolean(f.id, f.v.i != 0)
			continue
		}
		t.field(f.id, f.typ)
		thriftEncodeValue(t, f.typ, f.v)
	}
	t.end()
}

func thriftEncodeValue(t *thriftWriter, typ byte, v tValue) {
	switch typ {
	case thriftTrue, thriftFalse, thriftByte:
		t.b = append(t.b, byte(v.i))
	case thriftI16, thriftI32, thriftI64:
		t.varint(v.i)
	case thriftDouble:
		t.b = append(t.b, v.raw...)
	case thriftBinary:
		t.uvarint(uint64(len(v.raw)))
		t.b = append(t.b, v.raw...)
	case thriftList, thriftSet:
		if n := len(v.elems); n < 15 {
			t.b = append(t.b, byte(n)<<4|v.elem)
		} else {
			t.b = append(t.b, 0xF0|v.elem)
			t.uvarint(uint64(n))
		}
		for _, e := range v.elems {
			thriftEncodeValue(t, v.elem, e)
		}
	case thriftStruct:
		t.last = append(t.last, 0)
		thriftEncode(t, v.fields)
	}
}

func fieldOf(fields []tField, id int16) *tField {
	for i := range fields {
		if fields[i].id == id {
			return &fields[i]
		}
	}
	return nil
}

// parquetFooter reads a Parquet file's FileMetaData: its fields and where
// the footer begins (the end of the row groups' bytes).
func parquetFooter(data []byte) ([]tField, int64, error) {
	n := len(data)
	if n < 12 || !bytes.Equal(data[:4], parquetMagic) || !bytes.Equal(data[n-4:], parquetMagic) {
		return nil, 0, fmt.Errorf("%w: not a Parquet file", ErrConcat)
	}
	flen := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	if flen <= 0 || flen > n-12 {
		return nil, 0, fmt.Errorf("%w: footer length %d", ErrConcat, flen)
	}
	start := n - 8 - flen
	r := &thriftReader{b: data[start : n-8]}
	fields := r.structFields(0)
	if r.err != nil {
		return nil, 0, r.err
	}
	return fields, int64(start), nil
}

// shiftOffsets moves a row group's offsets by delta: RowGroup.file_offset
// (5), and of each ColumnChunk (1) its file_offset (2) and its
// ColumnMetaData's (3) data, index and dictionary page offsets (9, 10, 11).
func shiftOffsets(group *tValue, delta int64) {
	for i := range group.fields {
		f := &group.fields[i]
		switch f.id {
		case 5:
			f.v.i += delta
		case 1:
			for j := range f.v.elems {
				chunk := &f.v.elems[j]
				for k := range chunk.fields {
					cf := &chunk.fields[k]
					switch cf.id {
					case 2:
						cf.v.i += delta
					case 3:
						for l := range cf.v.fields {
							if id := cf.v.fields[l].id; id == 9 || id == 10 || id == 11 {
								cf.v.fields[l].v.i += delta
							}
						}
					}
				}
			}
		}
	}
}

// ConcatParquet writes the row groups of the Parquet files inputs (their
// contents), in order, as one Parquet file at out (written under a
// temporary name, synced, renamed).
func ConcatParquet(out string, inputs [][]byte) error {
	if len(inputs) == 0 {
		return fmt.Errorf("%w: no input", ErrConcat)
	}
	var meta []tField
	var schema []byte
	var rows int64
	var groups tValue
	body := [][]byte{}
	off := int64(len(parquetMagic))
	for i, data := range inputs {
		fields, end, err := parquetFooter(data)
		if err != nil {
			return fmt.Errorf("input %d: %w", i+1, err)
		}
		sch, nrows, rg := fieldOf(fields, 2), fieldOf(fields, 3), fieldOf(fields, 4)
		if sch == nil || nrows == nil {
			return fmt.Errorf("input %d: %w: no schema or row count", i+1, ErrConcat)
		}
		var t thriftWriter
		t.reset()
		thriftEncodeValue(&t, sch.typ, sch.v)
		if i == 0 {
			meta, schema = fields, t.b
			groups.elem = thriftStruct
		} else if !bytes.Equal(t.b, schema) {
			return fmt.Errorf("input %d: %w: another schema than the first input's", i+1, ErrConcat)
		}
		delta := off - int64(len(parquetMagic))
		if rg != nil {
			for _, g := range rg.v.elems {
				shiftOffsets(&g, delta)
				groups.elems = append(groups.elems, g)
			}
		}
		rows += nrows.v.i
		body = append(body, data[len(parquetMagic):end])
		off += end - int64(len(parquetMagic))
	}
	var footer []tField
	for _, f := range meta {
		switch f.id {
		case 3:
			f.v.i = rows
		case 4:
			f.v = groups
		}
		footer = append(footer, f)
	}
	if fieldOf(footer, 4) == nil {
		return fmt.Errorf("%w: no row groups field", ErrConcat)
	}
	var t thriftWriter
	t.reset()
	thriftEncode(&t, footer)
	if len(t.b) > math.MaxUint32 {
		return fmt.Errorf("%w: footer too big", ErrConcat)
	}
	t.b = binary.LittleEndian.AppendUint32(t.b, uint32(len(t.b)))
	t.b = append(t.b, parquetMagic...)
	parts := append([][]byte{parquetMagic}, body...)
	return writeParts(out, append(parts, t.b))
}

// concatText joins JSON Lines or CSV files' contents (a CSV file's header
// line kept from the first only) into out. Their columns must be the same:
// a CSV file's header line, the names of a JSON Lines file's first object.
func concatText(out string, f Format, inputs [][]byte) error {
	parts := make([][]byte, 0, len(inputs))
	var first []byte
	for i, data := range inputs {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		cols := line
		if f == JSONL {
			var obj map[string]json.RawMessage
			if len(line) > 0 && json.Unmarshal(line, &obj) != nil {
				return fmt.Errorf("input %d: %w: not JSON Lines", i+1, ErrConcat)
			}
			names := make([]string, 0, len(obj))
			for k := range obj {
				names = append(names, k)
			}
			sort.Strings(names)
			cols = []byte(strings.Join(names, ","))
			if len(line) == 0 {
				cols = nil // an empty file: no row, any columns
			}
		}
		switch {
		case first == nil:
			first = cols
		case cols != nil && !bytes.Equal(cols, first):
			return fmt.Errorf("input %d: %w: other columns than the first input's", i+1, ErrConcat)
		}
		if f == CSV && i > 0 {
			data = rest
		}
		parts = append(parts, data)
	}
	return writeParts(out, parts)
}

// writeParts writes the parts as the file out: under its temporary name,
// synced, then renamed into place.
func writeParts(out string, parts [][]byte) error {
	tmp := TempName(out)
	if err := os.MkdirAll(filepath.Dir(out), 0o777); err != nil {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
