package rmgr

import "github.com/walscope/walscope/xlog"

// Heap2 resource manager (id 9), mirroring heap2_identify in
// src/backend/access/rmgrdesc/heapdesc.c; info values from
// src/include/access/heapam_xlog.h.
//
// heap2_identify switches on info & ~XLR_INFO_MASK, so the XLOG_HEAP_INIT_PAGE
// bit (0x80) is part of the case label: only MULTI_INSERT+INIT (0xD0) has a
// name, every other value with 0x80 set is UNKNOWN.
//
// 0x10/0x20/0x30 changed twice:
//
//	10-13: CLEAN, FREEZE_PAGE, CLEANUP_INFO (verified 13.16; 10 cross-checked
//	       with a 10.0-based fork; 11, 12 inferred)
//	14-16: PRUNE, VACUUM, FREEZE_PAGE (verified 15.18; 14 cross-checked with a
//	       14-based fork, Cloudberry; 16 cross-checked with a 2023
//	       rmgrdesc_utils-era heapdesc.c)
//	17-18: PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN, PRUNE_VACUUM_CLEANUP (verified
//	       17.12 pg_waldump and 18.6 source)

const (
	heap2Rewrite     = 0x00
	heap2Visible     = 0x40
	heap2MultiInsert = 0x50
	heap2LockUpdated = 0x60
	heap2NewCID      = 0x70
	heapInitPage     = 0x80 // XLOG_HEAP_INIT_PAGE, shared with Heap
)

var (
	heap2Common = nameTable(
		entry{heap2Rewrite, "REWRITE"},
		entry{heap2Visible, "VISIBLE"},
		entry{heap2MultiInsert, "MULTI_INSERT"},
		entry{heap2MultiInsert | heapInitPage, "MULTI_INSERT+INIT"},
		entry{heap2LockUpdated, "LOCK_UPDATED"},
		entry{heap2NewCID, "NEW_CID"},
	)
	heap2Names10 = heap2Common.with(
		entry{0x10, "CLEAN"},
		entry{0x20, "FREEZE_PAGE"},
		entry{0x30, "CLEANUP_INFO"},
	)
	heap2Names14 = heap2Common.with(
		entry{0x10, "PRUNE"},
		entry{0x20, "VACUUM"},
		entry{0x30, "FREEZE_PAGE"},
	)
	heap2Names17 = heap2Common.with(
		entry{0x10, "PRUNE_ON_ACCESS"},
		entry{0x20, "PRUNE_VACUUM_SCAN"},
		entry{0x30, "PRUNE_VACUUM_CLEANUP"},
	)
)

var heap2Manager = Manager{
	ID:   xlog.RmgrHeap2,
	Name: "Heap2",
	Desc: heap2Desc,
	Identify: func(v xlog.Version, info uint8) string {
		switch {
		case v >= xlog.V17:
			return heap2Names17.masked(info)
		case v >= xlog.V14:
			return heap2Names14.masked(info)
		default:
			return heap2Names10.masked(info)
		}
	},
}
