package rmgr

import (
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

func TestBRINDescSamples(t *testing.T) { btreeCheckSamples(t, "brin") }

func TestBRINDescShort(t *testing.T) {
	rec := &decode.Record{Record: &xlog.Record{
		Version: xlog.V18,
		Header:  xlog.RecordHeader{Info: 0xA0, Rmid: xlog.RmgrBRIN},
	}, MainData: btreeLE(uint16(3), uint16(0), uint32(8))}
	if got := string(brinDesc(nil, rec)); got != "" {
		t.Errorf("short UPDATE+INIT: %q", got)
	}
	// "heapBlk %u pagesPerRange %u old offnum %u, new offnum %u"; the INIT bit is masked off
	rec.MainData = btreeLE(uint16(3), uint16(0), uint32(8), uint32(1), uint16(4))
	if got, want := string(brinDesc(nil, rec)), "heapBlk 8 pagesPerRange 1 old offnum 3, new offnum 4"; got != want {
		t.Errorf("UPDATE+INIT: %q, want %q", got, want)
	}
}
