package verify_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/verify"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// Verify over fixtures/sample, two 1 MB segments of real PostgreSQL 15
// WAL: every page and record checks, and the WAL ends with the files (the
// last record fills the second segment), so the report has no End.
func ExampleVerify() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	rep, err := verify.Verify(src, xlog.Options{}, 8192, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("PostgreSQL %d, %d segments, %d records\n", rep.Version, rep.Segments, rep.Records)
	for _, tl := range rep.Timelines {
		fmt.Printf("timeline %d: %s to %s\n", tl.TLI, tl.Start, tl.End)
	}
	fmt.Println("ok:", rep.OK(), "problems:", len(rep.Problems))
	if rep.End != nil {
		fmt.Println("end:", rep.End.Class, rep.End.Cause, "at", rep.End.LSNStr)
	}
	// Output:
	// PostgreSQL 15, 2 segments, 22360 records
	// timeline 1: 0/600100 to 0/7FFFF0
	// ok: true problems: 0
}

// A damaged copy of fixtures/sample: one byte changed inside a record of
// the first segment. Verify names the problem's class, file, offset and
// LSN, in PostgreSQL's words, resynchronises at the next page that tells
// where a record starts, and reads on to the end. pg_waldump 15 stops at
// the same record with the same message after 2326 records, and reads
// 19938 more when started at 0/642030: 22264 in all.
func ExampleVerify_damaged() {
	dir, err := os.MkdirTemp("", "walscope-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"000000010000000000000006", "000000010000000000000007"} {
		b, err := os.ReadFile(filepath.Join("..", "fixtures", "sample", name))
		if err != nil {
			fmt.Println(err)
			return
		}
		if name == "000000010000000000000006" {
			b[0x40000+200] ^= 0xff
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			fmt.Println(err)
			return
		}
	}
	src, err := archive.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	rep, err := verify.Verify(src, xlog.Options{}, 8192, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ok:", rep.OK(), "records:", rep.Records)
	for _, p := range rep.Problems {
		fmt.Printf("%s in %s at offset %d (LSN %s), resumed at %s\n", p.Class, filepath.Base(p.File), p.Offset, p.LSNStr, p.Resume)
		fmt.Println(p.Message)
	}
	// Output:
	// ok: false records: 22264
	// crc-mismatch in 000000010000000000000006 at offset 262296 (LSN 0/640098), resumed at 0/642030
	// incorrect resource manager data checksum in record at 0/640098
}
