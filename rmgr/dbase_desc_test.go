package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestDbaseDesc(t *testing.T) {
	// xl_dbase_create_rec (10-14) / xl_dbase_create_file_copy_rec (15+):
	// {db_id, tablespace_id, src_db_id, src_tablespace_id}.
	create := smgrLE(uint32(16384), uint32(1663), uint32(1), uint32(1664))
	// xl_dbase_drop_rec 10-12: {db_id, tablespace_id}.
	drop12 := smgrLE(uint32(16455), uint32(1663))
	// xl_dbase_drop_rec 13+: {db_id, int ntablespaces, tablespace_ids[]}.
	drop13 := smgrLE(uint32(16455), int32(2), uint32(1663), uint32(16500))
	smgrRunCases(t, xlog.RmgrDatabase, []smgrTestCase{
		// 10, 11 dbasedesc.c: "copy dir %u/%u to %u/%u" of (src_db_id,
		// src_tablespace_id, db_id, tablespace_id); "dir %u/%u" of (db_id,
		// tablespace_id).
		{xlog.V10, 0x00, create, "copy dir 1/1664 to 16384/1663"},
		{xlog.V11, 0x10, drop12, "dir 16455/1663"},
		// 12: the same records, tablespace first.
		{xlog.V12, 0x00, create, "copy dir 1664/1 to 1663/16384"},
		{xlog.V12, 0x10, drop12, "dir 1663/16455"},
		// 13, 14: CREATE as 12; DROP "dir" then " %u/%u" of
		// (tablespace_ids[i], db_id).
		{xlog.V13, 0x00, create, "copy dir 1664/1 to 1663/16384"},
		{xlog.V13, 0x10, drop13, "dir 1663/16455 16500/16455"},
		{xlog.V14, 0x10, smgrLE(uint32(7), int32(0)), "dir"},
		// 15+: 0x00 CREATE_FILE_COPY as CREATE, 0x10 CREATE_WAL_LOG "create dir
		// %u/%u" of xl_dbase_create_wal_log_rec {db_id, tablespace_id}, 0x20
		// DROP as 13.
		{xlog.V15, 0x00, create, "copy dir 1664/1 to 1663/16384"},
		{xlog.V15, 0x10, smgrLE(uint32(16568), uint32(1663)), "create dir 1663/16568"},
		{xlog.V16, 0x20, drop13, "dir 1663/16455 16500/16455"},
		{xlog.V17, 0x10, smgrLE(uint32(16451), uint32(16500)), "create dir 16500/16451"},
		{xlog.V18, 0x20, smgrLE(uint32(16451), int32(1), uint32(1663)), "dir 1663/16451"},
		// 0x20 means nothing before 15.
		{xlog.V14, 0x20, drop13, ""},
		// ntablespaces larger than the data: the ids that are there.
		{xlog.V18, 0x20, smgrLE(uint32(16451), int32(3), uint32(1663)), "dir 1663/16451"},
		{xlog.V13, 0x00, create[:12], ""},
	})
}
