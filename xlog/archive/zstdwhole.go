package archive

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/walscope/walscope/xlog"
)

// A segment compressed with zstd on its own (as archive_command, wal-g and
// pgBackRest store them) declares its size in the frame header. Such a file
// is decompressed in one call straight into the pooled segment buffer: the
// streaming decoder copies every byte once more through its window (a fifth
// of decompression's time). The output can never outgrow the buffer
// (WithDecodeAllCapLimit), so a file that lies about its size is refused as
// the streaming path refuses it.

// zstdWholeDecoders pools decoders for whole files.
var zstdWholeDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(xlog.MaxSegmentSize),
		zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxMemory(xlog.MaxSegmentSize+1))
	if err != nil {
		panic(err)
	}
	return d
}}

// zstdWholeMax bounds the compressed files read whole (a 64 MB segment's
// worth: larger ones, rare, stream without holding their compressed bytes).
const zstdWholeMax = 64 << 20

// compressedBuffers pools the compressed bytes read whole.
var compressedBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// openZstdWhole decompresses e's file in one call if it is a zstd file whose
// first frame declares its size; ok is false, with nothing read from br but
// what it had peeked, when the streaming path must take the file.
func (s *Source) openZstdWhole(e *entry, br *bufio.Reader) (f *memFile, ok bool, err error) {
	head, _ := br.Peek(sniffLen)
	if !bytes.HasPrefix(head, magicZstd) || e.name.Partial {
		return nil, false, nil
	}
	size := e.storedSize(s.tree)
	if size <= 0 || size > zstdWholeMax {
		return nil, false, nil
	}
	var h zstd.Header
	if h.Decode(head) != nil || !h.HasFCS || h.FrameContentSize == 0 || h.FrameContentSize > xlog.MaxSegmentSize {
		return nil, false, nil
	}
	cb := compressedBuffers.Get().(*bytes.Buffer)
	defer compressedBuffers.Put(cb)
	cb.Reset()
	// ReadFrom alone grows the buffer by doubling, copying it each time.
	cb.Grow(int(size) + bytes.MinRead)
	if _, err := cb.ReadFrom(io.LimitReader(br, size+1)); err != nil {
		return nil, true, &Error{Path: e.key, Err: err, Msg: fmt.Sprintf("could not read: %v", err)}
	}
	// The long page header, from the first block, bounds the content as it
	// bounds the streaming path's: the buffer holds a segment plus one byte,
	// and content beyond it is refused without being decompressed.
	zr := zstdDecoders.Get().(*zstd.Decoder)
	hb := make([]byte, xlog.LongPageHeaderSize)
	n, herr := 0, zr.Reset(bytes.NewReader(cb.Bytes()))
	if herr == nil {
		n, herr = readHead(zr, hb)
	}
	if zr.Reset(nil) == nil {
		zstdDecoders.Put(zr)
	}
	st := &stream{comp: Zstd}
	if herr != nil && herr != io.EOF {
		return nil, true, corrupt(e.key, Zstd, herr)
	}
	if err := checkHead(st, e.key, kindSegment, hb[:n]); err != nil {
		return nil, true, err
	}
	limit := segmentLimit(hb[:n])
	tooLarge := &Error{Path: e.key, Err: ErrTooLarge, Msg: fmt.Sprintf(
		"refused: its content is larger than %s (a decompression bomb or a damaged file)", limitReason(hb[:n], limit))}
	if h.FrameContentSize > uint64(limit) {
		return nil, true, tooLarge
	}
	buf := getSegmentBuffer(limit + 1)
	dec := zstdWholeDecoders.Get().(*zstd.Decoder)
	out, derr := dec.DecodeAll(cb.Bytes(), buf[:0])
	zstdWholeDecoders.Put(dec)
	fail := func(err error) (*memFile, bool, error) {
		putSegmentBuffer(buf)
		return nil, true, err
	}
	switch {
	case errors.Is(derr, zstd.ErrDecoderSizeExceeded) || len(out) > limit:
		return fail(tooLarge)
	case derr != nil:
		return fail(corrupt(e.key, Zstd, derr))
	}
	if e.name.SHA1 != "" {
		sum := sha1.Sum(out)
		if got := hex.EncodeToString(sum[:]); got != e.name.SHA1 {
			return fail(&Error{Path: e.key, Err: ErrChecksum, Msg: fmt.Sprintf(
				"SHA-1 of the decompressed content is %s, but the file name says %s: the file was altered or damaged", got, e.name.SHA1)})
		}
	}
	return &memFile{data: out, pooled: true}, true, nil
}
