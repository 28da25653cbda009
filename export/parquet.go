package export

import (
	"bufio"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The Parquet writer keeps a whole row group in its own column buffers,
// reused from one row group to the next, and hands them to pqarrow as Arrow
// arrays without copying. Low-cardinality strings (Column.Dict) are kept as
// indices into the row group's dictionary and written as Arrow dictionary
// arrays, which pqarrow stores as the Parquet dictionary page and RLE
// indices without hashing every value again. (Building rows with Arrow's
// builders spent most of the export's time clearing freshly allocated
// buffers and hashing strings; pqarrow keeps a dictionary only while it does
// not change within a row group, hence a whole row group per write.)

// dictType is the Arrow type of dictionary-encoded string columns: Arrow
// readers (pyarrow, pandas) see them as dictionary<int32, utf8> (pandas: a
// category); the Parquet column is a UTF8 byte array either way.
var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// ArrowSchema returns the Arrow schema of s, with the file metadata.
func ArrowSchema(s *Schema, o Options) *arrow.Schema {
	fields := make([]arrow.Field, len(s.Columns))
	for i, c := range s.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: arrowType(c), Nullable: c.Nullable}
	}
	keys, vals := metadata(s, o)
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

func arrowType(c Column) arrow.DataType {
	switch c.Kind {
	case Uint64:
		return arrow.PrimitiveTypes.Uint64
	case Uint32:
		return arrow.PrimitiveTypes.Uint32
	case Uint16:
		return arrow.PrimitiveTypes.Uint16
	case Uint8:
		return arrow.PrimitiveTypes.Uint8
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case String:
		if c.Dict {
			return dictType
		}
		return arrow.BinaryTypes.String
	case Time:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	panic("export: unknown column kind")
}

type parquetWriter struct {
	fileBase
	bw     *bufio.Writer
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
	cols   []column
	key    string // of the column buffers' shape (columnsKey)
	group  int    // rows per row group
	n      int    // rows buffered
	rows   int64
}

func newParquetWriter(b fileBase, s *Schema, o Options) (*parquetWriter, error) {
	rg := o.RowGroupRows
	if rg <= 0 {
		rg = DefaultRowGroupRows
	}
	popts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1),
		parquet.WithMaxRowGroupLength(int64(rg)),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(true),
		parquet.WithCreatedBy("walscope"),
	}
	for _, c := range s.Columns {
		if c.Dict {
			popts = append(popts, parquet.WithDictionaryFor(c.Name, true))
		}
		if (c.Kind == Uint64 || c.Kind == Time) && !c.Dict {
			// LSNs, lengths and times are small deltas: packed, there is
			// little left for zstd to do (it was half the export's time).
			popts = append(popts, parquet.WithEncodingFor(c.Name, parquet.Encodings.DeltaBinaryPacked))
		}
		if c.Kind == String && (!c.Dict || !c.Stats) {
			// min/max of free text (descriptions) prune nothing, nor do
			// those of names every row group holds (rmgr, record_type):
			// and for a dictionary array pqarrow finds them by hashing
			// every index again (a tenth of the writer's time).
			popts = append(popts, parquet.WithStatsFor(c.Name, false))
		}
	}
	as := ArrowSchema(s, o)
	bw := bufio.NewWriterSize(b.f, 1<<20)
	fw, err := pqarrow.NewFileWriter(as, bw, parquet.NewWriterProperties(popts...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		b.abort()
		return nil, err
	}
	w := &parquetWriter{fileBase: b, bw: bw, fw: fw, schema: as, group: rg, key: columnsKey(s)}
	if w.cols = getColumns(w.key); w.cols == nil {
		for _, c := range s.Columns {
			w.cols = append(w.cols, newColumn(c))
		}
	}
	return w, nil
}

// freeColumns keeps the column buffers of finished files, per schema: every
// parallel span writes its own file, and growing fresh buffers to a row
// group each time cost a tenth of the export. (Not a sync.Pool: a GC
// empties those, and exports collect often.) At most keepColumns sets are
// kept per schema (about one per worker).
var freeColumns = struct {
	sync.Mutex
	m map[string][][]column
}{m: map[string][][]column{}}

const keepColumns = 4

// columnsKey identifies the shape of a schema's column buffers.
func columnsKey(s *Schema) string {
	b := make([]byte, 0, 2*len(s.Columns))
	for _, c := range s.Columns {
		k := byte(c.Kind)
		if c.Dict {
			k |= 0x80
		}
		b = append(b, k)
	}
	return string(b)
}

func getColumns(key string) []column {
	freeColumns.Lock()
	defer freeColumns.Unlock()
	l := freeColumns.m[key]
	if len(l) == 0 {
		return nil
	}
	cols := l[len(l)-1]
	freeColumns.m[key] = l[:len(l)-1]
	return cols
}

// release hands the column buffers back for the next file.
func (w *parquetWriter) release() {
	if w.cols != nil {
		for _, c := range w.cols {
			c.reset()
		}
		freeColumns.Lock()
		if l := freeColumns.m[w.key]; len(l) < keepColumns {
			freeColumns.m[w.key] = append(l, w.cols)
		}
		freeColumns.Unlock()
		w.cols = nil
	}
}

func (w *parquetWriter) Rows() int64 { return w.rows }

func (w *parquetWriter) Write(r Row) error {
	for i, c := range w.cols {
		c.add(&r[i])
	}
	w.rows++
	w.n++
	if w.n >= w.group {
		return w.flush()
	}
	return nil
}

// flush writes the buffered rows as one row group.
func (w *parquetWriter) flush() error {
	if w.n == 0 {
		return nil
	}
	arrs := make([]arrow.Array, len(w.cols))
	for i, c := range w.cols {
		arrs[i] = c.array(w.n)
	}
	rec := array.NewRecordBatch(w.schema, arrs, int64(w.n))
	err := w.fw.Write(rec)
	rec.Release()
	for i, c := range w.cols {
		arrs[i].Release()
		c.reset()
	}
	w.n = 0
	return err
}

func (w *parquetWriter) Close() error {
	err := w.flush()
	if err == nil {
		err = w.fw.Close() // writes the footer
	}
	if err == nil {
		err = w.bw.Flush()
	}
	w.release()
	if err != nil {
		w.abort()
		return err
	}
	return w.commit()
}

func (w *parquetWriter) Abort() {
	w.release()
	w.abort()
}

// column buffers one column of a row group.
type column interface {
	add(*Value)
	// array returns the first n values as an Arrow array that shares the
	// buffers: valid until reset.
	array(n int) arrow.Array
	reset()
}

func newColumn(c Column) column {
	switch c.Kind {
	case Uint64:
		return &fixedColumn[uint64]{typ: arrowType(c)}
	case Uint32:
		return &fixedColumn[uint32]{typ: arrowType(c)}
	case Uint16:
		return &fixedColumn[uint16]{typ: arrowType(c)}
	case Uint8:
		return &fixedColumn[uint8]{typ: arrowType(c)}
	case Int32:
		return &fixedColumn[int32]{typ: arrowType(c)}
	case Time:
		return &fixedColumn[int64]{typ: arrowType(c)}
	case Bool:
		return &boolColumn{}
	case String:
		if c.Dict {
			return &dictColumn{index: map[string]int32{}}
		}
		return &stringColumn{}
	}
	panic("export: unknown column kind")
}

// validity is a column's null bitmap, made only once a null arrives.
type validity struct {
	bits  []byte
	nulls int
}

// set records whether row i (the next row) is valid.
func (v *validity) set(i int, valid bool) {
	if valid && v.nulls == 0 {
		return
	}
	if v.bits == nil || len(v.bits) < (i+8)/8 {
		// First null, or more rows: every earlier row was valid.
		old := len(v.bits)
		need := max((i+8)/8, 2*old)
		nb := make([]byte, need)
		copy(nb, v.bits)
		if v.nulls == 0 {
			for j := range nb {
				nb[j] = 0xFF
			}
		} else {
			for j := old; j < need; j++ {
				nb[j] = 0xFF
			}
		}
		v.bits = nb
	}
	// Bits start set (reset sets them again): only nulls clear one.
	if !valid {
		v.bits[i/8] &^= 1 << (i % 8)
		v.nulls++
	}
}

func (v *validity) buffer(n int) *memory.Buffer {
	if v.nulls == 0 {
		return nil
	}
	return memory.NewBufferBytes(v.bits[:(n+7)/8])
}

func (v *validity) reset() {
	if v.nulls > 0 {
		for j := range v.bits {
			v.bits[j] = 0xFF
		}
	}
	v.nulls = 0
}

type fixed interface {
	uint64 | uint32 | uint16 | uint8 | int32 | int64
}

type fixedColumn[T fixed] struct {
	typ   arrow.DataType
	vals  []T
	valid validity
}

func (c *fixedColumn[T]) add(v *Value) {
	u := v.U
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.vals), !v.Null)
		if v.Null {
			u = 0
		}
	}
	c.vals = append(c.vals, T(u))
}

func (c *fixedColumn[T]) array(n int) arrow.Array {
	var zero T
	size := int(unsafe.Sizeof(zero))
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.vals))), n*size)
	d := array.NewData(c.typ, n, []*memory.Buffer{c.valid.buffer(n), memory.NewBufferBytes(raw)}, nil, c.valid.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *fixedColumn[T]) reset() {
	c.vals = c.vals[:0]
	c.valid.reset()
}

type boolColumn struct {
	bits  []byte
	n     int
	valid validity
}

func (c *boolColumn) add(v *Value) {
	c.valid.set(c.n, !v.Null)
	if c.n/8 >= len(c.bits) {
		c.bits = append(c.bits, 0)
	}
	if !v.Null && v.U != 0 {
		c.bits[c.n/8] |= 1 << (c.n % 8)
	}
	c.n++
}

func (c *boolColumn) array(n int) arrow.Array {
	d := array.NewData(arrow.FixedWidthTypes.Boolean, n,
		[]*memory.Buffer{c.valid.buffer(n), memory.NewBufferBytes(c.bits[:(n+7)/8])}, nil, c.valid.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *boolColumn) reset() {
	clear(c.bits)
	c.bits, c.n = c.bits[:0], 0
	c.valid.reset()
}

// stringColumn is free text: Arrow's offsets and bytes.
type stringColumn struct {
	offsets []int32
	data    []byte
	valid   validity
}

func (c *stringColumn) add(v *Value) {
	if len(c.offsets) == 0 {
		c.offsets = append(c.offsets, 0)
	}
	c.valid.set(len(c.offsets)-1, !v.Null)
	if !v.Null {
		c.data = append(c.data, v.S...)
	}
	c.offsets = append(c.offsets, int32(len(c.data)))
}

func (c *stringColumn) array(n int) arrow.Array {
	if len(c.offsets) == 0 {
		c.offsets = append(c.offsets, 0)
	}
	offs := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.offsets))), (n+1)*4)
	d := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{c.valid.buffer(n), memory.NewBufferBytes(offs), memory.NewBufferBytes(c.data)}, nil, c.valid.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *stringColumn) reset() {
	c.offsets, c.data = c.offsets[:0], c.data[:0]
	c.valid.reset()
}

// dictColumn is a low-cardinality string: indices into the distinct values
// of the row group, in order of appearance.
type dictColumn struct {
	idx    []int32
	values []string
	index  map[string]int32
	// seen caches strings by where their bytes are: the names rows carry
	// are mostly the same few strings (rmgr and record type names, a
	// segment's name), found without hashing them. An entry holds its
	// string, so its bytes stay what they were.
	seen  [64]dictSeen
	valid validity
}

type dictSeen struct {
	s  string
	ix int32
}

func (c *dictColumn) add(v *Value) {
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.idx), !v.Null)
	}
	if v.Null {
		c.idx = append(c.idx, 0)
		return
	}
	p := unsafe.StringData(v.S)
	e := &c.seen[(uintptr(unsafe.Pointer(p))>>3^uintptr(len(v.S)))%uintptr(len(c.seen))]
	if unsafe.StringData(e.s) == p && len(e.s) == len(v.S) && p != nil {
		c.idx = append(c.idx, e.ix)
		return
	}
	ix, ok := c.index[v.S]
	if !ok {
		ix = int32(len(c.values))
		c.values = append(c.values, v.S)
		c.index[v.S] = ix
	}
	*e = dictSeen{v.S, ix}
	c.idx = append(c.idx, ix)
}

func (c *dictColumn) array(n int) arrow.Array {
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.idx))), n*4)
	id := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{c.valid.buffer(n), memory.NewBufferBytes(raw)}, nil, c.valid.nulls, 0)
	defer id.Release()
	ix := array.MakeFromData(id)
	defer ix.Release()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	sb.AppendValues(c.values, nil)
	dict := sb.NewArray()
	defer dict.Release()
	return array.NewDictionaryArray(dictType, ix, dict)
}

func (c *dictColumn) reset() {
	c.idx, c.values = c.idx[:0], c.values[:0]
	clear(c.index)
	c.seen = [len(c.seen)]dictSeen{}
	c.valid.reset()
}
