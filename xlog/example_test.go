package xlog_test

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/walscope/walscope/xlog"
)

// Read every record of a directory of segment files, in order, and tell a
// clean end of the WAL from damage.
func ExampleReader() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Printf("%s, %d-byte pages, %d-byte segments\n", r.Version(), r.PageSize(), r.SegmentSize())
	records, bytes := 0, 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			fmt.Println("the files end at", r.EndLSN())
			break
		}
		if err != nil {
			if xlog.IsEndOfWAL(err) {
				fmt.Println("the written WAL ends at", r.EndLSN())
				break
			}
			fmt.Println("damage:", err) // an *xlog.Error: file, offset, LSN
			return
		}
		if records < 3 {
			fmt.Printf("%s rmgr %d, %d bytes, xl_prev %s\n", rec.LSN, rec.Header.Rmid, rec.Header.TotLen, rec.Header.Prev)
		}
		records++
		bytes += int(rec.Header.TotLen)
	}
	fmt.Println(records, "records,", bytes, "bytes")
	// Output:
	// PostgreSQL 15, 8192-byte pages, 1048576-byte segments
	// 0/600100 rmgr 8, 90 bytes, xl_prev 0/5FE0E0
	// 0/600160 rmgr 10, 163 bytes, xl_prev 0/600100
	// 0/600208 rmgr 11, 177 bytes, xl_prev 0/600160
	// the files end at 0/7FFFF0
	// 22360 records, 2046083 bytes
}

// Records is the same reading as a range-over-func iterator: it yields at
// most one error, last, and stops silently at io.EOF.
func ExampleReader_Records() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{Start: 0x700000})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	commits := 0
	for rec, err := range r.Records() {
		if err != nil {
			fmt.Println("stopped:", xlog.IsEndOfWAL(err))
			break
		}
		if rec.Header.Rmid == xlog.RmgrTransaction && rec.Type()&0x70 == 0x00 { // XLOG_XACT_COMMIT
			commits++
		}
	}
	fmt.Println(commits, "commits in the second segment")
	// Output:
	// 12 commits in the second segment
}
