#!/bin/bash
# backup/testdata/incremental.sh WORK
#
# A PostgreSQL 17 incremental chain and pg_combinebackup's output, for
# backup/incremental_test.go: a cluster (summarize_wal = on, checksums, 1 MB
# WAL segments, a tablespace ts1), then
#   full/   pg_basebackup -Fp (ts1 mapped to full-ts1/)
#   incr1/  pg_basebackup -Fp --incremental=full/backup_manifest, after
#           inserts, updates, a new table, a dropped one
#   incr2/  pg_basebackup -Fp --incremental=incr1/backup_manifest, after
#           more work and a VACUUM that truncates a table (a
#           truncation_block_length shorter than the file before)
#   incr1t/ pg_basebackup -Ft --compress=client-zstd --incremental of full,
#           just before incr2 (the same work done)
#   combined1/  pg_combinebackup full incr1
#   combined1t/ pg_combinebackup full incr1t (extracted by tar)
#   combined2/  pg_combinebackup full incr1 incr2
# PG17BIN names the bin directory (scripts/pg17-debian.sh installs one);
# psql is PostgreSQL 15's (PSQL15). As root the servers run as postgres.
W=${1:?usage: incremental.sh WORK}
PORT=${PORT:-55622}
BIN=${PG17BIN:?PG17BIN not set}
PSQLBIN=${PSQL15:-/usr/lib/postgresql/15/bin/psql}
set -euo pipefail
unset TZ
export LC_ALL=C
PGD=$W/data
mkdir -p "$W/sock" "$W/ts1"
if [ "$(id -u)" = 0 ]; then
  asp() { su postgres -s /bin/bash -c "$1"; }
  chown -R postgres "$W"
else
  asp() { bash -c "$1"; }
fi
sql() { asp "$PSQLBIN -h $W/sock -p $PORT -U postgres -d postgres -X -qAt -v ON_ERROR_STOP=1"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
cleanup() {
  local rc=$?
  [ -f "$PGD/postmaster.pid" ] && asp "$BIN/pg_ctl -D $PGD -m immediate -w stop" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT
"$BIN/postgres" --version | grep -q 'PostgreSQL) 17\.' || { echo "$0: $BIN is not PostgreSQL 17" >&2; exit 1; }

log initdb
asp "$BIN/initdb -D $PGD -A trust -U postgres -k --wal-segsize=1 >$W/initdb.log 2>&1"
cat >> "$PGD/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$W/sock'
wal_level = replica
summarize_wal = on
max_wal_senders = 4
autovacuum = off
fsync = off
checkpoint_timeout = 1h
CONF
asp "$BIN/pg_ctl -D $PGD -l $W/server.log -w start" >/dev/null
sql <<SQL
create tablespace ts1 location '$W/ts1';
create table t_big (id int primary key, v text);
insert into t_big select g, repeat('row ' || g, 3) from generate_series(1, 30000) g;
create table t_ts (id int primary key, v text) tablespace ts1;
insert into t_ts select g, md5(g::text) from generate_series(1, 5000) g;
create table t_gone (id int);
insert into t_gone select generate_series(1, 1000);
create table t_shrink (id int, pad text);
insert into t_shrink select g, repeat('p', 200) from generate_series(1, 20000) g;
vacuum t_big, t_ts, t_shrink;
SQL
log "full"
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/full -Fp -c fast -T $W/ts1=$W/full-ts1"
sql <<SQL
update t_big set v = v || ' one' where id % 50 = 0;
insert into t_big select g, 'new ' || g from generate_series(30001, 31000) g;
insert into t_ts select g, md5(g::text) from generate_series(5001, 5500) g;
create table t_new (id int);
insert into t_new select generate_series(1, 500);
drop table t_gone;
SQL
log "incr1"
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/incr1 -Fp -c fast -T $W/ts1=$W/incr1-ts1 --incremental=$W/full/backup_manifest"
sql <<SQL
update t_big set v = v || ' two' where id % 70 = 0;
delete from t_ts where id % 3 = 0;
delete from t_shrink where id > 5000;
vacuum t_shrink, t_ts;
insert into t_new select generate_series(501, 700);
SQL
log "incr1t"
# a tar incremental backup of the same parent (pg_combinebackup reads it
# extracted by tar into incr1t.x/)
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/incr1t -Ft -c fast --compress=client-zstd --incremental=$W/full/backup_manifest"
log "incr2"
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/incr2 -Fp -c fast -T $W/ts1=$W/incr2-ts1 --incremental=$W/incr1/backup_manifest"
asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
mkdir -p "$W/incr1t.x" "$W/incr1t-ts1"
zstd -dc "$W/incr1t/base.tar.zst" | tar -xf - -C "$W/incr1t.x"
for t in $(cd "$W/incr1t" && ls | grep -E '^[0-9]+\.tar'); do
  zstd -dc "$W/incr1t/$t" | tar -xf - -C "$W/incr1t-ts1"
  oid=${t%%.*}
  rm -f "$W/incr1t.x/pg_tblspc/$oid"
  ln -s "$W/incr1t-ts1" "$W/incr1t.x/pg_tblspc/$oid"
  rm -f "$W/incr1t.x/tablespace_map"
done
cp "$W/incr1t/backup_manifest" "$W/incr1t.x/"
[ "$(id -u)" = 0 ] && chown -R postgres "$W/incr1t.x" "$W/incr1t-ts1"
log "pg_combinebackup"
asp "$BIN/pg_combinebackup -o $W/combined1 -T $W/incr1-ts1=$W/combined1-ts1 $W/full $W/incr1"
asp "$BIN/pg_combinebackup -o $W/combined1t -T $W/incr1t-ts1=$W/combined1t-ts1 $W/full $W/incr1t.x"
asp "$BIN/pg_combinebackup -o $W/combined2 -T $W/incr2-ts1=$W/combined2-ts1 $W/full $W/incr1 $W/incr2"
echo "incremental_files_1=$(find $W/incr1 $W/incr1-ts1 -name 'INCREMENTAL.*' | wc -l)" > "$W/facts.env"
echo "incremental_files_2=$(find $W/incr2 $W/incr2-ts1 -name 'INCREMENTAL.*' | wc -l)" >> "$W/facts.env"
log done
