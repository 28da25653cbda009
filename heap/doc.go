// Package heap is the page-level half of rebuilding heap pages from the WAL:
// the redo of every Heap and Heap2 record (and of the block images any
// record carries) onto one page, as the PostgreSQL version that wrote the
// WAL (10 to 18) does it; heap_mask, the masking PostgreSQL's own
// consistency checker applies before comparing pages; and a reader of heap
// pages that names what it finds as pageinspect's page_header() and
// heap_page_items() do.
//
// It holds no state: a replay engine keeps the pages (which blocks, which
// relation file, truncations, drops) and calls Redo once per block reference
// of each record, in WAL order. Redo allocates nothing on its normal paths.
//
// Proof (heap's tests): real WAL of every version 10 to 18, 4 kB, 8 kB and
// 32 kB pages, checksums on and off, images compressed with pglz, lz4 and
// zstd: from each full-page image of a heap block, every later record
// touching it is redone and, where the next record carries an image of the
// block, the page equals that image after Mask; and WAL written under
// wal_consistency_checking = 'heap,heap2' (testdata/wcc), where every record
// carries the server's page after it, checks each redo on its own.
// ReadPage is checked against a real server's pageinspect.
package heap
