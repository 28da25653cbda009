package archive_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog/archive"
)

// TestXZDictionaryBounded: an xz segment is decoded with no larger a
// dictionary than its blocks decompress to. A 170 KB file whose block header
// declares a 4 GiB dictionary made ulikunitz/xz allocate it at every opening
// (verify over two such files: 45 s, 8.4 GB RSS); now the opening costs what
// the data needs. Files xz(1) writes with every check, several blocks, -9e
// still read byte for byte.
func TestXZDictionaryBounded(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xz is missing")
		}
		t.Skip("no xz")
	}
	seg, err := os.ReadFile(filepath.Join(testwal.Root(t), "fixtures", "sample", "000000010000000000000006"))
	if err != nil {
		t.Fatal(err)
	}
	xz := func(args ...string) []byte {
		cmd := exec.Command("xz", append(args, "-c")...)
		cmd.Stdin = bytes.NewReader(seg)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("xz %v: %v", args, err)
		}
		return out
	}
	// The first block header's LZMA2 dictionary byte set to 40 (4 GiB - 1),
	// its CRC32 fixed: a valid file, as xz -t agrees.
	hostile := xz()
	h := hostile[12 : 12+(int(hostile[12])+1)*4]
	p := bytes.IndexByte(h, 0x21) + 2
	h[p] = 40
	binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))

	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"default", xz()}, {"sha256 check", xz("-C", "sha256")}, {"no check", xz("-C", "none")},
		{"several blocks", xz("-T2", "--block-size=100000")}, {"-9e", xz("-9e")},
		{"4 GiB dictionary declared", hostile},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "000000010000000000000006.xz"), tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		src, err := archive.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		facts, err := src.FactsWith(archive.FactsOptions{})
		if err != nil || len(facts) != 1 || len(facts[0].Problems) != 0 {
			t.Fatalf("%s: facts %+v, %v", tc.name, facts, err)
		}
		f, err := src.Open(src.Segments()[0])
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := io.ReadAll(io.NewSectionReader(f, 0, int64(len(seg))+1))
		f.Close()
		src.Close()
		runtime.ReadMemStats(&after)
		if err != nil || !bytes.Equal(got, seg) {
			t.Errorf("%s: %d bytes read (%v), want the segment's %d", tc.name, len(got), err, len(seg))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: %d MB allocated to read a 1 MB segment twice", tc.name, alloc>>20)
		}
	}
}
