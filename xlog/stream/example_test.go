package stream_test

import (
	"fmt"
	"path/filepath"

	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/stream"
)

// Count the records and bytes of each resource manager in parallel: each span
// counts into its own part, and the parts are added up in WAL order.
func Example() {
	src, err := xlog.OpenDir(filepath.Join("..", "..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := stream.Open(src, stream.Config{
		Reader:    xlog.Options{HeadersOnly: true}, // counting needs no payload
		Workers:   2,
		SpanBytes: 1 << 20, // one segment per span
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	type counts [256]struct{ records, bytes uint64 }
	var total counts
	res, err := stream.Run(s, stream.Job[*counts]{
		NewPart: func(stream.SpanInfo) *counts { return new(counts) },
		Record: func(c *counts, rec *xlog.Record) error {
			c[rec.Header.Rmid].records++
			c[rec.Header.Rmid].bytes += uint64(rec.Header.TotLen)
			return nil
		},
		Merge: func(c *counts) error {
			for id := range c {
				total[id].records += c[id].records
				total[id].bytes += c[id].bytes
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d spans, %d records from %s to %s\n", len(s.Spans()), res.Records, res.First, res.End)
	fmt.Println("the WAL ends cleanly:", res.Err == nil || xlog.IsEndOfWAL(res.Err))
	fmt.Printf("Heap: %d records, %d bytes\n", total[xlog.RmgrHeap].records, total[xlog.RmgrHeap].bytes)
	// Output:
	// 2 spans, 22360 records from 0/600100 to 0/7FFFF0
	// the WAL ends cleanly: true
	// Heap: 12355 records, 1188446 bytes
}
