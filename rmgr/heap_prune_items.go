package rmgr

// HeapPruneItems is what heap_xlog_deserialize_prune_and_freeze
// (src/backend/access/rmgrdesc/heapdesc.c, 17 and later) finds in block 0's
// data of a PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN or PRUNE_VACUUM_CLEANUP
// record, for heap redo. The byte slices are views of the block data, clamped
// to it: a slice shorter than its count says means the data is truncated.
type HeapPruneItems struct {
	NPlans, NRedirected, NDead, NUnused int
	Plans                               []byte // NPlans xlhp_freeze_plan of 12 bytes: xmax u32, t_infomask2 u16, t_infomask u16, frzflags u8, (pad), ntuples u16
	Redirected                          []byte // NRedirected (from, to) OffsetNumber pairs
	Dead, Unused                        []byte // OffsetNumber arrays
	FreezeOffsets                       []byte // the plans' OffsetNumbers, plan after plan, to the end of the data
}

// HeapFreezePlanSize is sizeof(xlhp_freeze_plan) (16: xl_heap_freeze_plan).
const HeapFreezePlanSize = heap2FreezePlanSize

// HeapDeserializePrune splits block 0's data of a 17+ prune record whose
// xl_heap_prune.flags are flags (the same parsing pg_waldump's description
// uses).
func HeapDeserializePrune(data []byte, flags uint8) HeapPruneItems {
	p := heap2DeserializePrune(data, flags)
	return HeapPruneItems{
		NPlans: p.nplans, NRedirected: p.nredirected, NDead: p.ndead, NUnused: p.nunused,
		Plans: p.plans, Redirected: p.redirected, Dead: p.dead, Unused: p.unused,
		FreezeOffsets: p.frzOffsets,
	}
}
