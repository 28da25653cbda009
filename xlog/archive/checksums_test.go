package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSegmentChecksums: the sums SegmentChecksums reads a file for (in
// 1 MiB chunks) are the ones Facts computes while it checks the content
// (FileFact.SHA256), for the members of a tar file and for plain segments
// on disk, where they are also sha256sum's of the whole file.
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
		size, sum, err := sums.Get(f)
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
		}
	}
	local, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	sums = NewSegmentChecksums(local)
	for _, f := range local.Segments() {
		size, sum, err := sums.Get(f)
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
	}
}
