package decode_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// realImage is one full-page image of the real WAL.
type realImage struct {
	Set     string // testwal set name
	Setting string // the set's wal_compression setting
	// Configured is true after the set's first shutdown checkpoint, the end
	// of initdb, whose WAL is written under the default wal_compression = off
	// before the set's setting is put in postgresql.conf.
	Configured  bool
	LSN         xlog.LSN
	ID          uint8
	Compression decode.Compression
	HoleOffset  int
	HoleLength  int
	Stored      []byte // the image bytes as stored
	Page        []byte // the rebuilt BLCKSZ page
}

// holeless returns the page with the hole removed, as PostgreSQL compresses it.
func (im *realImage) holeless() []byte {
	return append(append([]byte(nil), im.Page[:im.HoleOffset]...), im.Page[im.HoleOffset+im.HoleLength:]...)
}

// realImages returns every full-page image of every fixture and corpus,
// rebuilt, read once per test binary.
func realImages(t testing.TB) []realImage {
	t.Helper()
	imagesOnce.Do(func() { imagesCache, imagesErr = loadImages(t) })
	if imagesErr != "" {
		t.Fatal(imagesErr)
	}
	return imagesCache
}

var (
	imagesOnce  sync.Once
	imagesCache []realImage
	imagesErr   string
)

func loadImages(t testing.TB) ([]realImage, string) {
	var out []realImage
	for _, set := range testwal.Sets(t) {
		setting := ""
		if b, err := os.ReadFile(filepath.Join(set.Dir, "settings.txt")); err == nil {
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "wal_compression="); ok {
					setting = v
				}
			}
		}
		dir := testwal.Extract(t, set)
		src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
		if err != nil {
			return nil, err.Error()
		}
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
		if err != nil {
			return nil, err.Error()
		}
		dec := decode.NewDecoder(8192)
		configured := false
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !xlog.IsEndOfWAL(err) {
					r.Close()
					return nil, set.Name + ": " + err.Error()
				}
				break
			}
			d, err := dec.Decode(rec)
			if err != nil {
				r.Close()
				return nil, set.Name + ": " + err.Error()
			}
			if rec.Header.Rmid == 0 && rec.Header.Info&0xF0 == 0x00 { // XLOG CHECKPOINT_SHUTDOWN
				configured = true
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if !b.HasImage {
					continue
				}
				page, err := dec.AppendPage(nil, d, b)
				if err != nil {
					r.Close()
					return nil, set.Name + ": " + err.Error()
				}
				out = append(out, realImage{
					Set: set.Name, Setting: setting, Configured: configured, LSN: rec.LSN, ID: b.ID,
					Compression: b.Compression,
					HoleOffset:  int(b.HoleOffset), HoleLength: int(b.HoleLength),
					Stored: bytes.Clone(b.Image), Page: page,
				})
			}
		}
		r.Close()
	}
	return out, ""
}

// TestPGLZCompressOracle recompresses every pglz image of the real WAL, all
// made by PostgreSQL's pglz_compress on x86-64, and requires PGLZCompress to
// give the stored bytes exactly. In the sets written with wal_compression =
// pglz (or on), an image stored uncompressed after initdb must be one that
// PostgreSQL's pglz did not compress well enough, so the estimate must say so
// too. (initdb's own WAL is written with wal_compression off, the default.)
func TestPGLZCompressOracle(t *testing.T) {
	var c decode.PGLZCompressor
	var r decode.Recompressor
	var out []byte
	matched := map[string]int{}
	uncompressed := map[string]int{}
	for i := range realImages(t) {
		im := &realImages(t)[i]
		switch {
		case im.Compression == decode.CompressPGLZ:
			var ok bool
			out, ok = c.Compress(out[:0], im.holeless())
			if !ok || !bytes.Equal(out, im.Stored) {
				t.Errorf("%s: %s block %d (hole %d+%d): pglz gives %d bytes (ok %v), PostgreSQL stored %d",
					im.Set, im.LSN, im.ID, im.HoleOffset, im.HoleLength, len(out), ok, len(im.Stored))
				continue
			}
			if n, comp := r.Estimate(im.Page, im.HoleOffset, im.HoleLength, decode.CompressPGLZ); !comp || n != len(im.Stored) {
				t.Errorf("%s: %s block %d: estimate %d (compressed %v), stored %d", im.Set, im.LSN, im.ID, n, comp, len(im.Stored))
			}
			matched[im.Set]++
		case im.Compression == decode.CompressNone && im.Configured && (im.Setting == "pglz" || im.Setting == "on"):
			if n, comp := r.Estimate(im.Page, im.HoleOffset, im.HoleLength, decode.CompressPGLZ); comp || n != len(im.Stored) {
				t.Errorf("%s: %s block %d: stored uncompressed (%d bytes), estimate %d (compressed %v)",
					im.Set, im.LSN, im.ID, len(im.Stored), n, comp)
			}
			uncompressed[im.Set]++
		}
	}
	t.Logf("pglz images recompressed byte for byte: %v; uncompressed images pglz also leaves uncompressed: %v", matched, uncompressed)
	for _, name := range []string{"fixtures/pg15-replica-pglz-k-tl", "corpora/pg13-mixed"} {
		if matched[name] == 0 {
			t.Errorf("%s: no pglz image met", name)
		}
	}
}

// TestPGLZCompressRoundTrip compresses varied inputs and checks that the
// decompressor restores them, that failures are PostgreSQL's (short input,
// too little saving) and that a failure leaves dst as it was.
func TestPGLZCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c decode.PGLZCompressor
	prefix := []byte("prefix")
	for i := range 400 {
		n := rng.IntN(9000)
		src := make([]byte, n)
		switch i % 4 {
		case 0: // runs
			for j := range src {
				src[j] = byte(j / (1 + i%37))
			}
		case 1: // random bytes, incompressible
			for j := range src {
				src[j] = byte(rng.Uint32())
			}
		case 2: // a small alphabet, high bytes included for the signed hash
			for j := range src {
				src[j] = 0xF0 + byte(rng.IntN(4))
			}
		case 3: // repeated random words
			words := make([][]byte, 1+rng.IntN(20))
			for k := range words {
				words[k] = make([]byte, 1+rng.IntN(300))
				for m := range words[k] {
					words[k][m] = byte(rng.Uint32())
				}
			}
			src = src[:0]
			for len(src) < n {
				src = append(src, words[rng.IntN(len(words))]...)
			}
			src = src[:n]
		}
		out, ok := c.Compress(bytes.Clone(prefix), src)
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("case %d: prefix lost", i)
		}
		if !ok {
			if len(out) != len(prefix) {
				t.Fatalf("case %d: failure changed dst", i)
			}
			if n >= 64 && i%4 == 0 && i%37 >= 7 { // runs of 8 bytes or more
				t.Errorf("case %d (%d bytes): compressible input not compressed", i, n)
			}
			continue
		}
		comp := out[len(prefix):]
		if n < 32 || len(comp) >= n*75/100 {
			t.Fatalf("case %d: %d bytes compressed to %d", i, n, len(comp))
		}
		got := make([]byte, n)
		if m, err := decode.PGLZDecompress(comp, got, true); err != nil || m != n || !bytes.Equal(got, src) {
			t.Fatalf("case %d: round trip failed: %v", i, err)
		}
	}
	if _, ok := decode.PGLZCompress(nil, bytes.Repeat([]byte{'a'}, 31)); ok {
		t.Error("31 bytes compressed")
	}
	if out, ok := decode.PGLZCompress(nil, bytes.Repeat([]byte{'a'}, 32)); !ok || !bytes.Equal(out, []byte{0x02, 'a', 0x0F, 0x01, 13}) {
		t.Errorf("32 a's: %x %v", out, ok)
	}
}

// TestPGLZCompressAllocs checks that a held compressor does not allocate
// when dst has room.
func TestPGLZCompressAllocs(t *testing.T) {
	src := bytes.Repeat([]byte("walscope pglz "), 600)
	var c decode.PGLZCompressor
	dst := make([]byte, 0, len(src)+4)
	if n := testing.AllocsPerRun(20, func() {
		if _, ok := c.Compress(dst[:0], src); !ok {
			t.Fatal("not compressed")
		}
	}); n != 0 {
		t.Errorf("%v allocations per compression", n)
	}
}

// BenchmarkPGLZCompress compresses the hole-less pages of the real WAL's
// images, as PostgreSQL does for each full-page image under
// wal_compression = pglz, with the compressor (impl=walscope) and with the
// reference port it replaced (impl=reference, pglz_compress_ref_test.go),
// for benchstat -col /impl; MB/s counts input bytes. scripts/bench-pglz.sh
// compares with PostgreSQL's own C.
func BenchmarkPGLZCompress(b *testing.B) {
	var pages [][]byte
	total := 0
	for _, im := range realImages(b) {
		p := im.holeless()
		pages = append(pages, p)
		total += len(p)
	}
	var c decode.PGLZCompressor
	var ref refPGLZ
	for _, impl := range []struct {
		name     string
		compress func(dst, src []byte) ([]byte, bool)
	}{{"walscope", c.Compress}, {"reference", ref.Compress}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			dst := make([]byte, 0, 8192+4)
			b.SetBytes(int64(total))
			for b.Loop() {
				for _, p := range pages {
					dst, _ = impl.compress(dst[:0], p)
				}
			}
			b.ReportMetric(float64(len(pages)), "pages/op")
		})
	}
}

// TestPGLZCompressLongInputs requires the reference port's bytes on inputs
// longer than the 16 bits a stored position holds, which slide the history
// (once from 61,167 bytes on, twice from 110,319): lengths around each
// slide, compressible all the way so that the compression does not give up
// before, of repeated words at distances up to the offset limit, runs, and
// real pages one after another, through one reused compressor and a fresh one.
func TestPGLZCompressLongInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var pages []byte
	for _, im := range realImages(t) {
		if len(pages) >= 400000 {
			break
		}
		pages = append(pages, im.holeless()...)
	}
	lengths := []int{61166, 61167, 61168, 61439, 65535, 65536, 65537, 110318, 110319, 110320, 159471, 200000, 400000}
	var ref refPGLZ
	var reused decode.PGLZCompressor
	for i, n := range lengths {
		for kind := range 4 {
			src := make([]byte, n)
			switch kind {
			case 0: // words, far and near
				words := make([][]byte, 8+rng.IntN(30))
				for k := range words {
					words[k] = make([]byte, 1+rng.IntN(100))
					for m := range words[k] {
						words[k][m] = byte(rng.Uint32())
					}
				}
				src = src[:0]
				for len(src) < n {
					src = append(src, words[rng.IntN(len(words))]...)
					if rng.IntN(4) == 0 {
						src = append(src, byte(rng.Uint32()))
					}
				}
				src = src[:n]
			case 1: // runs of every length, high bytes included
				for j := 0; j < n; {
					run := 1 + rng.IntN(300)
					b := byte(rng.Uint32())
					for ; run > 0 && j < n; run-- {
						src[j] = b
						j++
					}
				}
			case 2: // real pages
				if len(pages) < n {
					t.Fatalf("only %d bytes of real pages", len(pages))
				}
				copy(src, pages[len(pages)-n:])
			case 3: // a pattern repeating at the longest offsets, 4093 and 4094 bytes
				period := 4093 + i%2
				for j := 512; j < n; j++ { // after zeros, so that a match comes early
					src[j] = byte(rng.Uint32())
					if j >= period && rng.IntN(16) != 0 {
						src[j] = src[j-period]
					}
				}
			}
			want, wok := ref.Compress(nil, src)
			if !wok {
				t.Fatalf("%d bytes, kind %d: the reference did not compress it; the test needs compressible input", n, kind)
			}
			got, ok := reused.Compress(nil, src)
			if ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes, kind %d: %d bytes (ok %v), reference %d bytes (ok %v)", n, kind, len(got), ok, len(want), wok)
			}
			var fresh decode.PGLZCompressor
			if got, ok := fresh.Compress(nil, src); ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes, kind %d, fresh compressor: differs from the reference", n, kind)
			}
		}
	}
}

// FuzzPGLZCompressLong is FuzzPGLZCompress for inputs long enough to slide
// the history (past 61,167 bytes): the fuzzer's bytes repeated, each time
// followed by a gap of zeros and a counter byte, to 61,000 to 181,000 bytes.
func FuzzPGLZCompressLong(f *testing.F) {
	f.Add([]byte("walscope"), uint16(3), uint32(9000))
	f.Add(bytes.Repeat([]byte{0xFF, 0x80, 0x7F, 0x00}, 300), uint16(2800), uint32(60000))
	var ref refPGLZ
	var c decode.PGLZCompressor
	f.Fuzz(func(t *testing.T, unit []byte, gap uint16, size uint32) {
		if len(unit) == 0 {
			return
		}
		n := 61000 + int(size%120000)
		src := make([]byte, 0, n+len(unit)+4200)
		for i := 0; len(src) < n; i++ {
			src = append(src, unit...)
			src = append(src, make([]byte, int(gap)%4200)...)
			src = append(src, byte(i))
		}
		src = src[:n]
		want, wok := ref.Compress(nil, src)
		got, ok := c.Compress(nil, src)
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %d bytes (ok %v), reference %d bytes (ok %v)", len(src), len(got), ok, len(want), wok)
		}
	})
}
