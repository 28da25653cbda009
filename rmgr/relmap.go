package rmgr

import "github.com/walscope/walscope/xlog"

// RelMap resource manager (id 7), mirroring relmap_identify in
// src/backend/access/rmgrdesc/relmapdesc.c; info values from
// src/include/utils/relmapper.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6).

var relmapNames = nameTable(entry{0x00, "UPDATE"})

var relmapManager = Manager{
	ID:       xlog.RmgrRelMap,
	Name:     "RelMap",
	Desc:     relmapDesc,
	Identify: func(_ xlog.Version, info uint8) string { return relmapNames.masked(info) },
}
