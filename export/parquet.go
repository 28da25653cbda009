package export

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// The Parquet writer writes the file format itself (parquet-format's
// README and parquet.thrift): for each row group, one column chunk per
// column, each a dictionary page (for Column.Dict) and one data page (v1),
// zstd-compressed; then the footer, a Thrift FileMetaData. It keeps a whole
// row group in its own column buffers, reused from one row group and file
// to the next.
//
// Why not arrow-go: its parquet/file package links arrow/compute (through
// parquet/internal/encoding), and pqarrow links Arrow Flight and gRPC; a
// program writing one column with it is 32.7 MB (22.7 MB stripped) and
// initialises for about 1 ms, where walscope must start as fast as
// pg_waldump (scripts/bench-start.sh). The subset written here is what
// every engine reads: plain signed INT32/INT64, BOOLEAN, UTF8 byte arrays,
// TIMESTAMP(MICROS, UTC); PLAIN, RLE_DICTIONARY, DELTA_BINARY_PACKED and
// DELTA_BYTE_ARRAY encodings; RLE definition levels; statistics with the type-defined
// column order. The tests read it back with arrow-go, DuckDB, polars and
// arrow-rs (internal/duckdbtest, internal/readertest).

// Parquet enums (parquet.thrift).
const (
	pqBoolean   = 0 // Type
	pqInt32     = 1
	pqInt64     = 2
	pqByteArray = 6

	pqRequired = 0 // FieldRepetitionType
	pqOptional = 1

	pqUTF8            = 0 // ConvertedType
	pqTimestampMicros = 10

	encPlain              = 0 // Encoding
	encRLE                = 3
	encDeltaBinaryPacked  = 5
	encDeltaByteArray     = 7
	encRLEDictionary      = 8
	codecZstd             = 6 // CompressionCodec
	pageData              = 0 // PageType
	pageDictionary        = 2
	deltaBlock            = 128 // DELTA_BINARY_PACKED: values per block
	deltaMiniblocks       = 4   // miniblocks per block
	deltaMiniblockValues  = deltaBlock / deltaMiniblocks
	maxBitPackedRunGroups = 63 // groups of 8 per bit-packed run: a one-byte header
)

var parquetMagic = []byte("PAR1")

// zstdEncoder compresses pages (level 1: SpeedFastest, as the arrow-go
// writer did), made on first use so that commands that write no Parquet
// do not pay for it.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return e
})

type parquetWriter struct {
	fileBase
	bw     *bufio.Writer
	off    int64 // bytes written
	fcols  []FileColumn
	cols   []column
	key    string // of the column buffers' shape (columnsKey)
	group  int    // rows per row group
	n      int    // rows buffered
	rows   int64
	groups []groupMeta
	keys   []string
	vals   []string
	// the columns by type, for Write to call each type's add directly:
	// an interface call per cell was a tenth of the writer's time
	i64   []colOf[*int64Column]
	i32   []colOf[*int32Column]
	dicts []colOf[*dictColumn]
	other []colOf[column] // bool and free text (text twins add nothing)
	*scratch
}

// colOf is a column and the position of its Value in a Row.
type colOf[C any] struct {
	c  C
	of int
}

// scratch is a writer's buffers for its pages, reused for every page and
// (scratchPool) from file to file.
type scratch struct {
	body, comp []byte
	th         thriftWriter
	levels     []int32
	vals64     []int64
	dict       intDict
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// groupMeta and chunkMeta are what the footer says of a row group and its
// column chunks (RowGroup, ColumnChunk and ColumnMetaData).
type groupMeta struct {
	chunks      []chunkMeta
	rows        int64
	off         int64
	uncomp, cmp int64
}

type chunkMeta struct {
	dataOff, dictOff int64 // dictOff < 0: no dictionary page
	values           int64
	uncomp, cmp      int64
	enc              int32 // of the data page
	stats            chunkStats
}

type chunkStats struct {
	nulls    int64
	min, max []byte // plain-encoded; nil: none
	// legacy also writes the deprecated min/max fields (numeric columns,
	// whose old signed order is the type's)
	legacy bool
}

func newParquetWriter(b fileBase, s *Schema, o Options) (*parquetWriter, error) {
	rg := o.RowGroupRows
	if rg <= 0 {
		rg = DefaultRowGroupRows
	}
	if _, err := b.f.Write(parquetMagic); err != nil {
		b.abort()
		return nil, err
	}
	w := &parquetWriter{fileBase: b, bw: bufio.NewWriterSize(b.f, 1<<20), off: 4, fcols: s.FileColumns(), group: rg, key: columnsKey(s),
		scratch: scratchPool.Get().(*scratch)}
	w.keys, w.vals = metadata(s, o)
	if w.cols = getColumns(w.key); w.cols == nil {
		for _, c := range w.fcols {
			col := newColumn(c, rg)
			if t, ok := col.(*lsnTextColumn); ok {
				t.lsn = w.cols[len(w.cols)-1].(*int64Column)
			}
			w.cols = append(w.cols, col)
		}
	}
	for i, col := range w.cols {
		of := w.fcols[i].Of
		switch c := col.(type) {
		case *int64Column:
			w.i64 = append(w.i64, colOf[*int64Column]{c, of})
		case *int32Column:
			w.i32 = append(w.i32, colOf[*int32Column]{c, of})
		case *dictColumn:
			w.dicts = append(w.dicts, colOf[*dictColumn]{c, of})
		case *lsnTextColumn:
		default:
			w.other = append(w.other, colOf[column]{c, of})
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
	for _, c := range s.FileColumns() {
		k := byte(c.Kind)
		if c.Dict {
			k |= 0x80
		}
		if c.LSNText {
			k |= 0x40
		}
		if c.Delta {
			k |= 0x20
		}
		if wideDecimal(c) {
			k |= 0x10 // FIXED_LEN_BYTE_ARRAY, not INT64
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
	if w.scratch != nil {
		scratchPool.Put(w.scratch)
		w.scratch = nil
	}
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

// AddMetadata adds a key-value pair to the file's footer (MetadataAdder).
func (w *parquetWriter) AddMetadata(key, value string) {
	w.keys, w.vals = append(w.keys, key), append(w.vals, value)
}

func (w *parquetWriter) Write(r Row) error {
	// The common case of an integer cell, a value in a column without
	// nulls whose buffer has room, is stored here (add, not inlined, for
	// the rest): a call per cell was a tenth of the export's time.
	for _, a := range w.i64 {
		c, v := a.c, &r[a.of]
		if n := len(c.vals); !v.Null && c.valid.nulls == 0 && n < cap(c.vals) {
			c.vals = c.vals[:n+1]
			c.vals[n] = int64(v.U)
			continue
		}
		c.add(v)
	}
	for _, a := range w.i32 {
		c, v := a.c, &r[a.of]
		if n := len(c.vals); !v.Null && c.valid.nulls == 0 && n < cap(c.vals) {
			c.vals = c.vals[:n+1]
			c.vals[n] = int32(v.U)
			continue
		}
		c.add(v)
	}
	for _, a := range w.dicts {
		a.c.add(&r[a.of])
	}
	for _, a := range w.other {
		a.c.add(&r[a.of])
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
	g := groupMeta{rows: int64(w.n), off: w.off, chunks: make([]chunkMeta, len(w.cols))}
	for i, c := range w.cols {
		m := &g.chunks[i]
		m.dictOff = -1
		m.values = int64(w.n)
		if err := c.write(w, m, w.fcols[i].Nullable, w.n); err != nil {
			return err
		}
		if f := w.fcols[i]; f.Kind == String && (!f.Dict || !f.Stats) || f.Kind == Bool || typedOnly(f.Kind) && !typedStats(f) {
			// min/max of free text (descriptions) prune nothing, nor do
			// those of names every row group holds (rmgr, record_type)
			m.stats.min, m.stats.max = nil, nil
		}
		g.uncomp += m.uncomp
		g.cmp += m.cmp
	}
	for _, c := range w.cols {
		c.reset() // after all: a text twin reads the column before it
	}
	w.groups = append(w.groups, g)
	w.n = 0
	return nil
}

// page writes one page: header, then body compressed.
func (w *parquetWriter) page(m *chunkMeta, typ int32, body []byte, values int, enc int32) error {
	if len(body) > math.MaxInt32 {
		// page sizes are int32 (PageHeader)
		return fmt.Errorf("%s: a column of a row group holds %d bytes, more than a Parquet page can: use a smaller --row-group", w.path, len(body))
	}
	w.comp = zstdEncoder().EncodeAll(body, w.comp[:0])
	t := &w.th
	t.reset()
	t.i32(1, typ)
	t.i32(2, int32(len(body)))
	t.i32(3, int32(len(w.comp)))
	if typ == pageData {
		t.begin(5) // DataPageHeader
		t.i32(1, int32(values))
		t.i32(2, enc)
		t.i32(3, encRLE)
		t.i32(4, encRLE)
		t.end()
	} else {
		t.begin(7) // DictionaryPageHeader
		t.i32(1, int32(values))
		t.i32(2, encPlain)
		t.end()
	}
	t.end()
	if typ == pageData {
		m.dataOff = w.off
	} else {
		m.dictOff = w.off
	}
	if _, err := w.bw.Write(t.b); err != nil {
		return err
	}
	if _, err := w.bw.Write(w.comp); err != nil {
		return err
	}
	n := int64(len(t.b))
	m.uncomp += n + int64(len(body))
	m.cmp += n + int64(len(w.comp))
	w.off += n + int64(len(w.comp))
	return nil
}

// startBody begins a data page's body: the definition levels of a nullable
// column (RLE/bit-packed hybrid of width 1, after their 4-byte length).
func (w *parquetWriter) startBody(nullable bool, v *validity, n int) []byte {
	b := w.body[:0]
	if !nullable {
		return b
	}
	b = append(b, 0, 0, 0, 0)
	if v.nulls == 0 {
		b = binary.AppendUvarint(b, uint64(n)<<1)
		b = append(b, 1)
	} else {
		// The validity bitmap is the bit-packed levels (LSB first).
		groups := (n + 7) / 8
		for g := 0; g < groups; g += maxBitPackedRunGroups {
			k := min(maxBitPackedRunGroups, groups-g)
			b = binary.AppendUvarint(b, uint64(k)<<1|1)
			b = append(b, v.bits[g:g+k]...)
		}
		if n%8 != 0 {
			b[len(b)-1] &= byte(1)<<(n%8) - 1
		}
	}
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

func (w *parquetWriter) Close() error {
	err := w.flush()
	if err == nil {
		err = w.footer()
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

// footer writes the FileMetaData, its length and the magic.
func (w *parquetWriter) footer() error {
	t := &w.th
	t.reset()
	t.i32(1, 2) // version
	t.list(2, thriftStruct, 1+len(w.fcols))
	t.elem() // the root
	t.str(4, "schema")
	t.i32(5, int32(len(w.fcols)))
	t.end()
	for _, c := range w.fcols {
		t.elem()
		t.i32(1, physicalType(c))
		if n := fixedSize(c); n > 0 {
			t.i32(2, int32(n))
		}
		rep := int32(pqRequired)
		if c.Nullable {
			rep = pqOptional
		}
		t.i32(3, rep)
		t.str(4, c.Name)
		switch c.Kind {
		case String:
			t.i32(6, pqUTF8)
			t.begin(10) // LogicalType
			t.begin(1)  // STRING
			t.end()
			t.end()
		case Time:
			t.i32(6, pqTimestampMicros)
			t.begin(10) // LogicalType
			t.begin(8)  // TIMESTAMP
			t.boolean(1, true)
			t.begin(2) // unit
			t.begin(2) // MICROS
			t.end()
			t.end()
			t.end()
			t.end()
		default:
			typedSchemaElement(t, c)
		}
		t.end()
	}
	t.i64(3, w.rows)
	t.list(4, thriftStruct, len(w.groups))
	for _, g := range w.groups {
		t.elem()
		t.list(1, thriftStruct, len(g.chunks))
		for i, m := range g.chunks {
			c := w.fcols[i]
			first := m.dataOff
			if m.dictOff >= 0 {
				first = m.dictOff
			}
			t.elem()
			t.i64(2, first)
			t.begin(3) // ColumnMetaData
			t.i32(1, physicalType(c))
			if m.dictOff >= 0 {
				t.listI32(2, []int32{encPlain, encRLE, encRLEDictionary})
			} else {
				t.listI32(2, []int32{m.enc, encRLE})
			}
			t.listStr(3, c.Name)
			t.i32(4, codecZstd)
			t.i64(5, m.values)
			t.i64(6, m.uncomp)
			t.i64(7, m.cmp)
			t.i64(9, m.dataOff)
			if m.dictOff >= 0 {
				t.i64(11, m.dictOff)
			}
			t.begin(12) // Statistics
			if m.stats.min != nil && m.stats.legacy {
				t.binary(1, m.stats.max)
				t.binary(2, m.stats.min)
			}
			t.i64(3, m.stats.nulls)
			if m.stats.min != nil {
				t.binary(5, m.stats.max)
				t.binary(6, m.stats.min)
			}
			t.end()
			t.end() // ColumnMetaData
			t.end() // ColumnChunk
		}
		t.i64(2, g.uncomp)
		t.i64(3, g.rows)
		t.i64(5, g.off)
		t.i64(6, g.cmp)
		t.end()
	}
	t.list(5, thriftStruct, len(w.keys))
	for i := range w.keys {
		t.elem()
		t.str(1, w.keys[i])
		t.str(2, w.vals[i])
		t.end()
	}
	t.str(6, "walscope")
	t.list(7, thriftStruct, len(w.fcols)) // column_orders
	for range w.fcols {
		t.elem()
		t.begin(1) // TYPE_ORDER
		t.end()
		t.end()
	}
	t.end()
	t.b = binary.LittleEndian.AppendUint32(t.b, uint32(len(t.b)))
	t.b = append(t.b, parquetMagic...)
	_, err := w.bw.Write(t.b)
	return err
}

func physicalType(c FileColumn) int32 {
	if typedOnly(c.Kind) {
		return typedPhysical(c)
	}
	switch c.Kind {
	case Int32:
		return pqInt32
	case Bool:
		return pqBoolean
	case String:
		return pqByteArray
	}
	return pqInt64 // Int64, Time
}

// column buffers one column of a row group.
type column interface {
	add(*Value)
	// write writes the column chunk of the first n values.
	write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error
	reset()
}

func newColumn(c FileColumn, group int) column {
	if typedOnly(c.Kind) {
		return newTypedColumn(c, group)
	}
	switch c.Kind {
	case Int64, Time:
		if c.LSNText {
			break
		}
		return &int64Column{group: group, delta: c.Delta, dict: c.Dict}
	case Int32:
		return &int32Column{group: group, dict: c.Dict}
	case Bool:
		return &boolColumn{group: group}
	}
	if c.LSNText {
		return &lsnTextColumn{}
	}
	if c.Dict {
		return &dictColumn{index: map[string]int32{}, group: group}
	}
	return &stringColumn{group: group}
}

// push appends v to a column's buffer. Past its first thousand values a
// buffer grows to a whole row group at once (at most the default's: a
// longer --row-group grew every column of every span's file to it, 457 MB
// for 22,360 records with 2^31 rows), then doubles: doubling from the start
// copied and cleared the buffers of each new file (a span's) many times
// over, a fifth of the export's time; small tables keep small buffers.
func push[T any](s []T, v T, group int) []T {
	if len(s) == cap(s) {
		n := max(16, 2*cap(s))
		if n >= 1024 {
			n = max(n, min(group, DefaultRowGroupRows))
		}
		ns := make([]T, len(s), n)
		copy(ns, s)
		s = ns
	}
	return append(s, v)
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

// valid reports whether row i is not null.
func (v *validity) valid(i int) bool {
	return v.nulls == 0 || v.bits[i/8]&(1<<(i%8)) != 0
}

func (v *validity) reset() {
	if v.nulls > 0 {
		for j := range v.bits {
			v.bits[j] = 0xFF
		}
	}
	v.nulls = 0
}

// int64Column is INT64 (Int64, Time, an LSN): DELTA_BINARY_PACKED for
// values that rise by small steps (FileColumn.Delta), else PLAIN.
type int64Column struct {
	vals  []int64
	valid validity
	group int
	delta bool
	dict  bool // try RLE_DICTIONARY first (FileColumn.Dict)
}

func (c *int64Column) add(v *Value) {
	u := int64(v.U)
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.vals), !v.Null)
		if v.Null {
			u = 0
		}
	}
	c.vals = push(c.vals, u, c.group)
}

func (c *int64Column) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	vals := c.vals[:n]
	if c.valid.nulls > 0 {
		// only the values of valid rows are stored (into scratch: a text
		// twin reads the column after it)
		w.vals64 = w.vals64[:0]
		for i, x := range vals {
			if c.valid.valid(i) {
				w.vals64 = append(w.vals64, x)
			}
		}
		vals = w.vals64
	}
	stats := chunkStats{nulls: int64(c.valid.nulls), legacy: true}
	if len(vals) > 0 {
		lo, hi := vals[0], vals[0]
		for _, x := range vals[1:] {
			lo, hi = min(lo, x), max(hi, x)
		}
		stats.min = binary.LittleEndian.AppendUint64(nil, uint64(lo))
		stats.max = binary.LittleEndian.AppendUint64(nil, uint64(hi))
	}
	if c.dict && w.dict.build(vals, dictLimit(len(vals))) {
		m.stats = stats
		return w.dictPages(m, nullable, &c.valid, n, 8)
	}
	b := w.startBody(nullable, &c.valid, n)
	m.enc = encPlain
	if c.delta {
		b = appendDelta(b, vals)
		m.enc = encDeltaBinaryPacked
	} else {
		b = appendPlain64(b, vals)
	}
	w.body = b
	m.stats = stats
	return w.page(m, pageData, b, n, m.enc)
}

// dictLimit is the most distinct values an integer column chunk of n
// values is dictionary-encoded with: beyond it, the dictionary and its
// indices are hardly smaller than the values PLAIN (xids, block numbers).
func dictLimit(n int) int { return min(n/8, 1<<15) }

// intDict is the dictionary of an integer column chunk: its distinct
// values in order of appearance, each value's index into them, and an
// open-addressing hash table (Go maps cost twice as much per value here).
type intDict struct {
	keys   []int64 // by slot
	slots  []int32 // index into values + 1; 0: empty
	values []int64
	idx    []int32
}

// build makes the dictionary of vals; false if they hold more than limit
// distinct values.
func (d *intDict) build(vals []int64, limit int) bool {
	d.values, d.idx = d.values[:0], d.idx[:0]
	if limit < 1 {
		return false
	}
	d.resize(256)
	mask := uint64(len(d.slots) - 1)
	shift := 64 - uint(bits.Len64(mask))
	last, lastIx := int64(0), int32(-1)
	for _, x := range vals {
		if x == last && lastIx >= 0 {
			d.idx = append(d.idx, lastIx)
			continue
		}
		h := (uint64(x) * 0x9E3779B97F4A7C15) >> shift
		for {
			s := d.slots[h]
			if s == 0 {
				if len(d.values) >= limit {
					return false
				}
				d.values = append(d.values, x)
				s = int32(len(d.values))
				d.slots[h], d.keys[h] = s, x
				if 2*len(d.values) > len(d.slots) {
					d.resize(2 * len(d.slots))
					mask = uint64(len(d.slots) - 1)
					shift = 64 - uint(bits.Len64(mask))
				}
			} else if d.keys[h] != x {
				h = (h + 1) & mask
				continue
			}
			last, lastIx = x, s-1
			d.idx = append(d.idx, lastIx)
			break
		}
	}
	return true
}

// resize empties the hash table to n slots (a power of two) and puts the
// dictionary's values back in.
func (d *intDict) resize(n int) {
	if cap(d.slots) < n {
		d.slots, d.keys = make([]int32, n), make([]int64, n)
	}
	d.slots, d.keys = d.slots[:n], d.keys[:n]
	clear(d.slots)
	mask := uint64(n - 1)
	shift := 64 - uint(bits.Len64(mask))
	for i, x := range d.values {
		h := (uint64(x) * 0x9E3779B97F4A7C15) >> shift
		for d.slots[h] != 0 {
			h = (h + 1) & mask
		}
		d.slots[h], d.keys[h] = int32(i+1), x
	}
}

// dictPages writes the dictionary page of w.dict (its values PLAIN, size
// bytes each) and the data page of its indices (levels, bit width,
// RLE/bit-packed hybrid).
func (w *parquetWriter) dictPages(m *chunkMeta, nullable bool, v *validity, n int, size int) error {
	d := &w.dict
	b := w.body[:0]
	if size == 8 {
		b = appendPlain64(b, d.values)
	} else {
		for _, x := range d.values {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	}
	w.body = b
	if err := w.page(m, pageDictionary, b, len(d.values), encPlain); err != nil {
		return err
	}
	b = w.startBody(nullable, v, n)
	width := max(1, bits.Len(uint(len(d.values))-1))
	b = append(b, byte(width))
	b = appendHybrid(b, d.idx, width)
	w.body = b
	m.enc = encRLEDictionary
	return w.page(m, pageData, b, n, encRLEDictionary)
}

// appendPlain64 appends vals PLAIN: little-endian, 8 bytes each.
func appendPlain64(b []byte, vals []int64) []byte {
	at := len(b)
	b = slices.Grow(b, 8*len(vals))[:at+8*len(vals)]
	for i, x := range vals {
		binary.LittleEndian.PutUint64(b[at+8*i:], uint64(x))
	}
	return b
}

func (c *int64Column) reset() {
	c.vals = c.vals[:0]
	c.valid.reset()
}

// int32Column is INT32, PLAIN.
type int32Column struct {
	vals  []int32
	valid validity
	group int
	dict  bool // try RLE_DICTIONARY first (FileColumn.Dict)
}

func (c *int32Column) add(v *Value) {
	u := int32(v.U)
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.vals), !v.Null)
		if v.Null {
			u = 0
		}
	}
	c.vals = push(c.vals, u, c.group)
}

func (c *int32Column) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	if c.dict {
		w.vals64 = w.vals64[:0]
		for i, x := range c.vals[:n] {
			if c.valid.valid(i) {
				w.vals64 = append(w.vals64, int64(x))
			}
		}
		if w.dict.build(w.vals64, dictLimit(len(w.vals64))) {
			m.stats = chunkStats{nulls: int64(c.valid.nulls), legacy: true}
			if len(w.vals64) > 0 {
				lo, hi := slices.Min(w.vals64), slices.Max(w.vals64)
				m.stats.min = binary.LittleEndian.AppendUint32(nil, uint32(lo))
				m.stats.max = binary.LittleEndian.AppendUint32(nil, uint32(hi))
			}
			return w.dictPages(m, nullable, &c.valid, n, 4)
		}
	}
	b := w.startBody(nullable, &c.valid, n)
	lo, hi, any := int32(math.MaxInt32), int32(math.MinInt32), false
	for i, x := range c.vals[:n] {
		if !c.valid.valid(i) {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
		lo, hi, any = min(lo, x), max(hi, x), true
	}
	w.body = b
	m.enc = encPlain
	m.stats = chunkStats{nulls: int64(c.valid.nulls), legacy: true}
	if any {
		m.stats.min = binary.LittleEndian.AppendUint32(nil, uint32(lo))
		m.stats.max = binary.LittleEndian.AppendUint32(nil, uint32(hi))
	}
	return w.page(m, pageData, b, n, encPlain)
}

func (c *int32Column) reset() {
	c.vals = c.vals[:0]
	c.valid.reset()
}

// boolColumn is BOOLEAN, PLAIN (bit-packed, LSB first).
type boolColumn struct {
	vals  []bool
	valid validity
	group int
}

func (c *boolColumn) add(v *Value) {
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.vals), !v.Null)
	}
	c.vals = push(c.vals, !v.Null && v.U != 0, c.group)
}

func (c *boolColumn) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	b := w.startBody(nullable, &c.valid, n)
	var cur byte
	k := 0
	for i, x := range c.vals[:n] {
		if !c.valid.valid(i) {
			continue
		}
		if x {
			cur |= 1 << (k % 8)
		}
		k++
		if k%8 == 0 {
			b = append(b, cur)
			cur = 0
		}
	}
	if k%8 != 0 {
		b = append(b, cur)
	}
	w.body = b
	m.enc = encPlain
	m.stats = chunkStats{nulls: int64(c.valid.nulls)}
	return w.page(m, pageData, b, n, encPlain)
}

func (c *boolColumn) reset() {
	c.vals = c.vals[:0]
	c.valid.reset()
}

// stringColumn is free text: UTF8 BYTE_ARRAY, PLAIN.
type stringColumn struct {
	offsets []int32 // end of each value in data
	data    []byte
	valid   validity
	group   int
}

func (c *stringColumn) add(v *Value) {
	if v.Null || c.valid.nulls > 0 {
		c.valid.set(len(c.offsets), !v.Null)
	}
	if !v.Null {
		c.data = append(c.data, v.S...)
	}
	c.offsets = push(c.offsets, int32(len(c.data)), c.group)
}

func (c *stringColumn) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	b := w.startBody(nullable, &c.valid, n)
	start := int32(0)
	for i, end := range c.offsets[:n] {
		if c.valid.valid(i) {
			b = binary.LittleEndian.AppendUint32(b, uint32(end-start))
			b = append(b, c.data[start:end]...)
		}
		start = end
	}
	w.body = b
	m.enc = encPlain
	m.stats = chunkStats{nulls: int64(c.valid.nulls)}
	return w.page(m, pageData, b, n, encPlain)
}

func (c *stringColumn) reset() {
	c.offsets, c.data = c.offsets[:0], c.data[:0]
	c.valid.reset()
}

// lsnTextColumn is the X/Y text twin of an LSN column: it keeps the
// numbers and formats them into the page, DELTA_BYTE_ARRAY (each value as
// the length of the prefix it shares with the one before, then the rest):
// neighbouring LSNs share most of their digits, so only the last few of
// each are left for zstd (the text plain, zstd took a third of the
// writer's time).
type lsnTextColumn struct {
	lsn            *int64Column // the LSN column it is the twin of, just before it
	prefix, suffix []int64
	rest           []byte
}

func (c *lsnTextColumn) add(*Value) {} // the LSN column has the value
func (c *lsnTextColumn) reset()     {}

func (c *lsnTextColumn) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	src := c.lsn
	b := w.startBody(nullable, &src.valid, n)
	if cap(c.prefix) < n {
		c.prefix, c.suffix, c.rest = make([]int64, 0, n), make([]int64, 0, n), make([]byte, 0, 4*n)
	}
	c.prefix, c.suffix, c.rest = c.prefix[:0], c.suffix[:0], c.rest[:0]
	var prev, cur [32]byte
	var pl int
	have := false
	var last uint64
	for i, x := range src.vals[:n] {
		if !src.valid.valid(i) {
			continue
		}
		u := uint64(x)
		if have && u>>32 == last>>32 && hexDigits(uint32(u)) == hexDigits(uint32(last)) {
			// The same high half and as many digits in the low one: the
			// text differs from the nibble where the numbers do on.
			diff := uint32(u ^ last)
			k := pl // equal
			if diff != 0 {
				k = pl - 1 - (bits.Len32(diff)-1)/4
			}
			c.prefix = append(c.prefix, int64(k))
			c.suffix = append(c.suffix, int64(pl-k))
			at := len(c.rest)
			c.rest = appendHexDigits(c.rest, uint32(u), pl-k)
			copy(prev[k:pl], c.rest[at:])
			last = u
			continue
		}
		t := AppendLSN(cur[:0], u)
		k := 0
		for k < len(t) && k < pl && t[k] == prev[k] {
			k++
		}
		c.prefix = append(c.prefix, int64(k))
		c.suffix = append(c.suffix, int64(len(t)-k))
		c.rest = append(c.rest, t[k:]...)
		pl = copy(prev[:], t)
		have, last = true, u
	}
	b = appendDelta(b, c.prefix)
	b = appendDelta(b, c.suffix)
	b = append(b, c.rest...)
	w.body = b
	m.enc = encDeltaByteArray
	m.stats = chunkStats{nulls: int64(src.valid.nulls)}
	return w.page(m, pageData, b, n, encDeltaByteArray)
}

// hexDigits is the length of v in hex, without leading zeros.
func hexDigits(v uint32) int { return max(1, (bits.Len32(v)+3)/4) }

// appendHexDigits appends the last n hex digits of v.
func appendHexDigits(b []byte, v uint32, n int) []byte {
	const digits = "0123456789ABCDEF"
	for i := n - 1; i >= 0; i-- {
		b = append(b, digits[v>>(4*i)&0xF])
	}
	return b
}

// dictColumn is a low-cardinality string: indices into the distinct values
// of the row group, in order of appearance, written as the dictionary page
// and RLE_DICTIONARY indices.
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
	group int
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
		c.idx = push(c.idx, -1, c.group)
		return
	}
	p := unsafeStringData(v.S)
	e := &c.seen[(p>>3^uintptr(len(v.S)))%uintptr(len(c.seen))]
	if unsafeStringData(e.s) == p && len(e.s) == len(v.S) && p != 0 {
		c.idx = push(c.idx, e.ix, c.group)
		return
	}
	ix, ok := c.index[v.S]
	if !ok {
		ix = int32(len(c.values))
		c.values = append(c.values, v.S)
		c.index[v.S] = ix
	}
	*e = dictSeen{v.S, ix}
	c.idx = push(c.idx, ix, c.group)
}

func (c *dictColumn) write(w *parquetWriter, m *chunkMeta, nullable bool, n int) error {
	// The dictionary page: the values, PLAIN.
	b := w.body[:0]
	var lo, hi string
	for i, s := range c.values {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
		if i == 0 || s < lo {
			lo = s
		}
		if i == 0 || s > hi {
			hi = s
		}
	}
	w.body = b
	if err := w.page(m, pageDictionary, b, len(c.values), encPlain); err != nil {
		return err
	}
	// The data page: levels, the indices' bit width, the indices.
	b = w.startBody(nullable, &c.valid, n)
	width := max(1, bits.Len(uint(len(c.values))-1))
	if len(c.values) == 0 {
		width = 1
	}
	b = append(b, byte(width))
	idx := c.idx[:n]
	if c.valid.nulls > 0 {
		w.levels = w.levels[:0]
		for _, x := range idx {
			if x >= 0 {
				w.levels = append(w.levels, x)
			}
		}
		idx = w.levels
	}
	b = appendHybrid(b, idx, width)
	w.body = b
	m.enc = encRLEDictionary
	m.stats = chunkStats{nulls: int64(c.valid.nulls)}
	if len(c.values) > 0 {
		m.stats.min, m.stats.max = []byte(lo), []byte(hi)
	}
	return w.page(m, pageData, b, n, encRLEDictionary)
}

func (c *dictColumn) reset() {
	c.idx, c.values = c.idx[:0], c.values[:0]
	clear(c.index)
	c.seen = [len(c.seen)]dictSeen{}
	c.valid.reset()
}

// appendHybrid appends vals (each below 1<<width) in the RLE/bit-packed
// hybrid encoding: runs of 8 or more equal values as RLE runs, the rest
// bit-packed in groups of 8 (the last group padded with zeros).
func appendHybrid(b []byte, vals []int32, width int) []byte {
	vb := (width + 7) / 8
	var group [8]uint64
	i, n := 0, len(vals)
	for i < n {
		j := i + 1
		for j < n && vals[j] == vals[i] {
			j++
		}
		if j-i >= 8 {
			b = binary.AppendUvarint(b, uint64(j-i)<<1)
			for k := range vb {
				b = append(b, byte(uint32(vals[i])>>(8*k)))
			}
			i = j
			continue
		}
		// Bit-pack groups of 8 until a run of 8 starts at a group's end.
		start, groups := i, 0
		for i < n && groups < maxBitPackedRunGroups {
			i += 8
			groups++
			if i < n {
				k := i + 1
				for k < n && k < i+8 && vals[k] == vals[i] {
					k++
				}
				if k-i >= 8 {
					break
				}
			}
		}
		b = binary.AppendUvarint(b, uint64(groups)<<1|1)
		for g := range groups {
			for k := range 8 {
				at := start + 8*g + k
				group[k] = 0
				if at < n {
					group[k] = uint64(uint32(vals[at]))
				}
			}
			b = appendPacked(b, group[:], uint(width))
		}
		i = min(i, n)
	}
	return b
}

// appendPacked appends vals, width bits each, LSB first (the bit packing
// of both the hybrid encoding and DELTA_BINARY_PACKED); len(vals)*width is
// a multiple of 8.
func appendPacked(b []byte, vals []uint64, width uint) []byte {
	if width == 0 {
		return b
	}
	var acc uint64
	var nb uint
	for _, v := range vals {
		acc |= v << nb
		if nb+width >= 64 {
			b = binary.LittleEndian.AppendUint64(b, acc)
			acc = v >> (64 - nb) // 0 when nb is 0
			nb = nb + width - 64
		} else {
			nb += width
		}
	}
	for ; nb > 0; nb -= 8 {
		b = append(b, byte(acc))
		acc >>= 8
	}
	return b
}

// appendDelta appends vals in the DELTA_BINARY_PACKED encoding: blocks of
// 128 deltas in 4 miniblocks of 32, each packed at its own bit width above
// the block's smallest delta.
func appendDelta(b []byte, vals []int64) []byte {
	b = binary.AppendUvarint(b, deltaBlock)
	b = binary.AppendUvarint(b, deltaMiniblocks)
	b = binary.AppendUvarint(b, uint64(len(vals)))
	if len(vals) == 0 {
		return binary.AppendVarint(b, 0)
	}
	b = binary.AppendVarint(b, vals[0])
	var d [deltaBlock]int64
	var u [deltaMiniblockValues]uint64
	for i := 1; i < len(vals); i += deltaBlock {
		m := min(deltaBlock, len(vals)-i)
		lo := int64(math.MaxInt64)
		for k := range m {
			d[k] = vals[i+k] - vals[i+k-1]
			lo = min(lo, d[k])
		}
		b = binary.AppendVarint(b, lo)
		widths := len(b)
		b = append(b, 0, 0, 0, 0)
		for mb := range deltaMiniblocks {
			first := mb * deltaMiniblockValues
			if first >= m {
				break // width 0, no bytes
			}
			last := min(first+deltaMiniblockValues, m)
			var or uint64
			for k := first; k < last; k++ {
				u[k-first] = uint64(d[k] - lo)
				or |= u[k-first]
			}
			clear(u[last-first:])
			width := bits.Len64(or)
			b[widths+mb] = byte(width)
			b = appendPacked(b, u[:], uint(width))
		}
	}
	return b
}

// unsafeStringData is where a string's bytes are, as a number.
func unsafeStringData(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
