package xlog

import (
	"errors"
	"fmt"
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

// HeadFile is implemented by files that read their first bytes when they
// were opened (a source that checks what a file holds before handing it
// out: xlog/archive's plain segments on disk). The reader takes the pages
// that lie within head from it instead of reading them again: over a
// switched, nearly empty segment that is its only read. head stays valid
// until Close; whole says it is the whole file.
type HeadFile interface {
	File
	Head() (head []byte, whole bool)
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
//
// A Source may also implement two optional interfaces, which the Reader
// looks for with a type assertion:
//
//   - HistoryReader, if it holds timeline history files (TTTTTTTT.history).
//     A Reader that follows timelines (Options.FollowHistory) reads the
//     target timeline's history through it; a Source without it has no
//     history, and the Reader reads only the target timeline's files.
//   - HeadReader, if opening a file whole is expensive (a compressed file
//     that Open decompresses): the Reader reads each first page header
//     through it.
//
// DirSource, MemSource and xlog/archive's Source implement HistoryReader;
// xlog/archive's also implements HeadReader.
type Source interface {
	// Segments lists the segment files, sorted by name, a plain file before
	// its ".partial" twin.
	Segments() []SegmentFile
	// Open opens one of the files Segments lists.
	Open(f SegmentFile) (File, error)
}

// HistoryReader is implemented by sources that hold timeline history files.
// Listing and reading go together: a source that lists a history file can
// read it, wherever it keeps it (on disk, in memory, compressed, in a tar).
type HistoryReader interface {
	// Histories returns the history files, by timeline. The values are keys
	// for ReadHistory (a path, or whatever the source names files by).
	Histories() map[TimeLineID]string
	// ReadHistory returns the text of the history file that key names.
	ReadHistory(key string) (string, error)
}

// HeadReader is implemented by sources whose files are expensive to open
// whole (compressed archives, where Open decompresses a segment): ReadHead
// reads only the first len(b) bytes of a file, which is all the reader needs
// to learn the geometry.
type HeadReader interface {
	ReadHead(f SegmentFile, b []byte) (int, error)
}

// DirSource is a Source over plain (uncompressed) files on disk: a directory
// (a pg_wal, a data directory holding pg_wal, or a flat archive directory).
// It implements HistoryReader. To open WAL in any other form (compressed
// files, a backup tool's repository, tar files, a list of files), use
// xlog/archive's Open, which recognises every form this one does.
type DirSource struct {
	files     []SegmentFile
	histories map[TimeLineID]string
}

// OpenDir indexes the plain WAL segment files and history files of dir. A
// data directory is recognised by its pg_wal (or pre-10 pg_xlog)
// subdirectory. Other files are ignored: a directory without segment files
// gives a source without segments, which NewReader refuses (ErrNoSegments).
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
			return a.Name.Compare(b.Name) < 0
		}
		return !a.Partial && b.Partial
	})
}

// Segments implements Source.
func (s *DirSource) Segments() []SegmentFile { return s.files }

// Histories implements HistoryReader; the keys are the files' paths.
func (s *DirSource) Histories() map[TimeLineID]string { return s.histories }

// ReadHistory implements HistoryReader: it reads the history file at path,
// one of those Histories lists.
func (s *DirSource) ReadHistory(path string) (string, error) {
	listed := false
	for _, p := range s.histories {
		listed = listed || p == path
	}
	if !listed {
		return "", &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHistorySize+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxHistorySize {
		return "", fmt.Errorf("%s: %w: history file larger than %d bytes", path, ErrSyntax, maxHistorySize)
	}
	return string(b), nil
}

// maxHistorySize bounds the history files DirSource reads.
const maxHistorySize = 1 << 20

var _ HistoryReader = (*DirSource)(nil)

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
