// Package stats aggregates decoded WAL into volumes:
//
//   - Stats: pg_waldump's --stats, per resource manager and record type;
//   - Breakdown: WAL by relation, checkpoint cycle, time, transaction,
//     segment and timeline, built from the counters the dataset export
//     shares (RedoFinder and CycleInfo for the checkpoint cycles, with each
//     checkpoint's cause; CycleCounter, XactCounter, SegmentCounter);
//   - ProfileStream: what `walscope compare` puts side by side.
//
// Accumulators take records in WAL order and have a Merge (or Append) that
// combines the parts of consecutive spans, so that a reading on
// xlog/stream gives exactly what one sequential reading gives.
package stats
