package rmgr

import (
	"github.com/walscope/walscope/decode"
)

// Generic descriptions: generic_desc in
// src/backend/access/rmgrdesc/genericdesc.c, the same in 10 to 18 (verified
// 13.16, 15.18 and 18.6 sources; 17.12's pg_waldump has the same strings).
// It walks the record's MAIN data as a series of {OffsetNumber offset;
// OffsetNumber length; length bytes} and prints "offset %u, length %u",
// joined by "; ". Generic WAL (generic_xlog.c) registers its page deltas as
// block data, never main data, so real records print nothing here, as the
// 15 fixtures show ("desc: Generic , blkref #0: ...").

// genericDesc is the Generic manager's Desc.
func genericDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	end := len(rec.MainData)
	for r.ok() && r.off < end {
		offset := r.u16()
		length := r.u16()
		if !r.ok() {
			// PostgreSQL would read past the data; print nothing more.
			break
		}
		// ptr += length; then "; " only when ptr is still before end.
		more := end-r.off > int(length)
		dst = append(dst, "offset "...)
		dst = appendUint(dst, uint64(offset))
		dst = append(dst, ", length "...)
		dst = appendUint(dst, uint64(length))
		if !more {
			break
		}
		dst = append(dst, "; "...)
		r.skip(int(length))
	}
	return dst
}
