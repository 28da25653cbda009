package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestTblspcDesc(t *testing.T) {
	// tblspcdesc.c (10-18): CREATE "%u \"%s\"" of xl_tblspc_create_rec {Oid
	// ts_id; char ts_path[]}, DROP "%u" of xl_tblspc_drop_rec {Oid ts_id}.
	smgrRunCases(t, xlog.RmgrTablespace, []smgrTestCase{
		{xlog.V10, 0x00, smgrLE(uint32(16557), "/srv/ts\x00"), `16557 "/srv/ts"`},
		{xlog.V13, 0x00, smgrLE(uint32(16384), "/tmp/a b\x00junk"), `16384 "/tmp/a b"`},
		{xlog.V18, 0x10, smgrLE(uint32(16557)), "16557"},
		{xlog.V18, 0x00, smgrLE(uint32(1), "\x00"), `1 ""`},
		{xlog.V16, 0x20, smgrLE(uint32(1)), ""},
		{xlog.V16, 0x10, smgrLE(uint16(1)), ""},
	})
}
