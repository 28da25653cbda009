package decode_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/walscope/walscope/decode"
)

// TestRecompressorReal estimates every lz4 and zstd image of the real WAL
// (made by liblz4's LZ4_compress_default and libzstd's ZSTD_compress at level
// 3) from its rebuilt page with the same method, and compares the sizes. The
// sum of the estimates must be within 5% of the stored sum for each method.
// For lz4 it also checks byte identity: pierrec's CompressorCCompat, which
// the Recompressor uses, against the stored bytes, and for comparison
// pierrec's default Compressor.
func TestRecompressorReal(t *testing.T) {
	type tally struct {
		images, identical, defaultIdentical int
		stored, estimated, defaultSum       int
		worst                               float64 // largest |estimate/stored - 1|
		worstAt                             string
		worstAbs                            int // largest |estimate - stored|
		worstAbsAt                          string
		allStored, allEstimated             int // including the images stored uncompressed
		flips                               int // stored compressed, estimated uncompressed, or the reverse
		uncompressedChecked                 int
	}
	tallies := map[decode.Compression]*tally{decode.CompressLZ4: {}, decode.CompressZstd: {}}
	perSet := map[string]*[2]int{} // compressed images: stored, estimated
	var r decode.Recompressor
	var plain lz4.Compressor
	buf := make([]byte, lz4.CompressBlockBound(8192))
	for i := range realImages(t) {
		im := &realImages(t)[i]
		method := im.Compression
		if im.Compression == decode.CompressNone && im.Configured {
			// An image stored uncompressed in a set written with lz4 or
			// zstd: the estimate should leave it uncompressed too.
			switch im.Setting {
			case "lz4":
				method = decode.CompressLZ4
			case "zstd":
				method = decode.CompressZstd
			}
		}
		tl := tallies[method]
		if tl == nil {
			continue
		}
		e := r.EstimateImage(im.Page, im.HoleOffset, im.HoleLength, method)
		wantExtra := 0
		if e.Compressed && im.HoleLength > 0 {
			wantExtra = decode.CompressHeaderSize
		}
		if e.ExtraHeader != wantExtra || e.RecordBytes() != decode.ImageHeaderSize+wantExtra+e.StoredLen {
			t.Errorf("%s: %s: extra header %d, want %d", im.Set, im.LSN, e.ExtraHeader, wantExtra)
		}
		tl.allStored += len(im.Stored)
		tl.allEstimated += e.StoredLen
		if im.Compression == decode.CompressNone {
			tl.uncompressedChecked++
			if e.Compressed {
				tl.flips++
				t.Logf("%s: %s block %d: stored uncompressed (%d bytes), %s estimate %d", im.Set, im.LSN, im.ID, len(im.Stored), method, e.StoredLen)
			}
			continue
		}
		if perSet[im.Set] == nil {
			perSet[im.Set] = new([2]int)
		}
		perSet[im.Set][0] += len(im.Stored)
		perSet[im.Set][1] += e.StoredLen
		tl.images++
		tl.stored += len(im.Stored)
		tl.estimated += e.StoredLen
		if !e.Compressed {
			tl.flips++
			t.Logf("%s: %s block %d: stored %s (%d bytes), estimate uncompressed", im.Set, im.LSN, im.ID, method, len(im.Stored))
		}
		if d := float64(e.StoredLen)/float64(len(im.Stored)) - 1; abs(d) > abs(tl.worst) {
			tl.worst = d
			tl.worstAt = fmt.Sprintf("%s %s block %d: stored %d, estimate %d", im.Set, im.LSN, im.ID, len(im.Stored), e.StoredLen)
		}
		if d := e.StoredLen - len(im.Stored); max(d, -d) > max(tl.worstAbs, -tl.worstAbs) {
			tl.worstAbs = d
			tl.worstAbsAt = fmt.Sprintf("%s %s block %d: stored %d, estimate %d", im.Set, im.LSN, im.ID, len(im.Stored), e.StoredLen)
		}
		if method == decode.CompressLZ4 {
			if e.Compressed && bytes.Equal(r.Compressed(), im.Stored) {
				tl.identical++
			} else {
				t.Errorf("%s: %s block %d: lz4 output differs from liblz4's", im.Set, im.LSN, im.ID)
			}
			n, err := plain.CompressBlock(im.holeless(), buf)
			if err != nil {
				t.Fatal(err)
			}
			tl.defaultSum += n
			if bytes.Equal(buf[:n], im.Stored) {
				tl.defaultIdentical++
			}
		}
	}
	for _, set := range slices.Sorted(maps.Keys(perSet)) {
		p := perSet[set]
		t.Logf("%s: compressed images stored %d bytes, estimate %d (ratio %.4f)", set, p[0], p[1], float64(p[1])/float64(p[0]))
	}
	for _, m := range []decode.Compression{decode.CompressLZ4, decode.CompressZstd} {
		tl := tallies[m]
		if tl.images == 0 {
			t.Errorf("no %s image met", m)
			continue
		}
		ratio := float64(tl.estimated) / float64(tl.stored)
		t.Logf("%s: %d compressed images, stored %d bytes, Go estimate %d bytes (ratio %.4f); "+
			"worst image relative %+.1f%% (%s), absolute %+d bytes (%s); "+
			"with the %d images stored uncompressed: stored %d, estimate %d (ratio %.4f); "+
			"compressed/uncompressed decision differs on %d of %d images",
			m, tl.images, tl.stored, tl.estimated, ratio, 100*tl.worst, tl.worstAt, tl.worstAbs, tl.worstAbsAt,
			tl.uncompressedChecked, tl.allStored, tl.allEstimated, float64(tl.allEstimated)/float64(tl.allStored),
			tl.flips, tl.images+tl.uncompressedChecked)
		if m == decode.CompressLZ4 {
			t.Logf("lz4: CompressorCCompat byte-identical with liblz4 on %d of %d images; "+
				"pierrec's default Compressor on %d, its sizes sum to %d (ratio %.4f)",
				tl.identical, tl.images, tl.defaultIdentical, tl.defaultSum, float64(tl.defaultSum)/float64(tl.stored))
		}
		if ratio < 0.95 || ratio > 1.05 {
			t.Errorf("%s: estimated %d bytes against %d stored: not within 5%%", m, tl.estimated, tl.stored)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestRecompressorRules checks XLogCompressBackupBlock's decision on pages
// made for it: with and without a hole, kept compressed only when the
// compressed bytes plus the compress header are under the hole-less size.
func TestRecompressorRules(t *testing.T) {
	var r decode.Recompressor
	page := make([]byte, 8192)
	copy(page, "header bytes of a page")
	for i := 8000; i < 8192; i++ {
		page[i] = byte(i % 16)
	}
	for _, m := range []decode.Compression{decode.CompressPGLZ, decode.CompressLZ4, decode.CompressZstd} {
		e := r.EstimateImage(page, 24, 7976, m)
		if !e.Compressed || e.ExtraHeader != 2 || e.StoredLen >= 8192-7976-2 {
			t.Errorf("%s with a hole: %+v", m, e)
		}
		e = r.EstimateImage(page, 0, 0, m)
		if !e.Compressed || e.ExtraHeader != 0 || e.StoredLen >= 8192 {
			t.Errorf("%s without a hole: %+v", m, e)
		}
	}
	// A page of noise stays uncompressed: orig_len bytes, no extra header.
	noise := make([]byte, 8192)
	x := uint32(1)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	for _, m := range []decode.Compression{decode.CompressNone, decode.CompressPGLZ, decode.CompressLZ4, decode.CompressZstd} {
		if n, c := r.Estimate(noise, 100, 1000, m); c || n != 8192-1000 {
			t.Errorf("%s on noise: %d, %v", m, n, c)
		}
	}
	// pglz's own rule: an output of 75% or more fails. The hole-less
	// input here compresses to exactly what the page-level rule decides.
	var c decode.PGLZCompressor
	src := append(bytes.Clone(page[:24]), page[8000:]...)
	out, ok := c.Compress(nil, src)
	e := r.EstimateImage(page, 24, 7976, decode.CompressPGLZ)
	if !ok || e.StoredLen != len(out) || !bytes.Equal(r.Compressed(), out) {
		t.Errorf("pglz estimate %+v, compress %d bytes (ok %v)", e, len(out), ok)
	}
}

// TestRecompressorAllocs checks that estimates do not allocate once the
// Recompressor has warmed up.
func TestRecompressorAllocs(t *testing.T) {
	page := make([]byte, 8192)
	for i := range page {
		page[i] = byte(i / 64)
	}
	var r decode.Recompressor
	for _, m := range []decode.Compression{decode.CompressPGLZ, decode.CompressLZ4, decode.CompressZstd} {
		r.Estimate(page, 100, 200, m)
		if n := testing.AllocsPerRun(20, func() { r.Estimate(page, 100, 200, m) }); n != 0 {
			t.Errorf("%s: %v allocations per estimate", m, n)
		}
	}
}

// BenchmarkRecompressor estimates every real image's page under each
// method; MB/s counts hole-less input bytes.
func BenchmarkRecompressor(b *testing.B) {
	ims := realImages(b)
	total := 0
	for i := range ims {
		total += 8192 - ims[i].HoleLength
	}
	for _, m := range []decode.Compression{decode.CompressPGLZ, decode.CompressLZ4, decode.CompressZstd} {
		b.Run(m.String(), func(b *testing.B) {
			var r decode.Recompressor
			b.SetBytes(int64(total))
			for b.Loop() {
				for i := range ims {
					r.Estimate(ims[i].Page, ims[i].HoleOffset, ims[i].HoleLength, m)
				}
			}
		})
	}
}
