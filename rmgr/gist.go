package rmgr

import "github.com/walscope/walscope/xlog"

// Gist resource manager (id 14), mirroring gist_identify in
// src/backend/access/rmgrdesc/gistdesc.c; info values from
// src/include/access/gistxlog.h.
//
//	10-11: PAGE_UPDATE 0x00, PAGE_SPLIT 0x30, CREATE_INDEX 0x50 (cross-checked:
//	       gistdesc.c and gistxlog.h of a 10.0-based fork, TBase; the
//	       microvacuum DELETE record was added only to 12, the back branches
//	       logged it inside PAGE_UPDATE)
//	12:    PAGE_UPDATE, DELETE 0x10, PAGE_REUSE 0x20, PAGE_SPLIT,
//	       PAGE_DELETE 0x60; CREATE_INDEX gone (cross-checked with a 2019-era
//	       extracted gist_identify; values as in 13)
//	13-18: as 12 plus ASSIGN_LSN 0x70 (verified 13.16, 15.18, 17.12, 18.6)

var (
	gistNames10 = nameTable(
		entry{0x00, "PAGE_UPDATE"},
		entry{0x30, "PAGE_SPLIT"},
		entry{0x50, "CREATE_INDEX"},
	)
	gistNames12 = nameTable(
		entry{0x00, "PAGE_UPDATE"},
		entry{0x10, "DELETE"},
		entry{0x20, "PAGE_REUSE"},
		entry{0x30, "PAGE_SPLIT"},
		entry{0x60, "PAGE_DELETE"},
	)
	gistNames13 = gistNames12.with(entry{0x70, "ASSIGN_LSN"})
)

var gistManager = Manager{
	ID:   xlog.RmgrGist,
	Name: "Gist",
	Desc: gistDesc,
	Identify: func(v xlog.Version, info uint8) string {
		switch {
		case v >= xlog.V13:
			return gistNames13.masked(info)
		case v == xlog.V12:
			return gistNames12.masked(info)
		default:
			return gistNames10.masked(info)
		}
	},
}
