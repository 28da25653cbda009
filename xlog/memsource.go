package xlog

import (
	"bytes"
	"io/fs"
	"sort"
)

// MemSource is a Source over segment files held in memory, keyed by file
// name (24 hex digits, optionally ".partial"; or "TTTTTTTT.history"). It
// implements HistoryReader.
type MemSource struct {
	files     []SegmentFile
	data      map[string][]byte
	histories map[TimeLineID]string
}

// NewMemSource indexes files; names that are neither segment nor history file
// names are ignored.
func NewMemSource(files map[string][]byte) *MemSource {
	s := &MemSource{data: map[string][]byte{}, histories: map[TimeLineID]string{}}
	for name, b := range files {
		if tli, ok := ParseHistoryName(name); ok {
			s.histories[tli] = name
			s.data[name] = b
			continue
		}
		n, partial, err := ParseSegmentName(name)
		if err != nil {
			continue
		}
		s.data[name] = b
		s.files = append(s.files, SegmentFile{Name: n, Partial: partial, Path: name, Size: int64(len(b))})
	}
	sort.Slice(s.files, func(i, j int) bool {
		a, b := s.files[i], s.files[j]
		if a.Name != b.Name {
			return a.Name.Compare(b.Name) < 0
		}
		return !a.Partial && b.Partial
	})
	return s
}

// Segments implements Source.
func (s *MemSource) Segments() []SegmentFile { return s.files }

// Histories implements HistoryReader; the keys are the file names.
func (s *MemSource) Histories() map[TimeLineID]string { return s.histories }

// Open implements Source.
func (s *MemSource) Open(f SegmentFile) (File, error) {
	b, ok := s.data[f.Path]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return nopCloser{bytes.NewReader(b)}, nil
}

// ReadHistory implements HistoryReader.
func (s *MemSource) ReadHistory(name string) (string, error) {
	b, ok := s.data[name]
	if _, hist := ParseHistoryName(name); !ok || !hist {
		return "", fs.ErrNotExist
	}
	return string(b), nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

var _ HistoryReader = (*MemSource)(nil)
