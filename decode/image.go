package decode

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/walscope/walscope/xlog"
)

// ErrImage is the sentinel of image restoration errors: every error
// AppendPage returns matches it (errors.Is).
var ErrImage = errors.New("could not restore block image")

// ImageError reports a block image that could not be restored. It matches
// ErrImage, and Err, the decompressor's own error, is reachable through it
// with errors.Is and errors.As (ErrPGLZ for pglz; lz4's and zstd's errors,
// such as lz4.ErrInvalidSourceShortBuffer or zstd.ErrMagicMismatch).
type ImageError struct {
	LSN   xlog.LSN // the record's LSN
	Block uint8    // the block reference's id
	Msg   string   // xlogreader's wording, e.g. "could not decompress image at 0/1000028, block 0"
	// Err is why decompression failed: the decompressor's error, or an
	// error saying it produced the wrong length; nil when the image was not
	// decompressed (no image, a hole outside the page, an unknown method).
	Err error
}

// Error returns "could not restore block image: " and Msg; the cause is not
// repeated, so that the message stays PostgreSQL's.
func (e *ImageError) Error() string { return ErrImage.Error() + ": " + e.Msg }

// Unwrap returns ErrImage and, if any, the decompressor's error.
func (e *ImageError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrImage}
	}
	return []error{ErrImage, e.Err}
}

type imageDecoders struct {
	zstd *zstd.Decoder
	buf  []byte
}

// AppendPage appends the full BLCKSZ page that block b's image stands for:
// decompressed, with its hole filled with zeros (RestoreBlockImage in
// xlogreader.c). Decompression never produces more than a page.
func (d *Decoder) AppendPage(dst []byte, rec *Record, b *BlockRef) ([]byte, error) {
	blcksz := d.BlockSize
	fail := func(cause error, format string, args ...any) ([]byte, error) {
		return dst, &ImageError{LSN: rec.LSN, Block: b.ID, Msg: fmt.Sprintf(format, args...), Err: cause}
	}
	// decompressFailed is the error of a failed decompression: the
	// decompressor's, or one about the length it produced.
	decompressFailed := func(err error, n int) ([]byte, error) {
		if err == nil {
			err = fmt.Errorf("%s image decompressed to %d bytes, want %d", b.Compression, n, blcksz-int(b.HoleLength))
		}
		return fail(err, "could not decompress image at %s, block %d", rec.LSN, b.ID)
	}
	if !b.HasImage {
		return fail(nil, "block %d has no image", b.ID)
	}
	if int(b.HoleOffset)+int(b.HoleLength) > blcksz || int(b.HoleLength) > blcksz {
		return fail(nil, "could not decompress image at %s, block %d", rec.LSN, b.ID)
	}
	want := blcksz - int(b.HoleLength)
	raw := b.Image
	switch b.Compression {
	case CompressNone:
		if len(raw) != want {
			return fail(nil, "could not restore image at %s, block %d", rec.LSN, b.ID)
		}
	case CompressPGLZ:
		d.images.buf = grow(d.images.buf, want)
		n, err := PGLZDecompress(raw, d.images.buf[:want], true)
		if err != nil || n != want {
			return decompressFailed(err, n)
		}
		raw = d.images.buf[:want]
	case CompressLZ4:
		d.images.buf = grow(d.images.buf, want)
		n, err := lz4.UncompressBlock(raw, d.images.buf[:want])
		if err != nil || n != want {
			return decompressFailed(err, n)
		}
		raw = d.images.buf[:want]
	case CompressZstd:
		if d.images.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(blcksz)+1024),
				zstd.WithDecoderMaxWindow(1<<20))
			if err != nil {
				return fail(err, "%v", err)
			}
			d.images.zstd = z
		}
		out, err := d.images.zstd.DecodeAll(raw, d.images.buf[:0])
		if cap(out) > cap(d.images.buf) {
			d.images.buf = out[:0]
		}
		if err != nil || len(out) != want {
			return decompressFailed(err, len(out))
		}
		raw = out
	default:
		return fail(nil, "could not restore image at %s compressed with unknown method, block %d", rec.LSN, b.ID)
	}
	ho := int(b.HoleOffset)
	if b.HoleLength == 0 {
		return append(dst, raw...), nil
	}
	dst = append(dst, raw[:ho]...)
	dst = append(dst, make([]byte, b.HoleLength)...)
	return append(dst, raw[ho:]...), nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
