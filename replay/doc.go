// Package replay rebuilds pages and catalogs as of any recovery target from
// a base backup and the WAL, without a server: what PostgreSQL's recovery
// does, for the relations asked for.
//
// Run reads the WAL once, from the backup's start (backup_label's START WAL
// LOCATION) to the Target (recovery_target_lsn, _xid, _time or _name, with
// recovery_target_inclusive, stopping where recoveryStopsBefore and
// recoveryStopsAfter of xlogrecovery.c stop), and redoes onto the blocks it
// holds every heap and heap2 record and every block image (package heap),
// following file creation and truncation, dropped files, CREATE DATABASE
// (file copy) and DROP DATABASE and the relation mapper's updates. Only the
// blocks the WAL touches are held, in memory up to Config.MemoryBytes and
// in a file of the package's own beyond; the others are read from the
// backup when asked for (their checksums verified when the cluster has data
// checksums). The commit state advances with the same records (package
// xactstate), so that VisibleTuples gives what a standby paused at the
// target sees; Catalog and Resolve read pg_class, pg_namespace,
// pg_attribute, pg_type, pg_enum, pg_range, pg_index, pg_database and pg_tablespace
// as of the target (package catalog), so a name resolves as it did then,
// a table dropped since included.
//
// Errors wrap the sentinels ErrBeforeConsistent, ErrNotReached,
// ErrWALMissing, ErrOtherSystem, ErrNoRelation, ErrAmbiguous, ErrRedoFailed
// and ErrChecksum. The proof (recovery_test.go): the same backup and WAL
// restored by real PostgreSQL 13, 15, 17 and 18 to eight targets each,
// paused there; every page equal after heap_mask, every visible tuple and
// catalog row the same.
package replay
