package xactstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
)

// The SLRU files a base backup holds (src/backend/access/transam/slru.c):
// each directory holds segments of slruPagesPerSegment pages of BLCKSZ bytes,
// named by the segment number in hex. pg_xact, pg_subtrans and pg_multixact
// use the short names in every version 10 to 18: "%04X" (4 to 6 digits;
// SlruFileName). PostgreSQL 17 added 15-digit names (long_segment_names) for
// other SLRUs only: SimpleLruInit's last argument is false for "pg_xact"
// (clog.c), "pg_subtrans" (subtrans.c) and "pg_multixact/offsets" and
// "/members" (multixact.c) in 17 and 18.
const slruPagesPerSegment = 32 // SLRU_PAGES_PER_SEGMENT (slru.h)

// The SLRU directories, relative to the data directory.
const (
	dirXact     = "pg_xact" // pg_clog before PostgreSQL 10
	dirSubtrans = "pg_subtrans"
	dirOffsets  = "pg_multixact/offsets"
	dirMembers  = "pg_multixact/members"
	dirTwoPhase = "pg_twophase"
)

// Transaction status values in pg_xact, 2 bits per transaction
// (XidStatus, src/include/access/clog.h).
const (
	clogInProgress   = 0x00 // TRANSACTION_STATUS_IN_PROGRESS
	clogCommitted    = 0x01 // TRANSACTION_STATUS_COMMITTED
	clogAborted      = 0x02 // TRANSACTION_STATUS_ABORTED
	clogSubCommitted = 0x03 // TRANSACTION_STATUS_SUB_COMMITTED
)

// geometry is the page layout of the SLRUs for one BLCKSZ, from the macros
// of clog.c, subtrans.c and multixact.c (the same in 10 to 18).
type geometry struct {
	blockSize int
}

// clogXactsPerPage is CLOG_XACTS_PER_PAGE: CLOG_BITS_PER_XACT = 2, so
// CLOG_XACTS_PER_BYTE = 4.
func (g geometry) clogXactsPerPage() uint32 { return uint32(g.blockSize) * 4 }

// subtransXactsPerPage is SUBTRANS_XACTS_PER_PAGE: one TransactionId each.
func (g geometry) subtransXactsPerPage() uint32 { return uint32(g.blockSize) / 4 }

// offsetsPerPage is MULTIXACT_OFFSETS_PER_PAGE: one 4-byte MultiXactOffset
// each.
func (g geometry) offsetsPerPage() uint32 { return uint32(g.blockSize) / 4 }

// memberGroupsPerPage is MULTIXACT_MEMBERGROUPS_PER_PAGE: groups of four
// flag bytes then four TransactionIds (MULTIXACT_MEMBERGROUP_SIZE = 20).
func (g geometry) memberGroupsPerPage() uint32 { return uint32(g.blockSize) / memberGroupSize }

// membersPerPage is MULTIXACT_MEMBERS_PER_PAGE.
func (g geometry) membersPerPage() uint32 { return g.memberGroupsPerPage() * membersPerGroup }

const (
	membersPerGroup = 4                     // MULTIXACT_MEMBERS_PER_MEMBERGROUP
	memberGroupSize = 4 + 4*membersPerGroup // MULTIXACT_MEMBERGROUP_SIZE
)

// clogStatusOnPage returns the 2-bit status of xid on its pg_xact page
// (TransactionIdGetStatus: byte TransactionIdToByte, shift
// TransactionIdToBIndex * CLOG_BITS_PER_XACT). A page shorter than the
// geometry's reads as zeros beyond its end.
func clogStatusOnPage(page []byte, g geometry, xid uint32) uint8 {
	idx := xid % g.clogXactsPerPage()
	b := int(idx / 4)
	if b >= len(page) {
		return clogInProgress
	}
	return (page[b] >> ((idx % 4) * 2)) & 0x03
}

// subtransParentOnPage returns pg_subtrans's parent entry of xid
// (SubTransGetParent).
func subtransParentOnPage(page []byte, g geometry, xid uint32) uint32 {
	off := int(xid%g.subtransXactsPerPage()) * 4
	if off+4 > len(page) {
		return 0
	}
	return binary.LittleEndian.Uint32(page[off:])
}

// offsetOnPage returns pg_multixact/offsets' entry of multi: the offset of
// its first member, 0 if never written (MultiXactIdToOffsetEntry).
func offsetOnPage(page []byte, g geometry, multi uint32) uint32 {
	off := int(multi%g.offsetsPerPage()) * 4
	if off+4 > len(page) {
		return 0
	}
	return binary.LittleEndian.Uint32(page[off:])
}

// memberOnPage returns the member at offset on its pg_multixact/members page:
// its TransactionId (MXOffsetToMemberOffset) and its status, the low 8 bits
// at MXOffsetToFlagsBitShift of the group's 4-byte flags word
// (MXOffsetToFlagsOffset).
func memberOnPage(page []byte, g geometry, offset uint32) (xid uint32, status uint8) {
	group := offset / membersPerGroup % g.memberGroupsPerPage()
	inGroup := int(offset % membersPerGroup)
	flagsAt := int(group) * memberGroupSize
	xidAt := flagsAt + 4 + inGroup*4
	if xidAt+4 > len(page) {
		return 0, 0
	}
	flags := binary.LittleEndian.Uint32(page[flagsAt:])
	return binary.LittleEndian.Uint32(page[xidAt:]), uint8(flags >> (inGroup * 8))
}

// slruSegmentName is SlruFileName with short names: "%04X" of the segment.
func slruSegmentName(dir string, segno int64) string {
	return fmt.Sprintf("%s/%04X", dir, segno)
}

// slru reads the pages of one SLRU directory of the backup lazily, keeping a
// few segments, and remembers the pages the WAL zeroed (their backup copy is
// then never read) and where the WAL truncated it.
type slru struct {
	files    Files
	dir      string
	geo      geometry
	segments map[int64][]byte // cached segment files (nil: absent)
	zeroed   map[int64]bool   // pages a ZEROPAGE record zeroed
	// truncated reports whether a page was removed by a truncation (the
	// SLRU's PagePrecedes against its cutoff), nil before any truncation.
	truncated func(page int64) bool
}

// maxCachedSegments bounds the backup segments one SLRU keeps in memory
// (32 pages each: 256 kB with 8 kB pages).
const maxCachedSegments = 8

func newSLRU(f Files, dir string, g geometry) *slru {
	return &slru{files: f, dir: dir, geo: g, segments: map[int64][]byte{}, zeroed: map[int64]bool{}}
}

// page returns the backup's copy of page pageno as recovery would find it:
// nil (all zeros) when the WAL zeroed or truncated it, when its segment file
// is absent (SlruPhysicalReadPage reads a missing file as zeros in
// recovery) or the file ends before it. A read error or a file ending inside
// the page is returned with the zeros.
func (s *slru) page(pageno int64) ([]byte, error) {
	if s.zeroed[pageno] || (s.truncated != nil && s.truncated(pageno)) {
		return nil, nil
	}
	segno := pageno / slruPagesPerSegment
	seg, ok := s.segments[segno]
	var err error
	if !ok {
		name := slruSegmentName(s.dir, segno)
		seg, err = s.files.ReadFile(name)
		if err != nil {
			seg = nil
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			} else {
				err = &Error{File: name, Err: err}
			}
		}
		if len(s.segments) >= maxCachedSegments {
			for k := range s.segments {
				delete(s.segments, k)
				break
			}
		}
		if err == nil {
			s.segments[segno] = seg
		}
	}
	if err != nil {
		return nil, err
	}
	start := int(pageno%slruPagesPerSegment) * s.geo.blockSize
	switch {
	case start >= len(seg):
		return nil, nil
	case start+s.geo.blockSize > len(seg):
		name := slruSegmentName(s.dir, segno)
		return nil, &Error{File: name, Offset: int64(start),
			Err: fmt.Errorf("%w: the file ends %d bytes into page %d", ErrCorrupt, len(seg)-start, pageno)}
	}
	return seg[start : start+s.geo.blockSize], nil
}

// zero records a ZEROPAGE-style record: the page now holds zeros.
func (s *slru) zero(pageno int64) { s.zeroed[pageno] = true }
