package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestClogDesc(t *testing.T) {
	// clogdesc.c 10-16: "page %d" (int), "page %d; oldestXact %u" of
	// xl_clog_truncate {int pageno; TransactionId oldestXact; Oid
	// oldestXactDb}. 17 ("page %lld") and 18 ("page %" PRId64): int64 pageno,
	// so the truncate struct is {int64 pageno; oldestXact; oldestXactDb}.
	smgrRunCases(t, xlog.RmgrCLOG, []smgrTestCase{
		{xlog.V10, 0x00, smgrLE(int32(3)), "page 3"},
		{xlog.V16, 0x00, smgrLE(int32(-2)), "page -2"},
		{xlog.V13, 0x10, smgrLE(int32(12), uint32(4000000000), uint32(5)), "page 12; oldestXact 4000000000"},
		{xlog.V16, 0x10, smgrLE(int32(7), uint32(900), uint32(1)), "page 7; oldestXact 900"},
		{xlog.V17, 0x00, smgrLE(int64(5000000000)), "page 5000000000"},
		{xlog.V18, 0x00, smgrLE(int64(1)), "page 1"},
		{xlog.V17, 0x10, smgrLE(int64(12), uint32(900), uint32(1)), "page 12; oldestXact 900"},
		{xlog.V18, 0x10, smgrLE(int64(1)<<33, uint32(123), uint32(5)), "page 8589934592; oldestXact 123"},
		// An int64 page number is 8 bytes: 4 are too few in 17.
		{xlog.V17, 0x00, smgrLE(int32(3)), ""},
		{xlog.V15, 0x20, smgrLE(int32(3)), ""},
	})
}
