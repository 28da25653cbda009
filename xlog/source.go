package xlog

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one opened segment file.
type File interface {
	io.ReaderAt
	io.Closer
}

// SegmentFile describes a segment file a Source can open.
type SegmentFile struct {
	Name    SegmentName
	Partial bool   // the file name ends in ".partial"
	Path    string // for messages and for opening
	Size    int64
}

// Source gives a Reader the segment files of one WAL stream. Segment numbers
// depend on the segment size, which only the WAL itself tells, so a Source
// indexes files by name.
type Source interface {
	// Segments lists the segment files, sorted by name, a plain file before
	// its ".partial" twin.
	Segments() []SegmentFile
	// Open opens one of the files Segments lists.
	Open(f SegmentFile) (File, error)
	// Histories returns the timeline history files found, by timeline.
	Histories() map[TimeLineID]string
}

// HeadReader is implemented by sources whose files are expensive to open
// whole (compressed archives, where Open decompresses a segment): ReadHead
// reads only the first len(b) bytes of a file, which is all the reader needs
// to learn the geometry.
type HeadReader interface {
	ReadHead(f SegmentFile, b []byte) (int, error)
}

// DirSource is a Source over files on disk: a directory (a pg_wal, a data
// directory holding pg_wal, or a flat archive directory) or a list of files.
type DirSource struct {
	files     []SegmentFile
	histories map[TimeLineID]string
}

// OpenDir indexes the WAL segment files and history files of dir. A data
// directory is recognised by its pg_wal (or pre-10 pg_xlog) subdirectory.
func OpenDir(dir string) (*DirSource, error) {
	for _, sub := range []string{"pg_wal", "pg_xlog"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
				dir = filepath.Join(dir, sub)
				break
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &DirSource{histories: map[TimeLineID]string{}}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		s.add(filepath.Join(dir, e.Name()), e)
	}
	s.sort()
	return s, nil
}

func (s *DirSource) add(path string, e fs.DirEntry) bool {
	base := filepath.Base(path)
	if tli, ok := ParseHistoryName(base); ok {
		s.histories[tli] = path
		return true
	}
	n, partial, err := ParseSegmentName(base)
	if err != nil {
		return false
	}
	var size int64
	if info, err := e.Info(); err == nil {
		size = info.Size()
	}
	s.files = append(s.files, SegmentFile{Name: n, Partial: partial, Path: path, Size: size})
	return true
}

func (s *DirSource) sort() {
	sort.SliceStable(s.files, func(i, j int) bool {
		a, b := s.files[i], s.files[j]
		if a.Name != b.Name {
			return a.Name.String() < b.Name.String()
		}
		return !a.Partial && b.Partial
	})
}

// Segments implements Source.
func (s *DirSource) Segments() []SegmentFile { return s.files }

// Histories implements Source.
func (s *DirSource) Histories() map[TimeLineID]string { return s.histories }

// Open implements Source.
func (s *DirSource) Open(f SegmentFile) (File, error) { return os.Open(f.Path) }

// ParseHistoryName returns the timeline a history file name (TTTTTTTT.history,
// upper-case hex) names.
func ParseHistoryName(name string) (TimeLineID, bool) {
	hex, ok := strings.CutSuffix(name, ".history")
	if !ok || len(hex) != 8 {
		return 0, false
	}
	var t uint32
	for i := 0; i < 8; i++ {
		c := hex[i]
		switch {
		case '0' <= c && c <= '9':
			t = t<<4 | uint32(c-'0')
		case 'A' <= c && c <= 'F':
			t = t<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return TimeLineID(t), true
}

// ErrNoSegments is returned when a source holds no WAL segment file at all.
var ErrNoSegments = errors.New("no WAL segment files found")
