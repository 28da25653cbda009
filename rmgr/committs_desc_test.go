package rmgr

import (
	"testing"
	"time"

	"github.com/walscope/walscope/xlog"
)

func TestCommittsDesc(t *testing.T) {
	// committsdesc.c: ZEROPAGE "%d" (int, 10-16) / "%lld" (int64, 17) /
	// "%" PRId64 (18); TRUNCATE "pageno %d, oldestXid %u" of
	// xl_commit_ts_truncate {int pageno; TransactionId oldestXid}, from 17
	// "pageno %lld, oldestXid %u" with an int64 pageno; SETTS (10-13) "set
	// %s/%d for: %u" of xl_commit_ts_set {TimestampTz; RepOriginId nodeid;
	// TransactionId mainxid}, then ", %u" per subxid after 16 bytes, the
	// timestamp by timestamptz_to_str: "%Y-%m-%d %H:%M:%S.%06d %Z", local time.
	at := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := (at.Unix()-946684800)*1_000_000 + 123456
	local := at.In(time.Local)
	stamp := local.Format("2006-01-02 15:04:05") + ".123456 " + local.Format("MST")
	setts := smgrLE(ts, uint16(3), uint16(0), uint32(900))
	smgrRunCases(t, xlog.RmgrCommitTs, []smgrTestCase{
		{xlog.V10, 0x00, smgrLE(int32(1)), "1"},
		{xlog.V16, 0x00, smgrLE(int32(40)), "40"},
		{xlog.V17, 0x00, smgrLE(int64(1) << 32), "4294967296"},
		{xlog.V18, 0x00, smgrLE(int64(3)), "3"},
		{xlog.V13, 0x10, smgrLE(int32(40), uint32(32807)), "pageno 40, oldestXid 32807"},
		{xlog.V16, 0x10, smgrLE(int32(40), uint32(32807)), "pageno 40, oldestXid 32807"},
		{xlog.V17, 0x10, smgrLE(int64(40), uint32(32807), uint32(0)), "pageno 40, oldestXid 32807"},
		{xlog.V18, 0x10, smgrLE(int64(1)<<33, uint32(7), uint32(0)), "pageno 8589934592, oldestXid 7"},
		{xlog.V10, 0x20, setts, "set " + stamp + "/3 for: 900"},
		{xlog.V13, 0x20, smgrLE(setts, uint32(901), uint32(902)), "set " + stamp + "/3 for: 900, 901, 902"},
		// SETTS is gone from 14: nothing printed.
		{xlog.V14, 0x20, setts, ""},
		// commit_ts_desc masks the flag bits that commit_ts_identify does not.
		{xlog.V15, 0x01, smgrLE(int32(2)), "2"},
		{xlog.V17, 0x10, smgrLE(int32(40), uint32(32807)), ""},
	})
}
