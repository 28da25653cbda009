package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestMultixactDesc(t *testing.T) {
	// mxactdesc.c: ZERO_*_PAGE "%d" (int, 10-16) / "%lld" (int64, 17) /
	// "%" PRId64 (18); CREATE_ID "%u offset %u nmembers %d: " then per member
	// "%u " and "(keysh) ", "(sh) ", "(fornokeyupd) ", "(forupd) ",
	// "(nokeyupd) ", "(upd) " or "(unk) "; TRUNCATE_ID "offsets [%u, %u),
	// members [%u, %u)" of {oldestMultiDB, startTruncOff, endTruncOff,
	// startTruncMemb, endTruncMemb}.
	create := smgrLE(uint32(7), uint32(11), int32(7),
		uint32(100), uint32(0), uint32(101), uint32(1), uint32(102), uint32(2),
		uint32(103), uint32(3), uint32(104), uint32(4), uint32(105), uint32(5),
		uint32(106), uint32(6))
	want := "7 offset 11 nmembers 7: 100 (keysh) 101 (sh) 102 (fornokeyupd) " +
		"103 (forupd) 104 (nokeyupd) 105 (upd) 106 (unk) "
	trunc := smgrLE(uint32(5), uint32(1), uint32(3), uint32(1), uint32(5))
	smgrRunCases(t, xlog.RmgrMultiXact, []smgrTestCase{
		{xlog.V10, 0x00, smgrLE(int32(4)), "4"},
		{xlog.V16, 0x10, smgrLE(int32(-1)), "-1"},
		{xlog.V17, 0x00, smgrLE(int64(1) << 40), "1099511627776"},
		{xlog.V18, 0x10, smgrLE(int64(2)), "2"},
		{xlog.V13, 0x20, create, want},
		{xlog.V18, 0x20, create, want},
		{xlog.V14, 0x20, smgrLE(uint32(1), uint32(1), int32(0)), "1 offset 1 nmembers 0: "},
		{xlog.V12, 0x30, trunc, "offsets [1, 3), members [1, 5)"},
		{xlog.V18, 0x30, trunc, "offsets [1, 3), members [1, 5)"},
		// nmembers beyond the data: the members that are there.
		{xlog.V15, 0x20, smgrLE(uint32(1), uint32(1), int32(2), uint32(569), uint32(1)), "1 offset 1 nmembers 2: 569 (sh) "},
		{xlog.V15, 0x30, trunc[:16], ""},
	})
}
