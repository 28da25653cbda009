package archive_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walscope/walscope/xlog/archive"
)

// TestTooLargeSaysWhereTheBoundComes: a segment larger than its bound is
// refused with the bound's true origin, and a zero-filled segment of any
// segment size is no problem (pg_wal holds them ready). A 16 MB zero-filled
// segment was refused "larger than the segment size of 1048576 bytes that its
// long page header gives": its first page is zeros, no header gives a size.
func TestTooLargeSaysWhereTheBoundComes(t *testing.T) {
	seg := readFile(t, filepath.Join(sample(t), "000000010000000000000006"))
	badSize := slices.Concat(seg, make([]byte, 1<<20))
	binary.LittleEndian.PutUint32(badSize[32:], 3<<20) // xlp_seg_size: no power of two
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(make([]byte, 8192))
	zw.Close()
	bigZeros := gz.Bytes()
	binary.LittleEndian.PutUint32(bigZeros[len(bigZeros)-4:], 0xFFFFFFFF) // ISIZE: 4 GB
	for _, tc := range []struct {
		name    string
		content []byte
		quick   bool
		want    string // "" for no too-large problem
	}{
		{"zero-filled 16 MB", make([]byte, 16<<20), false, ""},
		{"zero-filled 16 MB", make([]byte, 16<<20), true, ""},
		{"a valid header, then more than its segment", slices.Concat(seg, make([]byte, 8192)), false, "the segment size of 1048576 bytes that its long page header gives"},
		{"a valid header, then more than its segment", slices.Concat(seg, make([]byte, 8192)), true, "it holds 1056768 bytes, more than the segment size of 1048576 bytes that its long page header gives"},
		{"an invalid segment size", badSize, false, "1048576 bytes, the smallest segment size (its first page has no long header giving a valid one)"},
		{"an invalid segment size", badSize, true, "1048576 bytes, the smallest segment size (its first page has no long header giving a valid one)"},
		{"gzip declaring 4 GB of zeros", bigZeros, true, "the last 4 bytes of its gzip stream (ISIZE) give 4294967295 bytes, more than 1073741824 bytes, the largest segment size (its first page is zeros: no header gives its own)"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "000000010000000000000006"), tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := archive.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		facts, err := src.FactsWith(archive.FactsOptions{Quick: tc.quick})
		src.Close()
		if err != nil || len(facts) != 1 {
			t.Fatalf("%s: %d facts, %v", tc.name, len(facts), err)
		}
		var got []string
		for _, p := range facts[0].Problems {
			if p.Kind == archive.ProblemTooLarge {
				got = append(got, p.Message)
			}
		}
		if len(got) > 0 && facts[0].Compression != archive.None && facts[0].Size != -1 {
			// A size the format declares but the file cannot hold is
			// noise (a cut gzip file's last bytes), not one to list.
			t.Errorf("%s (quick %v): size %d listed, want unknown (-1)", tc.name, tc.quick, facts[0].Size)
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s (quick %v): %q, want no too-large problem", tc.name, tc.quick, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s (quick %v): %q, want one saying %q", tc.name, tc.quick, got, tc.want)
		}
	}
}
