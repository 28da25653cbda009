package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestReplOriginDesc(t *testing.T) {
	// replorigindesc.c (10-18): SET "set %u; lsn %X/%X; force: %d" of
	// xl_replorigin_set {XLogRecPtr remote_lsn; RepOriginId node_id; bool
	// force}, DROP "drop %u" of xl_replorigin_drop {RepOriginId node_id}.
	set := smgrLE(uint64(0x1A_2345ABCD), uint16(1), uint8(1), "\x00\x00\x00\x00\x00")
	smgrRunCases(t, xlog.RmgrReplicationOrigin, []smgrTestCase{
		{xlog.V10, 0x00, set, "set 1; lsn 1A/2345ABCD; force: 1"},
		{xlog.V13, 0x00, smgrLE(uint64(0x23456789), uint16(65535), uint8(0)), "set 65535; lsn 0/23456789; force: 0"},
		{xlog.V18, 0x00, set, "set 1; lsn 1A/2345ABCD; force: 1"},
		{xlog.V14, 0x10, smgrLE(uint16(2)), "drop 2"},
		{xlog.V18, 0x10, smgrLE(uint16(1)), "drop 1"},
		// replorigin_desc masks the flag bits.
		{xlog.V16, 0x11, smgrLE(uint16(4)), "drop 4"},
		{xlog.V16, 0x20, smgrLE(uint16(4)), ""},
		{xlog.V16, 0x00, set[:10], ""},
	})
}
