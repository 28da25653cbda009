package decode_test

import (
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// TestImageErrorCause checks that an image that fails to decompress gives
// an error that still matches ErrImage, keeps PostgreSQL's message, and
// wraps the decompressor's own error.
func TestImageErrorCause(t *testing.T) {
	const blcksz = 8192
	garbage := []byte{0xF0, 0x01, 0x02, 0x03} // no method's valid stream
	zd, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zd.Close()
	_, zstdErr := zd.DecodeAll(garbage, nil)
	_, lz4Err := lz4.UncompressBlock(garbage, make([]byte, blcksz))
	_, pglzErr := decode.PGLZDecompress([]byte{0x01, 0x00, 0x00}, make([]byte, blcksz), true)
	for _, tc := range []struct {
		c     decode.Compression
		image []byte
		cause error
	}{
		{decode.CompressPGLZ, []byte{0x01, 0x00, 0x00}, pglzErr}, // a tag with offset 0
		{decode.CompressLZ4, garbage, lz4Err},
		{decode.CompressZstd, garbage, zstdErr},
	} {
		if tc.cause == nil {
			t.Fatalf("%s: the decompressor accepts the test input", tc.c)
		}
		rec := &decode.Record{Record: &xlog.Record{LSN: 0x1000028}}
		b := &decode.BlockRef{ID: 3, HasImage: true, Compression: tc.c, Image: tc.image, ImageLen: uint16(len(tc.image))}
		_, err := decode.NewDecoder(blcksz).AppendPage(nil, rec, b)
		if err == nil {
			t.Fatalf("%s: corrupt image restored", tc.c)
		}
		if !errors.Is(err, decode.ErrImage) {
			t.Errorf("%s: %v does not match ErrImage", tc.c, err)
		}
		if !errors.Is(err, tc.cause) {
			t.Errorf("%s: %v does not wrap the decompressor's error %q", tc.c, err, tc.cause)
		}
		if want := "could not restore block image: could not decompress image at 0/1000028, block 3"; err.Error() != want {
			t.Errorf("%s: message %q, want %q", tc.c, err, want)
		}
		ie, ok := errors.AsType[*decode.ImageError](err)
		if !ok || ie.LSN != 0x1000028 || ie.Block != 3 {
			t.Errorf("%s: errors.As gives %+v, %v", tc.c, ie, ok)
		}
	}
	if !errors.Is(pglzErr, decode.ErrPGLZ) {
		t.Errorf("pglz error %v is not ErrPGLZ", pglzErr)
	}
}

// TestImageErrorLength checks that a decompression that produces the wrong
// length, with no error from the decompressor, still says why.
func TestImageErrorLength(t *testing.T) {
	const blcksz = 8192
	zc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	short := zc.EncodeAll(make([]byte, 100), nil) // a valid frame of 100 bytes, not a page
	rec := &decode.Record{Record: &xlog.Record{LSN: 0x2000000}}
	b := &decode.BlockRef{ID: 0, HasImage: true, Compression: decode.CompressZstd, Image: short, ImageLen: uint16(len(short))}
	_, err = decode.NewDecoder(blcksz).AppendPage(nil, rec, b)
	ie, ok := errors.AsType[*decode.ImageError](err)
	if !ok || ie.Err == nil || !errors.Is(err, decode.ErrImage) {
		t.Fatalf("short zstd image: %v (%+v)", err, ie)
	}
	t.Logf("cause: %v", ie.Err)
}
