package export

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// thriftReader walks the compact protocol of a footer without decoding it
// into values: merging copies the footers' bytes, rewriting only the
// varints of the offsets it moves (copyStruct). A tree of decoded values
// cost 40 ms a night on scripts/bench-append.sh's day 30 (footers of 30 to
// 60 kB, a 90-byte value each per field), more than the copy itself.
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

// fieldHeader reads a struct's field header: its id (after the previous
// field's, last) and type; stop at the struct's end.
func (r *thriftReader) fieldHeader(last int16) (id int16, typ byte, stop bool) {
	h := r.byte1()
	if h == 0 || r.err != nil {
		return 0, 0, true
	}
	typ, id = h&0x0F, last+int16(h>>4)
	if h>>4 == 0 {
		id = int16(r.varint())
	}
	return id, typ, false
}

// listHeader reads a list's or set's header: its element type and count.
func (r *thriftReader) listHeader() (elem byte, n uint64) {
	h := r.byte1()
	n = uint64(h >> 4)
	if n == 15 {
		n = r.uvarint()
	}
	if n > uint64(len(r.b)) {
		r.fail("list of %d elements", n)
		return 0, 0
	}
	return h & 0x0F, n
}

// skip passes a value of type typ (a struct's boolean field has its value
// in its type: nothing to pass).
func (r *thriftReader) skip(typ byte, depth int) {
	if depth > 32 {
		r.fail("nested too deep")
		return
	}
	switch typ {
	case thriftByte:
		r.byte1()
	case thriftI16, thriftI32, thriftI64:
		r.uvarint()
	case thriftDouble:
		if r.off+8 > len(r.b) {
			r.fail("truncated double")
			return
		}
		r.off += 8
	case thriftBinary:
		n := r.uvarint()
		if n > uint64(len(r.b)-r.off) {
			r.fail("binary of %d bytes", n)
			return
		}
		r.off += int(n)
	case thriftList, thriftSet:
		elem, n := r.listHeader()
		for range n {
			if r.err != nil {
				return
			}
			if elem == thriftTrue || elem == thriftFalse {
				r.byte1() // a list's booleans: a byte each
			} else {
				r.skip(elem, depth+1)
			}
		}
	case thriftStruct:
		var last int16
		for r.err == nil {
			id, typ, stop := r.fieldHeader(last)
			if stop {
				return
			}
			last = id
			if typ != thriftTrue && typ != thriftFalse {
				r.skip(typ, depth+1)
			}
		}
	default:
		r.fail("field type %d", typ)
	}
}

// Where the offsets copyStruct moves are: RowGroup.file_offset (5), and of
// each of its ColumnChunks (1) the file_offset (2) and its ColumnMetaData's
// (3) data, index and dictionary page offsets (9, 10, 11).
const (
	inRowGroup = iota
	inColumnChunk
	inColumnMeta
)

// copyStruct appends to w the struct at r's offset, its bytes as they are
// but the varints of the offsets in (a RowGroup, a ColumnChunk or a
// ColumnMetaData) moved by delta.
func (r *thriftReader) copyStruct(w []byte, in int, delta int64, depth int) []byte {
	if depth > 32 {
		r.fail("nested too deep")
		return w
	}
	var last int16
	for r.err == nil {
		start := r.off
		id, typ, stop := r.fieldHeader(last)
		w = append(w, r.b[start:r.off]...)
		if stop {
			return w
		}
		last = id
		isInt := typ == thriftI32 || typ == thriftI64
		switch {
		case typ == thriftTrue || typ == thriftFalse:
		case isInt && (in == inRowGroup && id == 5 || in == inColumnChunk && id == 2 || in == inColumnMeta && (id == 9 || id == 10 || id == 11)):
			w = binary.AppendVarint(w, r.varint()+delta)
		case in == inRowGroup && id == 1 && typ == thriftList:
			start := r.off
			elem, n := r.listHeader()
			w = append(w, r.b[start:r.off]...)
			for range n {
				if r.err != nil {
					break
				}
				if elem != thriftStruct {
					start := r.off
					r.skip(elem, depth+1)
					w = append(w, r.b[start:r.off]...)
					continue
				}
				w = r.copyStruct(w, inColumnChunk, delta, depth+1)
			}
		case in == inColumnChunk && id == 3 && typ == thriftStruct:
			w = r.copyStruct(w, inColumnMeta, delta, depth+1)
		default:
			start := r.off
			r.skip(typ, depth+1)
			w = append(w, r.b[start:r.off]...)
		}
	}
	return w
}

// footerField is a field of a footer's FileMetaData: its id, type, and
// its value's bytes.
type footerField struct {
	id    int16
	typ   byte
	value []byte
}

// parquetFooter reads a Parquet file's FileMetaData: its fields, with
// their values' bytes, and where the footer begins (the end of the row
// groups' bytes).
func parquetFooter(data []byte) ([]footerField, int64, error) {
	return parquetFooterAt(bytes.NewReader(data), int64(len(data)))
}

// parquetFooterAt is parquetFooter of a file of size bytes read at
// offsets: its first 4 and last 8 bytes, then the footer.
func parquetFooterAt(r io.ReaderAt, size int64) ([]footerField, int64, error) {
	var head, tail [8]byte
	if size < 12 {
		return nil, 0, fmt.Errorf("%w: not a Parquet file", ErrConcat)
	}
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return nil, 0, err
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(head[:4], parquetMagic) || !bytes.Equal(tail[4:], parquetMagic) {
		return nil, 0, fmt.Errorf("%w: not a Parquet file", ErrConcat)
	}
	flen := int64(binary.LittleEndian.Uint32(tail[:4]))
	if flen <= 0 || flen > size-12 {
		return nil, 0, fmt.Errorf("%w: footer length %d", ErrConcat, flen)
	}
	start := size - 8 - flen
	b := make([]byte, flen)
	if _, err := r.ReadAt(b, start); err != nil {
		return nil, 0, err
	}
	tr := &thriftReader{b: b}
	var fields []footerField
	var last int16
	for {
		id, typ, stop := tr.fieldHeader(last)
		if stop {
			break
		}
		last = id
		v := tr.off
		if typ != thriftTrue && typ != thriftFalse {
			tr.skip(typ, 1)
		}
		fields = append(fields, footerField{id, typ, b[v:tr.off]})
	}
	if tr.err != nil {
		return nil, 0, tr.err
	}
	return fields, start, nil
}

func footerFieldOf(fields []footerField, id int16) *footerField {
	for i := range fields {
		if fields[i].id == id {
			return &fields[i]
		}
	}
	return nil
}

// ConcatParquet writes the row groups of the Parquet files inputs (their
// contents), in order, as one Parquet file at out (written under a
// temporary name, synced, renamed).
func ConcatParquet(out string, inputs [][]byte) error {
	srcs := make([]concatSource, len(inputs))
	for i, data := range inputs {
		srcs[i] = concatSource{bytes.NewReader(data), int64(len(data))}
	}
	return concatParquet(out, srcs)
}

// concatSource is an input of concatParquet: a file (an *os.File's bytes
// are copied by the kernel, copy_file_range, never read into memory) or
// bytes, and its size.
type concatSource struct {
	r    io.ReaderAt
	size int64
}

// concatParquet is ConcatParquet of inputs read where they lie: only their
// footers are read into memory. The footer written is the first input's
// FileMetaData with num_rows (3) the sum and row_groups (4) every input's
// row groups, their offsets moved (copyStruct).
func concatParquet(out string, inputs []concatSource) error {
	if len(inputs) == 0 {
		return fmt.Errorf("%w: no input", ErrConcat)
	}
	var meta []footerField
	var rows, ngroups int64
	var groups []byte
	var bodies []io.Reader
	off := int64(len(parquetMagic))
	for i, in := range inputs {
		fields, end, err := parquetFooterAt(in.r, in.size)
		if err != nil {
			return fmt.Errorf("input %d: %w", i+1, err)
		}
		sch, nrows, rg := footerFieldOf(fields, 2), footerFieldOf(fields, 3), footerFieldOf(fields, 4)
		if sch == nil || nrows == nil || nrows.typ != thriftI64 && nrows.typ != thriftI32 {
			return fmt.Errorf("input %d: %w: no schema or row count", i+1, ErrConcat)
		}
		if i == 0 {
			meta = fields
			if rg == nil || rg.typ != thriftList {
				return fmt.Errorf("%w: no row groups field", ErrConcat)
			}
		} else if !bytes.Equal(sch.value, footerFieldOf(meta, 2).value) {
			return fmt.Errorf("input %d: %w: another schema than the first input's", i+1, ErrConcat)
		}
		delta := off - int64(len(parquetMagic))
		if rg != nil && rg.typ == thriftList {
			r := &thriftReader{b: rg.value}
			elem, n := r.listHeader()
			if n > 0 && elem != thriftStruct {
				r.fail("row groups of type %d", elem)
			}
			for range n {
				if r.err != nil {
					break
				}
				groups = r.copyStruct(groups, inRowGroup, delta, 2)
			}
			if r.err != nil {
				return fmt.Errorf("input %d: %w", i+1, r.err)
			}
			ngroups += int64(n)
		}
		r := &thriftReader{b: nrows.value}
		rows += r.varint()
		bodies = append(bodies, bodyReader(in.r, int64(len(parquetMagic)), end-int64(len(parquetMagic))))
		off += end - int64(len(parquetMagic))
	}
	var t thriftWriter
	t.reset()
	for _, f := range meta {
		switch {
		case f.typ == thriftTrue || f.typ == thriftFalse:
			t.boolean(f.id, f.typ == thriftTrue)
		case f.id == 3:
			t.field(f.id, f.typ)
			t.varint(rows)
		case f.id == 4:
			t.list(f.id, thriftStruct, int(ngroups))
			t.b = append(t.b, groups...)
		default:
			t.field(f.id, f.typ)
			t.b = append(t.b, f.value...)
		}
	}
	t.end()
	if len(t.b) > math.MaxUint32 {
		return fmt.Errorf("%w: footer too big", ErrConcat)
	}
	t.b = binary.LittleEndian.AppendUint32(t.b, uint32(len(t.b)))
	t.b = append(t.b, parquetMagic...)
	parts := append([]io.Reader{bytes.NewReader(parquetMagic)}, bodies...)
	return writeParts(out, append(parts, bytes.NewReader(t.b)))
}

// bodyReader reads n bytes of r from off: an *os.File's by a
// LimitedReader over it at off, which io.Copy into a file hands to
// copy_file_range (os.File.ReadFrom), so the bytes never enter memory.
func bodyReader(r io.ReaderAt, off, n int64) io.Reader {
	if f, ok := r.(*os.File); ok {
		return &fileRange{f: f, off: off, n: n, SectionReader: io.NewSectionReader(f, off, n)}
	}
	return io.NewSectionReader(r, off, n)
}

// fileRange is a file's n bytes from off. Read reads them (by offsets);
// WriteTo, which io.Copy prefers, positions the file there and copies by
// the kernel.
type fileRange struct {
	*io.SectionReader
	f      *os.File
	off, n int64
}

func (r *fileRange) WriteTo(w io.Writer) (int64, error) {
	if _, err := r.f.Seek(r.off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(w, &io.LimitedReader{R: r.f, N: r.n})
	if err == nil && n < r.n {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// concatText joins JSON Lines or CSV files' contents (a CSV file's header
// line kept from the first only) into out. Their columns must be the same:
// a CSV file's header line, the names of a JSON Lines file's first object.
func concatText(out string, f Format, inputs [][]byte) error {
	parts := make([]io.Reader, 0, len(inputs))
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
		parts = append(parts, bytes.NewReader(data))
	}
	return writeParts(out, parts)
}

// writeParts writes the parts as the file out: under its temporary name,
// synced, then renamed into place.
func writeParts(out string, parts []io.Reader) error {
	tmp := TempName(out)
	if err := os.MkdirAll(filepath.Dir(out), 0o777); err != nil {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = io.Copy(f, p); err != nil {
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
