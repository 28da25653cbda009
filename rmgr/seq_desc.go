package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Sequence descriptions: seq_desc in src/backend/access/rmgrdesc/seqdesc.c,
// payload from src/include/commands/sequence.h. The same in 10 to 18
// (verified 13.16, 15.18 and 18.6 sources and pg_waldump; 17.12's pg_waldump
// has the same string): LOG "rel %u/%u/%u" of xl_seq_rec's RelFileNode
// (RelFileLocator from 16); the sequence tuple that follows is not printed.

// seqDesc is the Sequence manager's Desc.
func seqDesc(dst []byte, rec *decode.Record) []byte {
	if rec.Header.Info&^xlog.InfoMask != 0x00 { // XLOG_SEQ_LOG
		return dst
	}
	r := newDataReader(rec.MainData)
	rel := smgrReadRel(&r)
	if !r.ok() {
		return dst
	}
	dst = append(dst, "rel "...)
	dst = appendUint(dst, uint64(rel.SpcOID))
	dst = append(dst, '/')
	dst = appendUint(dst, uint64(rel.DBOID))
	dst = append(dst, '/')
	return appendUint(dst, uint64(rel.RelNumber))
}
