package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compression is how a file of a backup is compressed, told by its magic.
type compression int

const (
	compNone compression = iota
	compGzip
	compLZ4
	compZstd
	compBzip2
)

func (c compression) String() string {
	return [...]string{"none", "gzip", "lz4", "zstd", "bzip2"}[c]
}

// sniff tells the compression from a file's first bytes.
func sniff(head []byte) compression {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return compGzip
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		return compLZ4
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return compZstd
	case bytes.HasPrefix(head, []byte("BZh")):
		return compBzip2
	}
	return compNone
}

// decompress returns a reader of r's decompressed bytes; closing it
// releases the decompressor, not r.
func decompress(c compression, r io.Reader) (io.ReadCloser, error) {
	switch c {
	case compGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		return zr, nil
	case compLZ4:
		return io.NopCloser(lz4.NewReader(r)), nil
	case compZstd:
		// one goroutine: the stream is read in order, and a member at a
		// time is asked for
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		return zr.IOReadCloser(), nil
	case compBzip2:
		return io.NopCloser(bzip2.NewReader(r)), nil
	}
	return io.NopCloser(r), nil
}

// tarMember is one entry of a tar archive of the backup.
type tarMember struct {
	arc       *tarArchive
	name      string // as in the tar (for errors)
	off, size int64  // the data's offset in the (decompressed) tar stream
	typ       byte
	link      string
	mem       []byte // kept at indexing (small members of compressed tars)
}

// tarArchive is one tar file of a pg_basebackup -Ft backup: base.tar, OID.tar
// (a tablespace) or pg_wal.tar, maybe compressed.
type tarArchive struct {
	path   string
	prefix string // data-directory prefix of its members: "", "pg_tblspc/OID/", "pg_wal/"
	comp   compression
	f      *os.File
	size   int64

	// the decompressing stream of a compressed archive, and how far it is
	zr  io.ReadCloser
	zc  *countReader
	pos int64

	gz            *gzipIndex   // a gzip archive's resume points (gzindex.go)
	byOff         []*tarMember // its small members not kept by the index pass, by offset (skipTo)
	fromIndexFile string       // the index file gz and the members were read from (gzfile.go), or ""
	inflated      int64        // bytes decompressed to extract members (tests)
}

// openStream starts decompressing a compressed archive for reading from
// decompressed offset off: from the last resume point before it (a gzip
// archive), else from the beginning.
func (a *tarArchive) openStream(off int64) (io.ReadCloser, *countReader, error) {
	if a.comp == compGzip {
		if p := a.gz.before(off); p != nil {
			z, err := resumeGzipReader(a.f, p)
			if err != nil {
				return nil, nil, err
			}
			return z, &countReader{r: z, n: p.unc}, nil
		}
		z, err := newGzipReader(a.f, nil)
		if err != nil {
			return nil, nil, err
		}
		return z, &countReader{r: z}, nil
	}
	if _, err := a.f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	zr, err := decompress(a.comp, bufio.NewReaderSize(a.f, 256<<10))
	if err != nil {
		return nil, nil, err
	}
	return zr, &countReader{r: zr}, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// countReadSeeker is a countReader over a plain file: archive/tar skips
// member data by seeking, and the count follows.
type countReadSeeker struct {
	f *os.File
	n int64
}

func (c *countReadSeeker) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReadSeeker) Seek(off int64, whence int) (int64, error) {
	p, err := c.f.Seek(off, whence)
	if err == nil {
		c.n = p
	}
	return p, err
}

// tarIndexLimits bounds what the index pass keeps in memory.
type tarIndexLimits struct {
	keepSmall int64 // total bytes of small members of a compressed tar kept
}

// indexTar reads the headers of a tar stream r (one pass) and calls add
// for each member, with the data of small members when keep says so, else
// with the member's data to read (or not) as body.
// It returns a wrapped ErrDamaged for a truncated or malformed tar.
func indexTar(r io.Reader, pos func() int64, keep func(size int64) bool, add func(h *tar.Header, off int64, data []byte, body io.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: tar header near offset %d of the tar: %v", ErrDamaged, pos(), err)
		}
		if h.Typeflag == tar.TypeGNUSparse || h.Size < 0 {
			return fmt.Errorf("%w: tar member %s: sparse or negative size", ErrDamaged, h.Name)
		}
		off := pos()
		var data []byte
		if h.Typeflag == tar.TypeReg && keep != nil && keep(h.Size) {
			data = make([]byte, h.Size)
			if _, err := io.ReadFull(tr, data); err != nil {
				return fmt.Errorf("%w: tar member %s at offset %d of the tar: %v", ErrDamaged, h.Name, off, unexpected(err))
			}
		}
		if err := add(h, off, data, tr); err != nil {
			return err
		}
	}
}

// tarStore is a pg_basebackup -Ft backup: base.tar, one tar per tablespace
// and maybe pg_wal.tar, each maybe compressed (gzip, LZ4, zstd; the client's
// or the server's compression give the same files), indexed in one pass
// over each tar.
type tarStore struct {
	backup   string
	archives []*tarArchive
	members  map[string]*tarMember      // by data-directory-relative name
	children map[string][]string        // directory -> names in it, sorted
	kids     map[string]map[string]bool // the same while indexing
	extras   map[string]string          // files beside the tars (backup_manifest) -> their path
	cache    *extractCache
	handles  *handles
	spilled  int64 // bytes decompressed into the cache by the index pass
	stashed  int64 // bytes of small members kept by skipTo

	indexSaveErr error // why a gzip tar's index file was not written (tests)
}

// What the index pass of a compressed tar without resume points (LZ4,
// zstd, bzip2: their decoders cannot resume in the middle of a frame)
// decompresses into the cache as it goes: each member of at most
// spillLimit bytes (catalogs, small tables: what the replay reads after
// Open), up to spillBudget bytes in all and a quarter of
// Options.CacheBytes. A bigger member is decompressed when asked for, by
// a second pass over the stream up to it.
const (
	spillLimit  = 16 << 20
	spillBudget = 256 << 20
	stashBudget = 64 << 20
)

// tarNames are the names pg_basebackup gives a tar, compressed or not.
var tarSuffixes = []string{".tar", ".tar.gz", ".tgz", ".tar.lz4", ".tar.zst", ".tar.bz2"}

// findTars lists the tars of a pg_basebackup -Ft directory: base first.
func findTars(dir string) (base string, others map[string]string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	others = map[string]string{}
	for _, e := range ents {
		n := e.Name()
		for _, suf := range tarSuffixes {
			stem, ok := strings.CutSuffix(n, suf)
			if !ok {
				continue
			}
			switch {
			case stem == "base":
				base = n
			case stem == "pg_wal" || isOID(stem):
				others[stem] = n
			}
		}
	}
	return base, others, nil
}

func isOID(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func openTarStore(backup, dir string, cache *extractCache) (*tarStore, error) {
	base, others, err := findTars(dir)
	if err != nil {
		return nil, err
	}
	if base == "" {
		return nil, errorf(backup, "", -1, ErrNotBackup, "no base.tar in %s", dir)
	}
	s := &tarStore{backup: backup, members: map[string]*tarMember{}, children: map[string][]string{},
		kids: map[string]map[string]bool{}, extras: map[string]string{}, cache: cache, handles: newHandles(16)}
	budget := int64(64 << 20)
	add := func(name, prefix string) error {
		p := dir + string(os.PathSeparator) + name
		a, err := s.indexArchive(p, prefix, &budget)
		if err != nil {
			return err
		}
		s.archives = append(s.archives, a)
		return nil
	}
	if err := add(base, ""); err != nil {
		s.close()
		return nil, err
	}
	stems := make([]string, 0, len(others))
	for stem := range others {
		stems = append(stems, stem)
	}
	sort.Strings(stems)
	for _, stem := range stems {
		prefix := "pg_tblspc/" + stem + "/"
		if stem == "pg_wal" {
			prefix = "pg_wal/"
		}
		if err := add(others[stem], prefix); err != nil {
			s.close()
			return nil, err
		}
	}
	if _, err := os.Stat(dir + "/backup_manifest"); err == nil {
		s.extras["backup_manifest"] = dir + "/backup_manifest"
		s.addName("backup_manifest")
	}
	for d, kids := range s.kids {
		names := make([]string, 0, len(kids))
		for n := range kids {
			names = append(names, n)
		}
		sort.Strings(names)
		s.children[d] = names
	}
	s.kids = nil
	return s, nil
}

// addName records name (and its parent directories) in the tree.
func (s *tarStore) addName(name string) {
	for name != "." {
		dir, base := path.Dir(name), path.Base(name)
		kids := s.kids[dir]
		if kids == nil {
			kids = map[string]bool{}
			s.kids[dir] = kids
		}
		if kids[base] {
			return
		}
		kids[base] = true
		name = dir
	}
}

func (s *tarStore) indexArchive(p, prefix string, budget *int64) (*tarArchive, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &tarArchive{path: p, prefix: prefix, f: f, size: st.Size()}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	a.comp = sniff(head[:n])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	// a gzip tar indexed by an earlier run (gzfile.go): its members and
	// resume points read back instead of inflating it
	var id gzipFileID
	var saved *gzipTarIndex
	if a.comp == compGzip && s.cache.indexDir != "" {
		if id, err = identify(f, st); err == nil {
			if x := loadGzipTarIndex(s.cache.indexDir, id); x != nil {
				a.gz, a.fromIndexFile = &x.gz, x.path
				for _, e := range x.entries {
					if err := s.addMember(a, prefix, &tar.Header{Name: e.name, Linkname: e.link, Size: e.size, Typeflag: e.typ}, e.off, nil, nil); err != nil {
						f.Close()
						return nil, &Error{Backup: s.backup, File: p, Offset: -1, Err: err}
					}
				}
				return a, nil
			}
			saved = &gzipTarIndex{id: id}
		}
	}
	var r io.Reader
	var pos func() int64
	var keep func(int64) bool
	if a.comp == compNone {
		c := &countReadSeeker{f: f}
		r, pos = c, func() int64 { return c.n }
	} else {
		var zr io.ReadCloser
		if a.comp == compGzip {
			// resume points kept as the pass goes (gzindex.go)
			a.gz = &gzipIndex{}
			zr, err = newGzipReader(f, a.gz)
		} else {
			zr, err = decompress(a.comp, bufio.NewReaderSize(f, 256<<10))
		}
		if err != nil {
			f.Close()
			return nil, errorf(s.backup, p, 0, ErrDamaged, "%s: %v", a.comp, err)
		}
		defer zr.Close()
		c := &countReader{r: zr}
		r, pos = c, func() int64 { return c.n }
		keep = func(size int64) bool {
			if size > memLimit || size > *budget {
				return false
			}
			*budget -= size
			return true
		}
	}
	err = indexTar(r, pos, keep, func(h *tar.Header, off int64, data []byte, body io.Reader) error {
		if saved != nil {
			saved.entries = append(saved.entries, tarEntry{name: h.Name, link: h.Linkname, off: off, size: h.Size, typ: h.Typeflag})
		}
		return s.addMember(a, prefix, h, off, data, body)
	})
	if err != nil {
		f.Close()
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Backup: s.backup, File: p, Offset: -1, Err: err}
	}
	if a.comp == compGzip {
		// the rest of the stream (the tar's end blocks): its CRC-32 is
		// checked at its end
		if _, err := io.Copy(io.Discard, r); err != nil {
			f.Close()
			return nil, errorf(s.backup, p, -1, ErrDamaged, "%v", err)
		}
		if saved != nil {
			// read whole and checked: kept for the next run (without it,
			// that run indexes the tar again)
			saved.total, saved.gz = pos(), *a.gz
			s.indexSaveErr = saveGzipTarIndex(s.cache.indexDir, saved)
		}
	}
	if a.comp != compNone {
		// the data of an uncompressed archive is read with ReadAt; a
		// compressed one's stream is reopened when a member is asked for
		a.pos = 0
	}
	return a, nil
}

// addMember records a member of archive a (data-directory prefix prefix)
// read by the index pass, or from an index file (data and body nil): a
// small member of an LZ4, zstd or bzip2 tar is decompressed into the
// cache as the pass goes.
func (s *tarStore) addMember(a *tarArchive, prefix string, h *tar.Header, off int64, data []byte, body io.Reader) error {
	name, ok := cleanName(h.Name)
	if !ok || name == "." {
		return nil
	}
	if a.comp == compNone && off+h.Size > a.size {
		return fmt.Errorf("%w: tar member %s: %d bytes at offset %d beyond the file's %d", ErrDamaged, h.Name, h.Size, off, a.size)
	}
	full := prefix + name
	if prefix != "" {
		full = path.Clean(full)
	}
	m := &tarMember{arc: a, name: h.Name, off: off, size: h.Size, typ: h.Typeflag, link: h.Linkname, mem: data}
	// a stream without resume points: members of up to spillLimit bytes
	// are decompressed into the cache as the pass goes, not in a second
	// pass when asked for
	spill := body != nil && a.comp != compNone && a.comp != compGzip
	if spill && data == nil && h.Typeflag == tar.TypeReg && h.Size > memLimit && h.Size <= spillLimit &&
		s.spilled+h.Size <= s.cache.limit/4 && s.spilled+h.Size <= spillBudget && s.cache.get(a.path+"\x00"+h.Name) == nil {
		s.spilled += h.Size
		if _, err := s.cache.put(a.path+"\x00"+h.Name, body, h.Size); err != nil {
			// not kept (a temporary directory that cannot be
			// written, ...): the member is decompressed when asked
			// for, and a damaged stream fails the next header
			s.spilled = spillBudget
		}
	}
	if h.Typeflag == tar.TypeDir && s.kids[full] == nil {
		s.kids[full] = map[string]bool{}
	}
	s.members[full] = m
	s.addName(full)
	return nil
}

func (s *tarStore) stat(name string) (int64, error) {
	if p, ok := s.extras[name]; ok {
		st, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	m, ok := s.members[name]
	if !ok {
		return 0, notExist(name)
	}
	if m.typ != tar.TypeReg && m.typ != tar.TypeRegA {
		return 0, fmt.Errorf("%s: tar member of type %q, not a file", name, m.typ)
	}
	return m.size, nil
}

func (s *tarStore) open(name string) (file, error) {
	if p, ok := s.extras[name]; ok {
		f, size, err := s.handles.get(p)
		if err != nil {
			return nil, err
		}
		return osFile{f, size}, nil
	}
	m, ok := s.members[name]
	if !ok {
		return nil, notExist(name)
	}
	switch m.typ {
	case tar.TypeReg, tar.TypeRegA:
	case tar.TypeDir:
		return nil, fmt.Errorf("%s: a directory", name)
	default:
		return nil, fmt.Errorf("%s: tar member of type %q, not a file", name, m.typ)
	}
	if m.mem != nil || m.size == 0 {
		return newMemFile(m.mem), nil
	}
	a := m.arc
	if a.comp == compNone {
		return sectionFile{a.f, m.off, m.size}, nil
	}
	key := a.path + "\x00" + m.name
	if c := s.cache.get(key); c != nil {
		return c, nil
	}
	c, err := s.extract(m, key)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// extract decompresses member m of a compressed archive into the cache:
// the archive's stream is moved forward to it (restarted when it is
// behind).
func (s *tarStore) extract(m *tarMember, key string) (*cached, error) {
	a := m.arc
	// the stream as it is when it is not past the member and no resume
	// point is nearer
	if p := a.gz.before(m.off); a.zr == nil || a.zc.n > m.off || (p != nil && p.unc > a.zc.n) {
		if a.zr != nil {
			a.zr.Close()
			a.zr = nil
		}
		zr, zc, err := a.openStream(m.off)
		if err != nil {
			return nil, errorf(s.backup, a.path, 0, ErrDamaged, "%s: %v", a.comp, err)
		}
		a.zr, a.zc = zr, zc
	}
	a.inflated += m.off + m.size - a.zc.n
	if err := s.skipTo(a, m); err != nil {
		a.zr.Close()
		a.zr = nil
		return nil, errorf(s.backup, a.path, a.zc.n, ErrDamaged, "%s stream: %v", a.comp, unexpected(err))
	}
	c, err := s.cache.put(key, a.zc, m.size)
	if err != nil {
		a.zr.Close()
		a.zr = nil
		return nil, errorf(s.backup, a.path+":"+m.name, m.off, ErrDamaged, "%v", err)
	}
	return c, nil
}

// skipTo moves a's stream forward to member target's data, keeping in
// the cache the small members it passes (up to stashBudget bytes in all):
// members the index pass did not keep (the tar was indexed by an earlier
// run, gzfile.go, or the pass's budget was spent) are asked for in no
// particular order (the catalogs of a replay: pg_class, then pg_type
// further on, then pg_attribute before it), and each one behind the
// stream would cost inflating again from the resume point before it.
func (s *tarStore) skipTo(a *tarArchive, target *tarMember) error {
	if a.byOff == nil {
		for _, m := range s.members {
			if m.arc == a && m.typ == tar.TypeReg && m.size > 0 && m.size <= memLimit && m.mem == nil {
				a.byOff = append(a.byOff, m)
			}
		}
		sort.Slice(a.byOff, func(i, j int) bool { return a.byOff[i].off < a.byOff[j].off })
	}
	i := sort.Search(len(a.byOff), func(i int) bool { return a.byOff[i].off >= a.zc.n })
	for ; i < len(a.byOff) && s.stashed < stashBudget; i++ {
		m := a.byOff[i]
		if m.off+m.size > target.off {
			break
		}
		key := a.path + "\x00" + m.name
		if s.cache.get(key) != nil {
			continue
		}
		if err := advanceTo(a, m); err != nil {
			return err
		}
		if _, err := s.cache.put(key, a.zc, m.size); err != nil {
			return err
		}
		s.stashed += m.size
	}
	return advanceTo(a, target)
}

// errNotItsHeader: the 512 bytes before a member's data, in the stream
// read from a resume point, are not that member's tar header.
var errNotItsHeader = errors.New("not its tar header")

// advanceTo moves a's stream forward to member m's data, checking the tar
// header before it when the stream passes it (its checksum, type and
// size): members and resume points read from an index file that is not
// this tar's (gzfile.go), or a resume point kept wrongly, give an error
// rather than other bytes.
func advanceTo(a *tarArchive, m *tarMember) error {
	if at := m.off - 512; at >= a.zc.n {
		if _, err := io.CopyN(io.Discard, a.zc, at-a.zc.n); err != nil {
			return err
		}
		var h [512]byte
		if _, err := io.ReadFull(a.zc, h[:]); err != nil {
			return err
		}
		if !isHeaderOf(h[:], m) {
			err := fmt.Errorf("%w: member %s at offset %d of the tar", errNotItsHeader, m.name, m.off)
			if a.fromIndexFile != "" {
				// the next run indexes the tar again
				os.Remove(a.fromIndexFile)
				err = fmt.Errorf("%w, by the index file %s an earlier run kept (removed: run again)", err, a.fromIndexFile)
			}
			return err
		}
	}
	_, err := io.CopyN(io.Discard, a.zc, m.off-a.zc.n)
	return err
}

// isHeaderOf tells whether h is a ustar or GNU tar header block (POSIX
// 1003.1 ustar: the name at 0 and its prefix at 345, the size at 124, the
// checksum at 148, the type at 156) of m's name, type and size. A name of
// 100 bytes or more (kept whole in an extended header before it, the
// block's own field holding some part of it) and a size in base-256 (over
// 8 GiB) are not compared.
func isHeaderOf(h []byte, m *tarMember) bool {
	if len(m.name) < 100 {
		name := string(bytes.TrimRight(h[:100], "\x00"))
		if string(h[257:263]) == "ustar\x00" {
			if prefix := bytes.TrimRight(h[345:500], "\x00"); len(prefix) > 0 {
				name = string(prefix) + "/" + name
			}
		}
		if name != m.name {
			return false
		}
	}
	octal := func(f []byte) (int64, bool) {
		f = bytes.Trim(f, " \x00")
		if len(f) == 0 {
			return 0, false
		}
		var v int64
		for _, c := range f {
			if c < '0' || c > '7' || v > 1<<58 {
				return 0, false
			}
			v = v<<3 | int64(c-'0')
		}
		return v, true
	}
	sum, ok := octal(h[148:156])
	if !ok {
		return false
	}
	var got int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		got += int64(c)
	}
	if got != sum {
		return false
	}
	typ := h[156]
	if typ == tar.TypeRegA {
		typ = tar.TypeReg
	}
	want := m.typ
	if want == tar.TypeRegA {
		want = tar.TypeReg
	}
	if typ != want {
		return false
	}
	if h[124]&0x80 != 0 {
		return true
	}
	size, ok := octal(h[124:136])
	return ok && size == m.size
}

// prefetch extracts the named members of compressed archives in one pass
// over each archive.
func (s *tarStore) prefetch(names []string) error {
	var ms []*tarMember
	for _, n := range names {
		if m, ok := s.members[n]; ok && m.mem == nil && m.arc.comp != compNone && m.typ == tar.TypeReg && m.size > 0 {
			if s.cache.get(m.arc.path+"\x00"+m.name) == nil {
				ms = append(ms, m)
			}
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].arc != ms[j].arc {
			return ms[i].arc.path < ms[j].arc.path
		}
		return ms[i].off < ms[j].off
	})
	for _, m := range ms {
		if _, err := s.extract(m, m.arc.path+"\x00"+m.name); err != nil {
			return err
		}
	}
	return nil
}

func (s *tarStore) list(dir string) ([]string, error) {
	kids, ok := s.children[dir]
	if !ok {
		if m, isMember := s.members[dir]; !isMember || m.typ != tar.TypeDir {
			return nil, notExist(dir)
		}
	}
	return append([]string(nil), kids...), nil
}

func (s *tarStore) close() error {
	for _, a := range s.archives {
		if a.zr != nil {
			a.zr.Close()
		}
		a.f.Close()
	}
	s.handles.closeAll()
	return nil
}
