package rmgr

import "github.com/walscope/walscope/xlog"

// Btree resource manager (id 11), mirroring btree_identify in
// src/backend/access/rmgrdesc/nbtdesc.c; info values from
// src/include/access/nbtxlog.h.
//
// 0x50 and 0x60 changed meaning three times, and META_CLEANUP (0xE0) arrived
// in 11:
//
//	10:    SPLIT_L_ROOT, SPLIT_R_ROOT; no META_CLEANUP (cross-checked: nbtdesc.c
//	       of two 10-era forks, Tencent TBase and postgres_cluster)
//	11:    SPLIT_L_HIGHKEY, SPLIT_R_HIGHKEY (INCLUDE indexes); META_CLEANUP.
//	       Only the header values are cross-checked (nbtxlog.h of the 11-based
//	       PolarDB); the strings are unverified and assume btree_identify names
//	       them after their macros, as it does everywhere else.
//	12:    0x50, 0x60 unused (UNKNOWN); META_CLEANUP (cross-checked: nbtdesc.c
//	       of the 12-based Greenplum 7 before its dedup back-port)
//	13-18: INSERT_POST, DEDUP (verified 13.16, 15.18, 17.12, 18.6; 14 and 16
//	       inferred)

const (
	btreeInsertLeaf       = 0x00
	btreeInsertUpper      = 0x10
	btreeInsertMeta       = 0x20
	btreeSplitL           = 0x30
	btreeSplitR           = 0x40
	btreeDelete           = 0x70
	btreeUnlinkPage       = 0x80
	btreeUnlinkPageMeta   = 0x90
	btreeNewRoot          = 0xA0
	btreeMarkPageHalfdead = 0xB0
	btreeVacuum           = 0xC0
	btreeReusePage        = 0xD0
	btreeMetaCleanup      = 0xE0 // 11+
)

var (
	btreeCommon = nameTable(
		entry{btreeInsertLeaf, "INSERT_LEAF"},
		entry{btreeInsertUpper, "INSERT_UPPER"},
		entry{btreeInsertMeta, "INSERT_META"},
		entry{btreeSplitL, "SPLIT_L"},
		entry{btreeSplitR, "SPLIT_R"},
		entry{btreeVacuum, "VACUUM"},
		entry{btreeDelete, "DELETE"},
		entry{btreeMarkPageHalfdead, "MARK_PAGE_HALFDEAD"},
		entry{btreeUnlinkPage, "UNLINK_PAGE"},
		entry{btreeUnlinkPageMeta, "UNLINK_PAGE_META"},
		entry{btreeNewRoot, "NEWROOT"},
		entry{btreeReusePage, "REUSE_PAGE"},
	)
	btreeNames10 = btreeCommon.with(
		entry{0x50, "SPLIT_L_ROOT"},
		entry{0x60, "SPLIT_R_ROOT"},
	)
	btreeNames11 = btreeCommon.with(
		entry{0x50, "SPLIT_L_HIGHKEY"},
		entry{0x60, "SPLIT_R_HIGHKEY"},
		entry{btreeMetaCleanup, "META_CLEANUP"},
	)
	btreeNames12 = btreeCommon.with(entry{btreeMetaCleanup, "META_CLEANUP"})
	btreeNames13 = btreeNames12.with(
		entry{0x50, "INSERT_POST"},
		entry{0x60, "DEDUP"},
	)
)

var btreeManager = Manager{
	ID:   xlog.RmgrBtree,
	Name: "Btree",
	Desc: btreeDesc,
	Identify: func(v xlog.Version, info uint8) string {
		switch {
		case v >= xlog.V13:
			return btreeNames13.masked(info)
		case v == xlog.V12:
			return btreeNames12.masked(info)
		case v == xlog.V11:
			return btreeNames11.masked(info)
		default:
			return btreeNames10.masked(info)
		}
	},
}
