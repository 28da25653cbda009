package backup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
)

// BenchmarkReadBlockPlain: a block of a plain backup's relation (1000
// blocks, in the page cache), read in place.
func BenchmarkReadBlockPlain(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "base", "5", "16384")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, blocks(0, 1000), 0o644)
	bk := &Backup{path: dir, st: newDirStore(dir, nil), cache: newExtractCache("", 1<<20), blcksz: 8192, relseg: 131072,
		major: 15, control: &ControlFile{CatalogVersion: 202209061}}
	rel := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 16384}
	buf := make([]byte, 8192)
	b.SetBytes(8192)
	b.ReportAllocs()
	i := uint32(0)
	for b.Loop() {
		if err := bk.ReadBlock(rel, decode.ForkMain, i%1000, buf); err != nil {
			b.Fatal(err)
		}
		i += 7
	}
}

// BenchmarkReadBlockZstdTar: a block of pg_class in the zstd-compressed
// fixture backup, after its first reading decompressed it.
func BenchmarkReadBlockZstdTar(b *testing.B) {
	bk, err := Open("../fixtures/backup-pg15")
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	rel := decode.RelFileLocator{SpcOID: 1663, DBOID: 5, RelNumber: 1259}
	n, err := bk.NBlocks(rel, decode.ForkMain)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 8192)
	b.SetBytes(8192)
	b.ReportAllocs()
	i := uint32(0)
	for b.Loop() {
		if err := bk.ReadBlock(rel, decode.ForkMain, i%n, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpenZstdTar: Open of the fixture backup (one pass over its
// 0.75 MB base.tar.zst, 22 MB of tar).
func BenchmarkOpenZstdTar(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		bk, err := Open("../fixtures/backup-pg15")
		if err != nil {
			b.Fatal(err)
		}
		bk.Close()
	}
}
