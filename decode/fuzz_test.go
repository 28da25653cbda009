package decode

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/walscope/walscope/xlog"
)

// FuzzDecode decodes arbitrary record bodies (block headers, image headers,
// origin, top-level xid, main data) for every version layout and checks that
// decoding never panics, that a success accounts for every byte, and that
// restoring any image yields exactly one page or an ErrImage.
func FuzzDecode(f *testing.F) {
	rel := []byte{0x7f, 6, 0, 0, 5, 0, 0, 0, 0x10, 0x40, 0, 0}
	f.Add(append(append([]byte{0, 0x20, 3, 0}, rel...), 1, 0, 0, 0, 255, 2, 9, 9, 9, 1, 2), uint8(15))
	img := append([]byte{0, 0x10, 0, 0, 16, 0, 0, 0, 0x07, 0xE0, 0x1F}, rel...)
	img = append(img, 0, 0, 0, 0)
	img = append(img, []byte{0x00, 1, 2, 3, 4, 5, 6, 7, 8, 0xF1, 0x08, 0xE0, 9, 9, 9, 9}...)
	f.Add(img, uint8(15))
	f.Add([]byte{253, 1, 0, 252, 5, 0, 0, 0, 254, 3, 0, 0, 0, 1, 2, 3}, uint8(18))
	f.Add([]byte{0, 0x90, 0, 0, 0, 0, 0, 0}, uint8(13))
	f.Fuzz(func(t *testing.T, body []byte, ver uint8) {
		v := xlog.Version(10 + ver%9)
		raw := make([]byte, xlog.RecordHeaderSize, xlog.RecordHeaderSize+len(body))
		raw = append(raw, body...)
		binary.LittleEndian.PutUint32(raw, uint32(len(raw)))
		rec := &xlog.Record{LSN: 0x1000028, Raw: raw, Header: xlog.ParseRecordHeader(raw), Version: v}
		d := NewDecoder(8192)
		rec.PrevRead = 0x1000000
		out, err := d.Decode(rec)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		n := len(out.MainData)
		for i := range out.Blocks {
			b := &out.Blocks[i]
			n += len(b.Data) + len(b.Image)
			if i > 0 && b.ID <= out.Blocks[i-1].ID {
				t.Fatalf("block ids out of order")
			}
			if b.HasImage {
				page, err := d.AppendPage(nil, out, b)
				if err == nil && len(page) != 8192 {
					t.Fatalf("page of %d bytes", len(page))
				}
				if err != nil && !errors.Is(err, ErrImage) {
					t.Fatalf("image error %v is not ErrImage", err)
				}
			}
		}
		if n > len(body) {
			t.Fatalf("payloads of %d bytes in a body of %d", n, len(body))
		}
	})
}
