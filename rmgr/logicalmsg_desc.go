package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// LogicalMessage descriptions: logicalmsg_desc in
// src/backend/access/rmgrdesc/logicalmsgdesc.c, payload xl_logical_message
// from src/include/replication/message.h: {Oid dbId; bool transactional
// (offset 4); Size prefix_size (8); Size message_size (16); char message[]
// (24): the NUL-terminated prefix, prefix_size bytes with its NUL, then
// message_size bytes of payload} (64-bit layout).
//
//	10 to 13: "%s message size %zu bytes" with "transactional" or
//	          "nontransactional" (verified 13.16 source and pg_waldump; 10 and
//	          11 from 2017/2018 trees).
//	14 to 18: "%s, prefix \"%s\"; payload (%zu bytes): " with "transactional"
//	          or "non-transactional", then the payload bytes as "%02X"
//	          separated by single spaces (verified 15.18 and 18.6 sources and
//	          pg_waldump; 17.12's pg_waldump has the same strings; 14 from a
//	          2021 14-based Apache Cloudberry tree: the change landed in the 14
//	          cycle, which 2021 trees of the 15 cycle also show).

// logicalmsgDesc is the LogicalMessage manager's Desc.
func logicalmsgDesc(dst []byte, rec *decode.Record) []byte {
	if rec.Header.Info&^xlog.InfoMask != 0x00 { // XLOG_LOGICAL_MESSAGE
		return dst
	}
	r := newDataReader(rec.MainData)
	r.skip(4) // dbId
	transactional := r.u8() != 0
	r.skip(3)
	prefixSize := r.u64()
	messageSize := r.u64()
	if !r.ok() {
		return dst
	}
	if rec.Version < xlog.V14 {
		if transactional {
			dst = append(dst, "transactional"...)
		} else {
			dst = append(dst, "nontransactional"...)
		}
		dst = append(dst, " message size "...)
		dst = appendUint(dst, messageSize)
		return append(dst, " bytes"...)
	}
	if transactional {
		dst = append(dst, "transactional"...)
	} else {
		dst = append(dst, "non-transactional"...)
	}
	rest := r.rest()
	dst = append(dst, ", prefix \""...)
	dst = append(dst, tblspcCString(rest)...)
	dst = append(dst, "\"; payload ("...)
	dst = appendUint(dst, messageSize)
	dst = append(dst, " bytes): "...)
	// The payload starts prefix_size bytes after the prefix; print what the
	// record holds of it.
	if prefixSize > uint64(len(rest)) {
		return dst
	}
	payload := rest[prefixSize:]
	if messageSize < uint64(len(payload)) {
		payload = payload[:messageSize]
	}
	const digits = "0123456789ABCDEF"
	for i, b := range payload {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, digits[b>>4], digits[b&0xF])
	}
	return dst
}
