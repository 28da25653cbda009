package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// CommitTs descriptions: commit_ts_desc in
// src/backend/access/rmgrdesc/committsdesc.c, payloads from
// src/include/access/commit_ts.h. Unlike commit_ts_identify, commit_ts_desc
// masks XLR_INFO_MASK.
//
//	ZEROPAGE: "%d" of an int page number up to 16 (verified 13.16, 15.18; 10
//	    from a 10-based fork), an int64 ("%lld" in 17.12, "%" PRId64 in 18.6)
//	    from 17.
//	TRUNCATE: "pageno %d, oldestXid %u" of xl_commit_ts_truncate {int
//	    pageno; TransactionId oldestXid} up to 16; from 17 pageno is an int64
//	    ("pageno %lld, oldestXid %u"), so oldestXid moves to offset 8.
//	SETTS (10 to 13 only; the record was removed in 14): "set %s/%d for: %u"
//	    of xl_commit_ts_set {TimestampTz timestamp; RepOriginId nodeid;
//	    TransactionId mainxid (offset 12)}, then ", %u" per subtransaction
//	    xid after SizeOfCommitTsSet (16) bytes (verified 13.16; the same in a
//	    10-based fork).

const (
	committsZeroPage = 0x00 // COMMIT_TS_ZEROPAGE
	committsTruncate = 0x10 // COMMIT_TS_TRUNCATE
	committsSetTS    = 0x20 // COMMIT_TS_SETTS, 10 to 13
)

// committsDesc is the CommitTs manager's Desc.
func committsDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlog.InfoMask {
	case committsZeroPage:
		pageno := clogReadPageno(&r, v)
		if !r.ok() {
			return dst
		}
		dst = appendInt(dst, pageno)
	case committsTruncate:
		pageno := clogReadPageno(&r, v)
		oldestXid := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "pageno "...)
		dst = appendInt(dst, pageno)
		dst = append(dst, ", oldestXid "...)
		dst = appendUint(dst, uint64(oldestXid))
	case committsSetTS:
		if v >= xlog.V14 {
			return dst
		}
		ts := r.i64()
		nodeid := r.u16()
		r.skip(2)
		mainxid := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "set "...)
		dst = appendTimestamptz(dst, ts)
		dst = append(dst, '/')
		dst = appendInt(dst, int64(nodeid))
		dst = append(dst, " for: "...)
		dst = appendUint(dst, uint64(mainxid))
		// nsubxids = (XLogRecGetDataLen - SizeOfCommitTsSet) / 4.
		for {
			xid := r.u32()
			if !r.ok() {
				break
			}
			dst = append(dst, ", "...)
			dst = appendUint(dst, uint64(xid))
		}
	}
	return dst
}
