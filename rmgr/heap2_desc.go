package rmgr

import (
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xlog"
)

// Heap2 descriptions: heap2_desc in src/backend/access/rmgrdesc/heapdesc.c,
// payloads from src/include/access/heapam_xlog.h. Sources per version are
// those listed in heap_desc.go. Per record type:
//
//	0x10/0x20/0x30  10-13  CLEAN "remxid %u", FREEZE_PAGE "cutoff xid %u
//	                       ntuples %u", CLEANUP_INFO "remxid %u"
//	                14-15  PRUNE "latestRemovedXid %u nredirected %u ndead %u",
//	                       VACUUM "nunused %u", FREEZE_PAGE as before
//	                16     PRUNE, VACUUM, FREEZE_PAGE in key: value style with
//	                       the offset arrays and freeze plans of block 0; the
//	                       isCatalogRel the records carry is not printed
//	                17+    PRUNE_ON_ACCESS/PRUNE_VACUUM_SCAN/PRUNE_VACUUM_CLEANUP,
//	                       one xl_heap_prune format with sub-records in block 0
//	VISIBLE         "cutoff xid %u flags %d" (10, 11), "... flags 0x%02X"
//	                (12-15), "snapshotConflictHorizon: %u, flags: 0x%02X" (16+)
//	MULTI_INSERT    "%d tuples" (10, 11), "%d tuples flags 0x%02X" (12-15),
//	                "ntuples: %d, flags: 0x%02X[, offsets: [...]]" (16+)
//	LOCK_UPDATED    as Heap LOCK with "xmax" for "xid" (heapAppendLock)
//	NEW_CID         "rel %u/%u/%u; tid %u/%u; cmin: ..." (10-15),
//	                "rel: %u/%u/%u, tid: %u/%u, cmin: ..." (16+)
//	REWRITE         nothing, in every version

// xl_heap_prune flags, 17 and later.
const (
	heap2PruneIsCatalogRel   = 1 << 1 // XLHP_IS_CATALOG_REL
	heap2PruneHasHorizon     = 1 << 3 // XLHP_HAS_CONFLICT_HORIZON
	heap2PruneHasFreezePlans = 1 << 4 // XLHP_HAS_FREEZE_PLANS
	heap2PruneHasRedirects   = 1 << 5 // XLHP_HAS_REDIRECTIONS
	heap2PruneHasDead        = 1 << 6 // XLHP_HAS_DEAD_ITEMS
	heap2PruneHasUnused      = 1 << 7 // XLHP_HAS_NOW_UNUSED_ITEMS

	heap2FreezePlanSize = 12 // sizeof(xl_heap_freeze_plan), xlhp_freeze_plan
)

// heap2Desc is the Heap2 manager's Desc.
func heap2Desc(dst []byte, rec *decode.Record) []byte {
	v := rec.Version
	info := rec.Header.Info
	main := rec.MainData
	r := newDataReader(main)
	switch op := info & heapOpMask; op {
	case 0x10, 0x20, 0x30:
		switch {
		case v >= xlog.V17:
			return heap2AppendPrune17(dst, rec)
		case v == xlog.V16:
			return heap2AppendPruneVacuumFreeze16(dst, rec, op)
		case v >= xlog.V14:
			return heap2AppendPruneVacuumFreeze14(dst, main, op)
		}
		// 10-13: CLEAN, FREEZE_PAGE, CLEANUP_INFO.
		switch op {
		case 0x10: // xl_heap_clean: latestRemovedXid u32, nredirected, ndead
			dst = append(dst, "remxid "...)
			dst = appendUint(dst, uint64(r.u32()))
		case 0x20: // xl_heap_freeze_page: cutoff_xid u32, ntuples u16
			dst = heap2AppendFreezeOld(dst, main)
		case 0x30: // xl_heap_cleanup_info: RelFileNode node, latestRemovedXid
			dst = append(dst, "remxid "...)
			dst = appendUint(dst, uint64(heapU32(main, 12)))
		}
	case heap2Visible:
		// xl_heap_visible: cutoff_xid (snapshotConflictHorizon) u32, flags u8.
		xid := r.u32()
		flags := r.u8()
		switch {
		case v >= xlog.V16:
			dst = append(dst, "snapshotConflictHorizon: "...)
			dst = appendUint(dst, uint64(xid))
			dst = append(dst, ", flags: 0x"...)
			dst = heapAppendHex02(dst, flags)
		case v >= xlog.V12:
			dst = append(dst, "cutoff xid "...)
			dst = appendUint(dst, uint64(xid))
			dst = append(dst, " flags 0x"...)
			dst = heapAppendHex02(dst, flags)
		default:
			dst = append(dst, "cutoff xid "...)
			dst = appendUint(dst, uint64(xid))
			dst = append(dst, " flags "...)
			dst = appendUint(dst, uint64(flags))
		}
	case heap2MultiInsert:
		// xl_heap_multi_insert: flags u8, (pad), ntuples u16, offsets u16[].
		flags := r.u8()
		r.skip(1)
		ntuples := r.u16()
		switch {
		case v >= xlog.V16:
			dst = append(dst, "ntuples: "...)
			dst = appendUint(dst, uint64(ntuples))
			dst = append(dst, ", flags: 0x"...)
			dst = heapAppendHex02(dst, flags)
			if heap2HasBlockData(rec, 0) && info&heapInitPage == 0 {
				dst = append(dst, ", offsets:"...)
				dst = heapAppendU16Array(dst, heapSub(main, 4, 2*int(ntuples)), int(ntuples))
			}
		case v >= xlog.V12:
			dst = appendUint(dst, uint64(ntuples))
			dst = append(dst, " tuples flags 0x"...)
			dst = heapAppendHex02(dst, flags)
		default:
			dst = appendUint(dst, uint64(ntuples))
			dst = append(dst, " tuples"...)
		}
	case heap2LockUpdated:
		// xl_heap_lock_updated: xmax u32, offnum u16, infobits_set u8, flags u8.
		xmax := r.u32()
		off := r.u16()
		bits := r.u8()
		flags := r.u8()
		dst = heapAppendLock(dst, v, "xmax", xmax, off, bits, flags)
	case heap2NewCID:
		// xl_heap_new_cid: top_xid, cmin, cmax, combocid (u32 each), the
		// relation (spc, db, rel), ItemPointerData (bi_hi, bi_lo, offset).
		r.u32()
		cmin := r.u32()
		cmax := r.u32()
		combo := r.u32()
		spc := r.u32()
		db := r.u32()
		rel := r.u32()
		blk := uint32(r.u16())<<16 | uint32(r.u16())
		off := r.u16()
		sep := "; "
		if v >= xlog.V16 {
			dst = append(dst, "rel: "...)
			sep = ", "
		} else {
			dst = append(dst, "rel "...)
		}
		dst = appendUint(dst, uint64(spc))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(db))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(rel))
		dst = append(dst, sep...)
		if v >= xlog.V16 {
			dst = append(dst, "tid: "...)
		} else {
			dst = append(dst, "tid "...)
		}
		dst = appendUint(dst, uint64(blk))
		dst = append(dst, '/')
		dst = appendUint(dst, uint64(off))
		dst = append(dst, sep...)
		dst = append(dst, "cmin: "...)
		dst = appendUint(dst, uint64(cmin))
		dst = append(dst, ", cmax: "...)
		dst = appendUint(dst, uint64(cmax))
		dst = append(dst, ", combo: "...)
		dst = appendUint(dst, uint64(combo))
	}
	return dst
}

// heap2HasBlockData is XLogRecHasBlockData.
func heap2HasBlockData(rec *decode.Record, id uint8) bool {
	b := rec.Block(id)
	return b != nil && b.DataLen > 0
}

// heap2BlockData is XLogRecGetBlockData's data (nil when there is none).
func heap2BlockData(rec *decode.Record, id uint8) []byte {
	if b := rec.Block(id); b != nil {
		return b.Data
	}
	return nil
}

// heap2AppendFreezeOld is FREEZE_PAGE of 10 to 15: "cutoff xid %u ntuples %u".
func heap2AppendFreezeOld(dst []byte, main []byte) []byte {
	dst = append(dst, "cutoff xid "...)
	dst = appendUint(dst, uint64(heapU32(main, 0)))
	dst = append(dst, " ntuples "...)
	return appendUint(dst, uint64(heapU16(main, 4)))
}

// heap2AppendPruneVacuumFreeze14 is PRUNE, VACUUM and FREEZE_PAGE of 14 and 15.
func heap2AppendPruneVacuumFreeze14(dst []byte, main []byte, op uint8) []byte {
	switch op {
	case 0x10: // xl_heap_prune: latestRemovedXid u32, nredirected u16, ndead u16
		dst = append(dst, "latestRemovedXid "...)
		dst = appendUint(dst, uint64(heapU32(main, 0)))
		dst = append(dst, " nredirected "...)
		dst = appendUint(dst, uint64(heapU16(main, 4)))
		dst = append(dst, " ndead "...)
		dst = appendUint(dst, uint64(heapU16(main, 6)))
	case 0x20: // xl_heap_vacuum: nunused u16
		dst = append(dst, "nunused "...)
		dst = appendUint(dst, uint64(heapU16(main, 0)))
	case 0x30:
		dst = heap2AppendFreezeOld(dst, main)
	}
	return dst
}

// heap2AppendPruneVacuumFreeze16 is PRUNE, VACUUM and FREEZE_PAGE of 16.
func heap2AppendPruneVacuumFreeze16(dst []byte, rec *decode.Record, op uint8) []byte {
	main := rec.MainData
	switch op {
	case 0x10:
		// xl_heap_prune: snapshotConflictHorizon u32, nredirected u16,
		// ndead u16, isCatalogRel bool; block 0: redirected pairs, dead,
		// unused (whatever remains).
		nredirected := int(heapU16(main, 4))
		ndead := int(heapU16(main, 6))
		dst = append(dst, "snapshotConflictHorizon: "...)
		dst = appendUint(dst, uint64(heapU32(main, 0)))
		dst = append(dst, ", nredirected: "...)
		dst = appendUint(dst, uint64(nredirected))
		dst = append(dst, ", ndead: "...)
		dst = appendUint(dst, uint64(ndead))
		// 16 writes isCatalogRel but does not print it (17 does): pg_waldump
		// 16.15 and the 16.14 server's pg_walinspect (fixtures/versions/pg16).
		if !heap2HasBlockData(rec, 0) {
			return dst
		}
		data := heap2BlockData(rec, 0)
		// nunused = end - nowunused, in OffsetNumbers, computed as C does
		// (a byte difference shifted right, then truncated to int).
		diff := int64(len(data)) - int64(4*nredirected) - int64(2*ndead)
		nunused := int(int32(uint64(diff) >> 1))
		dst = append(dst, ", nunused: "...)
		dst = appendInt(dst, int64(nunused))
		dst = append(dst, ", redirected:"...)
		dst = heap2AppendRedirects(dst, heapSub(data, 0, 4*nredirected), nredirected)
		dst = append(dst, ", dead:"...)
		dst = heapAppendU16Array(dst, heapSub(data, 4*nredirected, 2*ndead), ndead)
		dst = append(dst, ", unused:"...)
		return heapAppendU16Array(dst, heapSub(data, 4*nredirected+2*ndead, len(data)), nunused)
	case 0x20:
		// xl_heap_vacuum: nunused u16; block 0: the unused offsets.
		nunused := int(heapU16(main, 0))
		dst = append(dst, "nunused: "...)
		dst = appendUint(dst, uint64(nunused))
		if heap2HasBlockData(rec, 0) {
			dst = append(dst, ", unused:"...)
			dst = heapAppendU16Array(dst, heap2BlockData(rec, 0), nunused)
		}
		return dst
	default:
		// xl_heap_freeze_page: snapshotConflictHorizon u32, nplans u16,
		// isCatalogRel bool; block 0: nplans xl_heap_freeze_plan, then the
		// offsets of every plan in turn.
		nplans := int(heapU16(main, 4))
		dst = append(dst, "snapshotConflictHorizon: "...)
		dst = appendUint(dst, uint64(heapU32(main, 0)))
		dst = append(dst, ", nplans: "...)
		dst = appendUint(dst, uint64(nplans))
		// isCatalogRel is not printed by 16, as in PRUNE.
		if !heap2HasBlockData(rec, 0) {
			return dst
		}
		data := heap2BlockData(rec, 0)
		dst = append(dst, ", plans:"...)
		plans := heapSub(data, 0, nplans*heap2FreezePlanSize)
		offsets := heapSub(data, nplans*heap2FreezePlanSize, len(data))
		return heap2AppendPlans(dst, plans, nplans, offsets)
	}
}

// heap2AppendPrune17 is PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN and
// PRUNE_VACUUM_CLEANUP of 17 and later: xl_heap_prune (reason u8, flags u8,
// then the conflict horizon xid, unaligned, if XLHP_HAS_CONFLICT_HORIZON), and
// in block 0 the sub-records heap_xlog_deserialize_prune_and_freeze reads.
// Without a conflict horizon the text starts with ", isCatalogRel", as
// PostgreSQL prints it.
func heap2AppendPrune17(dst []byte, rec *decode.Record) []byte {
	main := rec.MainData
	var flags uint8
	if len(main) > 1 {
		flags = main[1]
	}
	if flags&heap2PruneHasHorizon != 0 {
		dst = append(dst, "snapshotConflictHorizon: "...)
		dst = appendUint(dst, uint64(heapU32(main, 2)))
	}
	dst = append(dst, ", isCatalogRel: "...)
	dst = appendTF(dst, flags&heap2PruneIsCatalogRel != 0)
	if !heap2HasBlockData(rec, 0) {
		return dst
	}
	p := heap2DeserializePrune(heap2BlockData(rec, 0), flags)
	dst = append(dst, ", nplans: "...)
	dst = appendUint(dst, uint64(p.nplans))
	dst = append(dst, ", nredirected: "...)
	dst = appendUint(dst, uint64(p.nredirected))
	dst = append(dst, ", ndead: "...)
	dst = appendUint(dst, uint64(p.ndead))
	dst = append(dst, ", nunused: "...)
	dst = appendUint(dst, uint64(p.nunused))
	if p.nplans > 0 {
		dst = append(dst, ", plans:"...)
		dst = heap2AppendPlans(dst, p.plans, p.nplans, p.frzOffsets)
	}
	if p.nredirected > 0 {
		dst = append(dst, ", redirected:"...)
		dst = heap2AppendRedirects(dst, p.redirected, p.nredirected)
	}
	if p.ndead > 0 {
		dst = append(dst, ", dead:"...)
		dst = heapAppendU16Array(dst, p.dead, p.ndead)
	}
	if p.nunused > 0 {
		dst = append(dst, ", unused:"...)
		dst = heapAppendU16Array(dst, p.unused, p.nunused)
	}
	return dst
}

// heap2PruneParts is what heap_xlog_deserialize_prune_and_freeze (17+)
// finds in block 0 of a prune record. The slices hold the stored bytes (they
// may be shorter than the counts say when the data is truncated).
type heap2PruneParts struct {
	nplans, nredirected, ndead, nunused int
	plans                               []byte // nplans xlhp_freeze_plan
	redirected                          []byte // nredirected (from, to) pairs
	dead, unused                        []byte // OffsetNumber arrays
	frzOffsets                          []byte // the plans' offsets, plan after plan
}

// heap2DeserializePrune mirrors heap_xlog_deserialize_prune_and_freeze:
// xlhp_freeze_plans (nplans u16, pad, plans), then xlhp_prune_items (ntargets
// u16, data) for redirections (pairs), dead and unused items, each present
// only if its flag is set, then the freeze offsets.
func heap2DeserializePrune(data []byte, flags uint8) heap2PruneParts {
	var p heap2PruneParts
	cur := 0
	if flags&heap2PruneHasFreezePlans != 0 {
		p.nplans = int(heapU16(data, cur))
		cur += 4 // offsetof(xlhp_freeze_plans, plans)
		p.plans = heapSub(data, cur, p.nplans*heap2FreezePlanSize)
		cur += p.nplans * heap2FreezePlanSize
	}
	if flags&heap2PruneHasRedirects != 0 {
		p.nredirected = int(heapU16(data, cur))
		cur += 2 // offsetof(xlhp_prune_items, data)
		p.redirected = heapSub(data, cur, 4*p.nredirected)
		cur += 4 * p.nredirected
	}
	if flags&heap2PruneHasDead != 0 {
		p.ndead = int(heapU16(data, cur))
		cur += 2
		p.dead = heapSub(data, cur, 2*p.ndead)
		cur += 2 * p.ndead
	}
	if flags&heap2PruneHasUnused != 0 {
		p.nunused = int(heapU16(data, cur))
		cur += 2
		p.unused = heapSub(data, cur, 2*p.nunused)
		cur += 2 * p.nunused
	}
	p.frzOffsets = heapSub(data, cur, len(data))
	return p
}

// heap2AppendPlans appends array_desc of freeze plans with plan_elem_desc
// (16+): "{ xmax: %u, infomask: %u, infomask2: %u, ntuples: %u, offsets: [..] }",
// each plan taking its ntuples offsets from offsets in turn. A plan is
// xlhp_freeze_plan: xmax u32, t_infomask2 u16, t_infomask u16, frzflags u8,
// (pad), ntuples u16.
func heap2AppendPlans(dst []byte, plans []byte, nplans int, offsets []byte) []byte {
	if nplans <= 0 {
		return append(dst, " []"...)
	}
	dst = append(dst, " ["...)
	for i := 0; i < nplans && (i+1)*heap2FreezePlanSize <= len(plans); i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		pl := plans[i*heap2FreezePlanSize:]
		ntuples := int(heapU16(pl, 10))
		dst = append(dst, "{ xmax: "...)
		dst = appendUint(dst, uint64(heapU32(pl, 0)))
		dst = append(dst, ", infomask: "...)
		dst = appendUint(dst, uint64(heapU16(pl, 6)))
		dst = append(dst, ", infomask2: "...)
		dst = appendUint(dst, uint64(heapU16(pl, 4)))
		dst = append(dst, ", ntuples: "...)
		dst = appendUint(dst, uint64(ntuples))
		dst = append(dst, ", offsets:"...)
		dst = heapAppendU16Array(dst, offsets, ntuples)
		offsets = heapSub(offsets, 2*ntuples, len(offsets))
		dst = append(dst, " }"...)
	}
	return append(dst, ']')
}

// heap2AppendRedirects appends array_desc of (from, to) OffsetNumber pairs
// with redirect_elem_desc: " [1->2, 5->7]".
func heap2AppendRedirects(dst []byte, data []byte, count int) []byte {
	if count <= 0 {
		return append(dst, " []"...)
	}
	dst = append(dst, " ["...)
	for i := 0; i < count && 4*i+4 <= len(data); i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendUint(dst, uint64(heapU16(data, 4*i)))
		dst = append(dst, "->"...)
		dst = appendUint(dst, uint64(heapU16(data, 4*i+2)))
	}
	return append(dst, ']')
}
