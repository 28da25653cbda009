package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSegmentChecksums: the sums SegmentChecksums reads a file for (in
// 1 MiB chunks) are, for SHA256, the ones Facts computes while it checks
// the content (FileFact.SHA256), for the members of a tar file and for
// plain segments on disk, where they are also sha256sum's of the whole
// file; for CRC32C, the Castagnoli CRC of the whole file.
func TestSegmentChecksums(t *testing.T) {
	src, err := Open(filepath.Join("..", "..", "fixtures", "growth", "archive.tar.zst"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	facts, err := src.Facts()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]FileFact{}
	for _, f := range facts {
		byPath[f.Name] = f
	}
	dir := t.TempDir()
	sums := NewSegmentChecksums(src)
	segs := src.Segments()
	if len(segs) < 2 {
		t.Fatalf("%d segments in the fixture", len(segs))
	}
	for i, f := range segs {
		size, sum, err := sums.Get(f, SHA256)
		if err != nil {
			t.Fatal(err)
		}
		want := byPath[f.Name.String()]
		if want.SHA256 == "" || sum != want.SHA256 || size != want.Size {
			t.Errorf("%s: %d bytes, sha256 %s; Facts: %d bytes, %s", f.Path, size, sum, want.Size, want.SHA256)
		}
		if i < 2 {
			fh, err := src.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(io.NewSectionReader(fh, 0, 1<<40))
			fh.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f.Name.String()), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, crc, _ := sums.Get(f, CRC32C); crc != crc32cHex(b) {
				t.Errorf("%s (tar member): crc32c %s, of its content %s", f.Path, crc, crc32cHex(b))
			}
		}
	}
	local, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	sums = NewSegmentChecksums(local)
	for _, f := range local.Segments() {
		size, sum, err := sums.Get(f, SHA256)
		if err != nil {
			t.Fatal(err)
		}
		crcSize, crc, err := sums.Get(f, CRC32C)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(b)
		if size != int64(len(b)) || sum != hex.EncodeToString(want[:]) || len(b) < 1<<20 {
			t.Errorf("%s: %d bytes, sha256 %s; the file: %d bytes, %x (at least a whole 1 MiB chunk expected)", f.Path, size, sum, len(b), want)
		}
		if crcSize != int64(len(b)) || crc != crc32cHex(b) || len(crc) != 8 {
			t.Errorf("%s: %d bytes, crc32c %s; the file: %d bytes, %s", f.Path, crcSize, crc, len(b), crc32cHex(b))
		}
	}
}

// crc32cHex is the CRC-32C of b in one call, as 8 hex digits. That it is
// Castagnoli's, and not the IEEE CRC-32's: the check value of the CRC
// catalogue (CRC-32/ISCSI of "123456789": E3069283).
func crc32cHex(b []byte) string {
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], crc32.Checksum(b, castagnoli))
	return hex.EncodeToString(out[:])
}

func TestCRC32CCheckValue(t *testing.T) {
	if got := crc32cHex([]byte("123456789")); got != "e3069283" {
		t.Errorf("CRC-32C of 123456789: %s, the catalogue's check value is e3069283", got)
	}
}

// BenchmarkSegmentChecksums sums 16 MiB segment files (the fixture's
// 1 MiB segments, each repeated 16 times, on disk: in the page cache) with
// each algorithm: what an append spends per segment it records.
func BenchmarkSegmentChecksums(b *testing.B) {
	src, err := Open(filepath.Join("..", "..", "fixtures", "growth", "archive.tar.zst"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dir := b.TempDir()
	for _, f := range src.Segments()[:4] {
		fh, err := src.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		seg, err := io.ReadAll(io.NewSectionReader(fh, 0, 1<<40))
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		var big []byte
		for range 16 {
			big = append(big, seg...)
		}
		// 16 MiB segments: named as such (segment number in 16 MiB units).
		if err := os.WriteFile(filepath.Join(dir, f.Name.String()), big, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	local, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	segs := local.Segments()
	for _, alg := range []Checksum{SHA256, CRC32C} {
		b.Run(alg.String(), func(b *testing.B) {
			b.SetBytes(16 << 20)
			for i := 0; b.Loop(); i++ {
				// a new SegmentChecksums: each Get sums the file again
				if _, _, err := NewSegmentChecksums(local).Get(segs[i%len(segs)], alg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
