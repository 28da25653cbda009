package rmgr

import "github.com/walscope/walscope/xlog"

// SPGist resource manager (id 16), mirroring spg_identify in
// src/backend/access/rmgrdesc/spgdesc.c; info values from
// src/include/access/spgxlog.h.
//
// CREATE_INDEX (0x00) exists in 10 and 11 only (dropped in 12 with the GiST
// and GIN ones). Verified 13.16, 15.18, 17.12, 18.6; 10 cross-checked with
// spgdesc.c of a 10.0-based fork (TBase); 11 and 12 not verified.

var (
	spgNames12 = nameTable(
		entry{0x10, "ADD_LEAF"},
		entry{0x20, "MOVE_LEAFS"},
		entry{0x30, "ADD_NODE"},
		entry{0x40, "SPLIT_TUPLE"},
		entry{0x50, "PICKSPLIT"},
		entry{0x60, "VACUUM_LEAF"},
		entry{0x70, "VACUUM_ROOT"},
		entry{0x80, "VACUUM_REDIRECT"},
	)
	spgNames10 = spgNames12.with(entry{0x00, "CREATE_INDEX"})
)

var spgManager = Manager{
	ID:   xlog.RmgrSPGist,
	Name: "SPGist",
	Desc: spgDesc,
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V12 {
			return spgNames12.masked(info)
		}
		return spgNames10.masked(info)
	},
}
