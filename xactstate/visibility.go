package xactstate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
)

// Visibility as a server recovered to the target and paused there (hot
// standby) sees it: a snapshot taken at the target, where every transaction
// committed by then is visible and every other one (running, prepared,
// aborted) is not. Mirrors HeapTupleSatisfiesMVCC
// (src/backend/access/heap/heapam_visibility.c) with no current
// transaction of our own.

// t_infomask bits read here (src/include/access/htup_details.h), beside
// those rmgr names.
const (
	heapXmaxKeyShrLock = 0x0010 // HEAP_XMAX_KEYSHR_LOCK
	heapXmaxExclLock   = 0x0040 // HEAP_XMAX_EXCL_LOCK
	heapLockMask       = heapXmaxKeyShrLock | heapXmaxExclLock
	heapXminFrozen     = rmgr.HeapXminCommitted | rmgr.HeapXminInvalid // HEAP_XMIN_FROZEN
	heapMovedOff       = 0x4000                                        // HEAP_MOVED_OFF (pre-9.0 VACUUM FULL)
	heapMovedIn        = 0x8000                                        // HEAP_MOVED_IN
	heapMoved          = heapMovedOff | heapMovedIn
)

// TupleHeader is what visibility reads of a HeapTupleHeaderData
// (htup_details.h): t_xmin, t_xmax, t_field3 as t_xvac (meaningful only
// with HEAP_MOVED), t_infomask2 and t_infomask.
type TupleHeader struct {
	Xmin, Xmax xlog.XID
	Xvac       xlog.XID
	Infomask2  uint16
	Infomask   uint16
}

// ParseTupleHeader reads a TupleHeader from the first
// rmgr.SizeofHeapTupleHeader bytes of a tuple on a page (t_xmin @0, t_xmax
// @4, t_field3 @8, t_infomask2 @18, t_infomask @20); ok is false if b is
// shorter.
func ParseTupleHeader(b []byte) (h TupleHeader, ok bool) {
	if len(b) < rmgr.SizeofHeapTupleHeader {
		return TupleHeader{}, false
	}
	return TupleHeader{
		Xmin:      xlog.XID(binary.LittleEndian.Uint32(b)),
		Xmax:      xlog.XID(binary.LittleEndian.Uint32(b[4:])),
		Xvac:      xlog.XID(binary.LittleEndian.Uint32(b[8:])),
		Infomask2: binary.LittleEndian.Uint16(b[18:]),
		Infomask:  binary.LittleEndian.Uint16(b[20:]),
	}, true
}

// xmaxLockedOnly is HEAP_XMAX_IS_LOCKED_ONLY: xmax only locks the tuple
// (HEAP_XMAX_LOCK_ONLY, or a plain exclusive lock from before 9.3).
func xmaxLockedOnly(infomask uint16) bool {
	return infomask&rmgr.HeapXmaxLockOnly != 0 ||
		infomask&(rmgr.HeapXmaxIsMulti|heapLockMask) == heapXmaxExclLock
}

// inSnapshot is XidInMVCCSnapshot for a snapshot at the target: the
// transaction had not ended (running or prepared).
func (s *State) inSnapshot(xid xlog.XID) bool {
	st := s.Status(xid)
	return st == InProgress || st == Prepared
}

// XminCommitted reports whether a tuple's inserting transaction committed,
// honouring the hint bits as the server does: HEAP_XMIN_FROZEN and
// HEAP_XMIN_COMMITTED say committed and HEAP_XMIN_INVALID (alone) aborted
// without looking further; otherwise pg_xact as of the target decides.
func (s *State) XminCommitted(infomask uint16, xmin xlog.XID) bool {
	switch infomask & heapXminFrozen {
	case heapXminFrozen, rmgr.HeapXminCommitted:
		return true
	case rmgr.HeapXminInvalid:
		return false
	}
	return s.Status(xmin) == Committed
}

// TupleVisible reports whether a snapshot taken at the target sees the
// tuple (HeapTupleSatisfiesMVCC): its xmin committed by then (frozen, or
// hinted committed and not running at the target, or committed in
// pg_xact), and its xmax invalid, only a lock (HEAP_XMAX_LOCK_ONLY, or a
// multixact of lockers only), or not committed. A multixact xmax deletes
// only if its updating member committed. A multixact whose members cannot
// be read counts as not deleting, and the problem is kept for Err.
func (s *State) TupleVisible(h TupleHeader) bool {
	im := h.Infomask
	if im&rmgr.HeapXminCommitted == 0 {
		if im&heapXminFrozen == rmgr.HeapXminInvalid {
			return false
		}
		switch {
		case im&heapMovedOff != 0:
			// Moved away by an old VACUUM FULL: gone if that committed.
			if s.inSnapshot(h.Xvac) || s.Status(h.Xvac) == Committed {
				return false
			}
		case im&heapMovedIn != 0:
			if s.inSnapshot(h.Xvac) || s.Status(h.Xvac) != Committed {
				return false
			}
		default:
			if s.Status(h.Xmin) != Committed {
				return false // running, prepared or aborted at the target
			}
		}
	} else if im&heapXminFrozen != heapXminFrozen && s.inSnapshot(h.Xmin) {
		return false // hinted committed, but not yet as of the snapshot
	}

	// The inserting transaction committed.
	if im&rmgr.HeapXmaxInvalid != 0 || xmaxLockedOnly(im) {
		return true
	}
	if im&rmgr.HeapXmaxIsMulti != 0 {
		upd, err := s.UpdateXID(MultiXactID(h.Xmax))
		if err != nil {
			// A tuple's xmax naming a multixact that does not exist as of
			// the target (PostgreSQL: "MultiXactId %u has not been created
			// yet" / "does no longer exist") is damage: both sentinels.
			if errors.Is(err, ErrNoMulti) && !errors.Is(err, ErrCorrupt) {
				err = fmt.Errorf("%w: a tuple's xmax: %w", ErrCorrupt, err)
			}
			s.fail(err)
			return true
		}
		if upd == invalidXID {
			return true // lockers only (the server asserts this cannot be)
		}
		return s.Status(upd) != Committed
	}
	if im&rmgr.HeapXmaxCommitted == 0 {
		return s.Status(h.Xmax) != Committed
	}
	// xmax hinted committed, but maybe not as of the snapshot.
	return s.inSnapshot(h.Xmax)
}
