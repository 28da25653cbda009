package whatif_test

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/whatif"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// The WAL of fixtures/sample under each wal_compression method. The
// stream was written with lz4 (PostgreSQL 15, fixtures/pg15-replica-lz4),
// and its 238785 bytes of stored images are pg_waldump --stats's FPI size;
// each image is rebuilt and recompressed under every method. The lz4
// scenario re-estimates the stream's own images: 238642 bytes, within
// 0.1% of what the server stored.
//
// A first pass on every core (pass.RecordPass into WhatIfPass parts)
// learns what the estimate needs ahead: the checkpoints, the wal_level,
// the data lengths of image-less blocks. The estimate itself takes the
// records one by one in WAL order.
func ExampleNewWhatIf() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	parts, start, _, err := pass.RecordPass(src, xlog.Options{}, 8192, 0, 0, func(p *whatif.WhatIfPass, d *decode.Record) { p.Add(d) })
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	in := whatif.WhatIfInput{PageSize: r.PageSize(), SegSize: r.SegmentSize(), BlockSize: 8192, Start: start, Version: 15}
	whatif.FillWhatIfInput(&in, parts)
	var rc decode.Recompressor
	in.Sizer = rc.Estimate // PostgreSQL's stored length of an image under each method
	w := whatif.NewWhatIf(in)
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		d, err := dec.Decode(rec)
		if err != nil {
			fmt.Println(err)
			return
		}
		w.Add(d)
	}
	actual, scenarios := w.Results()
	fmt.Printf("actual (lz4)          WAL %7d, images %6d\n", actual.WALBytes, actual.ImageBytes)
	for _, s := range scenarios {
		if s.Setting == "wal_compression" {
			fmt.Printf("wal_compression=%-5s WAL %7d, images %6d\n", s.Value, s.WALBytes, s.ImageBytes)
		}
	}
	// Output:
	// actual (lz4)          WAL 2096880, images 238785
	// wal_compression=off   WAL 2301072, images 442384
	// wal_compression=pglz  WAL 2068280, images 210284
	// wal_compression=lz4   WAL 2096736, images 238642
	// wal_compression=zstd  WAL 1996832, images 139013
}
