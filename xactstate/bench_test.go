package xactstate_test

import (
	"io"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// sampleCommit returns a copy of the first COMMIT record of fixtures/sample.
func sampleCommit(b *testing.B) *decode.Record {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			b.Fatal("no COMMIT in fixtures/sample")
		}
		if err != nil {
			b.Fatal(err)
		}
		d, err := dec.Decode(rec)
		if err != nil {
			b.Fatal(err)
		}
		if e, ok := rmgr.XactEnd(d); ok && e.Commit && !e.Prepared {
			x := *d.Record
			return &decode.Record{Record: &x, MainData: append([]byte(nil), d.MainData...)}
		}
	}
}

// BenchmarkAddCommit: one COMMIT record for a new xid each time; allocation
// is the chunk of 1024 xids, amortized.
func BenchmarkAddCommit(b *testing.B) {
	rec := sampleCommit(b)
	st, err := xactstate.New(xactstate.FS(fstest.MapFS{}), rec.Version, 8192)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	xid := xlog.XID(1000)
	for b.Loop() {
		rec.Header.XID = xid
		xid++
		st.Add(rec)
	}
}

// BenchmarkStatus asks the status of xids the WAL ended and of xids only
// pg_xact knows.
func BenchmarkStatus(b *testing.B) {
	rec := sampleCommit(b)
	xact := make([]byte, 8192*4)
	for i := range xact {
		xact[i] = 0x55 // every xid committed
	}
	st, err := xactstate.New(xactstate.FS(fstest.MapFS{"pg_xact/0000": {Data: xact}}), rec.Version, 8192)
	if err != nil {
		b.Fatal(err)
	}
	for x := xlog.XID(100000); x < 110000; x++ {
		rec.Header.XID = x
		st.Add(rec)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if st.Status(xlog.XID(100000+i%10000)) != xactstate.Committed || st.Status(xlog.XID(3+i%100000)) != xactstate.Committed {
			b.Fatal("not committed")
		}
	}
}
