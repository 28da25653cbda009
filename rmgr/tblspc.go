package rmgr

import "github.com/walscope/walscope/xlog"

// Tablespace resource manager (id 5), mirroring tblspc_identify in
// src/backend/access/rmgrdesc/tblspcdesc.c; info values from
// src/include/commands/tablespace.h. Unchanged from 10 to 18 (verified 13.16,
// 15.18, 17.12, 18.6).

var tblspcNames = nameTable(
	entry{0x00, "CREATE"},
	entry{0x10, "DROP"},
)

var tblspcManager = Manager{
	ID:       xlog.RmgrTablespace,
	Name:     "Tablespace",
	Identify: func(_ xlog.Version, info uint8) string { return tblspcNames.masked(info) },
	Desc:     tblspcDesc,
}
