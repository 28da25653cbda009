package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Database descriptions: dbase_desc in src/backend/access/rmgrdesc/dbasedesc.c,
// payloads from src/include/commands/dbcommands_xlog.h. dbase_desc prints
// bare "tablespace/database" Oid pairs, never a GetDatabasePath path.
//
//	10, 11: CREATE "copy dir %u/%u to %u/%u" of (src_db_id,
//	        src_tablespace_id, db_id, tablespace_id), database first; DROP
//	        "dir %u/%u" of (db_id, tablespace_id), one record per tablespace
//	        (xl_dbase_drop_rec {db_id, tablespace_id}). Read from 10-based
//	        forks (2017: TBase, pgspider) and a 2018 (11-era) tree, and
//	        matching a 2017 pg_xlogdump sample "copy dir 1/1663 to 16384/1663".
//	12:     the same records, the pairs printed tablespace first: CREATE of
//	        (src_tablespace_id, src_db_id, tablespace_id, db_id), DROP "dir
//	        %u/%u" of (tablespace_id, db_id). No 12 source was found: this
//	        follows a pre-13 tree (old xl_dbase_drop_rec) that already has the
//	        tablespace-first order, so the reorder predates the 13 cycle's
//	        DROP change; whether 12.0 has it is the one unverified point.
//	13, 14: DROP became one record for all tablespaces, xl_dbase_drop_rec
//	        {db_id, int ntablespaces, tablespace_ids[]}: "dir" then " %u/%u"
//	        of (tablespace_ids[i], db_id) each (verified 13.16 source and
//	        pg_waldump; 14 from 2021 14-based trees, identical).
//	15-18:  info 0x00 is CREATE_FILE_COPY (as CREATE), 0x10 the new
//	        CREATE_WAL_LOG "create dir %u/%u" of xl_dbase_create_wal_log_rec
//	        {db_id, tablespace_id}, 0x20 DROP (as 13) (verified 15.18 and 18.6
//	        sources and pg_waldump; 17.12's pg_waldump has the same strings).

// dbaseDesc is the Database manager's Desc.
func dbaseDesc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	r := newDataReader(rec.MainData)
	info := rec.Header.Info &^ xlog.InfoMask
	switch {
	case info == 0x00: // XLOG_DBASE_CREATE, XLOG_DBASE_CREATE_FILE_COPY from 15
		// xl_dbase_create_rec / xl_dbase_create_file_copy_rec: db_id,
		// tablespace_id, src_db_id, src_tablespace_id.
		db := r.u32()
		spc := r.u32()
		srcDB := r.u32()
		srcSpc := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "copy dir "...)
		if v >= xlog.V12 {
			dst = dbaseAppendPair(dst, srcSpc, srcDB)
			dst = append(dst, " to "...)
			return dbaseAppendPair(dst, spc, db)
		}
		dst = dbaseAppendPair(dst, srcDB, srcSpc)
		dst = append(dst, " to "...)
		return dbaseAppendPair(dst, db, spc)
	case info == 0x10 && v >= xlog.V15: // XLOG_DBASE_CREATE_WAL_LOG
		db := r.u32()
		spc := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "create dir "...)
		return dbaseAppendPair(dst, spc, db)
	case info == 0x10 && v <= xlog.V12: // XLOG_DBASE_DROP, one tablespace
		db := r.u32()
		spc := r.u32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "dir "...)
		if v >= xlog.V12 {
			return dbaseAppendPair(dst, spc, db)
		}
		return dbaseAppendPair(dst, db, spc)
	case info == 0x10 || (info == 0x20 && v >= xlog.V15): // XLOG_DBASE_DROP, 13 on
		db := r.u32()
		n := r.i32()
		if !r.ok() {
			return dst
		}
		dst = append(dst, "dir"...)
		for i := int32(0); i < n; i++ {
			spc := r.u32()
			if !r.ok() {
				break
			}
			dst = append(dst, ' ')
			dst = dbaseAppendPair(dst, spc, db)
		}
	}
	return dst
}

// dbaseAppendPair appends "%u/%u".
func dbaseAppendPair(dst []byte, a, b uint32) []byte {
	dst = appendUint(dst, uint64(a))
	dst = append(dst, '/')
	return appendUint(dst, uint64(b))
}
