package export

import (
	"bufio"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// batchRows is the number of rows built into Arrow arrays before they are
// handed to the Parquet writer, which buffers (encoded and compressed) up to
// a row group: memory is a batch of Arrow arrays plus one encoded row group.
const batchRows = 16 << 10

// ArrowSchema returns the Arrow schema of s, with the file metadata.
func ArrowSchema(s *Schema, o Options) *arrow.Schema {
	fields := make([]arrow.Field, len(s.Columns))
	for i, c := range s.Columns {
		var t arrow.DataType
		switch c.Kind {
		case Uint64:
			t = arrow.PrimitiveTypes.Uint64
		case Uint32:
			t = arrow.PrimitiveTypes.Uint32
		case Uint16:
			t = arrow.PrimitiveTypes.Uint16
		case Uint8:
			t = arrow.PrimitiveTypes.Uint8
		case Int32:
			t = arrow.PrimitiveTypes.Int32
		case Bool:
			t = arrow.FixedWidthTypes.Boolean
		case String:
			t = arrow.BinaryTypes.String
		case Time:
			t = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: c.Nullable}
	}
	keys, vals := metadata(s, o)
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

type parquetWriter struct {
	fileBase
	bw      *bufio.Writer
	fw      *pqarrow.FileWriter
	rb      *array.RecordBuilder
	appendc []func(Value)
	pending int
	rows    int64
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
		if c.Kind == String && !c.Dict {
			// min/max of free text (descriptions) prune nothing
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
	w := &parquetWriter{fileBase: b, bw: bw, fw: fw, rb: array.NewRecordBuilder(memory.DefaultAllocator, as)}
	w.rb.Reserve(batchRows)
	for i, c := range s.Columns {
		f := w.rb.Field(i)
		var fn func(Value)
		switch c.Kind {
		case Uint64:
			x := f.(*array.Uint64Builder)
			fn = func(v Value) { x.UnsafeAppend(v.U) }
		case Uint32:
			x := f.(*array.Uint32Builder)
			fn = func(v Value) { x.UnsafeAppend(uint32(v.U)) }
		case Uint16:
			x := f.(*array.Uint16Builder)
			fn = func(v Value) { x.UnsafeAppend(uint16(v.U)) }
		case Uint8:
			x := f.(*array.Uint8Builder)
			fn = func(v Value) { x.UnsafeAppend(uint8(v.U)) }
		case Int32:
			x := f.(*array.Int32Builder)
			fn = func(v Value) { x.UnsafeAppend(int32(v.U)) }
		case Bool:
			x := f.(*array.BooleanBuilder)
			fn = func(v Value) { x.UnsafeAppend(v.U != 0) }
		case String:
			x := f.(*array.StringBuilder)
			fn = func(v Value) { x.Append(v.S) }
		case Time:
			x := f.(*array.TimestampBuilder)
			fn = func(v Value) { x.UnsafeAppend(arrow.Timestamp(int64(v.U))) }
		}
		if c.Nullable {
			inner := fn
			fb := f
			fn = func(v Value) {
				if v.Null {
					fb.AppendNull()
					return
				}
				inner(v)
			}
			if c.Kind != String {
				// UnsafeAppend needs the validity bitmap reserved: use the
				// checked appends for nullable columns.
				fn = nullableAppend(f, c.Kind)
			}
		}
		w.appendc = append(w.appendc, fn)
	}
	return w, nil
}

func nullableAppend(f array.Builder, k Kind) func(Value) {
	var app func(Value)
	switch k {
	case Uint64:
		x := f.(*array.Uint64Builder)
		app = func(v Value) { x.Append(v.U) }
	case Uint32:
		x := f.(*array.Uint32Builder)
		app = func(v Value) { x.Append(uint32(v.U)) }
	case Uint16:
		x := f.(*array.Uint16Builder)
		app = func(v Value) { x.Append(uint16(v.U)) }
	case Uint8:
		x := f.(*array.Uint8Builder)
		app = func(v Value) { x.Append(uint8(v.U)) }
	case Int32:
		x := f.(*array.Int32Builder)
		app = func(v Value) { x.Append(int32(v.U)) }
	case Bool:
		x := f.(*array.BooleanBuilder)
		app = func(v Value) { x.Append(v.U != 0) }
	case Time:
		x := f.(*array.TimestampBuilder)
		app = func(v Value) { x.Append(arrow.Timestamp(int64(v.U))) }
	}
	return func(v Value) {
		if v.Null {
			f.AppendNull()
			return
		}
		app(v)
	}
}

func (w *parquetWriter) Rows() int64 { return w.rows }

func (w *parquetWriter) Write(r Row) error {
	for i, fn := range w.appendc {
		fn(r[i])
	}
	w.rows++
	w.pending++
	if w.pending >= batchRows {
		return w.flush()
	}
	return nil
}

func (w *parquetWriter) flush() error {
	if w.pending == 0 {
		return nil
	}
	rec := w.rb.NewRecordBatch()
	err := w.fw.WriteBuffered(rec)
	rec.Release()
	w.pending = 0
	w.rb.Reserve(batchRows)
	return err
}

func (w *parquetWriter) Close() error {
	err := w.flush()
	if err == nil {
		err = w.fw.Close() // closes the row group, writes the footer
	}
	w.rb.Release()
	if err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		w.abort()
		return err
	}
	return w.commit()
}

func (w *parquetWriter) Abort() {
	w.rb.Release()
	w.abort()
}
