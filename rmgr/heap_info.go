package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// HeapSummary is a version-independent digest of a Heap or Heap2 record's
// payload, for analyses that should not parse description text (whose wording
// changed in 12, 16 and 17). Fields a record type does not have stay zero.
// Counts come from the stored data and are not validated.
type HeapSummary struct {
	Offset    uint16 // target tuple offset (the old tuple of an update)
	NewOffset uint16 // new tuple offset of UPDATE and HOT_UPDATE
	Xmax      uint32 // xmax of DELETE, LOCK, LOCK_UPDATED; old_xmax of updates
	NewXmax   uint32 // new_xmax of updates
	Flags     uint8  // the record's XLH_* flags byte, where it has one
	Infobits  uint8  // XLHL_* bits of DELETE, updates, LOCK, LOCK_UPDATED

	// ConflictXID is the xid a standby's queries conflict with: CLEAN's and
	// PRUNE's latestRemovedXid, snapshotConflictHorizon, or FREEZE_PAGE's and
	// VISIBLE's cutoff xid. HasConflictXID tells whether the record has one.
	ConflictXID    uint32
	HasConflictXID bool
	IsCatalogRel   bool // 16+ prune and freeze records

	NTuples     int // MULTI_INSERT tuples, TRUNCATE relations
	NRedirected int // pruning: line pointers redirected
	NDead       int // pruning: line pointers marked dead
	NUnused     int // pruning and vacuum: line pointers set unused
	NFrozen     int // tuples frozen (FREEZE_PAGE, 17+ prune records)
}

// HeapSummarize digests a Heap or Heap2 record; ok is false for other
// resource managers.
func HeapSummarize(rec *decode.Record) (s HeapSummary, ok bool) {
	main := rec.MainData
	v := rec.Version
	op := rec.Header.Info & heapOpMask
	switch rec.Header.Rmid {
	case xlog.RmgrHeap:
		switch op {
		case heapInsert:
			s.Offset, s.Flags = heapU16(main, 0), heapU8(main, 2)
		case heapDelete, heapLock:
			s.Xmax, s.Offset = heapU32(main, 0), heapU16(main, 4)
			s.Infobits, s.Flags = heapU8(main, 6), heapU8(main, 7)
		case heapUpdate, heapHotUpdate:
			s.Xmax, s.Offset = heapU32(main, 0), heapU16(main, 4)
			s.Infobits, s.Flags = heapU8(main, 6), heapU8(main, 7)
			s.NewXmax, s.NewOffset = heapU32(main, 8), heapU16(main, 12)
		case heapTruncate:
			s.NTuples, s.Flags = int(heapU32(main, 4)), heapU8(main, 8)
		case heapConfirm, heapInplace:
			s.Offset = heapU16(main, 0)
		}
		return s, true
	case xlog.RmgrHeap2:
	default:
		return s, false
	}
	data := heap2BlockData(rec, 0)
	switch op {
	case 0x10, 0x20, 0x30:
		switch {
		case v >= xlog.V17:
			flags := heapU8(main, 1)
			s.Flags = flags
			s.IsCatalogRel = flags&heap2PruneIsCatalogRel != 0
			if flags&heap2PruneHasHorizon != 0 {
				s.ConflictXID, s.HasConflictXID = heapU32(main, 2), true
			}
			p := heap2DeserializePrune(data, flags)
			s.NRedirected, s.NDead, s.NUnused = p.nredirected, p.ndead, p.nunused
			s.NFrozen = heap2PlanTuples(p.plans, p.nplans)
		case op == 0x10:
			// CLEAN (10-13) and PRUNE (14-16): xid, nredirected, ndead;
			// the unused offsets fill the rest of block 0.
			s.ConflictXID, s.HasConflictXID = heapU32(main, 0), true
			s.NRedirected, s.NDead = int(heapU16(main, 4)), int(heapU16(main, 6))
			s.IsCatalogRel = v == xlog.V16 && heapU8(main, 8)&1 != 0
			s.NUnused = max(0, (len(data)-4*s.NRedirected-2*s.NDead)/2)
		case v >= xlog.V14 && op == 0x20:
			s.NUnused = int(heapU16(main, 0)) // VACUUM
		case v <= xlog.V13 && op == 0x30:
			s.ConflictXID, s.HasConflictXID = heapU32(main, 12), true // CLEANUP_INFO
		case v == xlog.V16: // FREEZE_PAGE with freeze plans
			s.ConflictXID, s.HasConflictXID = heapU32(main, 0), true
			s.IsCatalogRel = heapU8(main, 6)&1 != 0
			nplans := int(heapU16(main, 4))
			s.NFrozen = heap2PlanTuples(heapSub(data, 0, nplans*heap2FreezePlanSize), nplans)
		default: // FREEZE_PAGE of 10-15: cutoff_xid, ntuples
			s.ConflictXID, s.HasConflictXID = heapU32(main, 0), true
			s.NFrozen = int(heapU16(main, 4))
		}
	case heap2Visible:
		s.ConflictXID, s.HasConflictXID, s.Flags = heapU32(main, 0), true, heapU8(main, 4)
	case heap2MultiInsert:
		s.Flags, s.NTuples = heapU8(main, 0), int(heapU16(main, 2))
	case heap2LockUpdated:
		s.Xmax, s.Offset = heapU32(main, 0), heapU16(main, 4)
		s.Infobits, s.Flags = heapU8(main, 6), heapU8(main, 7)
	case heap2NewCID:
		s.Offset = heapU16(main, 32)
	}
	return s, true
}

// heap2PlanTuples sums the ntuples of the freeze plans stored in plans.
func heap2PlanTuples(plans []byte, nplans int) int {
	n := 0
	for i := 0; i < nplans && (i+1)*heap2FreezePlanSize <= len(plans); i++ {
		n += int(heapU16(plans, i*heap2FreezePlanSize+10))
	}
	return n
}

// heapU8 reads b[off], 0 when out of range.
func heapU8(b []byte, off int) uint8 {
	if off < 0 || off >= len(b) {
		return 0
	}
	return b[off]
}
