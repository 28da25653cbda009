package archive_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
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

// threeSegments writes 2.5 MB of XLOG_NOOP records: segments of 1 MB, by
// name, and their names in order (at least three).
func threeSegments(t *testing.T) (map[string][]byte, []string) {
	w := xlogtest.NewWriter(xlog.V15, 8192, 1<<20, 1)
	for range 300 {
		w.Record(xlog.RmgrXLOG, 0x20, 0, xlogtest.MainData(9000)) // XLOG_NOOP
	}
	files := w.Finish()
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) < 3 {
		t.Fatalf("%d segments", len(names))
	}
	return files, names
}

// TestSizesReadWhenAsked: segments listed by their directory entries alone
// (no lstat while listing, issue 16) have the sizes the files hold in every
// fact, quick or not, also when the facts are taken while the segments are
// read on other goroutines; a symbolic link is sized by its target; a file
// gone after the listing is a problem of its fact, not a crash.
func TestSizesReadWhenAsked(t *testing.T) {
	files, names := threeSegments(t)
	dir := t.TempDir()
	want := map[string]int64{}
	for i, name := range names {
		data := files[name]
		if i == len(names)-1 {
			data = data[:5000] // cut short, as a file being written
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
		want[name] = int64(len(data))
	}
	// The first segment through a symbolic link to a file elsewhere.
	elsewhere := filepath.Join(t.TempDir(), "seg")
	os.Rename(filepath.Join(dir, names[0]), elsewhere)
	if err := os.Symlink(elsewhere, filepath.Join(dir, names[0])); err != nil {
		t.Fatal(err)
	}
	for _, quick := range []bool{true, false} {
		src, err := archive.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { // the segments read meanwhile, as verify does
			defer close(done)
			for _, sf := range src.Segments() {
				if f, err := src.Open(sf); err == nil {
					io.Copy(io.Discard, io.NewSectionReader(f, 0, 1<<20))
					f.Close()
				}
			}
		}()
		facts, err := src.FactsWith(archive.FactsOptions{Quick: quick})
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(facts) != len(names) {
			t.Fatalf("quick %v: %d facts for %d files", quick, len(facts), len(names))
		}
		for _, f := range facts {
			if f.StoredSize != want[f.Name] {
				t.Errorf("quick %v: %s stored size %d, the file holds %d", quick, f.Name, f.StoredSize, want[f.Name])
			}
		}
		src.Close()
	}
	// A file removed between the listing and the facts.
	src, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	os.Remove(filepath.Join(dir, names[1]))
	facts, err := src.FactsWith(archive.FactsOptions{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Name == names[1] && (f.StoredSize != 0 || len(f.Problems) == 0) {
			t.Errorf("removed %s: stored size %d, problems %v; want 0 and a problem", f.Name, f.StoredSize, f.Problems)
		}
	}
}

// TestQuickFactsAfterReading: the quick facts of an archive whose segments
// a reader has opened (verify takes them after its reading, from the first
// bytes the reader read, without opening the files again) are the facts of
// a fresh listing that opens every file: for whole segments, one cut short,
// one longer than its segment size, a zero-filled one and one that is not
// WAL.
func TestQuickFactsAfterReading(t *testing.T) {
	files, names := threeSegments(t)
	dir := t.TempDir()
	for i, name := range names {
		data := files[name]
		switch i {
		case 1:
			data = append(append([]byte{}, data...), make([]byte, 8192)...) // longer than a segment
		case len(names) - 1:
			data = data[:5000]
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	next := func(i int) string { return xlog.NewSegmentName(1, uint64(0x10+i), 1<<20).String() }
	os.WriteFile(filepath.Join(dir, next(0)), make([]byte, 1<<20), 0o644)             // zero-filled, as pg_wal keeps them
	os.WriteFile(filepath.Join(dir, next(1)), bytes.Repeat([]byte("x"), 9000), 0o644) // not WAL
	fresh, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, err := fresh.FactsWith(archive.FactsOptions{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	read, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	opened := 0
	for _, sf := range read.Segments() {
		if f, err := read.Open(sf); err == nil {
			f.ReadAt(make([]byte, 100), 0)
			f.Close()
			opened++
		}
	}
	if opened < len(names) {
		t.Fatalf("%d segments opened", opened)
	}
	// The first segment's header overwritten after the reading: the facts
	// describe what was read, not opening the file again.
	fh, err := os.OpenFile(filepath.Join(dir, names[0]), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt(make([]byte, xlog.LongPageHeaderSize), 0)
	fh.Close()
	got, err := read.FactsWith(archive.FactsOptions{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s: after reading %+v, fresh %+v", want[i].Name, got[i], want[i])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d facts after reading, %d fresh", len(got), len(want))
		}
	}
	var tooLarge bool
	for _, f := range want {
		tooLarge = tooLarge || f.Name == names[1] && len(f.Problems) == 1
	}
	if !tooLarge {
		t.Errorf("the segment longer than its size has no problem: %+v", want)
	}
}
