// Package xlogtest builds synthetic WAL for tests: valid page headers, long
// headers, continuation records and CRCs, so that boundary cases and fuzz
// seeds can be made at will. It never replaces real fixtures: what PostgreSQL
// writes is tested on what PostgreSQL wrote.
package xlogtest

import (
	"encoding/binary"
	"fmt"

	"github.com/walscope/walscope/xlog"
)

// Writer lays records into segments the way PostgreSQL's XLogInsert does.
type Writer struct {
	Version  xlog.Version
	PageSize uint32
	SegSize  uint32
	TLI      xlog.TimeLineID
	SystemID uint64

	segs map[uint64][]byte
	// overwriteAt marks the page whose header gets
	// XLP_FIRST_IS_OVERWRITE_CONTRECORD (0: none).
	overwriteAt xlog.LSN
	pos         xlog.LSN // insert position (a record start, or a page start)
	prev        xlog.LSN
	first       uint64
}

// NewWriter returns a writer whose first record goes at the start of segment
// firstSeg.
func NewWriter(v xlog.Version, pageSize, segSize uint32, firstSeg uint64) *Writer {
	w := &Writer{Version: v, PageSize: pageSize, SegSize: segSize, TLI: 1, SystemID: 7000000000000000001,
		segs: map[uint64][]byte{}, first: firstSeg}
	w.pos = xlog.LSN(firstSeg * uint64(segSize))
	return w
}

// Pos is where the next record will start (after any page header).
func (w *Writer) Pos() xlog.LSN { return w.pos }

func (w *Writer) seg(segno uint64) []byte {
	s, ok := w.segs[segno]
	if !ok {
		s = make([]byte, w.SegSize)
		w.segs[segno] = s
	}
	return s
}

// byteAt returns the slice of the segment holding the stream position p.
func (w *Writer) at(p xlog.LSN) []byte {
	s := w.seg(uint64(p) / uint64(w.SegSize))
	return s[uint64(p)%uint64(w.SegSize):]
}

// pageHeader writes the header of the page starting at p, with remLen bytes
// of continuation data, and returns its size.
func (w *Writer) pageHeader(p xlog.LSN, remLen uint32) uint32 {
	b := w.at(p)
	info := xlog.PageBkpRemovable
	size := uint32(xlog.ShortPageHeaderSize)
	if uint64(p)%uint64(w.SegSize) == 0 {
		info |= xlog.PageLongHeader
		size = xlog.LongPageHeaderSize
	}
	if remLen > 0 {
		info |= xlog.PageFirstIsContRecord
	}
	if p == w.overwriteAt {
		info |= xlog.PageFirstIsOverwriteContRecord
	}
	binary.LittleEndian.PutUint16(b[0:], w.Version.Magic())
	binary.LittleEndian.PutUint16(b[2:], uint16(info))
	binary.LittleEndian.PutUint32(b[4:], uint32(w.TLI))
	binary.LittleEndian.PutUint64(b[8:], uint64(p))
	binary.LittleEndian.PutUint32(b[16:], remLen)
	if size == xlog.LongPageHeaderSize {
		binary.LittleEndian.PutUint64(b[24:], w.SystemID)
		binary.LittleEndian.PutUint32(b[32:], w.SegSize)
		binary.LittleEndian.PutUint32(b[36:], w.PageSize)
	}
	return size
}

// Record builds a record from rmid, info, xid and body (everything after the
// 24-byte header), and appends it; it returns the record's LSN and bytes.
func (w *Writer) Record(rmid xlog.RmgrID, info uint8, xid xlog.XID, body []byte) (xlog.LSN, []byte) {
	rec := make([]byte, xlog.RecordHeaderSize+len(body))
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(rec[4:], uint32(xid))
	binary.LittleEndian.PutUint64(rec[8:], uint64(w.prev))
	rec[16] = info
	rec[17] = byte(rmid)
	copy(rec[24:], body)
	binary.LittleEndian.PutUint32(rec[20:], xlog.RecordCRC(rec))
	return w.Append(rec), rec
}

// MainData returns a record body holding only main data of n bytes.
func MainData(n int) []byte {
	var b []byte
	if n <= 255 {
		b = []byte{255, byte(n)}
	} else {
		b = binary.LittleEndian.AppendUint32([]byte{254}, uint32(n))
	}
	for i := 0; i < n; i++ {
		b = append(b, byte(i*7+3))
	}
	return b
}

// Append lays out an already-built record (header and CRC included) at the
// insert position, splitting it over pages, and returns its LSN.
func (w *Writer) Append(rec []byte) xlog.LSN {
	ps := xlog.LSN(w.PageSize)
	if w.pos%ps == 0 {
		w.pos += xlog.LSN(w.pageHeader(w.pos, 0))
	}
	lsn := w.pos
	p := w.pos
	rest := rec
	for {
		room := int(ps - p%ps)
		n := min(room, len(rest))
		copy(w.at(p), rest[:n])
		rest = rest[n:]
		p += xlog.LSN(n)
		if len(rest) == 0 {
			break
		}
		// p is at a page start: continuation.
		hs := w.pageHeader(p, uint32(len(rest)))
		p += xlog.LSN(hs)
	}
	// The next record starts at the next MAXALIGNed position, even when
	// less than a header's room is left on the page: its header is split.
	w.pos = xlog.Maxalign(p)
	w.prev = lsn
	return lsn
}

// OverwriteFrom simulates a crash that lost everything from page p on, the
// middle of a record, followed by a restart that writes there again: the
// stream from p to the end of its segment is zeroed, the next record goes at
// p with prev as its xl_prev, and page p is flagged
// XLP_FIRST_IS_OVERWRITE_CONTRECORD. Write the XLOG OVERWRITE_CONTRECORD
// record next.
func (w *Writer) OverwriteFrom(p, prev xlog.LSN) {
	seg := w.seg(uint64(p) / uint64(w.SegSize))
	clear(seg[uint64(p)%uint64(w.SegSize):])
	w.pos, w.prev, w.overwriteAt = p, prev, p
}

// Switch appends an XLOG SWITCH record and moves to the next segment.
func (w *Writer) Switch() xlog.LSN {
	lsn, _ := w.Record(xlog.RmgrXLOG, 0x40, 0, nil)
	ss := xlog.LSN(w.SegSize)
	w.pos = (w.pos + ss - 1) / ss * ss
	return lsn
}

// Finish writes headers on the pages after the insert position up to the end
// of its page (PostgreSQL initializes a page before writing into it) and
// returns the segment files by name. Pages never reached stay zero.
func (w *Writer) Finish() map[string][]byte {
	out := map[string][]byte{}
	for segno, b := range w.segs {
		name := xlog.NewSegmentName(w.TLI, segno, w.SegSize).String()
		out[name] = b
	}
	return out
}

// Source returns the written segments as an xlog.MemSource.
func (w *Writer) Source() *xlog.MemSource { return xlog.NewMemSource(w.Finish()) }

// SegmentName returns the name of segment segno on the writer's timeline.
func (w *Writer) SegmentName(segno uint64) string {
	return xlog.NewSegmentName(w.TLI, segno, w.SegSize).String()
}

// String describes the writer's geometry, for test names.
func (w *Writer) String() string {
	return fmt.Sprintf("v%d/page%d/seg%d", w.Version, w.PageSize, w.SegSize)
}
