package archive

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/walscope/walscope/internal/archivetest"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// decoder returns a decode function for decodedSegments.open that counts its
// calls and makes a pooled memFile of n bytes.
func decoder(calls *atomic.Int32, n int) func() (xlog.File, error) {
	return func() (xlog.File, error) {
		calls.Add(1)
		b := getSegmentBuffer(n + 1)[:n]
		return &memFile{data: b, pooled: true}, nil
	}
}

func TestDecodedSegmentsShare(t *testing.T) {
	var c decodedSegments
	var calls atomic.Int32
	dec := decoder(&calls, 1<<20)

	// Two readers holding the segment at once, then one coming back after
	// both closed it: one decompression.
	a, _ := c.open("seg1", dec)
	b, _ := c.open("seg1", dec)
	if &a.(*sharedFile).Bytes()[0] != &b.(*sharedFile).Bytes()[0] {
		t.Fatal("two readers of one segment got different buffers")
	}
	a.Close()
	b.Close()
	b.Close() // a second Close is a no-op
	again, _ := c.open("seg1", dec)
	if got := calls.Load(); got != 1 {
		t.Fatalf("segment decompressed %d times, want 1", got)
	}
	again.Close()

	// keepDecoded other segments later, it has gone back to the pool.
	for i := range keepDecoded {
		f, _ := c.open(string(rune('a'+i)), dec)
		f.Close()
	}
	if d := c.segs["seg1"]; d != nil {
		t.Fatalf("seg1 still kept after %d other segments were closed", keepDecoded)
	}
	if len(c.idle) != keepDecoded {
		t.Fatalf("%d idle segments, want %d", len(c.idle), keepDecoded)
	}
	f, _ := c.open("seg1", dec)
	f.Close()
	if got := calls.Load(); got != 2+keepDecoded {
		t.Fatalf("%d decompressions, want %d", got, 2+keepDecoded)
	}
	c.drop()
	if len(c.idle) != 0 || len(c.segs) != 0 {
		t.Fatalf("after drop: %d idle, %d kept", len(c.idle), len(c.segs))
	}
}

// Segments larger than keepDecodedBytes allows are not kept once closed.
func TestDecodedSegmentsMemoryBound(t *testing.T) {
	var c decodedSegments
	var calls atomic.Int32
	for _, name := range []string{"a", "b", "c"} {
		f, _ := c.open(name, decoder(&calls, keepDecodedBytes/2+1))
		f.Close()
		if c.held > keepDecodedBytes {
			t.Fatalf("%d bytes kept, more than %d", c.held, keepDecodedBytes)
		}
	}
	if len(c.idle) != 1 {
		t.Fatalf("%d segments of %d bytes kept, want 1", len(c.idle), keepDecodedBytes/2+1)
	}
	f, _ := c.open("big", decoder(&calls, keepDecodedBytes+1))
	f.Close()
	if len(c.idle) != 0 || c.held != 0 {
		t.Fatalf("a segment larger than the bound was kept: %d idle, %d bytes", len(c.idle), c.held)
	}
}

func TestDecodedSegmentsConcurrent(t *testing.T) {
	var c decodedSegments
	var calls atomic.Int32
	release := make(chan struct{})
	slow := func() (xlog.File, error) {
		<-release
		return decoder(&calls, 4096)()
	}
	var wg sync.WaitGroup
	files := make([]xlog.File, 8)
	for i := range files {
		wg.Go(func() {
			f, err := c.open("seg", slow)
			if err != nil {
				t.Error(err)
			}
			files[i] = f
		})
	}
	close(release)
	wg.Wait()
	if got := calls.Load(); got != 1 {
		t.Fatalf("8 readers at once decompressed %d times, want 1", got)
	}
	for _, f := range files {
		f.Close()
	}
	if d := c.segs["seg"]; d == nil || d.refs != 0 || len(c.idle) != 1 {
		t.Fatalf("after every reader closed: %+v, %d idle", d, len(c.idle))
	}
}

func TestDecodedSegmentsErrorsAndPlain(t *testing.T) {
	var c decodedSegments
	bad := errors.New("corrupt")
	calls := 0
	failing := func() (xlog.File, error) { calls++; return nil, bad }
	for range 2 {
		if _, err := c.open("seg", failing); err != bad {
			t.Fatalf("error %v, want %v", err, bad)
		}
	}
	if calls != 2 || len(c.segs) != 0 {
		t.Fatalf("an error was kept: %d calls, %d kept", calls, len(c.segs))
	}

	// A file that is read in place (a plain file under a compressed name)
	// is the reader's own: handed back as is, never kept.
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("x"), 0o644)
	plain := func() (xlog.File, error) { return os.Open(p) }
	f, err := c.open("plain", plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*os.File); !ok {
		t.Fatalf("plain file came back as %T", f)
	}
	f.Close()
	if len(c.segs) != 0 || len(c.idle) != 0 {
		t.Fatalf("a plain file was kept")
	}
}

// A Source shares a compressed segment between the readers that open it: a
// second Open while the first reader holds it costs no decompression (nor
// memory), and neither does one just after it was closed.
func TestSourceSharesDecompressedSegments(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(testwal.Root(t), "fixtures", "sample", "000000010000000000000006")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "000000010000000000000006.gz"), archivetest.Compress(t, "gzip", data), 0o644)
	src, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sf := src.Segments()[0]
	a, err := src.Open(sf)
	if err != nil {
		t.Fatal(err)
	}
	ab := a.(interface{ Bytes() []byte }).Bytes()
	if string(ab) != string(data) {
		t.Fatal("decompressed content differs from the plain segment")
	}
	b, err := src.Open(sf)
	if err != nil {
		t.Fatal(err)
	}
	if bb := b.(interface{ Bytes() []byte }).Bytes(); &bb[0] != &ab[0] {
		t.Fatal("the segment was decompressed again for a second reader")
	}
	a.Close()
	b.Close()
	if d := src.decoded.segs[sf.Path]; d == nil || d.file.data == nil || &d.file.data[0] != &ab[0] {
		t.Fatal("the segment was not kept after its readers closed it")
	}
}
