package pass_test

import (
	"fmt"
	"path/filepath"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/pass"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// A first pass over every record of fixtures/sample, on every core: the
// stream is cut into spans, each counted into a part of the caller's type,
// and the parts come back in WAL order. Whatever the number of workers,
// they add up to what one reader counts (pg_waldump prints 22360 records,
// 36 of them Transaction's, for these two segments).
func ExampleRecordPass() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	type count struct{ records, xacts int }
	for _, workers := range []int{1, 4} {
		parts, start, end, err := pass.RecordPass(src, xlog.Options{}, 8192, workers, 256<<10, func(c *count, d *decode.Record) {
			c.records++
			if d.Header.Rmid == xlog.RmgrTransaction {
				c.xacts++
			}
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		var total count
		for _, p := range parts {
			total.records += p.records
			total.xacts += p.xacts
		}
		fmt.Printf("%d workers: %d records (%d Transaction) from %v to %v\n", workers, total.records, total.xacts, start, end)
	}
	// Output:
	// 1 workers: 22360 records (36 Transaction) from 0/600100 to 0/7FFFF0
	// 4 workers: 22360 records (36 Transaction) from 0/600100 to 0/7FFFF0
}

// XLOGPass reads only the XLOG records (headers only, the others skipped
// undecoded): here the checkpoints of fixtures/sample and their redo
// points, as pg_waldump shows them (five online checkpoints and a
// shutdown one).
func ExampleXLOGPass() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	parts, _, _, err := pass.XLOGPass(src, xlog.Options{}, 8192, 0, 0, false, func(redo *[]string, d *decode.Record) {
		if cp, ok := rmgr.Checkpoint(d); ok {
			*redo = append(*redo, cp.Redo.String())
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var redo []string
	for _, p := range parts {
		redo = append(redo, p...)
	}
	fmt.Println(len(redo), "checkpoints, redo at", redo)
	// Output:
	// 6 checkpoints, redo at [0/600360 0/600440 0/600758 0/600AA8 0/600B88 0/6661F0]
}
