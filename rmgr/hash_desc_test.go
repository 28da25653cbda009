package rmgr

import (
	"math"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func TestHashDescSamples(t *testing.T) { btreeCheckSamples(t, "hash") }

func hashRec(v xlog.Version, info uint8, main []byte) *decode.Record {
	return &decode.Record{Record: &xlog.Record{
		Version: v,
		Header:  xlog.RecordHeader{Info: info, Rmid: xlog.RmgrHash},
	}, MainData: main}
}

func TestHashDescUncovered(t *testing.T) {
	f := func(x float64) uint64 { return math.Float64bits(x) }
	for _, c := range []struct {
		name string
		rec  *decode.Record
		want string
	}{
		// "num_tuples %g, fillfactor %d"; the %g outputs were checked
		// against glibc's printf
		{"INIT_META_PAGE 1e6", hashRec(xlog.V14, 0x00, btreeLE(f(1e6), uint32(425), uint16(75))),
			"num_tuples 1e+06, fillfactor 75"},
		{"INIT_META_PAGE 1234567", hashRec(xlog.V10, 0x00, btreeLE(f(1234567), uint32(425), uint16(75))),
			"num_tuples 1.23457e+06, fillfactor 75"},
		// "ntuples %g"
		{"UPDATE_META_PAGE small", hashRec(xlog.V16, 0xB0, btreeLE(f(0.00001234))), "ntuples 1.234e-05"},
		{"UPDATE_META_PAGE 100000", hashRec(xlog.V12, 0xB0, btreeLE(f(100000))), "ntuples 100000"},
		{"UPDATE_META_PAGE nan", hashRec(xlog.V12, 0xB0, btreeLE(f(math.NaN()))), "ntuples nan"},
		{"UPDATE_META_PAGE -inf", hashRec(xlog.V12, 0xB0, btreeLE(f(math.Inf(-1)))), "ntuples -inf"},
		// 11: "ntuples %d" after a RelFileNode
		{"11 VACUUM_ONE_PAGE", hashRec(xlog.V11, 0xC0, btreeLE(uint32(1663), uint32(5), uint32(16400), uint32(12))),
			"ntuples 12"},
		// 16: "ntuples %d, snapshotConflictHorizon %u" (no isCatalogRel)
		{"16 VACUUM_ONE_PAGE", hashRec(xlog.V16, 0xC0, btreeLE(uint32(700), uint16(3), uint8(1))),
			"ntuples 3, snapshotConflictHorizon 700"},
		// SPLIT_PAGE and SPLIT_CLEANUP print nothing
		{"SPLIT_PAGE", hashRec(xlog.V18, 0x50, btreeLE(uint32(1))), ""},
		{"short", hashRec(xlog.V18, 0x80, btreeLE(uint32(1), uint32(2))), ""},
	} {
		if got := string(hashDesc(nil, c.rec)); got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.name, got, c.want)
		}
	}
}
