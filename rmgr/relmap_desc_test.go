package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestRelmapDescVersions(t *testing.T) {
	// xl_relmap_update: dbid, tsid, int32 nbytes, data. relmapdesc.c:
	// "database %u tablespace %u size %u" up to 15, "size %d" from 16.
	upd := func(n int32) []byte { return xlogTestLE(uint32(16384), uint32(1663), n, 16) }
	xlogRunCases(t, []xlogTestCase{
		{xlog.V10, xlog.RmgrRelMap, 0x00, upd(512), "database 16384 tablespace 1663 size 512"},
		{xlog.V15, xlog.RmgrRelMap, 0x00, upd(-1), "database 16384 tablespace 1663 size 4294967295"},
		{xlog.V16, xlog.RmgrRelMap, 0x00, upd(-1), "database 16384 tablespace 1663 size -1"},
		{xlog.V18, xlog.RmgrRelMap, 0x00, upd(524), "database 16384 tablespace 1663 size 524"},
		{xlog.V18, xlog.RmgrRelMap, 0x10, upd(524), ""},
	})
}
