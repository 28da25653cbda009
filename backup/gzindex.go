package backup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"

	"github.com/klauspost/compress/flate"
)

// Random access into a gzip-compressed tar (pg_basebackup -Ft -z or
// --compress=gzip, Barman's backup_compression gzip): the one pass that
// indexes the tar at Open also keeps, every gzipPointSpacing decompressed
// bytes or more, a point where inflating can resume (the deflate block
// boundary's compressed bit offset and the 32 KiB window before it,
// klauspost/compress/flate's InflateCheckpoint, as zlib's examples/zran.c
// keeps them). A member asked for later is inflated from the last point
// before it instead of from the beginning of the stream: pg_control is the
// last member of base.tar, so the index pass is a whole pass, and without
// the points every file the replay reads afterwards (a table's file, a big
// catalog) cost a second pass up to it.

const (
	// gzipPointSpacing is the least distance, in decompressed bytes,
	// between two kept points: a member is at most this far (plus one
	// deflate block) from the point it is inflated from.
	// A replay asks for a few dozen members in no particular order (the
	// catalogs, the relation's files, pg_control at the end), each
	// inflated from the point before it: at 1 MiB, about 20 MB for a
	// pgbench cluster's 340 MB tar read with an index file (gzfile.go),
	// against 19 MB at 4 MiB when the members passed on the way are kept.
	gzipPointSpacing = 1 << 20
	// gzipMaxPoints bounds the points kept (32 KiB of window each, so 32
	// MiB): beyond it every other point is dropped and the spacing doubles.
	gzipMaxPoints = 1024
)

// gzipPoint is where inflating a gzip file can resume.
type gzipPoint struct {
	unc     int64 // offset in the decompressed stream (all gzip members)
	deflate int64 // file offset of the deflate data of the member it is in
	cp      flate.InflateCheckpoint
}

// gzipIndex is the points of one gzip file, in stream order.
type gzipIndex struct {
	points  []gzipPoint
	spacing int64
}

// add keeps cp (its window copied: the decompressor reuses it) when it is
// far enough from the last point kept.
func (x *gzipIndex) add(deflate, memberUnc int64, cp flate.InflateCheckpoint) {
	unc := memberUnc + cp.UncompressedOffset
	if x.spacing == 0 {
		x.spacing = gzipPointSpacing
	}
	if cp.Final || (len(x.points) > 0 && unc-x.points[len(x.points)-1].unc < x.spacing) || (len(x.points) == 0 && unc < x.spacing) {
		return
	}
	if len(x.points) == gzipMaxPoints {
		kept := x.points[:0]
		for i := 1; i < len(x.points); i += 2 {
			kept = append(kept, x.points[i])
		}
		clear(x.points[len(kept):])
		x.points = kept
		x.spacing *= 2
	}
	cp.Window = append([]byte(nil), cp.Window...)
	x.points = append(x.points, gzipPoint{unc: unc, deflate: deflate, cp: cp})
}

// before is the last point at or before decompressed offset off (nil: the
// beginning of the file).
func (x *gzipIndex) before(off int64) *gzipPoint {
	if x == nil {
		return nil
	}
	i := sort.Search(len(x.points), func(i int) bool { return x.points[i].unc > off })
	if i == 0 {
		return nil
	}
	return &x.points[i-1]
}

// gzipReader reads a gzip file of one or more members, from its beginning
// (checking each member's CRC-32 and size, RFC 1952) or from a point of its
// index (no check: the point's member was checked whole at Open).
type gzipReader struct {
	f     *os.File
	br    *bufio.Reader // the compressed bytes
	start int64         // file offset br started reading at
	raw   int64         // bytes br read from the file
	fr    io.ReadCloser
	n     int64 // decompressed bytes read, from the beginning of the stream

	// the member being read
	memberUnc int64 // decompressed offset where it starts
	deflate   int64 // file offset of its deflate data
	check     bool  // read from its beginning: CRC-32 and size checked
	crc       uint32
	size      uint32

	index *gzipIndex // points are added to it (the index pass), or nil
	err   error
}

// newGzipReader reads f's gzip stream from its beginning, adding points to
// index when it is not nil.
func newGzipReader(f *os.File, index *gzipIndex) (*gzipReader, error) {
	z := &gzipReader{f: f, index: index}
	z.seek(0)
	if err := z.nextMember(true); err != nil {
		return nil, err
	}
	return z, nil
}

// resumeGzipReader reads f's gzip stream from point p.
func resumeGzipReader(f *os.File, p *gzipPoint) (*gzipReader, error) {
	z := &gzipReader{f: f, n: p.unc, memberUnc: p.unc - p.cp.UncompressedOffset, deflate: p.deflate}
	z.seek(p.deflate + p.cp.CompressedOffset)
	z.fr = flate.NewReaderOpts(z.br, flate.WithResumeFrom(p.cp))
	return z, nil
}

func (z *gzipReader) seek(off int64) {
	z.start, z.raw = off, 0
	r := &rawCounter{r: io.NewSectionReader(z.f, off, 1<<62), n: &z.raw}
	if z.br == nil {
		z.br = bufio.NewReaderSize(r, 256<<10)
	} else {
		z.br.Reset(r)
	}
}

// fileOff is the file offset of the next compressed byte: the decompressor
// is given br itself (its fastest path), and reads no further than it
// needs through it.
func (z *gzipReader) fileOff() int64 { return z.start + z.raw - int64(z.br.Buffered()) }

// rawCounter counts the bytes read from the file.
type rawCounter struct {
	r io.Reader
	n *int64
}

func (c *rawCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// nextMember reads a member's header (RFC 1952 section 2.3) and starts
// inflating its data; io.EOF when the file ends before another member.
func (z *gzipReader) nextMember(first bool) error {
	var h [10]byte
	n, err := io.ReadFull(z.br, h[:])
	if err != nil && !first {
		return io.EOF // the end, or a few trailing bytes (gzip -d ignores them)
	}
	if err != nil {
		return fmt.Errorf("gzip header at offset %d: %v", z.fileOff()-int64(n), unexpected(err))
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
		if !first {
			return io.EOF // trailing bytes after the last member, as gzip -d ignores them
		}
		return fmt.Errorf("gzip header at offset %d: not a gzip member (%x)", z.fileOff()-10, h[:3])
	}
	flg := h[3]
	skip := func(k int) error {
		if _, err := io.CopyN(io.Discard, z.br, int64(k)); err != nil {
			return fmt.Errorf("gzip header at offset %d: %v", z.fileOff(), unexpected(err))
		}
		return nil
	}
	if flg&0x04 != 0 { // FEXTRA
		var l [2]byte
		if _, err := io.ReadFull(z.br, l[:]); err != nil {
			return fmt.Errorf("gzip header at offset %d: %v", z.fileOff(), unexpected(err))
		}
		if err := skip(int(binary.LittleEndian.Uint16(l[:]))); err != nil {
			return err
		}
	}
	for _, bit := range []byte{0x08, 0x10} { // FNAME, FCOMMENT: zero-terminated
		if flg&bit == 0 {
			continue
		}
		for {
			c, err := z.br.ReadByte()
			if err != nil {
				return fmt.Errorf("gzip header at offset %d: %v", z.fileOff(), unexpected(err))
			}
			if c == 0 {
				break
			}
		}
	}
	if flg&0x02 != 0 { // FHCRC
		if err := skip(2); err != nil {
			return err
		}
	}
	z.memberUnc, z.deflate, z.check, z.crc, z.size = z.n, z.fileOff(), true, 0, 0
	var opts []flate.ReaderOpt
	if x := z.index; x != nil {
		deflate, memberUnc := z.deflate, z.memberUnc
		opts = append(opts, flate.WithEobCallback(func(cp flate.InflateCheckpoint) { x.add(deflate, memberUnc, cp) }))
	}
	z.fr = flate.NewReaderOpts(z.br, opts...)
	return nil
}

// Read reads decompressed bytes.
func (z *gzipReader) Read(p []byte) (int, error) {
	for {
		if z.err != nil {
			return 0, z.err
		}
		if z.fr == nil {
			if err := z.nextMember(false); err != nil {
				z.err = err
				return 0, err
			}
		}
		n, err := z.fr.Read(p)
		z.n += int64(n)
		if z.check {
			z.crc = crc32.Update(z.crc, crc32.IEEETable, p[:n])
			z.size += uint32(n)
		}
		if err == io.EOF {
			// the member's trailer: CRC-32 and size of its data
			var t [8]byte
			if _, err := io.ReadFull(z.br, t[:]); err != nil {
				z.err = fmt.Errorf("gzip trailer at offset %d: %v", z.fileOff(), unexpected(err))
				return n, nil
			}
			if z.check && (binary.LittleEndian.Uint32(t[:4]) != z.crc || binary.LittleEndian.Uint32(t[4:]) != z.size) {
				z.err = fmt.Errorf("the gzip member whose data starts at offset %d: the CRC-32 or size of its %d decompressed bytes differ from its trailer's", z.deflate, z.n-z.memberUnc)
				return n, nil
			}
			z.fr.Close()
			z.fr = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			var ce flate.CorruptInputError
			if errors.As(err, &ce) {
				err = fmt.Errorf("the deflate data of the gzip member starting at offset %d is damaged at offset %d", z.deflate, z.deflate+int64(ce))
			}
			z.err = err
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// Close releases the decompressor, not the file.
func (z *gzipReader) Close() error {
	if z.fr != nil {
		z.fr.Close()
		z.fr = nil
	}
	return nil
}
