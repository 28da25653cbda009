package rmgr

import "github.com/walscope/walscope/xlog"

// Standby resource manager (id 8), mirroring standby_identify in
// src/backend/access/rmgrdesc/standbydesc.c; info values from
// src/include/storage/standbydefs.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6; 10 cross-checked with a 10.0-based fork).

var standbyNames = nameTable(
	entry{0x00, "LOCK"},
	entry{0x10, "RUNNING_XACTS"},
	entry{0x20, "INVALIDATIONS"},
)

var standbyManager = Manager{
	ID:       xlog.RmgrStandby,
	Name:     "Standby",
	Desc:     standbyDesc,
	Identify: func(_ xlog.Version, info uint8) string { return standbyNames.masked(info) },
}
