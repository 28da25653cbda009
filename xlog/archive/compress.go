package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
	"github.com/walscope/walscope/xlog"

	"compress/bzip2"
)

// Compression names the format a file is stored in. It is always detected
// from the file's first bytes, never from its name.
type Compression string

// The formats read.
const (
	None   Compression = "none"
	Gzip   Compression = "gzip"   // RFC 1952, also several members (pigz)
	Zstd   Compression = "zstd"   // zstd frames
	LZ4    Compression = "lz4"    // lz4 frame format (lz4 CLI, wal-g, pgBackRest, pg_receivewal)
	Bzip2  Compression = "bzip2"  // bzip2 streams
	XZ     Compression = "xz"     // xz container
	LZMA   Compression = "lzma"   // legacy .lzma ("LZMA alone", wal-g's lzma method), which has no magic
	Brotli Compression = "brotli" // brotli streams, which have no magic
)

// Errors reported for files that cannot be read as WAL. They reach callers
// wrapped in an *Error naming the file.
var (
	// ErrEncrypted: the file carries an encryption envelope (OpenSSL's
	// "Salted__", as pgBackRest's repo-cipher-type writes; OpenPGP, as wal-g
	// and Barman write; age).
	ErrEncrypted = errors.New("encrypted")
	// ErrUnrecognized: the content is neither WAL nor in a known compression
	// format, or decompresses to something that is not WAL. wal-g's libsodium
	// envelope has no header, so encrypted files land here too.
	ErrUnrecognized = errors.New("encrypted or unrecognised content")
	// ErrTooLarge: the content is larger than the segment size its own long
	// page header gives (or than a history file can be): a decompression bomb
	// or a damaged file, refused before it is materialised.
	ErrTooLarge = errors.New("content larger than its segment size")
	// ErrChecksum: pgBackRest's SHA-1 in the file name does not match the
	// decompressed content.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrCorrupt: the compressed stream itself is damaged.
	ErrCorrupt = errors.New("corrupt compressed data")
)

// Error is a problem with one archive file. Path names the file (for a tar
// member, "archive.tar:member").
type Error struct {
	Path string
	Err  error  // one of the sentinels above, or an I/O error
	Msg  string // the detail, in words
	// NotRead, where nothing at Path is WAL (xlog.ErrNoSegments), are the
	// files found there that were not taken, with the reason (a segment
	// name on a device or a symbolic link to one, a folder, ...): the
	// error says why nothing was found, not only that.
	NotRead []NotRead
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = fmt.Sprint(e.Err)
	}
	return fmt.Sprintf("%s: %s%s", e.Path, msg, NotReadSummary(e.NotRead))
}

// NotReadSummary is "" or, for the error naming files not read, "; not
// read: " and the first few with their reasons.
func NotReadSummary(nr []NotRead) string {
	if len(nr) == 0 {
		return ""
	}
	const shown = 4
	var b strings.Builder
	b.WriteString("; not read: ")
	for i, n := range nr[:min(len(nr), shown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", n.Path, n.Reason)
	}
	if len(nr) > shown {
		fmt.Fprintf(&b, " and %d more", len(nr)-shown)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// sniffLen is how many leading bytes detection looks at.
const sniffLen = 64

// Magic numbers.
var (
	magicGzip    = []byte{0x1f, 0x8b}
	magicZstd    = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicLZ4     = []byte{0x04, 0x22, 0x4d, 0x18}
	magicLZ4Old  = []byte{0x02, 0x21, 0x4c, 0x18} // legacy frame, which lz4 -l writes
	magicBzip2   = []byte("BZh")
	magicXZ      = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	magicOpenSSL = []byte("Salted__")
	magicAge     = []byte("age-encryption.org/v1")
	magicPGPArm  = []byte("-----BEGIN PGP MESSAGE-----")
)

// detect names the format of a file from its first bytes. It returns the
// compression, or an encryption description, or neither (content to be tried
// as brotli or recognised as plain WAL or text by the caller).
func detect(head []byte) (c Compression, encrypted string) {
	switch {
	case bytes.HasPrefix(head, magicGzip):
		return Gzip, ""
	case bytes.HasPrefix(head, magicZstd):
		return Zstd, ""
	case bytes.HasPrefix(head, magicLZ4), bytes.HasPrefix(head, magicLZ4Old):
		return LZ4, ""
	case len(head) >= 4 && bytes.HasPrefix(head, magicBzip2) && head[3] >= '1' && head[3] <= '9':
		return Bzip2, ""
	case bytes.HasPrefix(head, magicXZ):
		return XZ, ""
	case len(head) >= 5 && head[0]&0xf0 == 0x50 && head[1] == 0x2a && head[2] == 0x4d && head[3] == 0x18:
		// A zstd or lz4 skippable frame first: both decoders skip it; zstd's
		// does for any frame sequence, so hand it to zstd.
		return Zstd, ""
	case bytes.HasPrefix(head, magicOpenSSL):
		return "", "OpenSSL envelope (\"Salted__\", as pgBackRest's repo-cipher-type writes)"
	case bytes.HasPrefix(head, magicAge):
		return "", "age envelope"
	case bytes.HasPrefix(head, magicPGPArm):
		return "", "OpenPGP message (ASCII armour)"
	}
	return "", ""
}

// pgpPacket reports whether b starts like a binary OpenPGP message, as gpg
// and wal-g's openpgp crypter write: a public-key encrypted session key
// packet (tag 1, version 3 or 6) or a symmetric-key one (tag 3, version 4 to
// 6, with a known cipher), in the old or the new packet format.
func pgpPacket(b []byte) bool {
	if len(b) < 8 || b[0]&0x80 == 0 {
		return false
	}
	var tag byte
	body := 0           // offset of the packet body
	if b[0]&0x40 == 0 { // old format: tag in bits 5-2, length type in bits 1-0
		tag = b[0] >> 2 & 0x0f
		switch b[0] & 3 {
		case 0:
			body = 2
		case 1:
			body = 3
		case 2:
			body = 5
		default:
			return false
		}
	} else { // new format
		tag = b[0] & 0x3f
		switch l := b[1]; {
		case l < 192:
			body = 2
		case l < 224:
			body = 3
		case l == 255:
			body = 6
		default:
			return false
		}
	}
	if body+2 >= len(b) {
		return false
	}
	v := b[body]
	switch tag {
	case 1:
		return v == 3 || v == 6
	case 3:
		return (v == 4 || v == 5 || v == 6) && b[body+1] >= 1 && b[body+1] <= 13
	}
	return false
}

// walLike reports whether b, the first bytes of some content, looks like the
// start of a WAL segment file: a long page header with a known magic, or with
// valid segment and page sizes (a damaged magic is the reader's to report),
// or zeros (a never-written file is the reader's to report too).
func walLike(b []byte) bool {
	if len(b) == 0 {
		return true // an empty file: the reader reports it
	}
	n := min(len(b), xlog.LongPageHeaderSize)
	if allZero(b[:n]) {
		return true
	}
	if len(b) < 2 {
		return false
	}
	magic := uint16(b[0]) | uint16(b[1])<<8
	if _, ok := xlog.VersionFromMagic(magic); ok {
		return true
	}
	h, ok := xlog.ParsePageHeader(b)
	return ok && h.Long() && xlog.ValidSegmentSize(h.SegmentSize) && xlog.ValidPageSize(h.PageSize)
}

// textLike reports whether b looks like a timeline history file: UTF-8 text.
func textLike(b []byte) bool {
	if !utf8.Valid(b) {
		// A multi-byte character may be cut at the end of the sniffed bytes.
		for i := 1; i <= 3 && i < len(b); i++ {
			if utf8.Valid(b[:len(b)-i]) {
				b = b[:len(b)-i]
				break
			}
		}
		if !utf8.Valid(b) {
			return false
		}
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// lzmaAlone reports whether b starts with a plausible .lzma header: a
// properties byte below 225, a dictionary size of 2^n or 2^n+2^(n-1) (as xz
// and wal-g write), and an uncompressed size that is unknown or at most 1 GiB
// plus a page.
func lzmaAlone(b []byte) bool {
	if len(b) < 13 || b[0] >= 9*5*5 {
		return false
	}
	dict := uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 | uint32(b[4])<<24
	if dict < 1<<12 || dict > 1<<30 {
		return false
	}
	pow := dict&(dict-1) == 0
	if !pow {
		hi := uint32(1) << (31 - leadingZeros32(dict))
		pow = dict == hi|hi>>1
	}
	if !pow {
		return false
	}
	var size uint64
	for i := 0; i < 8; i++ {
		size |= uint64(b[5+i]) << (8 * i)
	}
	return size == ^uint64(0) || size <= xlog.MaxSegmentSize+1<<16
}

func leadingZeros32(x uint32) int {
	n := 0
	for i := 31; i >= 0 && x&(1<<i) == 0; i-- {
		n++
	}
	return n
}

// What a stream is expected to hold.
type contentKind int

const (
	kindSegment contentKind = iota
	kindHistory
)

// historyLimit bounds a timeline history file's content.
const historyLimit = 1 << 20

// stream is a file's decompressed content, read once.
type stream struct {
	comp  Compression
	r     io.Reader
	trial bool // the format was guessed (brotli, lzma): failures mean "unrecognised"
	close func()
}

func (s *stream) Close() {
	if s.close != nil {
		s.close()
		s.close = nil
	}
}

// zstdDecoders pools zstd decoders: each decodes synchronously (no
// goroutine), with windows up to the largest segment.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(xlog.MaxSegmentSize))
	if err != nil {
		panic(err)
	}
	return d
}}

// gzipReaders and lz4Readers pool the other decoders of segments: a fresh
// one per file costs its tables and buffers (gzip's Huffman tables and 32 KB
// window; lz4's frame state), about 5% of decompressing a segment, and
// garbage for the collector.
var (
	gzipReaders sync.Pool // *gzip.Reader, made by the first gzip.NewReader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// openStream detects the format of raw and returns its decompressed content.
// path names the file in errors.
func openStream(raw *bufio.Reader, path string, kind contentKind) (*stream, error) {
	head, err := raw.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, &Error{Path: path, Err: err, Msg: fmt.Sprintf("could not read: %v", err)}
	}
	c, enc := detect(head)
	if enc != "" {
		return nil, &Error{Path: path, Err: ErrEncrypted, Msg: "encrypted file: " + enc + "; walscope reads no encrypted WAL"}
	}
	if c == "" {
		plain := walLike(head)
		if kind == kindHistory {
			plain = textLike(head)
		}
		switch {
		case plain:
			c = None
		case pgpPacket(head):
			return nil, &Error{Path: path, Err: ErrEncrypted, Msg: "encrypted file: OpenPGP message (as wal-g's and Barman's gpg encryption write); walscope reads no encrypted WAL"}
		case lzmaAlone(head):
			c = LZMA
		default:
			c = Brotli
		}
	}
	s := &stream{comp: c, trial: c == Brotli || c == LZMA}
	s.r, s.close, err = newDecoder(c, raw)
	if err != nil {
		if s.trial {
			return nil, unrecognized(path, kind)
		}
		return nil, corrupt(path, c, err)
	}
	return s, nil
}

// newDecoder returns the decompressed content of raw.
func newDecoder(c Compression, raw io.Reader) (io.Reader, func(), error) {
	switch c {
	case Gzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(raw)
		} else {
			err = zr.Reset(raw)
		}
		if err != nil {
			return nil, nil, err
		}
		return zr, func() {
			zr.Close()
			gzipReaders.Put(zr)
		}, nil
	case Zstd:
		zr := zstdDecoders.Get().(*zstd.Decoder)
		if err := zr.Reset(raw); err != nil {
			zstdDecoders.Put(zr)
			return nil, nil, err
		}
		return zr, func() {
			if zr.Reset(nil) == nil {
				zstdDecoders.Put(zr)
			}
		}, nil
	case LZ4:
		lr := lz4Readers.Get().(*lz4.Reader)
		lr.Reset(raw)
		return lr, func() {
			lr.Reset(nil)
			lz4Readers.Put(lr)
		}, nil
	case Bzip2:
		return bzip2.NewReader(raw), nil, nil
	case XZ:
		// ReaderConfig.DictCap is a minimum here: each block header gives
		// the dictionary the decoder allocates, so the headers are lowered
		// to what a WAL file can need first (xzDictCapped).
		xr, err := xz.NewReader(newXZDictCapped(raw, xlog.MaxSegmentSize))
		return xr, nil, err
	case LZMA:
		// DictCap is a maximum here; the reader also keeps the dictionary
		// within the size the header declares.
		lr, err := lzma.ReaderConfig{DictCap: xlog.MaxSegmentSize}.NewReader(raw)
		return lr, nil, err
	case Brotli:
		return brotli.NewReader(raw), nil, nil
	}
	return raw, nil, nil
}

func corrupt(path string, c Compression, err error) error {
	return &Error{Path: path, Err: ErrCorrupt, Msg: fmt.Sprintf("corrupt %s data: %v", c, err)}
}

func unrecognized(path string, kind contentKind) error {
	what := "WAL"
	if kind == kindHistory {
		what = "a timeline history file"
	}
	return &Error{Path: path, Err: ErrUnrecognized, Msg: fmt.Sprintf(
		"encrypted or unrecognised file: neither %s nor %s compressed with gzip, zstd, lz4, bzip2, xz, lzma or brotli (wal-g's libsodium encryption has no header)",
		what, what)}
}

// readErr turns an error of the decompressed stream into the file's error.
func (s *stream) readErr(path string, kind contentKind, err error) error {
	if s.trial {
		return unrecognized(path, kind)
	}
	if s.comp == None {
		return &Error{Path: path, Err: err, Msg: fmt.Sprintf("could not read: %v", err)}
	}
	return corrupt(path, s.comp, err)
}

// readHead reads up to len(b) bytes, returning the stream's own error (io.EOF
// for a clean end), where io.ReadFull would turn a clean end into
// io.ErrUnexpectedEOF and hide a decoder's.
func readHead(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// checkHead checks that the first bytes of a stream's content are the
// expected kind of content.
func checkHead(s *stream, path string, kind contentKind, head []byte) error {
	ok := walLike(head)
	if kind == kindHistory {
		ok = textLike(head)
	}
	if ok && !(s.trial && len(head) == 0) {
		return nil
	}
	if s.comp == None || s.trial {
		return unrecognized(path, kind)
	}
	return &Error{Path: path, Err: ErrUnrecognized, Msg: fmt.Sprintf(
		"encrypted or unrecognised file: its %s content is not %s", s.comp, map[contentKind]string{kindSegment: "WAL", kindHistory: "a timeline history file"}[kind])}
}

// segmentLimit is the largest content a segment file may have once its first
// bytes are known: the long header's segment size, or the smallest segment
// size when the header does not give a valid one (the reader then reports the
// header; the first megabyte is all it needs).
func segmentLimit(head []byte) int {
	if h, ok := xlog.ParsePageHeader(head); ok && h.Long() && xlog.ValidSegmentSize(h.SegmentSize) {
		return int(h.SegmentSize)
	}
	return xlog.MinSegmentSize
}

// zeroHead reports whether a segment's first bytes are a whole long page
// header's worth of zeros: a zero-filled segment, as pg_wal holds the next
// ones ready (XLogFileInit with wal_init_zero), where no header gives a size.
func zeroHead(head []byte) bool {
	return len(head) == xlog.LongPageHeaderSize && allZero(head)
}

// listLimit is the largest content a segment file may have where it is read
// to its end without being kept (ls, SHA-1 checks): segmentLimit, except that
// a zero-filled segment may be of any segment size, up to the largest (issue
// 17: a 16 MB zero-filled segment, pg_wal's next one at the default size,
// was "too-large" for ls).
func listLimit(head []byte) int {
	if zeroHead(head) {
		return xlog.MaxSegmentSize
	}
	return segmentLimit(head)
}

// limitReason says where a segment's bound comes from, for the too-large
// message: only a valid long page header gives a segment size.
func limitReason(head []byte, limit int) string {
	if h, ok := xlog.ParsePageHeader(head); ok && h.Long() && xlog.ValidSegmentSize(h.SegmentSize) {
		return fmt.Sprintf("the segment size of %d bytes that its long page header gives", limit)
	}
	if zeroHead(head) && limit == xlog.MaxSegmentSize {
		return fmt.Sprintf("%d bytes, the largest segment size (its first page is zeros: no header gives its own)", limit)
	}
	if zeroHead(head) {
		return fmt.Sprintf("%d bytes, all a reader takes of a segment whose first page is zeros (no header gives its size)", limit)
	}
	return fmt.Sprintf("%d bytes, the smallest segment size (its first page has no long header giving a valid one)", limit)
}

// content is what a full read of a stream found.
type content struct {
	data []byte // the content, when materialised
	size int64
	head []byte // the first LongPageHeaderSize bytes (fewer if the content is shorter)
}

// readAll reads a stream to its end, checking that it holds the expected kind
// of content and bounding it: a segment by the segment size of its long
// header, a history file by historyLimit. With keep it materialises the
// content in a buffer never larger than that bound plus one byte; otherwise it
// hands each piece to sink. partial files may end inside a compressed stream.
func readAll(s *stream, path string, kind contentKind, keep, partial bool, sink func([]byte)) (*content, error) {
	head := make([]byte, xlog.LongPageHeaderSize)
	n, err := readHead(s.r, head)
	head = head[:n]
	if err != nil && err != io.EOF && !(partial && errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil, s.readErr(path, kind, err)
	}
	if err := checkHead(s, path, kind, head); err != nil {
		return nil, err
	}
	limit := historyLimit
	if kind == kindSegment {
		limit = segmentLimit(head)
		if !keep {
			limit = listLimit(head)
		}
	}
	c := &content{head: head, size: int64(n)}
	if sink != nil {
		sink(head)
	}
	var buf []byte
	if keep {
		// A segment's buffer is its whole bound at once, from a pool:
		// growing it by doubling copied and cleared every segment about
		// three times over.
		if kind == kindSegment {
			buf = getSegmentBuffer(limit + 1)[:n]
		} else {
			buf = make([]byte, n, min(limit+1, max(64<<10, n)))
		}
		copy(buf, head)
	}
	chunk := make([]byte, 0)
	if !keep {
		chunk = make([]byte, 64<<10)
	}
	for err == nil {
		var m int
		if keep {
			if len(buf) == cap(buf) {
				if cap(buf) > limit {
					break
				}
				nb := make([]byte, len(buf), min(2*cap(buf), limit+1))
				copy(nb, buf)
				buf = nb
			}
			m, err = s.r.Read(buf[len(buf):cap(buf)])
			if sink != nil {
				sink(buf[len(buf) : len(buf)+m])
			}
			buf = buf[:len(buf)+m]
		} else {
			m, err = s.r.Read(chunk)
			if sink != nil {
				sink(chunk[:m])
			}
		}
		c.size += int64(m)
		if c.size > int64(limit) {
			break
		}
	}
	if c.size > int64(limit) {
		what := limitReason(head, limit)
		if kind == kindHistory {
			what = fmt.Sprintf("%d bytes, too large for a timeline history file", limit)
		}
		return nil, &Error{Path: path, Err: ErrTooLarge, Msg: fmt.Sprintf(
			"refused: its content is larger than %s (%s)", what, map[bool]string{true: "a decompression bomb or a damaged file", false: "a damaged file"}[s.comp != None])}
	}
	if err != nil && err != io.EOF {
		if !(partial && errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, s.readErr(path, kind, err)
		}
	}
	c.data = buf
	return c, nil
}

// segmentBuffers pools the buffers segments are decompressed into, one pool
// per capacity (a segment size plus one byte: sizes are powers of two from
// 1 MB to 1 GB).
var segmentBuffers [32]sync.Pool

func bufferClass(capacity int) int {
	c := 0
	for 1<<c < capacity-1 {
		c++
	}
	return c
}

func getSegmentBuffer(capacity int) []byte {
	cls := bufferClass(capacity)
	if b, ok := segmentBuffers[cls].Get().(*[]byte); ok && cap(*b) >= capacity {
		return (*b)[:0]
	}
	return make([]byte, 0, capacity)
}

func putSegmentBuffer(b []byte) {
	if cap(b) == 0 {
		return
	}
	segmentBuffers[bufferClass(cap(b))].Put(&b)
}

// memFile is a materialised segment. Bytes lets the reader use it in place;
// Close returns its buffer to the pool, so nothing may use the bytes after.
type memFile struct {
	data   []byte
	pooled bool
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("archive: negative offset")
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memFile) Bytes() []byte { return m.data }

func (m *memFile) Size() int64 { return int64(len(m.data)) }

func (m *memFile) Close() error {
	if m.pooled {
		putSegmentBuffer(m.data)
	}
	m.data, m.pooled = nil, false
	return nil
}
