package xlog_test

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

// FuzzParseSegmentName: a name that parses formats back to itself, and every
// accepted name is 24 upper-case hex digits, with ".partial" at most.
func FuzzParseSegmentName(f *testing.F) {
	for _, s := range []string{"000000010000000000000001", "00000002000000000000001E.partial", "0000000100000000000000zz", "", "00000001.history"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, partial, err := xlog.ParseSegmentName(s)
		if err != nil {
			return
		}
		back := n.String()
		if partial {
			back += ".partial"
		}
		if back != s {
			t.Fatalf("%q parsed as %+v, formats as %q", s, n, back)
		}
		for _, size := range []uint32{1 << 20, 16 << 20, 1 << 30} {
			per := uint64(0x100000000) / uint64(size)
			if uint64(n.Seg) >= per {
				continue // not a name this segment size produces
			}
			if got := xlog.NewSegmentName(n.TLI, n.SegNo(size), size); got != n {
				t.Fatalf("%q: segno round trip with size %d gives %v", s, size, got)
			}
		}
	})
}

// FuzzParsePageHeader: parsing never panics, needs the bytes it reads, and
// the fields come from the right offsets.
func FuzzParsePageHeader(f *testing.F) {
	f.Add([]byte("\x10\xd1\x06\x00\x01\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x21\x28\x22\xe0\x52\xa7\x0c\x6b\x00\x00\x00\x01\x00\x20\x00\x00"))
	f.Add(make([]byte, 24))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := xlog.ParsePageHeader(b)
		if !ok {
			if len(b) >= xlog.LongPageHeaderSize || (len(b) >= xlog.ShortPageHeaderSize && b[2]&2 == 0) {
				t.Fatalf("refused a header of %d bytes", len(b))
			}
			return
		}
		if h.Size() > len(b) {
			t.Fatalf("header of size %d from %d bytes", h.Size(), len(b))
		}
		if uint16(b[0])|uint16(b[1])<<8 != h.Magic || uint64(h.PageAddr)&0xFF != uint64(b[8]) {
			t.Fatalf("fields at wrong offsets: %+v", h)
		}
	})
}
