package rmgr

import "github.com/walscope/walscope/xlog"

// Heap resource manager (id 10), mirroring heap_identify in
// src/backend/access/rmgrdesc/heapdesc.c; info values from
// src/include/access/heapam_xlog.h.
//
// heap_identify switches on info & ~XLR_INFO_MASK, so XLOG_HEAP_INIT_PAGE
// (0x80) is part of the case label: INSERT, UPDATE and HOT_UPDATE have a
// "+INIT" variant (0x80, 0xA0, 0xC0); DELETE, TRUNCATE, HEAP_CONFIRM, LOCK and
// INPLACE with 0x80 are UNKNOWN (90, b0, d0, e0, f0).
//
// TRUNCATE (0x30) exists from 11 on (logical replication of TRUNCATE). Verified
// 13.16, 15.18, 17.12, 18.6; 10 cross-checked with a 10.0-based fork; 11, 12,
// 14 and 16 not verified from their own source (14 and 16 cross-checked with
// forks).

const (
	heapInsert    = 0x00
	heapDelete    = 0x10
	heapUpdate    = 0x20
	heapTruncate  = 0x30 // 11+
	heapHotUpdate = 0x40
	heapConfirm   = 0x50
	heapLock      = 0x60
	heapInplace   = 0x70
)

var (
	heapNames10 = nameTable(
		entry{heapInsert, "INSERT"},
		entry{heapInsert | heapInitPage, "INSERT+INIT"},
		entry{heapDelete, "DELETE"},
		entry{heapUpdate, "UPDATE"},
		entry{heapUpdate | heapInitPage, "UPDATE+INIT"},
		entry{heapHotUpdate, "HOT_UPDATE"},
		entry{heapHotUpdate | heapInitPage, "HOT_UPDATE+INIT"},
		entry{heapConfirm, "HEAP_CONFIRM"},
		entry{heapLock, "LOCK"},
		entry{heapInplace, "INPLACE"},
	)
	heapNames11 = heapNames10.with(entry{heapTruncate, "TRUNCATE"})
)

var heapManager = Manager{
	ID:   xlog.RmgrHeap,
	Name: "Heap",
	Desc: heapDesc,
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V11 {
			return heapNames11.masked(info)
		}
		return heapNames10.masked(info)
	},
}
