package rmgr

import (
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func TestGinDescSamples(t *testing.T) { btreeCheckSamples(t, "gin") }

func TestGinDescUncovered(t *testing.T) {
	rec := func(info uint8, main []byte, b0 *decode.BlockRef) *decode.Record {
		r := &decode.Record{Record: &xlog.Record{
			Version: xlog.V15,
			Header:  xlog.RecordHeader{Info: info, Rmid: xlog.RmgrGin},
		}, MainData: main}
		if b0 != nil {
			r.Blocks = []decode.BlockRef{*b0}
		}
		return r
	}
	data := func(b []byte) *decode.BlockRef {
		return &decode.BlockRef{ForkFlags: decode.BlockHasData, Data: b, DataLen: uint16(len(b))}
	}
	for _, c := range []struct {
		name string
		rec  *decode.Record
		want string
	}{
		// desc_recompress_leaf: " %d segments:", then " %d (add %d items)"
		// (uint16 nitems, then nitems ItemPointerData), " %d (insert)" (a
		// GinPostingList: 6-byte first item, uint16 nbytes, SHORTALIGN(nbytes)
		// bytes), and " %d unknown action %d ???", which stops the decoding
		{"INSERT data leaf", rec(0x20, btreeLE(uint16(0x03)), data(append(append(
			btreeLE(uint16(3), uint8(0), uint8(4), uint16(1)), make([]byte, 6)...),
			append(btreeLE(uint8(1), uint8(2)), append(make([]byte, 6), append(btreeLE(uint16(3)), 1, 2, 3, 0)...)...)...))),
			"isdata: T isleaf: T 3 segments: 0 (add 1 items) 1 (insert)"},
		{"unknown action", rec(0x90, nil, data(btreeLE(uint16(2), uint8(5), uint8(9), uint8(6), uint8(1)))),
			" 2 segments: 5 unknown action 9 ???"},
		// data internal page: " children: %u/%u" and " pitem: %u-%u/%u"
		{"INSERT data internal", rec(0x20, btreeLE(uint16(0x01), uint16(0), uint16(7), uint16(1), uint16(2)),
			data(btreeLE(uint16(4), uint16(0), uint16(9), uint16(0), uint16(33), uint16(5)))),
			"isdata: T isleaf: F children: 7/65538 pitem: 9-33/5"},
		// an image taken for wal_consistency_checking only
		{"image", rec(0x20, btreeLE(uint16(0x02)), &decode.BlockRef{HasImage: true}),
			"isdata: F isleaf: T (full page image, for WAL verification)"},
		{"no block", rec(0x20, btreeLE(uint16(0x02)), nil), "isdata: F isleaf: T"},
	} {
		if got := string(ginDesc(nil, c.rec)); got != c.want {
			t.Errorf("%s:\n got: %q\nwant: %q", c.name, got, c.want)
		}
	}
}
