package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Storage descriptions: smgr_desc in src/backend/access/rmgrdesc/smgrdesc.c,
// payloads from src/include/catalog/storage_xlog.h. The same in 10 to 18
// (verified 13.16, 15.18 and 18.6 sources and pg_waldump; 17.12's pg_waldump
// holds the same format string; 10 read from 10-based forks, where
// xl_smgr_truncate already has its flags): relpathperm of the relation, and
// for TRUNCATE "%s to %u blocks flags %d". Only the struct member names
// changed (RelFileNode rnode before 16, RelFileLocator rlocator from 16).

// smgrDesc is the Storage manager's Desc.
func smgrDesc(dst []byte, rec *decode.Record) []byte {
	r := newDataReader(rec.MainData)
	switch rec.Header.Info &^ xlog.InfoMask {
	case smgrCreate:
		// xl_smgr_create: RelFileNode (spc, db, rel), ForkNumber forkNum (int).
		rel := smgrReadRel(&r)
		fork := r.i32()
		if !r.ok() {
			return dst
		}
		dst = appendRelPath(dst, rec.Version, rel, smgrForkNumber(fork))
	case smgrTruncate:
		// xl_smgr_truncate: BlockNumber blkno, RelFileNode, int flags.
		blkno := r.u32()
		rel := smgrReadRel(&r)
		flags := r.i32()
		if !r.ok() {
			return dst
		}
		dst = appendRelPath(dst, rec.Version, rel, decode.ForkMain)
		dst = append(dst, " to "...)
		dst = appendUint(dst, uint64(blkno))
		dst = append(dst, " blocks flags "...)
		dst = appendInt(dst, int64(flags))
	}
	return dst
}

// smgrReadRel reads a RelFileNode / RelFileLocator (three Oids).
func smgrReadRel(r *dataReader) decode.RelFileLocator {
	var rel decode.RelFileLocator
	rel.SpcOID = r.u32()
	rel.DBOID = r.u32()
	rel.RelNumber = r.u32()
	return rel
}

// smgrForkNumber returns f as appendRelPath's fork argument. A fork number
// outside forkNames (only in a corrupt record) has no defined output in
// PostgreSQL, which would index past the array; we print the main-fork path.
func smgrForkNumber(f int32) decode.ForkNumber {
	if f < 0 || f > int32(decode.MaxForkNumber) {
		return decode.ForkMain
	}
	return decode.ForkNumber(f)
}
