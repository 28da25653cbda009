package archive_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/xlogtest"
)

// TestPlainSegmentHead: a plain segment on disk is handed out with the
// first bytes it was recognised by (xlog.HeadFile), and reads anywhere in
// it, within the head, across its end and past the file's, give what the
// file holds, as *os.File's would. A file shorter than the head is whole.
func TestPlainSegmentHead(t *testing.T) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	for range 40 {
		w.Record(xlog.RmgrXLOG, 0x20, 0, xlogtest.MainData(900)) // XLOG_NOOP
	}
	dir := t.TempDir()
	for name, data := range w.Finish() {
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	full, err := os.ReadFile(filepath.Join(dir, w.SegmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	// The same segment cut short, as a file still being written, in
	// another directory.
	short := t.TempDir()
	os.WriteFile(filepath.Join(short, w.SegmentName(1)), full[:3000], 0o644)
	for _, c := range []struct {
		dir   string
		data  []byte
		whole bool
	}{{dir, full, false}, {short, full[:3000], true}} {
		src, err := archive.Open(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := src.Open(src.Segments()[0])
		if err != nil {
			t.Fatal(err)
		}
		hf, ok := f.(xlog.HeadFile)
		if !ok {
			t.Fatalf("%T is not an xlog.HeadFile", f)
		}
		head, whole := hf.Head()
		if whole != c.whole || len(head) == 0 || !bytes.Equal(head, c.data[:len(head)]) || whole && len(head) != len(c.data) {
			t.Errorf("%d-byte file: Head() = %d bytes, whole %v; want a prefix of the file, whole %v", len(c.data), len(head), whole, c.whole)
		}
		for _, r := range [][2]int{{0, 40}, {0, len(head)}, {100, len(head) + 100}, {len(head) - 8, 4096}, {len(head), 8192}, {len(c.data) - 10, 20}, {len(c.data), 5}, {len(c.data) + 100, 5}} {
			b := make([]byte, r[1])
			n, err := f.ReadAt(b, int64(r[0]))
			var want []byte
			if r[0] < len(c.data) {
				want = c.data[r[0]:min(r[0]+r[1], len(c.data))]
			}
			wantErr := error(nil)
			if len(want) < r[1] {
				wantErr = io.EOF
			}
			if n != len(want) || !bytes.Equal(b[:n], want) || err != wantErr {
				t.Errorf("%d-byte file: ReadAt(%d bytes at %d) = %d, %v; want %d, %v", len(c.data), r[1], r[0], n, err, len(want), wantErr)
			}
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if err := f.Close(); err == nil {
			t.Error("a second Close did not fail")
		}
		// Nothing is read after Close: the descriptor's number may be
		// another file's by then.
		other, err := os.Open(filepath.Join(c.dir, w.SegmentName(1)))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := f.ReadAt(make([]byte, 100), int64(len(head))+10); n != 0 || err == nil {
			t.Errorf("ReadAt after Close: %d bytes, %v", n, err)
		}
		other.Close()
		src.Close()
	}
}
