package xactstate

import (
	"encoding/binary"
	"fmt"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// MultiXactID is a MultiXactId: the xmax of a tuple locked (or locked and
// updated) by several transactions (src/include/access/multixact.h).
type MultiXactID uint32

// firstMultiXactID is FirstMultiXactId; 0 is InvalidMultiXactId.
const firstMultiXactID MultiXactID = 1

// multiPrecedes is MultiXactIdPrecedes: modulo-2^32.
func multiPrecedes(a, b MultiXactID) bool { return int32(a-b) < 0 }

// MemberStatus is a member's MultiXactStatus (multixact.h): a lock mode, or
// an update.
type MemberStatus uint8

// The member statuses, MultiXactStatus 0 to 5.
const (
	ForKeyShare    MemberStatus = iota // MultiXactStatusForKeyShare: SELECT FOR KEY SHARE
	ForShare                           // MultiXactStatusForShare: SELECT FOR SHARE
	ForNoKeyUpdate                     // MultiXactStatusForNoKeyUpdate: SELECT FOR NO KEY UPDATE
	ForUpdate                          // MultiXactStatusForUpdate: SELECT FOR UPDATE
	NoKeyUpdate                        // MultiXactStatusNoKeyUpdate: an UPDATE not touching keys
	Update                             // MultiXactStatusUpdate: an UPDATE of a key, or a DELETE
)

// memberStatusNames are the mode names of pg_get_multixact_members
// (mxstatus_to_string in multixact.c).
var memberStatusNames = [...]string{"keysh", "sh", "fornokeyupd", "forupd", "nokeyupd", "upd"}

// String returns the mode as pg_get_multixact_members prints it.
func (m MemberStatus) String() string {
	if int(m) < len(memberStatusNames) {
		return memberStatusNames[m]
	}
	return fmt.Sprintf("MemberStatus(%d)", uint8(m))
}

// IsUpdate reports an updating member (ISUPDATE_from_mxstatus).
func (m MemberStatus) IsUpdate() bool { return m == NoKeyUpdate || m == Update }

// Member is a MultiXactMember.
type Member struct {
	XID    xlog.XID
	Status MemberStatus
}

// multiEntry is a multixact a CREATE_ID record created.
type multiEntry struct {
	offset  uint32
	members []Member
}

// maxMembers bounds a multixact's members read from the backup: more than
// any real one (each member is a distinct running transaction) and small
// enough that damaged offsets cannot make a reader allocate gigabytes.
const maxMembers = 1 << 20

// addMultiXact mirrors multixact_redo: ZERO_OFF_PAGE and ZERO_MEM_PAGE zero
// a page; CREATE_ID (xl_multixact_create {mid, moff, int32 nmembers,
// MultiXactMember members[]}) records a multixact and advances nextMulti
// and nextOffset; TRUNCATE_ID (xl_multixact_truncate {oldestMultiDB,
// startTruncOff, endTruncOff, startTruncMemb, endTruncMemb}) removes the
// multixacts before endTruncOff.
func (s *State) addMultiXact(rec *decode.Record, info uint8) {
	d := rec.MainData
	switch info {
	case multiZeroOffPage, multiZeroMemPage:
		pageno, _, ok := readPageno(rec.Version, d)
		if !ok {
			s.recordError(rec, "MultiXact ZERO page record of %d bytes", len(d))
			return
		}
		if info == multiZeroOffPage {
			s.offsets.zero(pageno)
		} else {
			s.members.zero(pageno)
		}
	case multiCreateID:
		if len(d) < 12 {
			s.recordError(rec, "CREATE_ID of %d bytes", len(d))
			return
		}
		mid := MultiXactID(binary.LittleEndian.Uint32(d))
		moff := binary.LittleEndian.Uint32(d[4:])
		n := int32(binary.LittleEndian.Uint32(d[8:]))
		if n < 0 || int64(n)*8 > int64(len(d)-12) {
			s.fail(&Error{LSN: rec.LSN, Multi: mid, Err: fmt.Errorf("%w: CREATE_ID of %d members in %d bytes", ErrCorrupt, n, len(d))})
			return
		}
		e := multiEntry{offset: moff, members: make([]Member, n)}
		for i := range e.members {
			e.members[i] = Member{
				XID:    xlog.XID(binary.LittleEndian.Uint32(d[12+8*i:])),
				Status: MemberStatus(binary.LittleEndian.Uint32(d[16+8*i:])),
			}
		}
		s.multis[mid] = e
		// multixact_redo: MultiXactAdvanceNextMXact(mid + 1, moff + nmembers).
		next := mid + 1
		if next < firstMultiXactID {
			next = firstMultiXactID
		}
		known := s.haveNextMulti
		if !known || multiPrecedes(s.nextMulti, next) {
			s.haveNextMulti, s.nextMulti = true, next
		}
		if end := moff + uint32(n); !known || int32(end-s.nextOffset) > 0 {
			s.nextOffset = end
		}
	case multiTruncateID:
		if len(d) < 20 {
			s.recordError(rec, "TRUNCATE_ID of %d bytes", len(d))
			return
		}
		end := MultiXactID(binary.LittleEndian.Uint32(d[8:]))
		if !s.haveOldestMulti || multiPrecedes(s.oldestMulti, end) {
			s.haveOldestMulti, s.oldestMulti = true, end
		}
		for m := range s.multis {
			if multiPrecedes(m, end) {
				delete(s.multis, m)
			}
		}
		// PerformOffsetsTruncation: SimpleLruTruncate at the page of the
		// multixact before endTruncOff (MultiXactOffsetPagePrecedes).
		prev := end - 1
		if prev < firstMultiXactID {
			prev = ^MultiXactID(0)
		}
		per := s.geo.offsetsPerPage()
		precedes := func(p1, p2 int64) bool {
			m1 := MultiXactID(uint32(p1)*per + 2)
			m2 := MultiXactID(uint32(p2)*per + 2)
			return multiPrecedes(m1, m2) && multiPrecedes(m1, m2+MultiXactID(per)-1)
		}
		s.offsets.truncateBefore(int64(uint32(prev)/per), precedes)
	}
}

// MultiMembers returns a multixact's members as GetMultiXactIdMembers reads
// them after recovery to this point: from its CREATE_ID record, else from
// the backup's pg_multixact/offsets (its first member's offset; the count
// is the next multixact's offset minus it) and pg_multixact/members. The
// invalid member of offset 0, which PostgreSQL never hands out, is skipped.
// The slice is the caller's. An error wraps ErrNoMulti for a multixact that
// does not exist (never recorded, or truncated), or the read error.
func (s *State) MultiMembers(m MultiXactID) ([]Member, error) {
	if e, ok := s.multis[m]; ok {
		out := make([]Member, 0, len(e.members))
		for _, mb := range e.members {
			if mb.XID != invalidXID { // as read back from the SLRU
				out = append(out, mb)
			}
		}
		return out, nil
	}
	noMulti := func(format string, args ...any) error {
		return &Error{Multi: m, Err: fmt.Errorf("%w: "+format, append([]any{ErrNoMulti}, args...)...)}
	}
	if m < firstMultiXactID {
		return nil, noMulti("the invalid multixact id")
	}
	if s.haveOldestMulti && multiPrecedes(m, s.oldestMulti) {
		return nil, noMulti("before the oldest multixact %d left by a truncation", s.oldestMulti)
	}
	if s.haveNextMulti && !multiPrecedes(m, s.nextMulti) {
		return nil, noMulti("not created before the next multixact %d", s.nextMulti)
	}
	off, err := s.offsetOf(m)
	if err != nil {
		return nil, err
	}
	if off == 0 {
		return nil, noMulti("no offset recorded")
	}
	next := m + 1
	if next < firstMultiXactID {
		next = firstMultiXactID
	}
	var end uint32
	switch e, ok := s.multis[next]; {
	case ok:
		end = e.offset
	default:
		if end, err = s.offsetOf(next); err != nil {
			return nil, err
		}
		if end == 0 && s.haveNextMulti && next == s.nextMulti {
			end = s.nextOffset
		}
	}
	if end == 0 {
		return nil, noMulti("the end of its members is unknown (multixact %d has no offset)", next)
	}
	n := end - off
	if n > maxMembers {
		return nil, &Error{Multi: m, Err: fmt.Errorf("%w: members [%d, %d) are too many", ErrCorrupt, off, end)}
	}
	per := s.geo.membersPerPage()
	out := make([]Member, 0, min(n, 16))
	for i := uint32(0); i < n; {
		o := off + i
		// The members on this page: up to its end, the multixact's end,
		// or the wraparound of offsets (the last page is partial).
		span := min(per-o%per, n-i)
		if uint64(o)+uint64(span) > 1<<32 {
			span = uint32(1<<32 - uint64(o))
		}
		page, err := s.members.page(int64(o / per))
		if err != nil {
			return nil, err
		}
		if page != nil { // a page of zeros holds no member
			for j := uint32(0); j < span; j++ {
				xid, st := memberOnPage(page, s.geo, o+j)
				if xid == invalidXID {
					continue // offset 0's slot, or a member never written
				}
				out = append(out, Member{XID: xlog.XID(xid), Status: MemberStatus(st)})
			}
		}
		i += span
	}
	return out, nil
}

// offsetOf reads multi's offset from the backup's pg_multixact/offsets.
func (s *State) offsetOf(m MultiXactID) (uint32, error) {
	if e, ok := s.multis[m]; ok {
		return e.offset, nil
	}
	page, err := s.offsets.page(int64(uint32(m) / s.geo.offsetsPerPage()))
	if err != nil {
		return 0, err
	}
	return offsetOnPage(page, s.geo, uint32(m)), nil
}

// UpdateXID returns the updating member of a multixact (status NoKeyUpdate
// or Update), as MultiXactIdGetUpdateXid does; 0 when only lockers.
func (s *State) UpdateXID(m MultiXactID) (xlog.XID, error) {
	members, err := s.MultiMembers(m)
	if err != nil {
		return 0, err
	}
	for _, mb := range members {
		if mb.Status.IsUpdate() {
			return mb.XID, nil
		}
	}
	return 0, nil
}
