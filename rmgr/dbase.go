package rmgr

import "github.com/walscope/walscope/xlog"

// Database resource manager (id 4), mirroring dbase_identify in
// src/backend/access/rmgrdesc/dbasedesc.c; info values from
// src/include/commands/dbcommands_xlog.h.
//
// 10 to 14: 0x00 CREATE, 0x10 DROP (verified 13.16; 14 cross-checked with
// neon's v14 constants). 15 to 18: 0x00 CREATE_FILE_COPY, 0x10 CREATE_WAL_LOG,
// 0x20 DROP (verified 15.18, 17.12, 18.6). The same info value names a
// different record on each side of 15.

var (
	dbaseNames10 = nameTable(
		entry{0x00, "CREATE"},
		entry{0x10, "DROP"},
	)
	dbaseNames15 = nameTable(
		entry{0x00, "CREATE_FILE_COPY"},
		entry{0x10, "CREATE_WAL_LOG"},
		entry{0x20, "DROP"},
	)
)

var dbaseManager = Manager{
	ID:   xlog.RmgrDatabase,
	Name: "Database",
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V15 {
			return dbaseNames15.masked(info)
		}
		return dbaseNames10.masked(info)
	},
	Desc: dbaseDesc,
}
