package rmgr

import (
	"github.com/walscope/walscope/decode"
)

// ReplicationOrigin descriptions: replorigin_desc in
// src/backend/access/rmgrdesc/replorigindesc.c, payloads from
// src/include/replication/origin.h. The same in 10 to 18 (verified 13.16,
// 15.18 and 18.6 sources and 15.18 pg_waldump; 17.12's pg_waldump has the
// same strings; 13 and earlier spell the LSN as two (uint32) casts, 14 on as
// LSN_FORMAT_ARGS, with the same output). Unlike replorigin_identify,
// replorigin_desc masks XLR_INFO_MASK.
//
//	SET:  "set %u; lsn %X/%X; force: %d" of xl_replorigin_set {XLogRecPtr
//	      remote_lsn; RepOriginId node_id (offset 8); bool force (10)}.
//	DROP: "drop %u" of xl_replorigin_drop {RepOriginId node_id}.

const (
	replOriginSet  = 0x00 // XLOG_REPLORIGIN_SET
	replOriginDrop = 0x10 // XLOG_REPLORIGIN_DROP
)

// replOriginDesc is the ReplicationOrigin manager's Desc.
func replOriginDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info & 0xF0 {
	case replOriginSet:
		lsn := r.u64()
		node := r.u16()
		force := r.u8()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "set "...)
		dst = appendUint(dst, uint64(node))
		dst = append(dst, "; lsn "...)
		dst = appendUpperHex(dst, lsn>>32)
		dst = append(dst, '/')
		dst = appendUpperHex(dst, lsn&0xFFFFFFFF)
		dst = append(dst, "; force: "...)
		dst = appendUint(dst, uint64(force))
	case replOriginDrop:
		node := r.u16()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "drop "...)
		dst = appendUint(dst, uint64(node))
	}
	return dst
}
