package rmgr

import "github.com/walscope/walscope/xlog"

// Storage resource manager (id 2), mirroring smgr_identify in
// src/backend/access/rmgrdesc/smgrdesc.c; info values from
// src/include/catalog/storage_xlog.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6). 0x00 is unused.

const (
	smgrCreate   = 0x10
	smgrTruncate = 0x20
)

var smgrNames = nameTable(
	entry{smgrCreate, "CREATE"},
	entry{smgrTruncate, "TRUNCATE"},
)

var smgrManager = Manager{
	ID:       xlog.RmgrStorage,
	Name:     "Storage",
	Identify: func(_ xlog.Version, info uint8) string { return smgrNames.masked(info) },
	Desc:     smgrDesc,
}
