// Package xactstate is the commit state of every transaction as of a
// recovery target: the status (committed, aborted, prepared, in progress)
// of any transaction id, commit LSNs and times, subtransaction parents and
// multixact members, from a base backup's pg_xact, pg_subtrans,
// pg_multixact and pg_twophase advanced by the WAL's records from the
// backup's start to the target, as PostgreSQL's recovery leaves them; and
// the tuple visibility a server recovered to the target and paused there
// (hot standby) applies (HeapTupleSatisfiesMVCC).
//
// Use New with the backup's Files, Add every record in WAL order from the
// backup's redo point to the target, then Finish: transactions still running
// at the target count as aborted, as when recovery ends there.
//
// Layouts are those of clog.c, subtrans.c, multixact.c, twophase.c and
// slru.c (src/backend/access/transam), the same in PostgreSQL 10 to 18 for
// what is read here except where a comment names a version: SLRU page
// numbers in CLOG and MultiXact records (int up to 16, int64 from 17), the
// 2PC state header (11 added the origin LSN and time and a new magic, 15 two
// counters) and pg_twophase file names (a full transaction id in 18).
package xactstate
