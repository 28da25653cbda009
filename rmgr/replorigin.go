package rmgr

import "github.com/walscope/walscope/xlog"

// ReplicationOrigin resource manager (id 19), mirroring replorigin_identify in
// src/backend/access/rmgrdesc/replorigindesc.c; info values from
// src/include/replication/origin.h.
//
// Quirk: like CommitTs, replorigin_identify switches on the whole info byte in
// every version 10 to 18, so any XLR_INFO_MASK bit makes the per-record name
// UNKNOWN (observed with pg_waldump 13.16, 15.18, 17.12, 18.6). Unchanged
// otherwise.

var replOriginNames = nameTable(
	entry{0x00, "SET"},
	entry{0x10, "DROP"},
)

var replOriginManager = Manager{
	ID:       xlog.RmgrReplicationOrigin,
	Name:     "ReplicationOrigin",
	Identify: func(_ xlog.Version, info uint8) string { return replOriginNames.unmasked(info) },
	Desc:     replOriginDesc,
}
