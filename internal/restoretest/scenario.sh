#!/bin/bash
# internal/restoretest/scenario.sh WORK
#
# Writes the WAL that restoretest restores from, with a real PostgreSQL 15
# server on port $PORT (55431 by default), 1 MB segments, wal_level=replica,
# autovacuum off, archive_command cp into WORK/archive:
#
#   1. tables t_drop, t_trunc, t_del (a primary key each) with N rows, and
#      public.heartbeat for the other session;
#   2. a base backup, WORK/base (pg_basebackup -Fp -X none: the archive must
#      bring everything after it), then committed rows after it on timeline 1
#      across segment switches;
#   3. a timeline switch: the server restarted as a standby on its own archive
#      and promoted (00000002.history, a .partial of timeline 1);
#   4. on timeline 2, with a second session committing into public.heartbeat
#      every 0.1 s the whole time: rows committed into each table just before
#      its incident, then the incidents, each in a transaction of its own with
#      pauses around the statement: DROP TABLE t_drop; TRUNCATE t_trunc (then
#      rows inserted again); DELETE of every row of t_del inside a SAVEPOINT
#      (then rows inserted again);
#   5. more work, pg_switch_wal(), everything archived, the server stopped.
#
# WORK/facts.env gets, per incident (drop, truncate, delete), the rows of its
# table committed before it (rows_NAME) and the server's own account of it:
# xid_NAME (top level), lsn_before_NAME and lsn_after_NAME (around its
# transaction), commit_time_NAME (pg_xact_commit_timestamp); and timeline. As root the server runs as postgres (su);
# otherwise as the calling user. Every server started here is stopped on exit.
W=${1:?usage: scenario.sh WORK}
PORT=${PORT:-55431}
N=${ROWS:-2000}
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
A=$W/archive
mkdir -p "$A"
[ "$(id -u)" = 0 ] && chown -R postgres "$W"

NOISE_PID=
cleanup() {
  local rc=$?
  rm -f "$W/noise.on"
  [ -n "$NOISE_PID" ] && { kill "$NOISE_PID" 2>/dev/null; wait "$NOISE_PID" 2>/dev/null; } || true
  [ -f "$PGD/postmaster.pid" ] && asp "$BIN/pg_ctl -D $PGD -m immediate -w stop" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

: > "$F"
fact rows_initial "$N"
log "initdb"
pg_initdb "test ! -f $A/%f && cp %p $A/%f" "track_commit_timestamp = on"

# 1. the tables
sql <<SQL
create table heartbeat (id bigserial primary key, at timestamptz not null default now());
create table t_drop (id int primary key, v text not null);
create table t_trunc (id int primary key, v text not null);
create table t_del (id int primary key, v text not null);
insert into t_drop select g, 'drop ' || g from generate_series(1, $N) g;
insert into t_trunc select g, 'trunc ' || g from generate_series(1, $N) g;
insert into t_del select g, 'del ' || g from generate_series(1, $N) g;
SQL

# 2. the base backup, then work after it on timeline 1
log "pg_basebackup"
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -Fp -X none -c fast -l restoretest"
fact backup_label "$W/base/backup_label"
sql <<SQL
insert into t_drop select g, 'after backup ' || g from generate_series($N + 1, $N + 300) g;
insert into t_trunc select g, 'after backup ' || g from generate_series($N + 1, $N + 300) g;
select pg_switch_wal() \g /dev/null
insert into t_del select g, 'after backup ' || g from generate_series($N + 1, $N + 300) g;
update t_del set v = v || ' updated' where id % 10 = 0;
select pg_switch_wal() \g /dev/null
insert into heartbeat select from generate_series(1, 100);
SQL

# 3. the timeline switch
log "timeline switch"
val "select pg_switch_wal()" >/dev/null
wait_archived
asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
wait_archived
echo "restore_command = 'cp $A/%f %p'" >> "$PGD/postgresql.conf"
asp "touch $PGD/standby.signal"
asp "$BIN/pg_ctl -D $PGD -l $W/server.log -w start" >/dev/null
asp "$BIN/pg_ctl -D $PGD -w -t 60 promote" >/dev/null
for i in $(seq 1 100); do
  [ "$(val 'select pg_is_in_recovery()')" = f ] && break; sleep 0.1
done
[ "$(val 'select pg_is_in_recovery()')" = f ] || { echo "scenario.sh: promote did not end recovery" >&2; exit 1; }
fact timeline "$(val 'select timeline_id from pg_control_checkpoint()')"
# timeline 2 work before the incidents
sql <<SQL
insert into t_drop select g, 'tl2 ' || g from generate_series($N + 301, $N + 350) g;
insert into t_trunc select g, 'tl2 ' || g from generate_series($N + 301, $N + 350) g;
insert into t_del select g, 'tl2 ' || g from generate_series($N + 301, $N + 350) g;
select pg_switch_wal() \g /dev/null
SQL

# 4. the incidents, with a second session committing around them
cat > "$W/noise.sh" <<NOISE
while [ -e $W/noise.on ]; do
  $PSQL -c "insert into heartbeat default values" || true
  sleep 0.1
done
NOISE
touch "$W/noise.on"; [ "$(id -u)" = 0 ] && chown postgres "$W/noise.sh" "$W/noise.on"
bgsp "$W/noise.sh" & NOISE_PID=$!
sleep 0.5

# incident TABLE NAME BODY: rows committed into TABLE just before, then BODY in
# a transaction of its own (BODY leaves the top-level xid in :xid), the facts
incident() {
  local table=$1 name=$2 body=$3
  log "incident $name"
  sql <<SQL
insert into $table select g, 'just before ' || g from generate_series($N + 351, $N + 357) g;
select pg_sleep(0.3) \g /dev/null
select count(*) as rows from $table \gset
select pg_current_wal_insert_lsn() as lsn_before \gset
begin;
select pg_sleep(0.3) \g /dev/null
$body
select pg_sleep(0.3) \g /dev/null
select pg_current_xact_id_if_assigned() as xid \gset
commit;
select pg_current_wal_insert_lsn() as lsn_after \gset
set timezone = 'UTC';
select pg_xact_commit_timestamp(:'xid'::xid) as ct \gset
\o $W/fact.tmp
\qecho rows_$name=:rows
\qecho xid_$name=:xid
\qecho lsn_before_$name=:lsn_before
\qecho lsn_after_$name=:lsn_after
\qecho commit_time_$name=:ct
\o
select pg_sleep(0.3) \g /dev/null
SQL
  cat "$W/fact.tmp" >> "$F"
}
incident t_drop drop "drop table t_drop;"
incident t_trunc truncate "truncate t_trunc;"
sql <<SQL
insert into t_trunc select g, 'after truncate ' || g from generate_series(1, 20) g;
SQL
incident t_del delete "savepoint s1;
delete from t_del;
release savepoint s1;"
sql <<SQL
insert into t_del select g, 'after delete ' || g from generate_series(1, 10) g;
SQL
rm -f "$W/noise.on"; wait "$NOISE_PID" || true; NOISE_PID=

# 5. more work, everything archived, stop
sql <<SQL
insert into heartbeat select from generate_series(1, 50);
checkpoint;
select pg_switch_wal() \g /dev/null
SQL
wait_archived
asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
wait_archived
fact segments "$(ls "$A" | wc -l)"
log "done: $(ls "$A" | tr '\n' ' ')"
