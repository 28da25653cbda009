package rmgr

import "github.com/walscope/walscope/xlog"

// CLOG resource manager (id 3), mirroring clog_identify in
// src/backend/access/rmgrdesc/clogdesc.c; info values from
// src/include/access/clog.h. Unchanged from 10 to 18 (verified 13.16, 15.18,
// 17.12, 18.6).

const (
	clogZeroPage = 0x00
	clogTruncate = 0x10
)

var clogNames = nameTable(
	entry{clogZeroPage, "ZEROPAGE"},
	entry{clogTruncate, "TRUNCATE"},
)

var clogManager = Manager{
	ID:       xlog.RmgrCLOG,
	Name:     "CLOG",
	Identify: func(_ xlog.Version, info uint8) string { return clogNames.masked(info) },
	Desc:     clogDesc,
}
