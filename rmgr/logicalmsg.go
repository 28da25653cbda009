package rmgr

import "github.com/walscope/walscope/xlog"

// LogicalMessage resource manager (id 21), mirroring logicalmsg_identify in
// src/backend/access/rmgrdesc/logicalmsgdesc.c; info value from
// src/include/replication/message.h. It masks XLR_INFO_MASK (unlike CommitTs
// and ReplicationOrigin). Unchanged from 10 to 18 (verified 13.16, 15.18,
// 17.12, 18.6).

var logicalmsgNames = nameTable(entry{0x00, "MESSAGE"})

var logicalmsgManager = Manager{
	ID:       xlog.RmgrLogicalMessage,
	Name:     "LogicalMessage",
	Identify: func(_ xlog.Version, info uint8) string { return logicalmsgNames.masked(info) },
	Desc:     logicalmsgDesc,
}
