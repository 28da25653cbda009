package rmgr

import "github.com/walscope/walscope/xlog"

// Gin resource manager (id 13), mirroring gin_identify in
// src/backend/access/rmgrdesc/gindesc.c; info values from
// src/include/access/ginxlog.h.
//
// CREATE_INDEX (0x00) exists in 10 and 11 only: 12 stopped WAL-logging index
// builds record by record ("Generate less WAL during GiST, GIN and SP-GiST
// index build") and dropped it. Verified 13.16, 15.18, 17.12, 18.6 (0x00 is
// UNKNOWN); 10 cross-checked with gindesc.c of a 10.0-based fork (TBase);
// 11 and 12 not verified from their own source.

var (
	ginNames12 = nameTable(
		entry{0x10, "CREATE_PTREE"},
		entry{0x20, "INSERT"},
		entry{0x30, "SPLIT"},
		entry{0x40, "VACUUM_PAGE"},
		entry{0x50, "DELETE_PAGE"},
		entry{0x60, "UPDATE_META_PAGE"},
		entry{0x70, "INSERT_LISTPAGE"},
		entry{0x80, "DELETE_LISTPAGE"},
		entry{0x90, "VACUUM_DATA_LEAF_PAGE"},
	)
	ginNames10 = ginNames12.with(entry{0x00, "CREATE_INDEX"})
)

var ginManager = Manager{
	ID:   xlog.RmgrGin,
	Name: "Gin",
	Desc: ginDesc,
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V12 {
			return ginNames12.masked(info)
		}
		return ginNames10.masked(info)
	},
}
