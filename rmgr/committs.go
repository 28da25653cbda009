package rmgr

import "github.com/walscope/walscope/xlog"

// CommitTs resource manager (id 18), mirroring commit_ts_identify in
// src/backend/access/rmgrdesc/committsdesc.c; info values from
// src/include/access/commit_ts.h.
//
// Quirk: commit_ts_identify switches on the whole info byte, without masking
// XLR_INFO_MASK, in every version 10 to 18, so a record with any low bit set
// prints as UNKNOWN (observed with pg_waldump 13.16, 15.18, 17.12 and 18.6:
// info 0x01 gives "UNKNOWN (0)"), while its --stats=record row, built from
// rm_identify(bucket << 4), gets the proper name.
//
// SETTS (0x20) exists up to 13 (verified 13.16; 10 cross-checked with a
// 10.0-based fork) and is gone from 14 (removed in the 14 cycle; verified
// gone in 15.18, 17.12, 18.6; 14 itself not verified from source).

var (
	committsNames14 = nameTable(
		entry{0x00, "ZEROPAGE"},
		entry{0x10, "TRUNCATE"},
	)
	committsNames10 = committsNames14.with(entry{0x20, "SETTS"})
)

var committsManager = Manager{
	ID:   xlog.RmgrCommitTs,
	Name: "CommitTs",
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V14 {
			return committsNames14.unmasked(info)
		}
		return committsNames10.unmasked(info)
	},
	Desc: committsDesc,
}
