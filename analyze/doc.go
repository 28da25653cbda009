// Package analyze aggregates decoded WAL, the one place walscope's analyses
// live (the text formats, the report and the datasets only present them):
//
//   - Stats: pg_waldump's --stats, per resource manager and record type;
//   - Breakdown: WAL by relation (named through a Catalog, a pg_class
//     export), checkpoint cycle, time, transaction, segment and timeline,
//     built from the shared counters (RedoFinder and CycleInfo for the
//     checkpoint cycles, CycleCounter, XactCounter, SegmentCounter) that the
//     dataset export uses too;
//   - Verify: every problem of a stream, classified, read in parallel spans
//     on xlog/stream;
//   - WhatIf: the WAL under other settings (wal_compression,
//     full_page_writes, checkpoint spacing, XLOG_BLCKSZ, wal_level), with an
//     ImagePipeline recompressing images on every core;
//   - ProfileStream: what compare puts side by side.
//
// Accumulators take records in WAL order and have a Merge (or Append) that
// combines the parts of consecutive spans, so that a reading on
// xlog/stream gives exactly what one sequential reading gives.
package analyze
