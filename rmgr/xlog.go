package rmgr

import "github.com/walscope/walscope/xlog"

// XLOG resource manager (id 0), mirroring xlog_identify in
// src/backend/access/rmgrdesc/xlogdesc.c; info values from
// src/include/catalog/pg_control.h.
//
// Verified: 13.16, 15.18 and 18.6 (identify compiled from source, all 256
// infos); 17.12 (pg_waldump binary). 10 cross-checked with a 10.0-based fork
// (Tencent TBase pg_control.h: nothing upstream at 0xC0); 11, 12, 14 and 16
// not verified from their own source (no copy could be obtained), inferred
// from the neighbouring versions.
//
// OVERWRITE_CONTRECORD (0xD0) was back-patched in autumn 2021 to every branch
// then supported (10 to 14), together with its xlog_identify case; a 10.x to
// 14.x pg_waldump older than that back-patch prints UNKNOWN (d0). This table
// follows the final minor releases. 0xC0 is named by no version 10 to 18
// (pg_control.h of 13 to 18: "0xC0 is used in Postgres 9.5-11", but no 10
// source examined defines it).

const (
	xlogCheckpointShutdown  = 0x00
	xlogCheckpointOnline    = 0x10
	xlogNoop                = 0x20
	xlogNextOID             = 0x30
	xlogSwitch              = 0x40
	xlogBackupEnd           = 0x50
	xlogParameterChange     = 0x60
	xlogRestorePoint        = 0x70
	xlogFPWChange           = 0x80
	xlogEndOfRecovery       = 0x90
	xlogFPIForHint          = 0xA0
	xlogFPI                 = 0xB0
	xlogOverwriteContrecord = 0xD0
	xlogCheckpointRedo      = 0xE0 // 17+
)

var (
	xlogNames10 = nameTable(
		entry{xlogCheckpointShutdown, "CHECKPOINT_SHUTDOWN"},
		entry{xlogCheckpointOnline, "CHECKPOINT_ONLINE"},
		entry{xlogNoop, "NOOP"},
		entry{xlogNextOID, "NEXTOID"},
		entry{xlogSwitch, "SWITCH"},
		entry{xlogBackupEnd, "BACKUP_END"},
		entry{xlogParameterChange, "PARAMETER_CHANGE"},
		entry{xlogRestorePoint, "RESTORE_POINT"},
		entry{xlogFPWChange, "FPW_CHANGE"},
		entry{xlogEndOfRecovery, "END_OF_RECOVERY"},
		entry{xlogFPIForHint, "FPI_FOR_HINT"},
		entry{xlogFPI, "FPI"},
		entry{xlogOverwriteContrecord, "OVERWRITE_CONTRECORD"},
	)
	xlogNames17 = xlogNames10.with(entry{xlogCheckpointRedo, "CHECKPOINT_REDO"})
)

var xlogManager = Manager{
	ID:   xlog.RmgrXLOG,
	Name: "XLOG",
	Desc: xlogDesc,
	Identify: func(v xlog.Version, info uint8) string {
		if v >= xlog.V17 {
			return xlogNames17.masked(info)
		}
		return xlogNames10.masked(info)
	},
}
