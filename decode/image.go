package decode

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrImage is the sentinel of image restoration errors.
var ErrImage = errors.New("could not restore block image")

type imageDecoders struct {
	zstd *zstd.Decoder
	buf  []byte
}

// AppendPage appends the full BLCKSZ page that block b's image stands for:
// decompressed, with its hole filled with zeros (RestoreBlockImage in
// xlogreader.c). Decompression never produces more than a page.
func (d *Decoder) AppendPage(dst []byte, rec *Record, b *BlockRef) ([]byte, error) {
	blcksz := d.BlockSize
	fail := func(format string, args ...any) ([]byte, error) {
		return dst, fmt.Errorf("%w: %s", ErrImage, fmt.Sprintf(format, args...))
	}
	if !b.HasImage {
		return fail("block %d has no image", b.ID)
	}
	if int(b.HoleOffset)+int(b.HoleLength) > blcksz || int(b.HoleLength) > blcksz {
		return fail("could not decompress image at %s, block %d", rec.LSN, b.ID)
	}
	want := blcksz - int(b.HoleLength)
	raw := b.Image
	switch b.Compression {
	case CompressNone:
		if len(raw) != want {
			return fail("could not restore image at %s, block %d", rec.LSN, b.ID)
		}
	case CompressPGLZ:
		d.images.buf = grow(d.images.buf, want)
		n, err := PGLZDecompress(raw, d.images.buf[:want], true)
		if err != nil || n != want {
			return fail("could not decompress image at %s, block %d", rec.LSN, b.ID)
		}
		raw = d.images.buf[:want]
	case CompressLZ4:
		d.images.buf = grow(d.images.buf, want)
		n, err := lz4.UncompressBlock(raw, d.images.buf[:want])
		if err != nil || n != want {
			return fail("could not decompress image at %s, block %d", rec.LSN, b.ID)
		}
		raw = d.images.buf[:want]
	case CompressZstd:
		if d.images.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(blcksz)+1024),
				zstd.WithDecoderMaxWindow(1<<20))
			if err != nil {
				return fail("%v", err)
			}
			d.images.zstd = z
		}
		out, err := d.images.zstd.DecodeAll(raw, d.images.buf[:0])
		if cap(out) > cap(d.images.buf) {
			d.images.buf = out[:0]
		}
		if err != nil || len(out) != want {
			return fail("could not decompress image at %s, block %d", rec.LSN, b.ID)
		}
		raw = out
	default:
		return fail("could not restore image at %s compressed with unknown method, block %d", rec.LSN, b.ID)
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
