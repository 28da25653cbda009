package stats_test

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/stats"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
)

// readSample reads fixtures/sample (two 1 MB segments of real PostgreSQL
// 15 WAL) with one reader, handing each decoded record to each in WAL
// order; it returns the first record's LSN and where the reading ended.
func readSample(each func(*decode.Record)) (start, end xlog.LSN, err error) {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		return 0, 0, err
	}
	defer src.Close()
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			return start, r.EndLSN(), nil // the end of the WAL written
		}
		if err != nil {
			return 0, 0, err
		}
		if start == 0 {
			start = rec.LSN
		}
		d, err := dec.Decode(rec)
		if err != nil {
			return 0, 0, err
		}
		each(d)
	}
}

// pg_waldump --stats's figures: records counted per resource manager and
// record type, with the bytes of their full-page images apart. The total
// is pg_waldump's "Total" line over the same two segments (22360 records).
func ExampleStats() {
	var s stats.Stats
	if _, _, err := readSample(s.Add); err != nil {
		fmt.Println(err)
		return
	}
	tot := s.Totals()
	fmt.Printf("%d records from %v to %v\n", s.Count, s.Start, s.End)
	fmt.Printf("record bytes %d, image bytes %d\n", tot.RecLen, tot.FPILen)
	for _, row := range s.Rows(false) { // per resource manager
		if row.Count >= 1000 {
			fmt.Printf("%-6s %5d records, %7d bytes\n", row.Name, row.Count, row.Total())
		}
	}
	// Output:
	// 22360 records from 0/600100 to 0/7FFFF0
	// record bytes 1807298, image bytes 238785
	// Heap   12355 records, 1188446 bytes
	// Btree   8876 records,  689018 bytes
}

// WAL by relation: a first pass finds the checkpoints' redo points
// (RedoFinder), which the breakdown needs up front for its checkpoint
// cycles; the second pass counts every record. The relation rows add up to
// the stream's total (record bytes include the images: pg_waldump's
// combined size), with the records that touch no relation apart.
func ExampleBreakdown() {
	var finder stats.RedoFinder
	start, end, err := readSample(finder.Add)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := stats.NewBreakdown(time.Minute, finder.Sorted(), start, end)
	if _, _, err := readSample(b.Add); err != nil {
		fmt.Println(err)
		return
	}
	b.Finish()
	rels := make([]*stats.RelVolume, 0, len(b.Relations))
	var sum uint64
	for _, r := range b.Relations {
		rels = append(rels, r)
		sum += r.RecordBytes
	}
	// the largest first
	slices.SortFunc(rels, func(x, y *stats.RelVolume) int {
		return cmp.Or(cmp.Compare(y.RecordBytes, x.RecordBytes), cmp.Compare(x.Rel.RelNumber, y.Rel.RelNumber), cmp.Compare(x.Rel.Fork, y.Rel.Fork))
	})
	fmt.Printf("%d records, %d record bytes, %d relation forks\n", b.Total.Records, b.Total.RecordBytes, len(rels))
	fmt.Println("relations + no relation = total:", sum+b.NoRel.RecordBytes == b.Total.RecordBytes)
	for _, r := range rels[:3] {
		fmt.Printf("%d/%d/%d fork %d: %d records, %d bytes, %d images\n", r.Rel.SpcOID, r.Rel.DBOID, r.Rel.RelNumber, r.Rel.Fork, r.Records, r.RecordBytes, r.Images)
	}
	fmt.Println(len(b.Cycles), "checkpoint cycles")
	// Output:
	// 22360 records, 2046083 record bytes, 46 relation forks
	// relations + no relation = total: true
	// 1663/16384/16385 fork 0: 2438 records, 343825 bytes, 26 images
	// 1663/16384/16453 fork 0: 4311 records, 266468 bytes, 0 images
	// 1663/16384/16457 fork 0: 4503 records, 264076 bytes, 0 images
	// 7 checkpoint cycles
}
