package analyze

import (
	"io"
	"sync"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// TestWhatIfSizesEachImageOnce counts the image sizings of a what-if over a
// real run, every scenario included: each image is sized once per
// wal_compression method, whichever the scenarios that use the size, and
// whether the pipeline, the WhatIf itself, or both (a pipeline that stops
// early) size the images.
func TestWhatIfSizesEachImageOnce(t *testing.T) {
	w := loadRun(t, "compression-off")
	images := 0
	w.each(t, w.start, func(d *decode.Record) {
		for i := range d.Blocks {
			if d.Blocks[i].HasImage {
				images++
			}
		}
	})
	if images == 0 {
		t.Fatal("no images in the run")
	}
	for _, c := range []struct {
		name      string
		pipe      bool
		stopAfter int // records the pipeline reads, 0 for all
	}{{"sequential", false, 0}, {"pipeline", true, 0}, {"pipeline stopped", true, 2000}} {
		var mu sync.Mutex
		calls := map[decode.Compression]int{}
		counting := func() ImageSizer {
			var rc decode.Recompressor
			return func(page []byte, holeOffset, holeLength int, m decode.Compression) (int, bool) {
				mu.Lock()
				calls[m]++
				mu.Unlock()
				return rc.Estimate(page, holeOffset, holeLength, m)
			}
		}
		in := WhatIfInput{PageSize: 8192, SegSize: 1 << 20, BlockSize: 8192, WalLevel: xlog.WalLevelReplica, Start: w.start, Sizer: counting()}
		if c.pipe {
			src, err := xlog.OpenDir(w.dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := xlog.NewReader(src, xlog.Options{Start: w.start, End: w.end, Timeline: 1})
			if err != nil {
				t.Fatal(err)
			}
			dec := decode.NewDecoder(8192)
			n := 0
			next := func() (*decode.Record, error) {
				if n++; c.stopAfter > 0 && n > c.stopAfter {
					return nil, io.EOF
				}
				rec, err := r.Next()
				if err != nil {
					return nil, err
				}
				return dec.Decode(rec)
			}
			in.Images = NewImagePipeline(next, 8192, counting, 2, 16)
			defer r.Close()
			defer in.Images.Close()
		}
		wi := NewWhatIf(in)
		w.each(t, w.start, func(d *decode.Record) { wi.Add(d) })
		_, sc := wi.Results()
		methods := 0
		for _, s := range sc {
			if s.Setting == "wal_compression" {
				methods++
			}
		}
		if methods != len(whatIfMethods) {
			t.Fatalf("%s: %d wal_compression scenarios", c.name, methods)
		}
		for _, m := range whatIfMethods {
			if calls[m.c] != images {
				t.Errorf("%s: %d images sized %d times for %s", c.name, images, calls[m.c], m.name)
			}
		}
	}
}
