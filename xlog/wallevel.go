package xlog

// WalLevel is the server setting wal_level, WalLevel in
// src/include/access/xlog.h, as WAL records state it: XLOG PARAMETER_CHANGE
// (xl_parameter_change), and from PostgreSQL 17 checkpoints,
// END_OF_RECOVERY and CHECKPOINT_REDO. The values are PostgreSQL's; a
// corrupt record may hold any other number (Valid is false).
type WalLevel int32

// The levels, and WalLevelUnknown for a level that no record stated.
const (
	WalLevelUnknown WalLevel = -1 // not a PostgreSQL value: the WAL did not say
	WalLevelMinimal WalLevel = 0  // WAL_LEVEL_MINIMAL
	WalLevelReplica WalLevel = 1  // WAL_LEVEL_REPLICA (also "archive" and "hot_standby" before 9.6)
	WalLevelLogical WalLevel = 2  // WAL_LEVEL_LOGICAL
)

// Valid reports whether l is one of PostgreSQL's levels.
func (l WalLevel) Valid() bool { return l >= WalLevelMinimal && l <= WalLevelLogical }

// String returns the name pg_waldump prints for the level
// (get_wal_level_string in src/backend/access/rmgrdesc/xlogdesc.c):
// "minimal", "replica", "logical", or "?" for any other value,
// WalLevelUnknown included.
func (l WalLevel) String() string {
	switch l {
	case WalLevelMinimal:
		return "minimal"
	case WalLevelReplica:
		return "replica"
	case WalLevelLogical:
		return "logical"
	}
	return "?"
}
