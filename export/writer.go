package export

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/walscope/walscope/internal/outfile"
)

// Format is an export file format.
type Format string

// Export formats.
const (
	Parquet Format = "parquet"
	JSONL   Format = "jsonl"
	CSV     Format = "csv"
)

// Ext returns the file name extension of the format.
func (f Format) Ext() string { return "." + string(f) }

// RowWriter writes the rows of one file. The file is written under a
// temporary name (a dot file, which Spark, Trino and DuckDB's globs skip,
// ending in .tmp) and renamed to its final name by Close; Abort removes it.
type RowWriter interface {
	Write(Row) error
	Rows() int64
	Close() error
	Abort()
}

// Options tune the writers.
type Options struct {
	// RowGroupRows is the Parquet row group length (128 Ki by default).
	RowGroupRows int
	// Metadata is added to each file's key-value metadata.
	Metadata map[string]string
}

// DefaultRowGroupRows is the row group length: about 128k rows.
const DefaultRowGroupRows = 128 << 10

// MaxRowGroupRows bounds the row group length: a column of a group must fit
// one Parquet page (2^31 bytes), and a group is held in memory until written.
const MaxRowGroupRows = 1 << 24

// TempName returns the temporary name a file is written under.
func TempName(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
}

// Create starts a file of the schema's rows at path (its extension
// included), making its directory.
func Create(path string, f Format, s *Schema, o Options) (RowWriter, error) {
	if err := checkTyped(f, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tmp := TempName(path)
	var fh *os.File
	// Not after a signal's cleanup removed the staging directory: the
	// directory would be made again, and left.
	err := outfile.Guard(func() error {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return err
		}
		var err error
		fh, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		return err
	})
	if err != nil {
		return nil, err
	}
	base := fileBase{path: path, tmp: tmp, f: fh}
	switch f {
	case Parquet:
		return newParquetWriter(base, s, o)
	case JSONL, CSV:
		return newTextWriter(base, f, s)
	}
	base.abort()
	return nil, fmt.Errorf("unknown format %q", f)
}

type fileBase struct {
	path, tmp string
	f         *os.File
}

func (b *fileBase) commit() error {
	if err := b.sync(); err != nil {
		b.abort()
		return err
	}
	if err := b.f.Close(); err != nil {
		os.Remove(b.tmp)
		return err
	}
	if err := os.Rename(b.tmp, b.path); err != nil {
		os.Remove(b.tmp)
		return err
	}
	return nil
}

func (b *fileBase) abort() {
	b.f.Close()
	os.Remove(b.tmp)
}

// metadata returns the key-value metadata of a file of schema s.
func metadata(s *Schema, o Options) ([]string, []string) {
	keys := []string{"walscope.schema_version", "walscope.table"}
	vals := []string{SchemaVersion, s.Table}
	extra := make([]string, 0, len(o.Metadata))
	for k := range o.Metadata {
		extra = append(extra, k)
	}
	sort.Strings(extra) // the same bytes on every run
	for _, k := range extra {
		keys, vals = append(keys, k), append(vals, o.Metadata[k])
	}
	return keys, vals
}

// MetadataAdder is a RowWriter whose files carry key-value metadata
// (Parquet's): AddMetadata adds a pair before Close writes the footer (a
// file found incomplete while it was written says so).
type MetadataAdder interface {
	AddMetadata(key, value string)
}

// textWriter writes JSON Lines or CSV (with a header row).
type textWriter struct {
	fileBase
	w    *bufio.Writer
	csv  bool
	s    *Schema
	rows int64
	buf  []byte
}

func newTextWriter(b fileBase, f Format, s *Schema) (*textWriter, error) {
	t := &textWriter{fileBase: b, w: bufio.NewWriterSize(b.f, 256<<10), csv: f == CSV, s: s}
	if t.csv {
		cw := csv.NewWriter(t.w)
		var names []string
		for _, c := range s.FileColumns() {
			names = append(names, c.Name)
		}
		cw.Write(names)
		cw.Flush()
		if err := cw.Error(); err != nil {
			t.abort()
			return nil, err
		}
	}
	return t, nil
}

func (t *textWriter) Rows() int64 { return t.rows }

func (t *textWriter) Write(r Row) error {
	b := t.buf[:0]
	if !t.csv {
		b = append(b, '{')
	}
	for i, c := range t.s.Columns {
		v := r[i]
		if i > 0 {
			b = append(b, ',')
		}
		if !t.csv {
			b = strconv.AppendQuote(append(b, ""...), c.Name)
			b = append(b, ':')
		}
		if v.Null {
			if !t.csv {
				b = append(b, "null"...)
			}
			if c.Kind == LSN {
				b = append(b, ',')
				if !t.csv {
					b = strconv.AppendQuote(b, c.Name+TextSuffix)
					b = append(b, ":null"...)
				}
			}
			continue
		}
		switch c.Kind {
		case Bool:
			b = strconv.AppendBool(b, v.U != 0)
		case String:
			if t.csv {
				b = appendCSVField(b, v.S)
			} else {
				b = appendJSONString(b, v.S)
			}
		case Time:
			ts := time.UnixMicro(int64(v.U)).UTC().Format(time.RFC3339Nano)
			if !t.csv {
				b = append(append(append(b, '"'), ts...), '"')
			} else {
				b = append(b, ts...)
			}
		case Int32:
			b = strconv.AppendInt(b, int64(int32(v.U)), 10)
		case LSN:
			// the number, then its X/Y text twin
			b = strconv.AppendInt(b, int64(v.U), 10)
			b = append(b, ',')
			if !t.csv {
				b = strconv.AppendQuote(b, c.Name+TextSuffix)
				b = append(b, ':', '"')
			}
			b = AppendLSN(b, v.U)
			if !t.csv {
				b = append(b, '"')
			}
		default:
			b = strconv.AppendInt(b, int64(v.U), 10)
		}
	}
	if !t.csv {
		b = append(b, '}')
	}
	b = append(b, '\n')
	t.buf = b
	t.rows++
	_, err := t.w.Write(b)
	return err
}

// appendJSONString appends s as a JSON string: names and descriptions are
// printable ASCII without quotes or backslashes, appended as they are
// (encoding/json, for the rest, allocated for every cell).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendCSVField(b []byte, s string) []byte {
	need := s == ""
	for i := 0; i < len(s) && !need; i++ {
		switch s[i] {
		case ',', '"', '\n', '\r':
			need = true
		}
	}
	if s != "" && (s[0] == ' ' || s[0] == '\t') {
		need = true
	}
	if !need {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

func (t *textWriter) Close() error {
	if err := t.w.Flush(); err != nil {
		t.abort()
		return err
	}
	return t.commit()
}

func (t *textWriter) Abort() { t.abort() }

// sync flushes the file to stable storage before the rename, so that a
// crash cannot leave a complete-looking but empty file (WALSCOPE_NOSYNC=1
// skips it, for benchmarks).
func (b *fileBase) sync() error {
	if noSync {
		return nil
	}
	return b.f.Sync()
}

var noSync = os.Getenv("WALSCOPE_NOSYNC") == "1"
