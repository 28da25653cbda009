package rmgr

import (
	"testing"

	"github.com/walscope/walscope/xlog"
)

// Heap2 descriptions per version; helpers and conventions in heap_desc_test.go.

func TestHeap2DescVersions(t *testing.T) {
	// 10-13 payloads.
	clean := heapTestBytes(uint32(50), uint16(1), uint16(2))                                // xl_heap_clean
	freezeOld := heapTestBytes(uint32(60), uint16(3))                                       // xl_heap_freeze_page (10-15)
	cleanupInfo := heapTestBytes(uint32(1663), uint32(5), uint32(16384), uint32(77))        // xl_heap_cleanup_info
	prune14 := heapTestBytes(uint32(90), uint16(1), uint16(2))                              // xl_heap_prune (14, 15)
	vacuum := heapTestBytes(uint16(3))                                                      // xl_heap_vacuum (14-16)
	visible := heapTestBytes(uint32(42), uint8(3))                                          // xl_heap_visible
	multi := heapTestBytes(uint8(0x02), 1, uint16(3), uint16(1), uint16(2), uint16(3))      // xl_heap_multi_insert
	lockUpd := heapTestBytes(uint32(1000), uint16(6), uint8(0x09), uint8(0))                // xl_heap_lock_updated
	newCID := heapTestBytes(uint32(800), uint32(1), uint32(0xFFFFFFFF), uint32(0xFFFFFFFF), // top_xid, cmin, cmax, combocid
		uint32(1663), uint32(5), uint32(16384), uint16(1), uint16(2), uint16(12)) // rel, tid (bi_hi, bi_lo, off)

	// 16: xl_heap_prune with isCatalogRel, block 0 = redirected pairs, dead, unused.
	prune16 := heapTestBytes(uint32(100), uint16(1), uint16(2), uint8(1), 1)
	prune16Data := heapTestBytes(uint16(2), uint16(5), uint16(7), uint16(8), uint16(10), uint16(11))
	prune16NoRedir := heapTestBytes(uint32(100), uint16(0), uint16(1), uint8(0), 1)
	// 16: xl_heap_freeze_page, block 0 = xl_heap_freeze_plan[2] then offsets.
	freeze16 := heapTestBytes(uint32(200), uint16(2), uint8(0), 1)
	freeze16Data := heapTestBytes(
		uint32(0), uint16(2), uint16(2304), uint8(0), 1, uint16(2), // xmax, infomask2, infomask, frzflags, ntuples
		uint32(300), uint16(3), uint16(256), uint8(0), 1, uint16(1),
		uint16(1), uint16(4), uint16(9))

	// 17+: xl_heap_prune (reason, flags, horizon) and the sub-records.
	prune17 := heapTestBytes(uint8(1), uint8(0xF8), uint32(555))
	prune17Data := heapTestBytes(
		uint16(1), 2, uint32(0), uint16(1), uint16(2048), uint8(0), 1, uint16(2), // xlhp_freeze_plans
		uint16(1), uint16(3), uint16(4), // redirections
		uint16(1), uint16(6), // dead
		uint16(2), uint16(7), uint16(8), // unused
		uint16(10), uint16(11)) // freeze offsets
	prune17Catalog := heapTestBytes(uint8(0), uint8(0x02))
	prune17Unused := heapTestBytes(uint8(2), uint8(0x80))
	prune17UnusedData := heapTestBytes(uint16(1), uint16(136))

	heapRunDescCases(t, xlog.RmgrHeap2, []heapDescCase{
		// 10-13: CLEAN "remxid %u", FREEZE_PAGE "cutoff xid %u ntuples %u",
		// CLEANUP_INFO "remxid %u".
		{"CLEAN", xlog.V10, 0x10, clean, nil, "remxid 50"},
		{"FREEZE_PAGE", xlog.V11, 0x20, freezeOld, nil, "cutoff xid 60 ntuples 3"},
		{"CLEANUP_INFO", xlog.V12, 0x30, cleanupInfo, nil, "remxid 77"},
		{"CLEAN", xlog.V13, 0x10, clean, []byte{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, "remxid 50"},

		// 14, 15: PRUNE "latestRemovedXid %u nredirected %u ndead %u",
		// VACUUM "nunused %u", FREEZE_PAGE as before.
		{"PRUNE", xlog.V14, 0x10, prune14, nil, "latestRemovedXid 90 nredirected 1 ndead 2"},
		{"VACUUM", xlog.V14, 0x20, vacuum, []byte{4, 0, 5, 0, 6, 0}, "nunused 3"},
		{"FREEZE_PAGE", xlog.V14, 0x30, freezeOld, nil, "cutoff xid 60 ntuples 3"},
		{"PRUNE", xlog.V15, 0x10, prune14, nil, "latestRemovedXid 90 nredirected 1 ndead 2"},

		// 16: "snapshotConflictHorizon: %u, nredirected: %u, ndead: %u"
		// (the record's isCatalogRel is not printed; fixtures/versions/pg16)
		// then, with block data, ", nunused: %d", ", redirected:", ", dead:", ", unused:" arrays (always, even empty).
		{"PRUNE", xlog.V16, 0x10, prune16, prune16Data,
			"snapshotConflictHorizon: 100, nredirected: 1, ndead: 2, nunused: 2, redirected: [2->5], dead: [7, 8], unused: [10, 11]"},
		{"PRUNE", xlog.V16, 0x10, prune16, nil, "snapshotConflictHorizon: 100, nredirected: 1, ndead: 2"},
		{"PRUNE", xlog.V16, 0x10, prune16NoRedir, heapTestBytes(uint16(3), uint16(4)),
			"snapshotConflictHorizon: 100, nredirected: 0, ndead: 1, nunused: 1, redirected: [], dead: [3], unused: [4]"},
		// VACUUM: "nunused: %u" and, with block data, ", unused:" array.
		{"VACUUM", xlog.V16, 0x20, vacuum, heapTestBytes(uint16(4), uint16(5), uint16(6)), "nunused: 3, unused: [4, 5, 6]"},
		{"VACUUM", xlog.V16, 0x20, vacuum, nil, "nunused: 3"},
		// FREEZE_PAGE: "snapshotConflictHorizon: %u, nplans: %u", ", plans:" with plan_elem_desc.
		{"FREEZE_PAGE", xlog.V16, 0x30, freeze16, freeze16Data,
			"snapshotConflictHorizon: 200, nplans: 2, plans: [{ xmax: 0, infomask: 2304, infomask2: 2, ntuples: 2, offsets: [1, 4] }, { xmax: 300, infomask: 256, infomask2: 3, ntuples: 1, offsets: [9] }]"},
		{"FREEZE_PAGE", xlog.V16, 0x30, freeze16, nil, "snapshotConflictHorizon: 200, nplans: 2"},

		// 17+: the merged prune record.
		{"PRUNE_VACUUM_SCAN", xlog.V17, 0x20, prune17, prune17Data,
			"snapshotConflictHorizon: 555, isCatalogRel: F, nplans: 1, nredirected: 1, ndead: 1, nunused: 2, plans: [{ xmax: 0, infomask: 2048, infomask2: 1, ntuples: 2, offsets: [10, 11] }], redirected: [3->4], dead: [6], unused: [7, 8]"},
		{"PRUNE_VACUUM_SCAN", xlog.V18, 0x20, prune17, nil, "snapshotConflictHorizon: 555, isCatalogRel: F"},
		{"PRUNE_ON_ACCESS", xlog.V17, 0x10, prune17Catalog, nil, ", isCatalogRel: T"},
		{"PRUNE_VACUUM_CLEANUP", xlog.V17, 0x30, prune17Unused, prune17UnusedData,
			", isCatalogRel: F, nplans: 0, nredirected: 0, ndead: 0, nunused: 1, unused: [136]"},

		// VISIBLE: "cutoff xid %u flags %d" (10, 11), "cutoff xid %u flags
		// 0x%02X" (12-15), "snapshotConflictHorizon: %u, flags: 0x%02X" (16+).
		{"VISIBLE", xlog.V10, 0x40, visible, nil, "cutoff xid 42 flags 3"},
		{"VISIBLE", xlog.V11, 0x40, visible, nil, "cutoff xid 42 flags 3"},
		{"VISIBLE", xlog.V12, 0x40, visible, nil, "cutoff xid 42 flags 0x03"},
		{"VISIBLE", xlog.V14, 0x40, visible, nil, "cutoff xid 42 flags 0x03"},
		{"VISIBLE", xlog.V16, 0x40, visible, nil, "snapshotConflictHorizon: 42, flags: 0x03"},
		{"VISIBLE", xlog.V17, 0x40, visible, nil, "snapshotConflictHorizon: 42, flags: 0x03"},

		// MULTI_INSERT: "%d tuples" (10, 11), "%d tuples flags 0x%02X"
		// (12-15), "ntuples: %d, flags: 0x%02X" plus ", offsets:" when block 0
		// has data and the page is not initialised (16+).
		{"MULTI_INSERT", xlog.V10, 0x50, multi, []byte{1}, "3 tuples"},
		{"MULTI_INSERT+INIT", xlog.V11, 0xD0, multi, nil, "3 tuples"},
		{"MULTI_INSERT", xlog.V12, 0x50, multi, []byte{1}, "3 tuples flags 0x02"},
		{"MULTI_INSERT", xlog.V13, 0x50, multi, []byte{1}, "3 tuples flags 0x02"},
		{"MULTI_INSERT", xlog.V16, 0x50, multi, []byte{1}, "ntuples: 3, flags: 0x02, offsets: [1, 2, 3]"},
		{"MULTI_INSERT", xlog.V16, 0x50, multi, nil, "ntuples: 3, flags: 0x02"},
		{"MULTI_INSERT+INIT", xlog.V17, 0xD0, multi, []byte{1}, "ntuples: 3, flags: 0x02"},

		// LOCK_UPDATED: "off %u: xmax %u: flags %u " (10, 11), "... flags
		// 0x%02X " (12-15), out_infobits after; "xmax: %u, off: %u, "
		// infobits_desc ", flags: 0x%02X" (16+).
		{"LOCK_UPDATED", xlog.V10, 0x60, lockUpd, nil, "off 6: xmax 1000: flags 0 IS_MULTI KEYSHR_LOCK "},
		{"LOCK_UPDATED", xlog.V11, 0x60, lockUpd, nil, "off 6: xmax 1000: flags 0 IS_MULTI KEYSHR_LOCK "},
		{"LOCK_UPDATED", xlog.V13, 0x60, lockUpd, nil, "off 6: xmax 1000: flags 0x00 IS_MULTI KEYSHR_LOCK "},
		{"LOCK_UPDATED", xlog.V16, 0x60, lockUpd, nil, "xmax: 1000, off: 6, infobits: [IS_MULTI, KEYSHR_LOCK], flags: 0x00"},
		{"LOCK_UPDATED", xlog.V18, 0x60, lockUpd, nil, "xmax: 1000, off: 6, infobits: [IS_MULTI, KEYSHR_LOCK], flags: 0x00"},

		// NEW_CID: "rel %u/%u/%u; tid %u/%u" "; cmin: %u, cmax: %u, combo: %u"
		// (10-15); "rel: %u/%u/%u, tid: %u/%u" ", cmin: ..." (16+).
		{"NEW_CID", xlog.V10, 0x70, newCID, nil, "rel 1663/5/16384; tid 65538/12; cmin: 1, cmax: 4294967295, combo: 4294967295"},
		{"NEW_CID", xlog.V13, 0x70, newCID, nil, "rel 1663/5/16384; tid 65538/12; cmin: 1, cmax: 4294967295, combo: 4294967295"},
		{"NEW_CID", xlog.V16, 0x70, newCID, nil, "rel: 1663/5/16384, tid: 65538/12, cmin: 1, cmax: 4294967295, combo: 4294967295"},
		{"NEW_CID", xlog.V18, 0x70, newCID, nil, "rel: 1663/5/16384, tid: 65538/12, cmin: 1, cmax: 4294967295, combo: 4294967295"},

		// REWRITE: heap2_desc has no branch for it.
		{"REWRITE", xlog.V10, 0x00, heapTestBytes(uint32(1), 28), nil, ""},
		{"REWRITE", xlog.V15, 0x00, heapTestBytes(uint32(1), 28), nil, ""},
		{"REWRITE", xlog.V18, 0x00, heapTestBytes(uint32(1), 28), nil, ""},
	})
}
