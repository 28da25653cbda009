package rmgr

import "github.com/walscope/walscope/xlog"

// MultiXact resource manager (id 6), mirroring multixact_identify in
// src/backend/access/rmgrdesc/mxactdesc.c; info values from
// src/include/access/multixact.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6).

var multixactNames = nameTable(
	entry{0x00, "ZERO_OFF_PAGE"},
	entry{0x10, "ZERO_MEM_PAGE"},
	entry{0x20, "CREATE_ID"},
	entry{0x30, "TRUNCATE_ID"},
)

var multixactManager = Manager{
	ID:       xlog.RmgrMultiXact,
	Name:     "MultiXact",
	Identify: func(_ xlog.Version, info uint8) string { return multixactNames.masked(info) },
	Desc:     multixactDesc,
}
