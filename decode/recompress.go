package decode

import (
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Sizes of the image headers in a block reference (src/include/access/xlogrecord.h).
const (
	// ImageHeaderSize is SizeOfXLogRecordBlockImageHeader: bimg_len,
	// hole_offset and bimg_info, present with every image.
	ImageHeaderSize = 5
	// CompressHeaderSize is SizeOfXLogRecordBlockCompressHeader: the
	// hole_length that follows the image header of a compressed image
	// with a hole.
	CompressHeaderSize = 2
)

// ImageEstimate is the image PostgreSQL would store for a page under some
// wal_compression.
type ImageEstimate struct {
	StoredLen  int  // bimg_len: the stored image bytes, compressed or not
	Compressed bool // the image is stored compressed
	// ExtraHeader is CompressHeaderSize when the image is compressed and has
	// a hole, else 0: an uncompressed image implies its hole length.
	ExtraHeader int
}

// RecordBytes is what the image takes in its record: the image header, the
// compress header if any, and the image bytes.
func (e ImageEstimate) RecordBytes() int {
	return ImageHeaderSize + e.ExtraHeader + e.StoredLen
}

// Recompressor estimates the images PostgreSQL would have written under
// other wal_compression settings (XLogCompressBackupBlock in
// src/backend/access/transam/xloginsert.c). It keeps its compressors and
// buffers between calls; the zero value is ready to use and not safe for
// concurrent use.
type Recompressor struct {
	pglz    PGLZCompressor
	lz4     lz4.CompressorCCompat
	zstd    *zstd.Encoder
	src     []byte // the page without its hole
	dst     []byte // compressed output
	zstdErr error
}

// Estimate returns the image length PostgreSQL would store for page (a full
// BLCKSZ page, hole included) with the given hole under wal_compression =
// method, and whether it would be stored compressed. See EstimateImage.
func (r *Recompressor) Estimate(page []byte, holeOffset, holeLength int, method Compression) (storedLen int, compressed bool) {
	e := r.EstimateImage(page, holeOffset, holeLength, method)
	return e.StoredLen, e.Compressed
}

// EstimateImage is Estimate with the extra header bytes too, as
// XLogCompressBackupBlock decides it: the page without its hole, of
// orig_len = BLCKSZ - hole_length bytes, is compressed with pglz (bit-exact,
// PGLZ_strategy_default), lz4 (LZ4_compress_default: pierrec's
// CompressorCCompat at acceleration 1, which produces liblz4's bytes) or zstd
// (ZSTD_compress at ZSTD_CLEVEL_DEFAULT, 3: klauspost's SpeedDefault, close to
// but not byte-identical with libzstd), and kept only if the compressed
// length plus the 2-byte compress header (when there is a hole) is under
// orig_len; otherwise the image is stored uncompressed, orig_len bytes.
// CompressNone, and any unknown method, give the uncompressed image.
//
// holeOffset and holeLength must lie within the page; the hole's content is
// ignored.
func (r *Recompressor) EstimateImage(page []byte, holeOffset, holeLength int, method Compression) ImageEstimate {
	if holeLength == 0 {
		holeOffset = 0
	}
	if holeOffset < 0 || holeLength < 0 || holeOffset+holeLength > len(page) {
		panic("decode: Recompressor: hole outside the page")
	}
	origLen := len(page) - holeLength
	plain := ImageEstimate{StoredLen: origLen}
	if method != CompressPGLZ && method != CompressLZ4 && method != CompressZstd {
		return plain
	}
	source := page
	extra := 0
	if holeLength != 0 {
		r.src = append(append(r.src[:0], page[:holeOffset]...), page[holeOffset+holeLength:]...)
		source = r.src
		extra = CompressHeaderSize
	}

	n := -1
	switch method {
	case CompressPGLZ:
		var ok bool
		if r.dst, ok = r.pglz.Compress(r.dst[:0], source); ok {
			n = len(r.dst)
		}
	case CompressLZ4:
		// PostgreSQL's buffer holds LZ4_COMPRESSBOUND(BLCKSZ), so
		// compression never fails for want of room.
		r.dst = grow(r.dst, lz4.CompressBlockBound(len(source)))
		if m, err := r.lz4.CompressBlock(source, r.dst); err == nil && m > 0 {
			n = m
			r.dst = r.dst[:m]
		}
	case CompressZstd:
		if r.zstd == nil && r.zstdErr == nil {
			r.zstd, r.zstdErr = zstd.NewWriter(nil,
				zstd.WithEncoderLevel(zstd.SpeedDefault),
				zstd.WithEncoderConcurrency(1),
				zstd.WithEncoderCRC(false),
				zstd.WithSingleSegment(true))
		}
		if r.zstd == nil {
			return plain
		}
		r.dst = r.zstd.EncodeAll(source, r.dst[:0])
		n = len(r.dst)
	default:
		return plain
	}
	if n >= 0 && n+extra < origLen {
		return ImageEstimate{StoredLen: n, Compressed: true, ExtraHeader: extra}
	}
	return plain
}

// Compressed returns the compressed bytes of the last EstimateImage or
// Estimate call that compressed an image; they are valid until the next
// call. For pglz and lz4 they are PostgreSQL's bytes.
func (r *Recompressor) Compressed() []byte { return r.dst }
