package rmgr

import "github.com/walscope/walscope/xlog"

// Hash resource manager (id 12), mirroring hash_identify in
// src/backend/access/rmgrdesc/hashdesc.c; info values from
// src/include/access/hash_xlog.h. Hash indexes are WAL-logged from 10 on and
// the table has not changed since (verified 13.16, 15.18, 17.12, 18.6).

var hashNames = nameTable(
	entry{0x00, "INIT_META_PAGE"},
	entry{0x10, "INIT_BITMAP_PAGE"},
	entry{0x20, "INSERT"},
	entry{0x30, "ADD_OVFL_PAGE"},
	entry{0x40, "SPLIT_ALLOCATE_PAGE"},
	entry{0x50, "SPLIT_PAGE"},
	entry{0x60, "SPLIT_COMPLETE"},
	entry{0x70, "MOVE_PAGE_CONTENTS"},
	entry{0x80, "SQUEEZE_PAGE"},
	entry{0x90, "DELETE"},
	entry{0xA0, "SPLIT_CLEANUP"},
	entry{0xB0, "UPDATE_META_PAGE"},
	entry{0xC0, "VACUUM_ONE_PAGE"},
)

var hashManager = Manager{
	ID:       xlog.RmgrHash,
	Name:     "Hash",
	Desc:     hashDesc,
	Identify: func(_ xlog.Version, info uint8) string { return hashNames.masked(info) },
}
