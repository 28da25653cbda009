package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/walscope/walscope/internal/outfile"
)

// A gzip tar's index kept between runs (Options.IndexDir): what the one
// pass over a gzip'd tar at Open learns, the tar's members (name, offset,
// size, type, link) and the resume points of gzindex.go with their 32 KiB
// windows, written to a file of ours once the pass has read the whole
// stream and checked every member's CRC-32. A later Open of the same file
// reads that instead of inflating the tar again (0.3 s for pg_basebackup
// -z's 340 MB tar of a pgbench cluster at scale 20, on one core): a member
// asked for is then inflated from the last point before it, as after a
// pass. The file is the same when its size, its modification time and the
// SHA-256 of its first and last 64 KiB are; its CRC-32 is not checked
// again (the pass checked it, and the file has not changed since).
//
// One index file a gzip file, named by its identity, written to a
// temporary name and renamed (a run reading it meanwhile, or killed
// meanwhile, sees the old file or none); a file that does not decode
// (damaged, cut short, of another version) is ignored and made again. The
// directory keeps at most indexFilesKept files and indexBytesKept bytes,
// least recently used removed first; nothing else in it is touched.

const (
	indexFileMagic  = "walscope gzip tar index 1\n"
	indexFileSuffix = ".gztar-index"
	indexTempPrefix = ".tmp-gztar-index-" // a file being written
	indexEndsBytes  = 64 << 10
	indexFilesKept  = 64
	indexBytesKept  = 512 << 20
	// bounds a decoded file must respect: no real index comes near them,
	// and a damaged count cannot make us allocate beyond them
	indexMaxMembers = 1 << 24
	indexMaxName    = 1 << 16
)

// gzipFileID is what tells a gzip file apart from another, or from its
// earlier self.
type gzipFileID struct {
	size       int64
	mtime      int64 // UnixNano
	head, tail [sha256.Size]byte
}

// identify reads f's identity (its first and last 64 KiB).
func identify(f *os.File, st os.FileInfo) (gzipFileID, error) {
	id := gzipFileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	buf := make([]byte, min(indexEndsBytes, id.size))
	if _, err := f.ReadAt(buf, 0); err != nil {
		return id, err
	}
	id.head = sha256.Sum256(buf)
	if _, err := f.ReadAt(buf, id.size-int64(len(buf))); err != nil {
		return id, err
	}
	id.tail = sha256.Sum256(buf)
	return id, nil
}

// name is the index file's name: the same content at another path (a
// copy) finds it, and its modification time is checked inside.
func (id gzipFileID) name() string {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(id.size))
	h.Write(n[:])
	h.Write(id.head[:])
	h.Write(id.tail[:])
	return hex.EncodeToString(h.Sum(nil)[:16]) + indexFileSuffix
}

// tarEntry is one header of a tar as the index pass read it.
type tarEntry struct {
	name, link string
	off, size  int64
	typ        byte
}

// gzipTarIndex is what an index file holds.
type gzipTarIndex struct {
	path    string // the file it was read from (loadGzipTarIndex)
	id      gzipFileID
	total   int64 // decompressed bytes of the whole stream
	entries []tarEntry
	gz      gzipIndex
}

var errIndexFile = errors.New("not a walscope gzip tar index")

// encode appends x's file to b: the magic, the fields, and the CRC-32C of
// all before it.
func (x *gzipTarIndex) encode(b []byte) []byte {
	b = append(b, indexFileMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(x.id.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(x.id.mtime))
	b = append(b, x.id.head[:]...)
	b = append(b, x.id.tail[:]...)
	b = binary.AppendUvarint(b, uint64(x.total))
	b = binary.AppendUvarint(b, uint64(len(x.entries)))
	for _, e := range x.entries {
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = binary.AppendUvarint(b, uint64(len(e.link)))
		b = append(b, e.link...)
		b = binary.AppendUvarint(b, uint64(e.off))
		b = binary.AppendUvarint(b, uint64(e.size))
		b = append(b, e.typ)
	}
	b = binary.AppendUvarint(b, uint64(x.gz.spacing))
	b = binary.AppendUvarint(b, uint64(len(x.gz.points)))
	for _, p := range x.gz.points {
		b = binary.AppendUvarint(b, uint64(p.unc))
		b = binary.AppendUvarint(b, uint64(p.deflate))
		b = binary.AppendUvarint(b, uint64(p.cp.UncompressedOffset))
		b = binary.AppendUvarint(b, uint64(p.cp.CompressedOffset))
		b = append(b, p.cp.BitOffset)
		b = binary.AppendUvarint(b, uint64(len(p.cp.Window)))
		b = append(b, p.cp.Window...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32c))
}

// decodeGzipTarIndex reads an index file's bytes; errIndexFile for
// anything but a whole, consistent file of this version.
func decodeGzipTarIndex(b []byte) (*gzipTarIndex, error) {
	if len(b) < len(indexFileMagic)+4 || !bytes.HasPrefix(b, []byte(indexFileMagic)) {
		return nil, errIndexFile
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crc32c) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errIndexFile
	}
	d := indexDecoder{b: body[len(indexFileMagic):]}
	x := &gzipTarIndex{}
	x.id.size = int64(d.u64())
	x.id.mtime = int64(d.u64())
	copy(x.id.head[:], d.bytes(sha256.Size))
	copy(x.id.tail[:], d.bytes(sha256.Size))
	x.total = d.offset(1 << 62)
	n := d.count(indexMaxMembers)
	// room for what the bytes left can hold (5 bytes an entry at least),
	// not for what a damaged count says
	x.entries = make([]tarEntry, 0, min(n, len(d.b)/5))
	for i := 0; i < n && d.err == nil; i++ {
		var e tarEntry
		e.name = string(d.bytes(d.count(indexMaxName)))
		e.link = string(d.bytes(d.count(indexMaxName)))
		e.off = d.offset(x.total)
		e.size = d.offset(x.total - e.off)
		e.typ = d.byte()
		x.entries = append(x.entries, e)
	}
	x.gz.spacing = d.offset(1 << 62)
	n = d.count(gzipMaxPoints)
	for i := 0; i < n && d.err == nil; i++ {
		var p gzipPoint
		p.unc = d.offset(x.total)
		p.deflate = d.offset(x.id.size)
		p.cp.UncompressedOffset = d.offset(p.unc)
		p.cp.CompressedOffset = d.offset(x.id.size - p.deflate)
		p.cp.BitOffset = d.byte()
		p.cp.Window = d.bytes(d.count(32 << 10))
		if p.cp.BitOffset > 7 || (len(x.gz.points) > 0 && p.unc <= x.gz.points[len(x.gz.points)-1].unc) {
			d.err = errIndexFile
		}
		x.gz.points = append(x.gz.points, p)
	}
	if d.err != nil || len(d.b) != 0 || x.id.size <= 0 {
		return nil, errIndexFile
	}
	return x, nil
}

// indexDecoder reads an index file's fields; the first failure sticks.
type indexDecoder struct {
	b   []byte
	err error
}

func (d *indexDecoder) bytes(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = errIndexFile
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *indexDecoder) u64() uint64 {
	if v := d.bytes(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *indexDecoder) byte() byte {
	if v := d.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *indexDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errIndexFile
		return 0
	}
	d.b = d.b[n:]
	return v
}

// offset is a value from 0 to most.
func (d *indexDecoder) offset(most int64) int64 {
	v := d.uvarint()
	if most < 0 || v > uint64(most) {
		d.err = errIndexFile
		return 0
	}
	return int64(v)
}

// count is a count of at most most.
func (d *indexDecoder) count(most int) int {
	return int(d.offset(int64(most)))
}

// loadGzipTarIndex reads the index of the gzip file f (identity id) kept in
// dir; nil when there is none, or none that is whole and of this file.
func loadGzipTarIndex(dir string, id gzipFileID) *gzipTarIndex {
	p := filepath.Join(dir, id.name())
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	x, err := decodeGzipTarIndex(b)
	if err != nil || x.id != id {
		return nil
	}
	x.path = p
	now := time.Now()
	os.Chtimes(p, now, now) // recently used: pruned last
	return x
}

// saveGzipTarIndex writes x's file into dir (made if missing, 0700),
// through a temporary name, and prunes the directory. Errors are given
// back for the tests; Open goes on without the file.
func saveGzipTarIndex(dir string, x *gzipTarIndex) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// tracked by outfile: a run interrupted meanwhile (SIGINT, SIGTERM)
	// removes it; not synced: a file cut by a crash fails its CRC-32C
	// and is made again
	tmp, name, err := outfile.CreateTemp(dir, indexTempPrefix)
	if err != nil {
		return err
	}
	defer outfile.Untrack(name)
	_, err = tmp.Write(x.encode(nil))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = outfile.Guard(func() error { return os.Rename(name, filepath.Join(dir, x.id.name())) })
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	pruneIndexDir(dir, indexFilesKept, indexBytesKept)
	return nil
}

// pruneIndexDir removes the least recently used index files of dir beyond
// files files or bytes bytes, and temporary files of ours older than an
// hour (a run killed while writing). Nothing else in dir is touched.
func pruneIndexDir(dir string, files int, bytes int64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		name  string
		size  int64
		mtime time.Time
	}
	var ks []kept
	for _, e := range ents {
		n := e.Name()
		temp := strings.HasPrefix(n, indexTempPrefix)
		if !e.Type().IsRegular() || !temp && !strings.HasSuffix(n, indexFileSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if temp {
			if time.Since(info.ModTime()) > time.Hour {
				os.Remove(filepath.Join(dir, n))
			}
			continue
		}
		ks = append(ks, kept{n, info.Size(), info.ModTime()})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].mtime.After(ks[j].mtime) })
	var total int64
	for i, k := range ks {
		total += k.size
		if i >= files || total > bytes {
			os.Remove(filepath.Join(dir, k.name))
		}
	}
}
