package xlog_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// recordEnd returns the segment offset just past the last byte of a record of
// totLen bytes starting at segment offset off: page headers inside the record
// are skipped, 40 bytes at a segment start and 24 elsewhere.
func recordEnd(off, totLen, pageSize int) int {
	room := pageSize - off%pageSize
	if totLen <= room {
		return off + totLen
	}
	rest := totLen - room
	p := off + room
	for {
		hs := xlog.ShortPageHeaderSize
		if p == 0 {
			hs = xlog.LongPageHeaderSize
		}
		if rest <= pageSize-hs {
			return p + hs + rest
		}
		rest -= pageSize - hs
		p += pageSize
	}
}

// TestReadTruncation cuts a real segment at many lengths, as archive/tar's
// TestReadTruncation does, and checks what the reader makes of each cut: the
// records wholly before the cut, then ErrTruncated for a segment file, or the
// end of WAL (io.EOF) for a .partial one.
func TestReadTruncation(t *testing.T) {
	var set testwal.Set
	for _, s := range testwal.Sets(t) {
		if s.Name == "corpora/pg18-4k-mixed" {
			set = s
		}
	}
	if set.Dir == "" {
		t.Fatal("corpus pg18-4k-mixed not found")
	}
	dir := testwal.Extract(t, set)
	const name = "000000010000000000000009"
	full, err := os.ReadFile(filepath.Join(dir, "archive", name))
	if err != nil {
		t.Fatal(err)
	}
	src := xlog.NewMemSource(map[string][]byte{name: full})
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := int(r.PageSize())
	var ends, starts []int
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		off := int(rec.LSN) % len(full)
		e := recordEnd(off, int(rec.Header.TotLen), ps)
		if e > len(full) {
			break
		}
		starts = append(starts, off)
		ends = append(ends, e)
	}
	if len(ends) < 100 {
		t.Fatalf("only %d records in %s", len(ends), name)
	}
	cuts := []int{0, 1, 23, 24, 39, 40, 41, ps - 1, ps, ps + 1, 2*ps - 1, 2 * ps, len(full) - 1}
	for i := 0; i < 40; i++ {
		cuts = append(cuts, starts[i], starts[i]+1, ends[i], ends[i]-1)
	}
	for i := 40; i < len(starts); i += len(starts) / 25 {
		cuts = append(cuts, starts[i]+7, ends[i])
	}
	for _, cut := range cuts {
		want := 0
		for _, e := range ends {
			if e <= cut {
				want++
			}
		}
		for _, partial := range []bool{false, true} {
			fname := name
			if partial {
				fname += ".partial"
			}
			src := xlog.NewMemSource(map[string][]byte{fname: full[:cut]})
			got, err := readAll(t, src, xlog.Options{})
			switch {
			case cut < xlog.LongPageHeaderSize:
				if err == nil || errors.Is(err, io.EOF) {
					t.Errorf("cut %d (%s): err %v, want a header error", cut, fname, err)
				}
				continue
			case partial:
				if err != io.EOF {
					t.Errorf("cut %d (%s): err %v, want io.EOF", cut, fname, err)
				}
			default:
				if !errors.Is(err, xlog.ErrTruncated) || xlog.IsEndOfWAL(err) {
					t.Errorf("cut %d (%s): err %v, want ErrTruncated", cut, fname, err)
				}
			}
			if len(got) != want {
				t.Errorf("cut %d (%s): %d records, want %d", cut, fname, len(got), want)
			}
		}
	}
}
