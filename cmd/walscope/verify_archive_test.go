package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/verify"
)

// TestVerifyArchiveFacts: verify reports what the files are (timelines,
// segments, sizes) and, as a problem, a segment stored twice with different
// content, which no reader of the stream would notice.
func TestVerifyArchiveFacts(t *testing.T) {
	root := testwal.Root(t)
	dir := t.TempDir()
	for _, n := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join(root, "fixtures", "sample", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if n == "000000010000000000000007" {
			// A second copy, gzip-compressed, whose content differs.
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0xFF
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(b)
			zw.Close()
			if err := os.WriteFile(filepath.Join(dir, n+".gz"), gz.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, stderr, code := walscope(t, dir, "verify", "--format", "json", ".")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
	}
	var rep verify.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Archive == nil || len(rep.Archive.Timelines) != 1 || rep.Archive.Timelines[0].Segments != 3 && rep.Archive.Timelines[0].Segments != 2 {
		t.Fatalf("archive summary %+v", rep.Archive)
	}
	if rep.ByClass[verify.ClassDuplicate] == 0 {
		t.Errorf("no duplicate-segment problem in %+v", rep.Problems)
	}
	// Without the differing copy everything is valid.
	os.Remove(filepath.Join(dir, "000000010000000000000007.gz"))
	if _, stderr, code := walscope(t, dir, "verify", "."); code != 0 {
		t.Errorf("clean archive: exit %d, stderr %q", code, stderr)
	}
}
