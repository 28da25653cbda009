package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestSeqDesc(t *testing.T) {
	// seqdesc.c (10-18): LOG "rel %u/%u/%u" of xl_seq_rec's node/locator.
	rec := smgrLE(uint32(1663), uint32(16384), uint32(16412), "tuple data")
	smgrRunCases(t, xlog.RmgrSequence, []smgrTestCase{
		{xlog.V10, 0x00, rec, "rel 1663/16384/16412"},
		{xlog.V16, 0x00, rec, "rel 1663/16384/16412"},
		{xlog.V18, 0x10, rec, ""},
		{xlog.V18, 0x00, rec[:8], ""},
	})
}
