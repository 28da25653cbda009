package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// CLOG descriptions: clog_desc in src/backend/access/rmgrdesc/clogdesc.c,
// payloads from src/include/access/clog.h.
//
//	10 to 16: ZEROPAGE "page %d" of an int; TRUNCATE "page %d; oldestXact %u"
//	          of xl_clog_truncate {int pageno; TransactionId oldestXact; Oid
//	          oldestXactDb} (verified 13.16 and 15.18; 10 read from a 10-based
//	          fork, where xl_clog_truncate already exists; 16 from a 2023
//	          clogdesc.c, still int).
//	17, 18:   the page number is an int64 (SLRU pages became 64-bit in 17):
//	          "page %lld" (17.12 pg_waldump's format strings and headers) and
//	          "page %" PRId64 (18.6), and xl_clog_truncate's pageno is int64,
//	          so oldestXact moves to offset 8.

// clogDesc is the CLOG manager's Desc.
func clogDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlog.InfoMask {
	case clogZeroPage:
		pageno := clogReadPageno(&r, rec.Version)
		if !r.ok() {
			return dst
		}
		dst = append(dst, "page "...)
		dst = appendInt(dst, pageno)
	case clogTruncate:
		pageno := clogReadPageno(&r, rec.Version)
		oldestXact := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "page "...)
		dst = appendInt(dst, pageno)
		dst = append(dst, "; oldestXact "...)
		dst = appendUint(dst, uint64(oldestXact))
	}
	return dst
}

// clogReadPageno reads an SLRU page number: an int up to 16, an int64 from
// 17 (also used by the MultiXact and CommitTs descriptions).
func clogReadPageno(r *dataReader, v xlog.Version) int64 {
	if v >= xlog.V17 {
		return r.i64()
	}
	return int64(r.i32())
}
