package xlog_test

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/walscope/walscope/xlog"
)

// Read a stream in two spans, one reader each (as xlog/stream does on
// several cores), with one index of the files shared by both readers
// instead of one per reader.
func ExampleSegmentIndex() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	index := xlog.NewSegmentIndex()
	spans := []xlog.Options{
		{Start: 0x600000, StopAt: 0x700000, Index: index},
		{Start: 0x700000, Continues: true, Index: index},
	}
	total := 0
	for _, opts := range spans {
		r, err := xlog.NewReader(src, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				fmt.Println(err)
				return
			}
			n++
		}
		r.Close()
		fmt.Printf("records starting in [%s, %s): %d\n", opts.Start, opts.StopAt, n)
		total += n
	}
	fmt.Println("total:", total) // pg_waldump's count over the same files
	// Output:
	// records starting in [0/600000, 0/700000): 6399
	// records starting in [0/700000, 0/0): 15961
	// total: 22360
}
