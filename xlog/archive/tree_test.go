package archive

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestGzipPartialNotTooLarge: a .gz.partial that pg_receivewal is still
// writing has no gzip trailer yet; its last bytes are not a size, and ls
// --quick must not call it too large.
func TestGzipPartialNotTooLarge(t *testing.T) {
	seg, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sample", "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(seg[:len(seg)/2])
	zw.Flush() // as a live writer flushes: no trailer
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "000000010000000000000006.gz.partial"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	facts, err := src.FactsWith(FactsOptions{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].Kind != "partial" {
		t.Fatalf("facts: %+v", facts)
	}
	for _, p := range facts[0].Problems {
		t.Errorf("problem %s: %s", p.Kind, p.Message)
	}
}

// TestLocalTreeIsOpen: Open is OpenTree over the local disk, with the same
// paths.
func TestLocalTreeIsOpen(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "sample")
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenTree(LocalTree{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Segments()) != 2 || len(a.Segments()) != len(b.Segments()) {
		t.Fatalf("%d and %d segments", len(a.Segments()), len(b.Segments()))
	}
	for i := range a.Segments() {
		if a.Segments()[i] != b.Segments()[i] {
			t.Errorf("%+v != %+v", a.Segments()[i], b.Segments()[i])
		}
	}
}
