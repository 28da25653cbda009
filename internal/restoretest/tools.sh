#!/bin/bash
# internal/restoretest/tools.sh WORK
#
# A backup tool's repository for restoretest: a real PostgreSQL 15 server on
# port $PORT (1 MB segments), archive_command pushing every segment into a
# pgBackRest repository (WORK/pgbr, stanza "demo", config WORK/pgbackrest.conf)
# and, with BARMAN=1, into a Barman server's incoming directory too (WORK/barman,
# server "pg", config WORK/barman.conf, backup_method = postgres). Then:
#
#   1. table t_tool with N rows, public.other;
#   2. a full pgBackRest backup (and a Barman backup); rows committed after it
#      across segment switches;
#   3. DROP TABLE t_tool in a transaction of its own, more work, pg_switch_wal(),
#      everything archived (barman archive-wal), the server stopped.
#
# WORK/facts.env: rows_tool (the rows of t_tool committed before the drop),
# xid_tool, lsn_before_tool, lsn_after_tool. As root everything runs as the
# postgres user (pgBackRest and Barman refuse other owners of their files).
W=${1:?usage: tools.sh WORK}
PORT=${PORT:-55491}
N=${ROWS:-1000}
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
BARMAN=${BARMAN:-0}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/toolconf.sh"

pgbr_conf 2
ARCHIVE="$PGBR archive-push %p"
if [ "$BARMAN" = 1 ]; then
  barman_conf
  barman_server pg restoretest
  ARCHIVE="$ARCHIVE && cp %p $W/barman/pg/incoming/%f"
fi
[ "$(id -u)" = 0 ] && chown -R postgres "$W"
cleanup() {
  local rc=$?
  [ -f "$PGD/postmaster.pid" ] && asp "$BIN/pg_ctl -D $PGD -m immediate -w stop" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
: > "$F"
log "initdb"
pg_initdb "$ARCHIVE" "max_wal_senders = 4"

sql <<SQL
create table other (id bigserial primary key, at timestamptz not null default now());
create table t_tool (id int primary key, v text not null);
insert into t_tool select g, 'initial ' || g from generate_series(1, $N) g;
SQL

log "pgbackrest stanza-create, backup"
asp "$PGBR stanza-create"
asp "$PGBR check"
asp "$PGBR backup --type=full"
fact pgbr_label "$(asp "$PGBR info --output=json" | sed -n 's/.*"label":"\([^"]*\)".*/\1/p' | tail -1)"
if [ "$BARMAN" = 1 ]; then
  log "barman backup"
  asp "$BM archive-wal pg" >/dev/null
  asp "$BM switch-wal --force pg" >/dev/null 2>&1 || val "select pg_switch_wal()" >/dev/null
  wait_archived
  asp "$BM archive-wal pg" >/dev/null
  asp "$BM backup --wait-timeout 60 pg" > "$W/barman-backup.log" 2>&1 || asp "$BM backup pg" >> "$W/barman-backup.log" 2>&1
fi

log "work after the backups"
sql <<SQL
insert into t_tool select g, 'after backup ' || g from generate_series($N + 1, $N + 300) g;
select pg_switch_wal() \g /dev/null
insert into other select from generate_series(1, 100);
insert into t_tool select g, 'later ' || g from generate_series($N + 301, $N + 350) g;
select pg_switch_wal() \g /dev/null
insert into t_tool select g, 'just before ' || g from generate_series($N + 351, $N + 357) g;
select count(*) as rows from t_tool \gset
select pg_current_wal_insert_lsn() as lsn_before \gset
begin;
drop table t_tool;
select pg_current_xact_id_if_assigned() as xid \gset
commit;
select pg_current_wal_insert_lsn() as lsn_after \gset
\o $W/fact.tmp
\qecho rows_tool=:rows
\qecho xid_tool=:xid
\qecho lsn_before_tool=:lsn_before
\qecho lsn_after_tool=:lsn_after
\o
insert into other select from generate_series(1, 50);
checkpoint;
select pg_switch_wal() \g /dev/null
SQL
cat "$W/fact.tmp" >> "$F"
wait_archived
asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
wait_archived
if [ "$BARMAN" = 1 ]; then
  asp "$BM archive-wal pg" >/dev/null
  fact barman_id "$(ls "$W/barman/pg/base" | tail -1)"
fi
log "done"
