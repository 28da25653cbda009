package xlog

import "encoding/binary"

// PageInfo holds the xlp_info flag bits of a page header.
type PageInfo uint16

// Page header flags (src/include/access/xlog_internal.h).
const (
	PageFirstIsContRecord          PageInfo = 0x0001 // XLP_FIRST_IS_CONTRECORD
	PageLongHeader                 PageInfo = 0x0002 // XLP_LONG_HEADER
	PageBkpRemovable               PageInfo = 0x0004 // XLP_BKP_REMOVABLE
	PageFirstIsOverwriteContRecord PageInfo = 0x0008 // XLP_FIRST_IS_OVERWRITE_CONTRECORD
	PageAllFlags                   PageInfo = 0x000F // XLP_ALL_FLAGS
)

// Page header sizes: SizeOfXLogShortPHD and SizeOfXLogLongPHD, both MAXALIGNed.
const (
	ShortPageHeaderSize = 24
	LongPageHeaderSize  = 40
)

// PageHeader is XLogPageHeaderData and, when Info has PageLongHeader,
// XLogLongPageHeaderData (src/include/access/xlog_internal.h).
type PageHeader struct {
	Magic    uint16
	Info     PageInfo
	TLI      TimeLineID
	PageAddr LSN
	RemLen   uint32
	// Long header only.
	SystemID    uint64
	SegmentSize uint32
	PageSize    uint32 // xlp_xlog_blcksz
}

// Long reports whether the header has the long form.
func (h *PageHeader) Long() bool { return h.Info&PageLongHeader != 0 }

// Size is the size of the header on disk (XLogPageHeaderSize).
func (h *PageHeader) Size() int {
	if h.Long() {
		return LongPageHeaderSize
	}
	return ShortPageHeaderSize
}

// ParsePageHeader decodes the header at the start of b, which must hold at least
// ShortPageHeaderSize bytes, and LongPageHeaderSize if the long flag is set; it
// reports false otherwise. Nothing is validated.
func ParsePageHeader(b []byte) (h PageHeader, ok bool) {
	if len(b) < ShortPageHeaderSize {
		return h, false
	}
	p := (*[ShortPageHeaderSize]byte)(b)
	h.Magic = binary.LittleEndian.Uint16(p[0:2])
	h.Info = PageInfo(binary.LittleEndian.Uint16(p[2:4]))
	h.TLI = TimeLineID(binary.LittleEndian.Uint32(p[4:8]))
	h.PageAddr = LSN(binary.LittleEndian.Uint64(p[8:16]))
	h.RemLen = binary.LittleEndian.Uint32(p[16:20])
	if h.Long() {
		if len(b) < LongPageHeaderSize {
			return h, false
		}
		l := (*[LongPageHeaderSize]byte)(b)
		h.SystemID = binary.LittleEndian.Uint64(l[24:32])
		h.SegmentSize = binary.LittleEndian.Uint32(l[32:36])
		h.PageSize = binary.LittleEndian.Uint32(l[36:40])
	}
	return h, true
}
