package xlog_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/xlogtest"
)

const fuzzSegName = "000000010000000000000001"

// FuzzReader reads arbitrary bytes as the first segment file of a stream and
// checks the reader's invariants: no panic, strictly increasing LSNs inside
// the input, every Raw exactly xl_tot_len long, every record decodable or
// rejected with a decode error, every image restored to exactly one page or
// refused, and every error either io.EOF or a positioned *xlog.Error.
func FuzzReader(f *testing.F) {
	for _, ps := range []uint32{1024, 8192} {
		w := xlogtest.NewWriter(xlog.V15, ps, 1<<20, 1)
		for i := 0; i < 40; i++ {
			w.Record(xlog.RmgrLogicalMessage, 0, 1, xlogtest.MainData(i*97%2000))
		}
		w.Switch()
		seg := w.Finish()[fuzzSegName]
		f.Add(seg[:min(len(seg), 3*1024)])
	}
	// Prefixes of real segments, with block references and images.
	if sets := testwal.Sets(f); len(sets) > 0 {
		for _, s := range sets {
			if s.Name != "corpora/pg18-4k-mixed" && s.Name != "corpora/pg13-mixed" {
				continue
			}
			dir := testwal.Extract(f, s)
			ents, _ := os.ReadDir(filepath.Join(dir, "archive"))
			for _, e := range ents[:min(2, len(ents))] {
				b, err := os.ReadFile(filepath.Join(dir, "archive", e.Name()))
				if err == nil {
					f.Add(b[:8<<10])
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := xlog.NewMemSource(map[string][]byte{fuzzSegName: data})
		r, err := xlog.NewReader(src, xlog.Options{MaxRecordSize: 4 << 20})
		if err != nil {
			return
		}
		dec := decode.NewDecoder(8192)
		var page []byte
		last := xlog.LSN(0)
		segStart := xlog.LSN(uint64(r.SegmentSize()) * 1)
		for n := 0; n < 10000; n++ {
			rec, err := r.Next()
			if err != nil {
				if err == io.EOF {
					return
				}
				xe, ok := errors.AsType[*xlog.Error](err)
				if !ok {
					t.Fatalf("error %v (%T) is not an *xlog.Error", err, err)
				}
				if xe.Msg == "" {
					t.Fatalf("error without message: %#v", xe)
				}
				if xe.LSN < segStart || xe.LSN > segStart+xlog.LSN(r.SegmentSize()) {
					t.Fatalf("error LSN %s outside the segment", xe.LSN)
				}
				if again, err2 := r.Next(); again != nil || err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
				return
			}
			if rec.LSN <= last || rec.LSN < segStart || rec.LSN >= segStart+xlog.LSN(len(data)) {
				t.Fatalf("record LSN %s after %s, input covers %s+%d", rec.LSN, last, segStart, len(data))
			}
			last = rec.LSN
			if len(rec.Raw) != int(rec.Header.TotLen) || rec.EndLSN <= rec.LSN {
				t.Fatalf("record at %s: %d bytes for xl_tot_len %d, end %s", rec.LSN, len(rec.Raw), rec.Header.TotLen, rec.EndLSN)
			}
			d, err := dec.Decode(rec)
			if err != nil {
				if !errors.Is(err, decode.ErrInvalid) {
					t.Fatalf("decode error %v is not ErrInvalid", err)
				}
				continue
			}
			for i := range d.Blocks {
				if !d.Blocks[i].HasImage {
					continue
				}
				page, err = dec.AppendPage(page[:0], d, &d.Blocks[i])
				if err == nil && len(page) != dec.BlockSize {
					t.Fatalf("restored page of %d bytes", len(page))
				}
			}
		}
	})
}
