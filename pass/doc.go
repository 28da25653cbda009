// Package pass runs first passes over a stream on the xlog/stream engine:
// what an analysis must know before its own reading (redo points,
// wal_level, data lengths, names), gathered on every core in parts of the
// caller's type, one per span, returned in WAL order. XLOGPass hands over
// the XLOG records only (checkpoints, parameter changes), RecordPass every
// record decoded, and Run the raw records with a decoder per span.
package pass
