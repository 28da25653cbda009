// Package verify checks a stream: every problem of its pages and records,
// classified (Class) so that the end of written WAL is told from damage, read
// in parallel spans on xlog/stream (Verify, StartVerify beside another
// reading), with the archive's own problems (SummarizeArchive: missing,
// duplicate and encrypted segments, timelines) and the I/O layout of the
// WAL (Layout: how full its pages and segments are).
package verify
