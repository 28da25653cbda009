package rmgr

import (
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func TestGistDescSamples(t *testing.T) { btreeCheckSamples(t, "gist") }

func TestGistDescUncovered(t *testing.T) {
	rec := func(v xlog.Version, info uint8, main []byte) *decode.Record {
		return &decode.Record{Record: &xlog.Record{
			Version: v,
			Header:  xlog.RecordHeader{Info: info, Rmid: xlog.RmgrGist},
		}, MainData: main}
	}
	reuse := btreeLE(uint32(1663), uint32(5), uint32(16476), uint32(1), uint64(1)<<32|777, uint8(1))
	for _, c := range []struct {
		name string
		rec  *decode.Record
		want string
	}{
		// 17 gistdesc.c: "rel %u/%u/%u; blk %u; snapshotConflictHorizon %u:%u, isCatalogRel %c"
		{"17 PAGE_REUSE", rec(xlog.V17, 0x20, reuse),
			"rel 1663/5/16476; blk 1; snapshotConflictHorizon 1:777, isCatalogRel T"},
		// 16: "rel %u/%u/%u; blk %u; snapshotConflictHorizon %u:%u"
		{"16 PAGE_REUSE", rec(xlog.V16, 0x20, reuse), "rel 1663/5/16476; blk 1; snapshotConflictHorizon 1:777"},
		// 11: 0x20 is not a record type; 0x50 (CREATE_INDEX) prints nothing
		{"11 0x20", rec(xlog.V11, 0x20, reuse), ""},
		{"11 CREATE_INDEX", rec(xlog.V11, 0x50, nil), ""},
		{"short", rec(xlog.V18, 0x60, btreeLE(uint64(5))), ""},
	} {
		if got := string(gistDesc(nil, c.rec)); got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.name, got, c.want)
		}
	}
}
