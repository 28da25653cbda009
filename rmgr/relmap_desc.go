package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// RelMap descriptions, mirroring relmap_desc in
// src/backend/access/rmgrdesc/relmapdesc.c; xl_relmap_update
// (src/include/utils/relmapper.h) is Oid dbid @0, Oid tsid @4, int32 nbytes
// @8, then the map.
//
// "database %u tablespace %u size %u" in 10 to 15 (13.16 and 15.18 source;
// the 10.23, 11.22, 12.22 and 14.23 server binaries), "size %d" from 16 on
// (16.14 server binary, pg_waldump 17.12, 18.6 source): the only difference
// is the sign of a corrupt negative nbytes.
//
// Verified against PostgreSQL's own output: pg_waldump 13.16, 15.18 and 18.6
// over the corpora and fixtures (byte-identical lines); the servers' own
// rm_desc over real WAL of 10.23, 11.22, 12.22 and 14.23 (a C function in the
// server calling XLogReadRecord and the *_desc functions) and of 15.18,
// 16.14, 17.10 and 18.4 (pg_walinspect), kept in
// testdata/xlog-group-desc-oracle.tsv for the versions without a corpus.

const relmapUpdate = 0x00 // XLOG_RELMAP_UPDATE

func relmapDesc(dst []byte, rec *decode.Record) []byte {
	if rec.Header.Info&^xlrInfoMask != relmapUpdate {
		return dst
	}
	var b [12]byte
	copy(b[:], rec.MainData)
	dst = append(dst, "database "...)
	dst = appendUint(dst, uint64(xlogLE32(b[:], 0)))
	dst = append(dst, " tablespace "...)
	dst = appendUint(dst, uint64(xlogLE32(b[:], 4)))
	dst = append(dst, " size "...)
	if rec.Version >= xlog.V16 {
		return appendInt(dst, int64(int32(xlogLE32(b[:], 8))))
	}
	return appendUint(dst, uint64(xlogLE32(b[:], 8)))
}
