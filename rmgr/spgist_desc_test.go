package rmgr

import (
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func TestSPGistDescSamples(t *testing.T) { btreeCheckSamples(t, "spgist") }

func TestSPGistDescUncovered(t *testing.T) {
	rec := func(v xlog.Version, info uint8, main []byte) *decode.Record {
		return &decode.Record{Record: &xlog.Record{
			Version: v,
			Header:  xlog.RecordHeader{Info: info, Rmid: xlog.RmgrSPGist},
		}, MainData: main}
	}
	for _, c := range []struct {
		name string
		rec  *decode.Record
		want string
	}{
		// 14+ spgdesc.c: "nmoves: %u, parentoff: %u, nodeI: %u" and the flags
		{"14 MOVE_LEAFS replacedead", rec(xlog.V14, 0x20,
			btreeLE(uint16(3), uint8(0), uint8(1), uint8(1), uint8(0), uint16(4), uint16(2))),
			"nmoves: 3, parentoff: 4, nodeI: 2 (replacedead) (nulls)"},
		// 17: "ntoplaceholder: %u, firstplaceholder: %u, snapshotConflictHorizon: %u, isCatalogRel: %c"
		{"17 VACUUM_REDIRECT catalog", rec(xlog.V17, 0x80, btreeLE(uint16(2), uint16(9), uint32(812), uint8(1))),
			"ntoplaceholder: 2, firstplaceholder: 9, snapshotConflictHorizon: 812, isCatalogRel: T"},
		// 13 and earlier: "prefix off: %u, postfix off: %u (same %d, new %d)"
		{"12 SPLIT_TUPLE", rec(xlog.V12, 0x40, btreeLE(uint16(17), uint16(18), uint8(1), uint8(0))),
			"prefix off: 17, postfix off: 18 (same 0, new 1)"},
		// 10: CREATE_INDEX prints nothing
		{"10 CREATE_INDEX", rec(xlog.V10, 0x00, nil), ""},
		{"short", rec(xlog.V18, 0x50, btreeLE(uint32(1))), ""},
	} {
		if got := string(spgDesc(nil, c.rec)); got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.name, got, c.want)
		}
	}
}
