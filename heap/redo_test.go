package heap_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/heap"
	"github.com/walscope/walscope/xlog"
)

// TestRedoOutcomesAndErrors: the outcomes other than Applied leave the page
// as it was, and every refusal is an error wrapping ErrRedo (and its cause)
// that names the record's LSN and type, the block reference and the reason.
func TestRedoOutcomesAndErrors(t *testing.T) {
	del := func(off uint16) []byte { return []byte{9, 0, 0, 0, byte(off), byte(off >> 8), 0, 0} }
	cases := []struct {
		name    string
		rec     *decode.Record
		id      uint8
		page    func() []byte
		want    heap.Outcome
		wantErr []error
		reason  string
	}{
		{name: "page already past the record", rec: fuzzRecord(5, xlog.RmgrHeap, 0x10, 0, 0, del(1), nil, nil, false),
			page: func() []byte { p := fuzzPage(t); p[0] = 1; return p /* pd_lsn 1/100300 */ }, want: heap.Skipped},
		{name: "new page, record does not initialize it", rec: fuzzRecord(5, xlog.RmgrHeap, 0x10, 0, 0, del(1), nil, nil, false),
			page: func() []byte { return make([]byte, 8192) }, want: heap.NotFound},
		{name: "delete of a line pointer the page lacks", rec: fuzzRecord(5, xlog.RmgrHeap, 0x10, 0, 0, del(99), nil, nil, false),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo}, reason: "invalid lp: offset 99, page has 2"},
		{name: "short main data", rec: fuzzRecord(5, xlog.RmgrHeap, 0x10, 0, 0, del(1)[:5], nil, nil, false),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo}, reason: "main data of 5 bytes, want at least 8"},
		{name: "image of the wrong length", rec: fuzzRecord(5, xlog.RmgrXLOG, 0xB0, 0, 0, nil, nil, make([]byte, 100), true),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo, decode.ErrImage}, reason: "could not restore image"},
		{name: "FPI record without an image", rec: fuzzRecord(5, xlog.RmgrXLOG, 0xB0, 0, 0, nil, nil, nil, false),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo}, reason: "did not contain a full-page image"},
		{name: "another resource manager", rec: fuzzRecord(5, xlog.RmgrBtree, 0x00, 0, 0, nil, nil, nil, false),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo, heap.ErrUnsupported}, reason: "no heap redo"},
		{name: "no such block reference", rec: fuzzRecord(5, xlog.RmgrHeap, 0x10, 0, 0, del(1), nil, nil, false), id: 3,
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo}, reason: "no block reference 3"},
		{name: "insert over a used line pointer", rec: fuzzRecord(5, xlog.RmgrHeap, 0x00, 0, 0, []byte{1, 0, 0}, []byte{0, 0, 0, 0, 24, 'x'}, nil, false),
			page: func() []byte { return fuzzPage(t) }, wantErr: []error{heap.ErrRedo}, reason: "will not overwrite a used ItemId (offset 1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pg := c.page()
			before := bytes.Clone(pg)
			out, err := heap.Redo(c.rec, c.id, pg, decode.NewDecoder(8192))
			if c.wantErr == nil {
				if err != nil || out != c.want {
					t.Fatalf("got %v, %v; want %v", out, err, c.want)
				}
				if !bytes.Equal(pg, before) {
					t.Errorf("%v changed the page", out)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %v, want an error", out)
			}
			for _, w := range c.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("%v does not wrap %v", err, w)
				}
			}
			var re *heap.RedoError
			if !errors.As(err, &re) || re.LSN != c.rec.LSN {
				t.Errorf("%v: not a RedoError at %s", err, c.rec.LSN)
			}
			msg := err.Error()
			for _, want := range []string{c.rec.LSN.String(), "block ref", c.reason} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
		})
	}
}
