package rmgr

import "github.com/walscope/walscope/xlog"

// Transaction resource manager (id 1), mirroring xact_identify in
// src/backend/access/rmgrdesc/xactdesc.c; info values from
// src/include/access/xact.h.
//
// xact_identify switches on info & XLOG_XACT_OPMASK (0x70), so the
// XLOG_XACT_HAS_INFO bit (0x80) and the XLR_INFO_MASK bits never change the
// name. INVALIDATION (0x60; singular, unlike Standby's INVALIDATIONS) exists
// from 14 on.
//
// Verified: 13.16, 15.18, 18.6 (compiled identify), 17.12 (pg_waldump). 10 to
// 12, 14 and 16 not verified from their own source.
//
// StatsBucket: pg_waldump --stats=record buckets Transaction records by
// (xl_info >> 4) & 0x07 (pg_waldump.c XLogDumpCountRecord up to 14,
// xlogstats.c XLogRecStoreStats from 15). Verified in 13.16 and 15.18 source
// and by running pg_waldump 13.16, 15.18, 17.12 and 18.6 (a COMMIT with and
// without HAS_INFO share one row). A 10.0-based source (Tencent TBase) has no
// such masking: it was added later and back-patched; whether the final 10,
// 11 and 12 minor releases carry it could not be checked.

const (
	xactOpMask         = 0x70 // XLOG_XACT_OPMASK
	xactCommit         = 0x00
	xactPrepare        = 0x10
	xactAbort          = 0x20
	xactCommitPrepared = 0x30
	xactAbortPrepared  = 0x40
	xactAssignment     = 0x50
	xactInvalidations  = 0x60 // 14+
)

var (
	xactNames10 = nameTable(
		entry{xactCommit, "COMMIT"},
		entry{xactPrepare, "PREPARE"},
		entry{xactAbort, "ABORT"},
		entry{xactCommitPrepared, "COMMIT_PREPARED"},
		entry{xactAbortPrepared, "ABORT_PREPARED"},
		entry{xactAssignment, "ASSIGNMENT"},
	)
	xactNames14 = xactNames10.with(entry{xactInvalidations, "INVALIDATION"})
)

var xactManager = Manager{
	ID:   xlog.RmgrTransaction,
	Name: "Transaction",
	Desc: xactDesc,
	Identify: func(v xlog.Version, info uint8) string {
		t := &xactNames10
		if v >= xlog.V14 {
			t = &xactNames14
		}
		return t.masked(info & xactOpMask)
	},
	StatsBucket: func(info uint8) uint8 { return (info >> 4) & 0x07 },
}
