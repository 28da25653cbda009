package whatif

import (
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
			in.Images = w.pipeline(t, counting, c.stopAfter)
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

// pipeline starts an ImagePipeline over the run, in spans of one 1 MB
// segment (so that estimates cross from span to span), that stops after
// stopAfter records (0: at the run's end).
func (w whatifRun) pipeline(t *testing.T, newSizer func() ImageSizer, stopAfter int) *ImagePipeline {
	t.Helper()
	end := w.end
	if stopAfter > 0 {
		n := 0
		w.each(t, w.start, func(d *decode.Record) {
			if n++; n == stopAfter+1 {
				end = d.LSN
			}
		})
	}
	src, err := xlog.OpenDir(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewImagePipeline(src, xlog.Options{Start: w.start, End: end, Timeline: 1}, 8192, newSizer, 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
