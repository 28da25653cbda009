package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"github.com/walscope/walscope/xlog"
	"io"
	"path"
	"runtime"
	"sync"
)

// tarMember is one WAL file inside a tar file.
type tarMember struct {
	name    string
	ordinal int   // position among the tar's headers
	offset  int64 // where its data starts in an uncompressed tar; -1 in a compressed one
	size    int64
}

// tarArchive is a tar file, plain or compressed. Members of a compressed tar
// are read sequentially through cursors, each a decompressing stream that
// moves forward as readers open segments in order. A member is read from the
// idle cursor closest before it; when none is, a new cursor starts from the
// beginning (at most maxTarCursors exist: parallel readers each get one).
type tarArchive struct {
	tree Tree
	path string
	comp Compression // of the whole tar

	mu      sync.Mutex
	cond    *sync.Cond
	cursors []*tarCursor
}

var maxTarCursors = max(2, runtime.GOMAXPROCS(0))

type tarCursor struct {
	f    treeFile
	st   *stream
	tr   *tar.Reader
	next int // ordinal of the header tr.Next reads next
	busy bool
}

func (c *tarCursor) close() {
	c.st.Close()
	c.f.Close()
}

// outerCompression returns the compression of a whole file from its first
// bytes (formats with a magic only).
func outerCompression(f io.ReaderAt) (Compression, error) {
	head := make([]byte, sniffLen)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return "", err
	}
	c, _ := detect(head[:n])
	if c == "" {
		c = None
	}
	return c, nil
}

// isTar reports whether path is a tar file, plain or compressed.
func isTar(t Tree, p string) (bool, error) {
	f, err := openTree(t, p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	c, err := outerCompression(f)
	if err != nil {
		return false, err
	}
	r, closeDec, err := newDecoder(c, bufio.NewReader(f))
	if err != nil {
		return false, nil
	}
	if closeDec != nil {
		defer closeDec()
	}
	var blk [512]byte
	if _, err := io.ReadFull(r, blk[:]); err != nil {
		return false, nil
	}
	return bytes.Equal(blk[257:262], []byte("ustar")), nil
}

// countReader counts the bytes read from a file, and lets archive/tar skip
// member data by seeking.
type countReader struct {
	f treeFile
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) Seek(off int64, whence int) (int64, error) {
	pos, err := c.f.Seek(off, whence)
	if err == nil {
		c.n = pos
	}
	return pos, err
}

// addTar indexes the WAL files of a tar: members whose base name is a WAL
// segment or history file name, at any depth (pg_wal/<name> in a base backup,
// bare in pg_basebackup's pg_wal.tar). The other members are listed by
// NotRead: one by one in the tar's WAL folders (those holding a WAL file,
// and pg_wal/ or pg_xlog/ wherever they are), as scanFlat lists a folder's
// files; the rest (a base backup's data files) as one count; a tar holding
// no WAL file at all as itself.
func (s *Source) addTar(p string) error {
	f, err := s.open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	t := &tarArchive{tree: s.tree, path: p}
	if t.comp, err = outerCompression(f); err != nil {
		return err
	}
	var tr *tar.Reader
	cr := &countReader{f: f}
	if t.comp == None {
		tr = tar.NewReader(cr)
	} else {
		r, closeDec, err := newDecoder(t.comp, bufio.NewReaderSize(f, 256<<10))
		if err != nil {
			return &Error{Path: p, Err: ErrCorrupt, Msg: fmt.Sprintf("corrupt %s data: %v", t.comp, err)}
		}
		if closeDec != nil {
			defer closeDec()
		}
		tr = tar.NewReader(r)
	}
	var others []*tar.Header // members that are not WAL files (directories left out)
	walDirs := map[string]bool{}
	found := 0
	for ord := 0; ; ord++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &Error{Path: p, Err: ErrCorrupt, Msg: fmt.Sprintf("could not read the tar file: %v", err)}
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		n, ok := ParseName(path.Base(h.Name))
		if !ok || h.Typeflag != tar.TypeReg && h.Typeflag != '\x00' {
			others = append(others, h)
			continue
		}
		walDirs[memberDir(h.Name)] = true
		found++
		m := &tarMember{name: h.Name, ordinal: ord, offset: -1, size: h.Size}
		if t.comp == None {
			m.offset = cr.n
		}
		s.entries = append(s.entries, &entry{key: p + ":" + h.Name, name: n, layout: LayoutTar, file: p, tar: t, member: m, size: h.Size})
	}
	s.tars = append(s.tars, t)
	s.listTarOthers(p, others, walDirs, found)
	return nil
}

// memberDir is the folder of a tar member ("." at the top).
func memberDir(name string) string { return path.Dir(path.Clean(name)) }

// listTarOthers lists the members of the tar at p that are not read.
func (s *Source) listTarOthers(p string, others []*tar.Header, walDirs map[string]bool, found int) {
	if found == 0 {
		s.notRead = append(s.notRead, NotRead{Path: p, Reason: fmt.Sprintf("a tar file holding no WAL file (%d other members)", len(others))})
		return
	}
	rest := 0
	for _, h := range others {
		dir := memberDir(h.Name)
		if b := path.Base(dir); !walDirs[dir] && b != "pg_wal" && b != "pg_xlog" {
			rest++
			continue
		}
		reason := notReadReason(path.Base(h.Name))
		if h.Typeflag != tar.TypeReg && h.Typeflag != '\x00' {
			reason = "not a regular file"
			if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
				reason = "a link to " + h.Linkname + ": not a regular file"
			}
		}
		s.notRead = append(s.notRead, NotRead{Path: p + ":" + h.Name, Reason: reason})
	}
	if rest > 0 {
		s.notRead = append(s.notRead, NotRead{Path: p, Reason: fmt.Sprintf("%d other members outside its WAL folders (a base backup's files): not WAL", rest)})
	}
}

// member returns a reader of a member's raw bytes, and a function to call
// when done with it. The archive stays locked until then for compressed tars.
func (t *tarArchive) member(m *tarMember) (io.Reader, func(), error) {
	if m.offset >= 0 {
		f, err := openTree(t.tree, t.path)
		if err != nil {
			return nil, nil, err
		}
		return io.NewSectionReader(f, m.offset, m.size), func() { f.Close() }, nil
	}
	c, err := t.acquire(m.ordinal)
	if err != nil {
		return nil, nil, err
	}
	for {
		_, err := c.tr.Next()
		if err != nil {
			t.release(c, true)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, fmt.Errorf("could not read the tar file: %w", err)
		}
		o := c.next
		c.next++
		if o == m.ordinal {
			return io.LimitReader(c.tr, m.size), func() { t.release(c, false) }, nil
		}
	}
}

// acquire returns an idle cursor positioned at or before ordinal, marked
// busy: an existing one, a new one, or (when maxTarCursors exist) the idle
// one furthest ahead, restarted.
func (t *tarArchive) acquire(ordinal int) (*tarCursor, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for {
		var best, idle *tarCursor
		for _, c := range t.cursors {
			if c.busy {
				continue
			}
			if c.next <= ordinal && (best == nil || c.next > best.next) {
				best = c
			}
			if idle == nil || c.next > idle.next {
				idle = c
			}
		}
		if best != nil {
			best.busy = true
			return best, nil
		}
		if len(t.cursors) >= maxTarCursors {
			if idle == nil {
				t.cond.Wait()
				continue
			}
			t.drop(idle)
		}
		c, err := t.newCursor()
		if err != nil {
			return nil, err
		}
		c.busy = true
		t.cursors = append(t.cursors, c)
		return c, nil
	}
}

func (t *tarArchive) newCursor() (*tarCursor, error) {
	f, err := openTree(t.tree, t.path)
	if err != nil {
		return nil, err
	}
	r, closeDec, err := newDecoder(t.comp, bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &tarCursor{f: f, st: &stream{comp: t.comp, r: r, close: closeDec}, tr: tar.NewReader(r)}, nil
}

// drop closes a cursor and forgets it; t.mu is held.
func (t *tarArchive) drop(c *tarCursor) {
	c.close()
	for i, x := range t.cursors {
		if x == c {
			t.cursors = append(t.cursors[:i], t.cursors[i+1:]...)
			break
		}
	}
}

func (t *tarArchive) release(c *tarCursor, broken bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.busy = false
	if broken {
		t.drop(c)
	}
	t.cond.Broadcast()
}

// withStream hands the content stream of a member to fn.
func (t *tarArchive) withStream(e *entry, fn func(*stream) error) error {
	r, done, err := t.member(e.member)
	if err != nil {
		return &Error{Path: e.key, Err: err, Msg: err.Error()}
	}
	defer done()
	kind := kindSegment
	if e.name.History {
		kind = kindHistory
	}
	st, err := openStream(bufio.NewReaderSize(r, 64<<10), e.key, kind)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// open opens a member as a segment file: in place for a plain member of a
// plain tar, materialised otherwise.
func (t *tarArchive) open(e *entry) (xlog.File, error) {
	var out xlog.File
	err := t.withStream(e, func(st *stream) error {
		inPlace := st.comp == None && e.member.offset >= 0
		var c *content
		if !inPlace || e.name.SHA1 != "" {
			var err error
			if c, err = e.read(st, !inPlace); err != nil {
				return err
			}
		}
		if inPlace {
			f, err := openTree(t.tree, t.path)
			if err != nil {
				return err
			}
			out = &sectionFile{ReaderAt: io.NewSectionReader(f, e.member.offset, e.member.size), c: f}
			return nil
		}
		out = &memFile{data: c.data, pooled: true}
		return nil
	})
	return out, err
}

// close closes the idle cursors.
func (t *tarArchive) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range append([]*tarCursor(nil), t.cursors...) {
		if !c.busy {
			t.drop(c)
		}
	}
}

// sectionFile is an xlog.File over a reader at.
type sectionFile struct {
	io.ReaderAt
	c io.Closer
}

func (f *sectionFile) Close() error {
	if f.c != nil {
		return f.c.Close()
	}
	return nil
}
