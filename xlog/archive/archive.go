// Package archive opens PostgreSQL WAL wherever it is kept and presents it as
// an xlog.Source: plain or compressed segment files (gzip, zstd, lz4, bzip2,
// xz, lzma, brotli, detected by their content, never by their names) in a
// directory, the repositories of wal-g, pgBackRest and Barman, pg_receivewal's
// directories, and tar files (plain or compressed) holding pg_wal/ or bare
// segments.
//
// Open is the one entry point: it takes one path or several, detects the
// layout and returns a *Source, which implements xlog.Source and its optional
// interfaces xlog.HistoryReader and xlog.HeadReader. When nothing at the
// paths is WAL it returns an error matching xlog.ErrNoSegments, never an
// empty source:
//
//	src, err := archive.Open("/var/lib/pgbackrest") // a pg_wal, a tar file, files...
//	if err != nil {
//		return err // errors.Is(err, xlog.ErrNoSegments): no WAL there
//	}
//	defer src.Close()
//	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
//
// The layouts recognised (Layout; Source.Layout tells which was found):
//
//	LayoutDirectory  pg_wal, a data directory, pg_receivewal's directory, a flat archive
//	                 000000010000000000000001[.gz .zst .lz4 .bz2 .xz .lzma .br ...][.partial]
//	                 00000002.history[.gz ...]
//	LayoutPgBackRest archive/<stanza>/archive.info
//	                 archive/<stanza>/<version>-<id>/0000000100000000/000000010000000000000001-<sha1>[.gz .lz4 .zst .bz2]
//	LayoutWALG       wal_005/000000010000000000000001{.lz4 .br .zst .lzma .}
//	LayoutBarman     wals/xlog.db, wals/0000000100000000/000000010000000000000001 (compressed, same name)
//	LayoutTar        pg_wal.tar[.gz .zst .lz4 ...] holding pg_wal/<name> or <name>
//	LayoutFiles      files named one by one (several paths)
//
// A compressed segment is decompressed when it is opened, one at a time, into
// a buffer bounded by the segment size its own long page header gives: content
// beyond it is refused (ErrTooLarge). Encrypted files are reported as such
// (ErrEncrypted), and content that is neither WAL nor compressed WAL as
// unrecognised (ErrUnrecognized), never as WAL corruption. pgBackRest's
// SHA-1 in a file's name is checked against the decompressed content when the
// file is opened (ErrChecksum). Problems with one file are *Error values,
// naming the file and wrapping one of these sentinels.
//
// Facts lists every file found with its sizes, compression and problems:
// duplicates, files of another system, gaps, unreadable files; Summarize
// totals them.
//
// xlog.OpenDir is a lighter alternative for a directory known to hold plain
// segment files only: it neither decompresses nor recognises layouts.
package archive

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/walscope/walscope/xlog"
)

// Layout names how WAL is stored.
type Layout string

// The layouts recognised.
const (
	LayoutDirectory  Layout = "directory"  // a flat directory: pg_wal, a data directory, pg_receivewal's, a plain archive
	LayoutFiles      Layout = "files"      // files named one by one
	LayoutWALG       Layout = "wal-g"      // wal_005/
	LayoutPgBackRest Layout = "pgbackrest" // archive/<stanza>/<version>-<id>/<16 hex>/
	LayoutBarman     Layout = "barman"     // wals/<16 hex>/, with xlog.db
	LayoutTar        Layout = "tar"        // tar, tar.gz, tar.zst, tar.lz4, ... members pg_wal/<name> or bare
)

// entry is one stored file.
type entry struct {
	key    string // SegmentFile.Path and Histories value: the file's path, or "tarfile:member"
	name   Name
	layout Layout
	file   string // the file on disk (the tar file for a member)
	tar    *tarArchive
	member *tarMember
	size   int64 // bytes stored (storedSize)
	// lazySize: a local file listed as regular by its directory entry alone;
	// its size is read the first time it is asked (storedSize).
	lazySize bool
	sizeOnce sync.Once
	// head is the first bytes of a plain local segment a reader opened
	// (rememberHead), for its quick fact; headState 2 once they are there.
	head      [xlog.LongPageHeaderSize]byte
	headState atomic.Int32
	// hint is what an index says of the file's compression (Barman's xlog.db).
	hint string
	// missing: listed by an index, absent from the disk.
	missing  bool
	problems []Problem // found while indexing
}

// Source is a WAL archive of any layout, as Open finds it. It implements
// xlog.Source and both of its optional interfaces: xlog.HistoryReader (it
// reads history files where they are stored, decompressing them) and
// xlog.HeadReader (it decompresses only the first bytes of a segment to give
// the reader its geometry). It is safe for concurrent use.
type Source struct {
	tree      Tree
	root      string
	layout    Layout
	entries   []*entry // every file found, in the order of Segments, histories last
	byKey     map[string]*entry
	files     []xlog.SegmentFile
	histories map[xlog.TimeLineID]string
	repo      *RepoInfo
	tars      []*tarArchive
	decoded   decodedSegments // compressed segments shared between readers (shared.go)
	pgbOnlyID string          // pgBackRest: read this archive id only (opened at it)
	notRead   []NotRead
	dirs      map[string]dirListing // the directories listed while opening (readDir)
}

// NotRead is a file found where WAL files are looked for that the source
// chose not to read, with the reason: nothing is skipped silently.
type NotRead struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// NotRead lists the files beside the WAL files that the source did not take,
// the members of tar files that are not WAL, and the folders beside them
// that it did not look into (not PostgreSQL's archive_status and summaries,
// nor the folders a layout reads itself).
func (s *Source) NotRead() []NotRead { return s.notRead }

// folderNotRead is the reason a folder beside WAL files is listed.
const folderNotRead = "a folder: its files are not read (name it to read them)"

// skipsFolder reports whether a folder found beside WAL files is one whose
// files are not WAL by design: pg_wal's archive_status (.ready and .done
// markers) and summaries (PostgreSQL 17's WAL summaries).
func skipsFolder(name string) bool { return name == "archive_status" || name == "summaries" }

// layoutFolder reports whether a layout reads the folder itself: the
// <16 hex> folders of pgBackRest's archive ids and Barman's wals/.
func layoutFolder(layout Layout, name string) bool {
	return (layout == LayoutPgBackRest || layout == LayoutBarman) && len(name) == 16 && isUpperHex(name)
}

// notReadReason says why a file of a WAL folder that is not a WAL file name
// is not read.
func notReadReason(name string) string {
	switch {
	case strings.HasSuffix(name, ".backup") || strings.Contains(name, ".backup."):
		return "a backup history file: not WAL (pitr --backup reads it)"
	case strings.HasPrefix(name, "."):
		return "a hidden file"
	}
	return "not a WAL file name"
}

// Close releases the open tar cursors. The source stays usable.
func (s *Source) Close() error {
	for _, t := range s.tars {
		t.close()
	}
	s.decoded.drop()
	return nil
}

// RepoInfo is what a backup tool's own files say about the archive.
type RepoInfo struct {
	Tool      Layout `json:"tool"`
	Stanza    string `json:"stanza,omitempty"`     // pgBackRest
	ArchiveID string `json:"archive_id,omitempty"` // pgBackRest: <version>-<id> read
	SystemID  uint64 `json:"system_id,omitempty"`  // pgBackRest archive.info db-system-id
	Version   string `json:"version,omitempty"`    // pgBackRest archive.info db-version
	Encrypted bool   `json:"encrypted,omitempty"`  // the repository's info file is encrypted
	Note      string `json:"note,omitempty"`
}

var (
	_ xlog.Source        = (*Source)(nil)
	_ xlog.HistoryReader = (*Source)(nil)
	_ xlog.HeadReader    = (*Source)(nil)
)

// Segments implements xlog.Source.
func (s *Source) Segments() []xlog.SegmentFile { return s.files }

// Histories implements xlog.HistoryReader; the values are keys for
// ReadHistory (a path, or "tarfile:member").
func (s *Source) Histories() map[xlog.TimeLineID]string { return s.histories }

// Layout is the layout detected at the top path.
func (s *Source) Layout() Layout { return s.layout }

// Root is the path the source was opened at.
func (s *Source) Root() string { return s.root }

// Repo returns what the repository's own files say (pgBackRest's
// archive.info), or nil.
func (s *Source) Repo() *RepoInfo { return s.repo }

// Open implements xlog.Source: plain files are read in place, compressed ones
// decompressed into memory (one segment, bounded by its segment size).
func (s *Source) Open(f xlog.SegmentFile) (xlog.File, error) {
	e := s.byKey[f.Path]
	if e == nil || e.missing || e.name.History {
		return nil, fs.ErrNotExist
	}
	if e.tar != nil {
		f, err := e.tar.open(e)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	if _, plain := plainSize(e); !plain {
		return s.decoded.open(e.key, func() (xlog.File, error) { return s.openFile(e) })
	}
	return s.openFile(e)
}

// openFile opens an entry's file: in place if it is plain, else
// decompressed into memory.
func (s *Source) openFile(e *entry) (xlog.File, error) {
	var fh treeFile
	if _, local := s.tree.(LocalTree); local && e.name.SHA1 == "" {
		// A plain segment on disk, the usual case, is known by its first
		// bytes: one small read, not the buffered reader's 64 KiB, which
		// cost more than the WAL read from a switched segment (issue 16).
		// A file named as plain reads its first page (headSize), which the
		// reader then takes from it (segmentFile); one named as compressed
		// just what detection looks at. Anything else takes the path below,
		// as before.
		want := sniffLen
		if _, plain := plainSize(e); plain {
			want = headSize
		}
		sf, err := openSegmentFile(e.file, want)
		if err != nil {
			return nil, err
		}
		if sf.sniffed() {
			e.rememberHead(sf.head)
			return sf, nil
		}
		fh = sf.treeFile()
	} else {
		var err error
		if fh, err = s.open(e.file); err != nil {
			return nil, err
		}
	}
	br := segmentReaders.Get().(*bufio.Reader)
	br.Reset(fh)
	if mf, ok, err := s.openZstdWhole(e, br); ok {
		fh.Close()
		if err != nil {
			return nil, err
		}
		return mf, nil
	}
	st, err := openStream(br, e.key, kindSegment)
	if err != nil {
		fh.Close()
		return nil, err
	}
	defer st.Close()
	if st.comp == None && e.name.SHA1 == "" {
		// Read in place: nothing holds br any more (no decoder was made).
		br.Reset(nil)
		segmentReaders.Put(br)
		return fh, nil
	}
	c, err := e.read(st, st.comp != None)
	if err != nil || st.comp != None {
		fh.Close()
	}
	switch {
	case err != nil:
		return nil, err
	case st.comp == None:
		return fh, nil // checked: read in place
	}
	return &memFile{data: c.data, pooled: true}, nil
}

// segmentReaders pools Open's 64 KiB buffered readers: a plain file only
// needs its first bytes sniffed, and a fresh buffer per file made verify over
// 10^5 small files spend a third of its time allocating and collecting them
// (issue 16). A reader that fed a decoder is not put back.
var segmentReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// headReaders pools the 4 KiB buffered readers that read a file's first
// page only (ReadHead, the facts of verify's summary and ls --quick): a new
// one per file was fresh memory in a short run, 4 KiB of page faults per
// segment (issue 16). As for segmentReaders, one that fed a decoder is not
// put back.
var headReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// openHeadStream opens the content stream of fh through a pooled 4 KiB
// reader; done closes the stream and gives the reader back when no decoder
// holds it.
func openHeadStream(fh io.Reader, path string, kind contentKind) (st *stream, done func(), err error) {
	br := headReaders.Get().(*bufio.Reader)
	br.Reset(fh)
	st, err = openStream(br, path, kind)
	if err != nil {
		return nil, nil, err // (a decoder may have been tried on br)
	}
	return st, func() {
		st.Close()
		if st.comp == None {
			br.Reset(nil)
			headReaders.Put(br)
		}
	}, nil
}

// ReadHead implements xlog.HeadReader: it decompresses only the first
// len(b) bytes of a file (SHA-1 and size are checked when it is opened).
func (s *Source) ReadHead(f xlog.SegmentFile, b []byte) (int, error) {
	e := s.byKey[f.Path]
	if e == nil || e.missing || e.name.History {
		return 0, fs.ErrNotExist
	}
	if e.tar != nil {
		// A member's head alone, checked as a file's (it was the whole
		// member, unchecked: a short one gave a bare io.EOF).
		var n int
		err := e.tar.withStream(e, func(st *stream) error {
			var err error
			n, err = e.readHead(st, b)
			return err
		})
		return n, err
	}
	fh, err := s.openHead(e.file)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	st, done, err := openHeadStream(fh, e.key, kindSegment)
	if err != nil {
		return 0, err
	}
	defer done()
	return e.readHead(st, b)
}

// readHead reads the first len(b) bytes of an entry's content stream and
// checks that they are WAL.
func (e *entry) readHead(st *stream, b []byte) (int, error) {
	n, err := readHead(st.r, b)
	if err != nil && err != io.EOF && !(e.name.Partial && errors.Is(err, io.ErrUnexpectedEOF)) {
		return n, st.readErr(e.key, kindSegment, err)
	}
	if err := checkHead(st, e.key, kindSegment, b[:n]); err != nil {
		return n, err
	}
	return n, nil
}

// read reads an entry's content stream to its end, checking pgBackRest's
// SHA-1; keep materialises it (compressed segments only).
func (e *entry) read(st *stream, keep bool) (*content, error) {
	return e.readHash(st, keep, nil)
}

func (e *entry) readHash(st *stream, keep bool, extra io.Writer) (*content, error) {
	kind := kindSegment
	if e.name.History {
		kind = kindHistory
	}
	var h hash.Hash
	if e.name.SHA1 != "" {
		h = sha1.New()
	}
	var sink func([]byte)
	if h != nil || extra != nil {
		sink = func(b []byte) {
			if h != nil {
				h.Write(b)
			}
			if extra != nil {
				extra.Write(b)
			}
		}
	}
	c, err := readAll(st, e.key, kind, keep, e.name.Partial, sink)
	if err != nil {
		return nil, err
	}
	if h != nil {
		if got := hex.EncodeToString(h.Sum(nil)); got != e.name.SHA1 {
			return nil, &Error{Path: e.key, Err: ErrChecksum, Msg: fmt.Sprintf(
				"SHA-1 of the decompressed content is %s, but the file name says %s: the file was altered or damaged", got, e.name.SHA1)}
		}
	}
	return c, nil
}

// ReadHistory implements xlog.HistoryReader: it reads the timeline history
// file that key (a value of Histories) names, decompressing it if needed.
func (s *Source) ReadHistory(key string) (string, error) {
	e := s.byKey[key]
	if e == nil || !e.name.History {
		return "", fs.ErrNotExist
	}
	var buf bytes.Buffer
	err := s.withStream(e, func(st *stream) error {
		_, err := e.readHash(st, false, &buf)
		return err
	})
	if err != nil {
		return "", err
	}
	return buf.String(), nil
}

// withStream opens an entry's content stream and hands it to fn.
func (s *Source) withStream(e *entry, fn func(*stream) error) error {
	return s.withStreamBuffer(e, 64<<10, fn)
}

// withStreamBuffer is withStream reading the file through a buffer of size
// bytes: a small one where only the first bytes are wanted (a plain
// segment's facts would otherwise read 64 KB each).
func (s *Source) withStreamBuffer(e *entry, size int, fn func(*stream) error) error {
	if e.missing {
		return &Error{Path: e.key, Err: fs.ErrNotExist, Msg: "listed in the index but missing"}
	}
	if e.tar != nil {
		return e.tar.withStream(e, fn)
	}
	open := s.open
	if size < 64<<10 {
		open = s.openHead // the first bytes only (ls --quick)
	}
	fh, err := open(e.file)
	if err != nil {
		return &Error{Path: e.key, Err: err, Msg: fmt.Sprintf("could not open: %v", err)}
	}
	defer fh.Close()
	kind := kindSegment
	if e.name.History {
		kind = kindHistory
	}
	if size == 4<<10 {
		st, done, err := openHeadStream(fh, e.key, kind)
		if err != nil {
			return err
		}
		defer done()
		return fn(st)
	}
	st, err := openStream(bufio.NewReaderSize(fh, size), e.key, kind)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// Open opens the WAL at paths as one stream, whatever form it is kept in,
// plain or compressed alike: it is the way to open WAL on disk. One path may
// be:
//
//   - a directory of segment files, plain or compressed: a pg_wal,
//     pg_receivewal's directory, a flat archive (tar files in it are read
//     too), or a data directory (its pg_wal, or pg_xlog before 10);
//   - a backup tool's repository: pgBackRest's (the repository, its
//     archive/ or its archive/<stanza> directory), wal-g's (the storage or
//     its wal_005/), Barman's (the server directory or its wals/);
//   - a tar file (plain or compressed) holding pg_wal/ or bare segments;
//   - one segment or history file.
//
// Several paths are read as one stream: directories as above, tar files
// whole, and other files whose names are WAL file names one by one (other
// files are skipped).
//
// When nothing at paths is WAL (no segment or history file, nor a file that
// Barman's xlog.db lists), Open returns an *Error matching
// xlog.ErrNoSegments rather than an empty source. A path that does not exist
// gives the os.Stat error; an ambiguous layout, ErrLayout.
//
// xlog.OpenDir is the lighter choice for a directory known to hold plain
// files only; it does not detect layouts or compression.
func Open(paths ...string) (*Source, error) {
	return OpenTree(LocalTree{}, paths...)
}

// OpenTree is Open over any Tree: an object store's (xlog/objstore) as well
// as the local disk's. Paths are the tree's.
func OpenTree(t Tree, paths ...string) (*Source, error) {
	var s *Source
	var err error
	switch len(paths) {
	case 0:
		return nil, &Error{Err: xlog.ErrNoSegments, Msg: "no path given"}
	case 1:
		s, err = openOne(t, paths[0])
	default:
		s, err = openMany(t, paths)
	}
	if err != nil {
		return nil, err
	}
	if len(s.entries) == 0 {
		s.Close()
		return nil, &Error{Path: s.root, Err: xlog.ErrNoSegments, Msg: "no WAL segment or history file found", NotRead: s.NotRead()}
	}
	return s, nil
}

// openOne opens one path, detecting its layout.
func openOne(t Tree, path string) (*Source, error) {
	st, err := t.Stat(path)
	if err != nil {
		return nil, err
	}
	s := &Source{tree: t, root: path}
	if !st.IsDir() {
		if err := s.addFile(path, st, true); err != nil {
			return nil, err
		}
		s.finish()
		return s, nil
	}
	if err := s.addDir(path); err != nil {
		return nil, err
	}
	s.finish()
	return s, nil
}

// openMany opens several paths as one stream.
func openMany(t Tree, paths []string) (*Source, error) {
	s := &Source{tree: t, root: strings.Join(paths, " "), layout: LayoutFiles}
	for _, p := range paths {
		st, err := t.Stat(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		if st.IsDir() {
			sub := &Source{tree: t, root: p}
			if err := sub.addDir(p); err != nil {
				sub.Close()
				s.Close()
				return nil, err
			}
			s.entries = append(s.entries, sub.entries...)
			s.tars = append(s.tars, sub.tars...)
			s.notRead = append(s.notRead, sub.notRead...)
			if s.repo == nil {
				s.repo = sub.repo
			}
			continue
		}
		if err := s.addFile(p, st, false); err != nil {
			s.Close()
			return nil, err
		}
	}
	// A folder listed as not read in one path's folder but named itself
	// is read.
	s.notRead = slices.DeleteFunc(s.notRead, func(n NotRead) bool { return n.Reason == folderNotRead && slices.Contains(paths, n.Path) })
	s.finish()
	return s, nil
}

// addFile adds one file: a tar file, or a segment or history file. With
// strict, a file that is neither is an error.
func (s *Source) addFile(path string, st fs.FileInfo, strict bool) error {
	if s.layout == "" {
		s.layout = LayoutFiles
	}
	if n, ok := ParseName(filepath.Base(path)); ok {
		s.entries = append(s.entries, &entry{key: path, name: n, layout: LayoutFiles, file: path, size: st.Size()})
		return nil
	}
	if ok, err := isTar(s.tree, path); err != nil {
		return err
	} else if ok {
		if strict {
			s.layout = LayoutTar
		}
		return s.addTar(path)
	}
	if strict {
		return &Error{Path: path, Err: ErrUnrecognized, Msg: "not a WAL segment or history file (by its name), nor a tar file"}
	}
	reason := notReadReason(filepath.Base(path))
	if reason == "not a WAL file name" {
		reason += ", nor a tar file"
	}
	s.notRead = append(s.notRead, NotRead{Path: path, Reason: reason})
	return nil
}

// dataDirWAL returns the pg_wal (or pre-10 pg_xlog) of a data directory, or
// dir itself.
func (s *Source) dataDirWAL(dir string) string {
	if !s.exists(s.tree.Join(dir, "PG_VERSION")) {
		return dir
	}
	for _, sub := range []string{"pg_wal", "pg_xlog"} {
		if s.isDir(s.tree.Join(dir, sub)) {
			return s.tree.Join(dir, sub)
		}
	}
	return dir
}

// addDir detects the layout of a directory and adds its files.
func (s *Source) addDir(dir string) error {
	base := filepath.Base(filepath.Clean(dir))
	set := func(l Layout) {
		if s.layout == "" {
			s.layout = l
		}
	}
	switch {
	case s.isPgBackRest(dir):
		set(LayoutPgBackRest)
		return s.scanPgBackRest(dir)
	case s.isDir(s.tree.Join(dir, "wal_005")):
		set(LayoutWALG)
		return s.scanFlat(s.tree.Join(dir, "wal_005"), LayoutWALG, false)
	case base == "wal_005":
		set(LayoutWALG)
		return s.scanFlat(dir, LayoutWALG, false)
	case s.isDir(s.tree.Join(dir, "wals")):
		set(LayoutBarman)
		return s.scanBarman(s.tree.Join(dir, "wals"))
	case base == "wals" || s.exists(s.tree.Join(dir, "xlog.db")):
		set(LayoutBarman)
		return s.scanBarman(dir)
	case archiveIDRe.MatchString(base) && s.isStanzaDir(parentPath(dir)):
		// pgBackRest's archive/<stanza>/<version>-<id>: that archive id.
		set(LayoutPgBackRest)
		s.pgbOnlyID = base
		return s.scanPgBackRest(parentPath(dir))
	}
	if sub, err := s.onlyRepositoryBelow(dir); err != nil {
		return err
	} else if sub != "" {
		return s.addDir(sub)
	}
	set(LayoutDirectory)
	return s.scanFlat(s.dataDirWAL(dir), LayoutDirectory, true)
}

// onlyRepositoryBelow returns the one wal-g storage (holding wal_005/) or
// Barman server directory (holding wals/) among the subdirectories of a
// directory that holds no WAL file itself: the parent of a wal-g prefix,
// Barman's barman_home. Several are ErrLayout (name one); none is "".
func (s *Source) onlyRepositoryBelow(dir string) (string, error) {
	ents, err := s.readDir(dir)
	if err != nil {
		return "", nil // scanFlat reports it
	}
	var subs []string
	for _, e := range ents {
		if _, ok := ParseName(e.Name()); ok || strings.Contains(e.Name(), ".tar") {
			return "", nil // WAL here: a directory of its own
		}
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := s.tree.Join(dir, e.Name())
		if s.isDir(s.tree.Join(sub, "wal_005")) || s.isDir(s.tree.Join(sub, "wals")) {
			subs, names = append(subs, sub), append(names, e.Name())
		}
	}
	switch len(subs) {
	case 0:
		return "", nil
	case 1:
		return subs[0], nil
	}
	return "", fmt.Errorf("%s: %w: several repositories (%s): name one", dir, ErrLayout, strings.Join(names, ", "))
}

// parentPath is the directory holding p: a URL's parent prefix for an
// object store's paths (scheme://bucket/a/b), else filepath.Dir.
func parentPath(p string) string {
	p = strings.TrimSuffix(p, "/")
	if i := strings.Index(p, "://"); i >= 0 {
		if j := strings.LastIndex(p[i+3:], "/"); j >= 0 {
			return p[:i+3+j]
		}
		return p
	}
	return filepath.Dir(p)
}

// scanFlat adds the WAL files of one directory; with tars, tar files too.
func (s *Source) scanFlat(dir string, layout Layout, tars bool) error {
	ents, err := s.readDir(dir)
	if err != nil {
		return err
	}
	for _, de := range ents {
		if de.IsDir() {
			if !skipsFolder(de.Name()) && !layoutFolder(layout, de.Name()) {
				s.notRead = append(s.notRead, NotRead{Path: s.tree.Join(dir, de.Name()), Reason: folderNotRead})
			}
			continue
		}
		p := s.tree.Join(dir, de.Name())
		n, named := ParseName(de.Name())
		if _, local := s.tree.(LocalTree); local && named && de.Type().IsRegular() {
			// A regular file by its directory entry (d_type): no lstat
			// while listing, which was a fifth of the time stats took a
			// switched segment (issue 16); the size is read if asked.
			s.entries = append(s.entries, &entry{key: p, name: n, layout: layout, file: p, lazySize: true})
			continue
		}
		info, err := de.Info()
		if err != nil {
			s.notRead = append(s.notRead, NotRead{Path: p, Reason: "could not be examined: " + err.Error()})
			continue
		}
		if !info.Mode().IsRegular() {
			if info, err = s.tree.Stat(p); err != nil || !info.Mode().IsRegular() {
				s.notRead = append(s.notRead, NotRead{Path: p, Reason: "not a regular file"})
				continue
			}
		}
		if named {
			s.entries = append(s.entries, &entry{key: p, name: n, layout: layout, file: p, size: info.Size()})
			continue
		}
		if tars && strings.Contains(de.Name(), ".tar") {
			if ok, _ := isTar(s.tree, p); ok {
				if err := s.addTar(p); err != nil {
					return err
				}
				continue
			}
			s.notRead = append(s.notRead, NotRead{Path: p, Reason: "named like a tar file but not one"})
			continue
		}
		if layout == LayoutBarman && de.Name() == "xlog.db" {
			continue // Barman's index, read by the layout
		}
		s.notRead = append(s.notRead, NotRead{Path: p, Reason: notReadReason(de.Name())})
	}
	return nil
}

// finish sorts the entries and the files not read, and builds the
// xlog.Source views.
func (s *Source) finish() {
	s.dirs = nil
	sort.SliceStable(s.notRead, func(i, j int) bool { return s.notRead[i].Path < s.notRead[j].Path })
	sort.SliceStable(s.entries, func(i, j int) bool {
		a, b := s.entries[i], s.entries[j]
		if a.name.History != b.name.History {
			return !a.name.History
		}
		if a.name.History {
			if a.name.TLI != b.name.TLI {
				return a.name.TLI < b.name.TLI
			}
			return a.key < b.key
		}
		if c := a.name.Segment.Compare(b.name.Segment); c != 0 {
			return c < 0 // as the names sort, without formatting them
		}
		if a.name.Partial != b.name.Partial {
			return !a.name.Partial
		}
		return false
	})
	s.byKey = make(map[string]*entry, len(s.entries))
	s.histories = map[xlog.TimeLineID]string{}
	s.files = s.files[:0]
	for _, e := range s.entries {
		if _, dup := s.byKey[e.key]; dup {
			continue
		}
		s.byKey[e.key] = e
		if e.missing {
			continue
		}
		if e.name.History {
			if _, ok := s.histories[e.name.TLI]; !ok {
				s.histories[e.name.TLI] = e.key
			}
			continue
		}
		// A compressed file's decompressed size is known once it is opened:
		// 0 lets the reader size its window by the segment size.
		size, _ := plainSize(e)
		s.files = append(s.files, xlog.SegmentFile{Name: e.name.Segment, Partial: e.name.Partial, Path: e.key, Size: size})
	}
}

// plainSize returns the stored size of an entry whose name says it is not
// compressed. Content decides in the end: a misnamed file only costs the
// reader smaller reads.
func plainSize(e *entry) (int64, bool) {
	if (e.name.Ext != "" && e.name.Ext != ".") || e.layout == LayoutBarman {
		return 0, false // Barman compresses without renaming
	}
	if e.member != nil {
		return e.member.size, true
	}
	if e.lazySize {
		return 0, true // not examined: the reader sizes its window by the segment
	}
	return e.size, true
}

// storedSize returns the bytes the entry stores, examining a file listed by
// its directory entry alone the first time it is asked (0 if it cannot be
// examined any more: opening it then says why).
func (e *entry) storedSize(t Tree) int64 {
	if e.lazySize {
		e.sizeOnce.Do(func() {
			if info, err := t.Stat(e.file); err == nil {
				e.size = info.Size()
			}
		})
	}
	return e.size
}

// rememberHead keeps the first bytes of a plain segment a reader opened,
// whole long page header's worth of WAL, for its quick fact: a reading and
// then the facts (verify) open each file once, not twice. Readers of two
// spans may open one file at once: the first keeps it.
func (e *entry) rememberHead(head []byte) {
	if len(head) < len(e.head) || !walLike(head[:len(e.head)]) || !e.headState.CompareAndSwap(0, 1) {
		return
	}
	copy(e.head[:], head)
	e.headState.Store(2)
}

// knownHead returns the first bytes rememberHead kept, if any.
func (e *entry) knownHead() ([]byte, bool) {
	if e.headState.Load() != 2 {
		return nil, false
	}
	return e.head[:], true
}

// ErrLayout reports a directory whose layout is ambiguous.
var ErrLayout = errors.New("ambiguous archive layout")
