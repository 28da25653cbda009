package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestLogicalmsgDesc(t *testing.T) {
	// xl_logical_message: {Oid dbId; bool transactional; Size prefix_size;
	// Size message_size; char message[]}, message = prefix with its NUL, then
	// the payload.
	msg := func(tx bool, prefix, payload string) []byte {
		var b uint8
		if tx {
			b = 1
		}
		return smgrLE(uint32(5), b, "\x00\x00\x00", uint64(len(prefix)+1), uint64(len(payload)), prefix, "\x00", payload)
	}
	smgrRunCases(t, xlog.RmgrLogicalMessage, []smgrTestCase{
		// 10-13 logicalmsgdesc.c: "%s message size %zu bytes", "transactional"
		// or "nontransactional".
		{xlog.V10, 0x00, msg(true, "walref", "hello"), "transactional message size 5 bytes"},
		{xlog.V13, 0x00, msg(false, "test", "nnnnnnnn"), "nontransactional message size 8 bytes"},
		// 14-18: "%s, prefix \"%s\"; payload (%zu bytes): ", "transactional" or
		// "non-transactional", then "%s%02X" with sep "" then " ".
		{xlog.V14, 0x00, msg(true, "walref", "hello"), `transactional, prefix "walref"; payload (5 bytes): 68 65 6C 6C 6F`},
		{xlog.V16, 0x00, msg(false, "p", "\x00\xff\x0a"), `non-transactional, prefix "p"; payload (3 bytes): 00 FF 0A`},
		{xlog.V18, 0x00, msg(true, "", ""), `transactional, prefix ""; payload (0 bytes): `},
		// message_size beyond the data: the bytes that are there.
		{xlog.V18, 0x00, msg(true, "walref", "hello")[:24+7+2], `transactional, prefix "walref"; payload (5 bytes): 68 65`},
		{xlog.V15, 0x10, msg(true, "walref", "hello"), ""},
		{xlog.V15, 0x00, msg(true, "walref", "hello")[:20], ""},
	})
}
