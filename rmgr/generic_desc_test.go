package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

func TestGenericDesc(t *testing.T) {
	// genericdesc.c (10-18): over the main data, {OffsetNumber offset;
	// OffsetNumber length; length bytes}..., "offset %u, length %u; " while
	// data remains after the delta, "offset %u, length %u" for the last.
	two := smgrLE(uint16(24), uint16(4), "abcd", uint16(8000), uint16(2), "xy")
	smgrRunCases(t, xlog.RmgrGeneric, []smgrTestCase{
		{xlog.V10, 0x00, nil, ""},
		{xlog.V13, 0x00, two, "offset 24, length 4; offset 8000, length 2"},
		{xlog.V18, 0x00, smgrLE(uint16(24), uint16(0)), "offset 24, length 0"},
		// A length running past the end is the last delta.
		{xlog.V16, 0x00, smgrLE(uint16(1), uint16(100), "ab"), "offset 1, length 100"},
		// generic_desc does not look at the info byte.
		{xlog.V15, 0x10, two, "offset 24, length 4; offset 8000, length 2"},
	})
}
