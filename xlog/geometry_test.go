package xlog_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/xlog"
)

// countingSource counts the files opened, by name.
type countingSource struct {
	xlog.Source
	opened map[string]int
}

func (c *countingSource) Open(f xlog.SegmentFile) (xlog.File, error) {
	c.opened[f.Name.String()]++
	return c.Source.Open(f)
}

// TestSharedIndexReadsGeometryOnce: readers sharing an Index (the spans of
// one parallel reading) read the first file's long page header once, not
// once per span; each reads its own records as a reader without the index
// does.
func TestSharedIndexReadsGeometryOnce(t *testing.T) {
	dir, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(r *xlog.Reader) int {
		n := 0
		for {
			if _, err := r.Next(); err == io.EOF {
				return n
			} else if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	// the second span, read again and again: only the file it reads is
	// opened, and once per reader
	for _, shared := range []bool{false, true} {
		src := &countingSource{Source: dir, opened: map[string]int{}}
		index := xlog.NewSegmentIndex()
		for i := 0; i < 3; i++ {
			opts := xlog.Options{Start: 0x700000, Continues: true}
			if shared {
				opts.Index = index
			}
			r, err := xlog.NewReader(src, opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Version() != xlog.V15 || r.SegmentSize() != 1<<20 || r.PageSize() != 8192 || r.SystemID() == 0 {
				t.Errorf("shared %v, reader %d: geometry %v %d %d %d", shared, i, r.Version(), r.SegmentSize(), r.PageSize(), r.SystemID())
			}
			if n := count(r); n != 15961 {
				t.Errorf("shared %v, reader %d: %d records, want pg_waldump's 15961", shared, i, n)
			}
			r.Close()
		}
		first, want := src.opened["000000010000000000000006"], 3
		if shared {
			want = 1
		}
		if first != want {
			t.Errorf("shared %v: the first file opened %d times for 3 readers, want %d", shared, first, want)
		}
		if n := src.opened["000000010000000000000007"]; n != 3 {
			t.Errorf("shared %v: the file read opened %d times, want 3", shared, n)
		}
	}
}
