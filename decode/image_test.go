package decode_test

import (
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// TestRestoreImages rebuilds every full-page image of every fixture and
// corpus. A rebuilt page must be exactly BLCKSZ bytes, and where the image has
// a hole, the page's pd_lower and pd_upper must bound it, as PostgreSQL
// computed the hole from them. Each compression method must be met.
func TestRestoreImages(t *testing.T) {
	counts := map[decode.Compression]int{}
	holes := 0
	for _, set := range testwal.Sets(t) {
		dir := testwal.Extract(t, set)
		src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := xlog.NewReader(src, xlog.Options{FollowHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		dec := decode.NewDecoder(8192)
		var page []byte
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !xlog.IsEndOfWAL(err) {
					t.Fatalf("%s: %v", set.Name, err)
				}
				break
			}
			d, err := dec.Decode(rec)
			if err != nil {
				t.Fatalf("%s: record at %s: %v", set.Name, rec.LSN, err)
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if !b.HasImage {
					continue
				}
				page, err = dec.AppendPage(page[:0], d, b)
				if err != nil {
					t.Fatalf("%s: record at %s block %d (%s): %v", set.Name, rec.LSN, b.ID, b.Compression, err)
				}
				if len(page) != 8192 {
					t.Fatalf("%s: record at %s: page of %d bytes", set.Name, rec.LSN, len(page))
				}
				counts[b.Compression]++
				if b.HoleLength > 0 {
					holes++
					lower := binary.LittleEndian.Uint16(page[12:])
					upper := binary.LittleEndian.Uint16(page[14:])
					if lower != b.HoleOffset || upper != b.HoleOffset+b.HoleLength {
						t.Fatalf("%s: record at %s block %d: pd_lower %d pd_upper %d, hole %d+%d",
							set.Name, rec.LSN, b.ID, lower, upper, b.HoleOffset, b.HoleLength)
					}
				}
			}
		}
		r.Close()
	}
	t.Logf("images restored: %v, with a hole: %d", counts, holes)
	for _, c := range []decode.Compression{decode.CompressNone, decode.CompressPGLZ, decode.CompressZstd, decode.CompressLZ4} {
		if counts[c] == 0 {
			t.Errorf("no %s image met", c)
		}
	}
}

// TestDecodeErrors feeds malformed bodies to the decoder: each must fail with
// xlogreader's message, citing the previous record's LSN as PostgreSQL does.
func TestDecodeErrors(t *testing.T) {
	rel := []byte{0x7f, 6, 0, 0, 5, 0, 0, 0, 0x10, 0x40, 0, 0}
	blk := []byte{0, 0, 0, 0}
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"bad id", []byte{40}, "invalid block_id 40 at 0/1234"},
		{"out of order", append(append(append([]byte{1, 0, 0, 0}, rel...), blk...), 0, 0, 0, 0), "out-of-order block_id 0 at 0/1234"},
		{"has data, no data", []byte{0, 0x20, 0, 0}, "BKPBLOCK_HAS_DATA set, but no data included at 0/1234"},
		{"data without flag", []byte{0, 0, 5, 0}, "BKPBLOCK_HAS_DATA not set, but data length is 5 at 0/1234"},
		{"same rel first", append([]byte{0, 0x80, 0, 0}, blk...), "BKPBLOCK_SAME_REL set but no previous rel at 0/1234"},
		{"short", []byte{0, 0, 0}, "record with invalid length at 0/1234"},
		{"main data too long", []byte{255, 10, 1, 2}, "record with invalid length at 0/1234"},
		{"hole flags", append(append([]byte{0, 0x10, 0, 0, 0x00, 0x20, 10, 0, 0}, rel...), blk...), "BKPIMAGE_HAS_HOLE not set, but hole offset 10 length 0 at 0/1234"},
	}
	dec := decode.NewDecoder(8192)
	for _, c := range cases {
		raw := make([]byte, xlog.RecordHeaderSize, xlog.RecordHeaderSize+len(c.body))
		raw = append(raw, c.body...)
		binary.LittleEndian.PutUint32(raw, uint32(len(raw)))
		rec := &xlog.Record{LSN: 0x5678, Raw: raw, Header: xlog.ParseRecordHeader(raw), Version: xlog.V15}
		rec.PrevRead = 0x1234
		_, err := dec.Decode(rec)
		var de *decode.Error
		if !errors.As(err, &de) || de.Msg != c.want || !errors.Is(err, decode.ErrInvalid) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
