package export

import "encoding/binary"

// The Parquet footer and page headers are Thrift structs in the compact
// protocol (parquet-format's parquet.thrift; Thrift's
// doc/specs/thrift-compact-protocol.md). thriftWriter writes the few field
// types they use; the writer names each field by its id in parquet.thrift.

// Compact protocol field types.
const (
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI32    = 5
	thriftI64    = 6
	thriftBinary = 8
	thriftList   = 9
	thriftStruct = 12
)

type thriftWriter struct {
	b    []byte
	last []int16 // the last field id written, per open struct
}

func (t *thriftWriter) reset() {
	t.b, t.last = t.b[:0], append(t.last[:0], 0)
}

func (t *thriftWriter) uvarint(v uint64) { t.b = binary.AppendUvarint(t.b, v) }
func (t *thriftWriter) varint(v int64)   { t.b = binary.AppendVarint(t.b, v) } // zigzag

func (t *thriftWriter) field(id int16, typ byte) {
	top := &t.last[len(t.last)-1]
	if d := id - *top; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = append(t.b, typ)
		t.varint(int64(id))
	}
	*top = id
}

func (t *thriftWriter) i32(id int16, v int32) { t.field(id, thriftI32); t.varint(int64(v)) }
func (t *thriftWriter) i64(id int16, v int64) { t.field(id, thriftI64); t.varint(v) }
func (t *thriftWriter) i8(id int16, v int8)   { t.field(id, thriftByte); t.b = append(t.b, byte(v)) }

func (t *thriftWriter) boolean(id int16, v bool) {
	if v {
		t.field(id, thriftTrue)
	} else {
		t.field(id, thriftFalse)
	}
}

func (t *thriftWriter) binary(id int16, v []byte) {
	t.field(id, thriftBinary)
	t.uvarint(uint64(len(v)))
	t.b = append(t.b, v...)
}

func (t *thriftWriter) str(id int16, v string) {
	t.field(id, thriftBinary)
	t.uvarint(uint64(len(v)))
	t.b = append(t.b, v...)
}

// begin opens a struct field; end closes it (and the top-level struct).
func (t *thriftWriter) begin(id int16) {
	t.field(id, thriftStruct)
	t.last = append(t.last, 0)
}

func (t *thriftWriter) end() {
	t.b = append(t.b, 0)
	t.last = t.last[:len(t.last)-1]
}

// list opens a list field of n elements of type elem.
func (t *thriftWriter) list(id int16, elem byte, n int) {
	t.field(id, thriftList)
	if n < 15 {
		t.b = append(t.b, byte(n)<<4|elem)
	} else {
		t.b = append(t.b, 0xF0|elem)
		t.uvarint(uint64(n))
	}
}

// elem opens a struct element of a list; end closes it.
func (t *thriftWriter) elem() { t.last = append(t.last, 0) }

func (t *thriftWriter) listI32(id int16, vs []int32) {
	t.list(id, thriftI32, len(vs))
	for _, v := range vs {
		t.varint(int64(v))
	}
}

func (t *thriftWriter) listStr(id int16, vs ...string) {
	t.list(id, thriftBinary, len(vs))
	for _, v := range vs {
		t.uvarint(uint64(len(v)))
		t.b = append(t.b, v...)
	}
}
