package decode_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Compress as PostgreSQL's pglz_compress with PGLZ_strategy_default does,
// byte for byte, reusing one compressor (and its output buffer) for many
// inputs without allocating; PGLZDecompress restores the input.
func ExamplePGLZCompressor() {
	var c decode.PGLZCompressor
	var out []byte
	for _, src := range [][]byte{
		bytes.Repeat([]byte("walscope "), 100),
		[]byte("too short to compress"),
	} {
		var ok bool
		out, ok = c.Compress(out[:0], src)
		if !ok { // PostgreSQL would store it uncompressed
			fmt.Printf("%d bytes: not compressed\n", len(src))
			continue
		}
		back := make([]byte, len(src))
		n, err := decode.PGLZDecompress(out, back, true)
		fmt.Printf("%d bytes: %d compressed, % x, restored %v\n", len(src), len(out), out, err == nil && n == len(src) && bytes.Equal(back, src))
	}
	// Output:
	// 900 bytes: 23 compressed, 00 77 61 6c 73 63 6f 70 65 1e 20 0f 09 ff 0f 09 ff 0f 09 ff 0f 09 36, restored true
	// 21 bytes: not compressed
}

// Size every full-page image of some WAL as PostgreSQL would have stored it
// under each wal_compression method (XLogCompressBackupBlock's rules: the
// hole left out, kept uncompressed unless compression saves bytes): the
// bytes the images take in their records, headers included. (This WAL was
// written with wal_compression = lz4.)
func ExampleRecompressor_EstimateImage() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	var rc decode.Recompressor
	var page []byte
	methods := []decode.Compression{decode.CompressNone, decode.CompressPGLZ, decode.CompressLZ4, decode.CompressZstd}
	bytesBy := make([]int, len(methods))
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		d, err := dec.Decode(rec)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := range d.Blocks {
			b := &d.Blocks[i]
			if !b.HasImage {
				continue
			}
			if page, err = dec.AppendPage(page[:0], d, b); err != nil {
				fmt.Println(err)
				return
			}
			for k, m := range methods {
				bytesBy[k] += rc.EstimateImage(page, int(b.HoleOffset), int(b.HoleLength), m).RecordBytes()
			}
		}
	}
	for k, m := range methods {
		fmt.Printf("%s: %d bytes\n", m, bytesBy[k])
	}
	// Output:
	// none: 442889 bytes
	// pglz: 210969 bytes
	// lz4: 239345 bytes
	// zstd: 139700 bytes
}
