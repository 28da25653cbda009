package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// MultiXact descriptions: multixact_desc in
// src/backend/access/rmgrdesc/mxactdesc.c, payloads from
// src/include/access/multixact.h.
//
//	ZERO_OFF_PAGE, ZERO_MEM_PAGE: "%d" of an int page number up to 16
//	    (verified 13.16, 15.18; 10 from a 10-based fork), an int64 printed
//	    "%lld" (17.12) / "%" PRId64 (18.6) from 17, when SLRU page numbers
//	    became 64-bit.
//	CREATE_ID: "%u offset %u nmembers %d: " of xl_multixact_create {mid,
//	    moff, int32 nmembers}, then "%u (status) " per MultiXactMember {xid,
//	    status}, each followed by a space (so the text ends in one).
//	TRUNCATE_ID: "offsets [%u, %u), members [%u, %u)" of
//	    xl_multixact_truncate {oldestMultiDB, startTruncOff, endTruncOff,
//	    startTruncMemb, endTruncMemb}.
//
// CREATE_ID and TRUNCATE_ID are the same in 10 to 18 (verified 13.16, 15.18,
// 18.6 sources and pg_waldump; 17.12 headers and format strings).

const (
	multixactZeroOffPage = 0x00 // XLOG_MULTIXACT_ZERO_OFF_PAGE
	multixactZeroMemPage = 0x10 // XLOG_MULTIXACT_ZERO_MEM_PAGE
	multixactCreateID    = 0x20 // XLOG_MULTIXACT_CREATE_ID
	multixactTruncateID  = 0x30 // XLOG_MULTIXACT_TRUNCATE_ID
)

// multixactStatusNames are out_member's names of MultiXactStatus 0..5.
var multixactStatusNames = [...]string{
	"(keysh) ",       // MultiXactStatusForKeyShare
	"(sh) ",          // MultiXactStatusForShare
	"(fornokeyupd) ", // MultiXactStatusForNoKeyUpdate
	"(forupd) ",      // MultiXactStatusForUpdate
	"(nokeyupd) ",    // MultiXactStatusNoKeyUpdate
	"(upd) ",         // MultiXactStatusUpdate
}

// multixactDesc is the MultiXact manager's Desc.
func multixactDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlog.InfoMask {
	case multixactZeroOffPage, multixactZeroMemPage:
		pageno := clogReadPageno(&r, rec.Version)
		if !r.ok() {
			return dst
		}
		dst = appendInt(dst, pageno)
	case multixactCreateID:
		mid := r.u32()
		moff := r.u32()
		n := r.i32()
		if !r.ok() {
			return dst
		}
		dst = appendUint(dst, uint64(mid))
		dst = append(dst, " offset "...)
		dst = appendUint(dst, uint64(moff))
		dst = append(dst, " nmembers "...)
		dst = appendInt(dst, int64(n))
		dst = append(dst, ": "...)
		for i := int32(0); i < n; i++ {
			xid := r.u32()
			status := r.u32()
			if !r.ok() {
				break
			}
			dst = appendUint(dst, uint64(xid))
			dst = append(dst, ' ')
			if status < uint32(len(multixactStatusNames)) {
				dst = append(dst, multixactStatusNames[status]...)
			} else {
				dst = append(dst, "(unk) "...)
			}
		}
	case multixactTruncateID:
		r.skip(4) // oldestMultiDB
		startOff := r.u32()
		endOff := r.u32()
		startMemb := r.u32()
		endMemb := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "offsets ["...)
		dst = appendUint(dst, uint64(startOff))
		dst = append(dst, ", "...)
		dst = appendUint(dst, uint64(endOff))
		dst = append(dst, "), members ["...)
		dst = appendUint(dst, uint64(startMemb))
		dst = append(dst, ", "...)
		dst = appendUint(dst, uint64(endMemb))
		dst = append(dst, ')')
	}
	return dst
}
