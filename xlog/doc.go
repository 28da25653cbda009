// Package xlog reads PostgreSQL write-ahead log (WAL): it finds the segment
// files of a stream, validates every page header and record as PostgreSQL's
// xlogreader does, reassembles records that span pages and segments, checks
// their CRC-32C, and follows timelines through their history files. It reads
// the WAL of PostgreSQL 10 to 18, of any XLOG_BLCKSZ and segment size, all
// learnt from the WAL itself. Splitting a record's body into block
// references and main data is package decode's work; describing it, package
// rmgr's.
//
// # The WAL format
//
// WAL is one stream of bytes addressed by LSN (XLogRecPtr), cut into segment
// files of wal_segment_size bytes, each cut into pages of XLOG_BLCKSZ bytes.
// Records follow one another, MAXALIGNed, and run across page and segment
// boundaries; every page starts with a header, which a record spanning pages
// skips:
//
//	segment file TTTTTTTTXXXXXXXXYYYYYYYY: timeline, then segment number (1 MB to 1 GB)
//	+-------------------+-------------------+-----+-------------------+
//	| page 0            | page 1            | ... | page N-1          |  XLOG_BLCKSZ each (1 to 64 kB)
//	+-------------------+-------------------+-----+-------------------+
//
//	page 0 of a segment                     every other page
//	+------------------------------+        +------------------------------+
//	| long header, 40 bytes        |        | short header, 24 bytes       |
//	|   xlp_magic   xlp_info       |        |   xlp_magic   xlp_info       |
//	|   xlp_tli     xlp_pageaddr   |        |   xlp_tli     xlp_pageaddr   |
//	|   xlp_rem_len                |        |   xlp_rem_len                |
//	|   xlp_sysid   xlp_seg_size   |        +------------------------------+
//	|   xlp_xlog_blcksz            |        | the end of a record begun on |
//	+------------------------------+        | an earlier page: xlp_rem_len |
//	| the end of a record begun in |        | bytes, if xlp_info has       |
//	| the previous segment, if any |        | XLP_FIRST_IS_CONTRECORD      |
//	+------------------------------+        +------------------------------+
//	| records ...                  |        | records ...                  |
//	+------------------------------+        +------------------------------+
//
//	one record: xl_tot_len bytes, page headers left out
//	+----------------------+---------------------------+---------------------------+-----------+
//	| XLogRecord, 24 bytes | block headers (id 0..32)  | for each block: image     | main data |
//	|   xl_tot_len xl_xid  | [origin] [top-level xid]  | bytes, then block data    |           |
//	|   xl_prev  xl_info   | [main data length]        |                           |           |
//	|   xl_rmid  xl_crc    |                           |                           |           |
//	+----------------------+---------------------------+---------------------------+-----------+
//	  RecordHeader          '-------------------- the body: package decode ------------------'
//	'------------------------------ Record.Raw ---------------------------------------------------'
//
// The types mirror PostgreSQL's:
//
//   - PageHeader: XLogPageHeaderData and XLogLongPageHeaderData, with the
//     PageInfo flags (src/include/access/xlog_internal.h); the page magic of
//     each major release gives the Version.
//   - SegmentName: XLogFileName and XLogFromFileName (xlog_internal.h).
//   - RecordHeader: XLogRecord (src/include/access/xlogrecord.h); RecordCRC
//     computes xl_crc as ValidXLogRecord does.
//   - LSN and TimeLineID: XLogRecPtr and TimeLineID
//     (src/include/access/xlogdefs.h); RmgrID: rmgrlist.h's ids.
//   - HistoryEntry and ParseHistory: timeline history files
//     (src/include/access/timeline.h, src/backend/access/transam/timeline.c).
//   - WalLevel: wal_level (src/include/access/xlog.h).
//   - Reader follows src/backend/access/transam/xlogreader.c
//     (XLogReaderValidatePageHeader, XLogDecodeNextRecord,
//     ValidXLogRecordHeader, XLogFindNextRecord), and Error carries its
//     messages in the wording of the version that wrote the WAL.
//
// # Reading
//
// A Source lists the segment files of a stream and opens them. OpenDir gives
// one over a directory of plain files (a pg_wal, a data directory, a flat
// archive), NewMemSource one over files in memory; package xlog/archive's
// Open reads every other form WAL is kept in (compressed files, backup
// tools' repositories, tar files). A Source may implement HistoryReader, to
// give the timeline history files, and HeadReader.
//
// NewReader learns the stream's geometry from its first long page header;
// Next returns the records in order:
//
//	src, err := xlog.OpenDir("/var/lib/postgresql/17/main/pg_wal")
//	if err != nil { ... }
//	r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
//	if err != nil { ... }
//	defer r.Close()
//	for {
//		rec, err := r.Next()
//		if err == io.EOF {
//			break // the files or the requested range ended
//		}
//		if err != nil {
//			if xlog.IsEndOfWAL(err) {
//				break // zeroed or recycled space: where written WAL ends
//			}
//			return err // *xlog.Error: damage, with its position
//		}
//		fmt.Println(rec.LSN, rec.Header.Rmid, rec.Header.TotLen)
//	}
//
// A Record and its Raw bytes are valid until the next call to Next. Every
// error Next returns other than io.EOF is an *Error holding the file, offset
// and LSN of the problem and wrapping one of the Err sentinels, to test with
// errors.Is. A Reader is not safe for concurrent use; package xlog/stream
// reads one stream with several readers at once.
package xlog
