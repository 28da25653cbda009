#!/bin/bash
# backup/testdata/scenario.sh WORK
#
# Real backups of one real PostgreSQL 15 cluster, in every layout package
# backup reads, each with the real tool's own restore or extraction beside it
# as the oracle:
#
#   - a cluster (checksums on, 1 MB WAL segments) with a tablespace ts1, a
#     database app, tables with TOAST, an unlogged table (init fork), VACUUM
#     (fsm, vm);
#   - plain/ (pg_basebackup -Fp, ts1 mapped to plain-ts1/);
#   - tar-KIND/ for KIND in none, client-gzip, client-lz4, client-zstd,
#     server-gzip, server-lz4, server-zstd (pg_basebackup -Ft), each
#     extracted with tar into tar-KIND.x/ (base.tar into it, OID.tar into
#     pg_tblspc/OID/ as a restore places it);
#   - a pgBackRest repository pgbr/ (stanza demo): a full backup (gz), a diff
#     (lz4), an incr (zst, bundled), an incr (bz2), an incr (none), work
#     between them; each restored by pgbackrest restore into pgbr-restore-N/;
#     then a full backup with block incremental (--repo1-block --beta);
#   - a Barman server barman/pg (backup_method = postgres), its backup
#     recovered by barman recover into barman-restore/; a second one,
#     barman/pgz, with backup_compression = gzip, into barman-restore-gz/.
#
# WORK/facts.env: pgbr_labels (space-separated, oldest first),
# pgbr_block_label, barman_id,
# tblspc_oid. As root the servers and tools run as the postgres user.
W=${1:?usage: scenario.sh WORK}
PORT=${PORT:-55611}
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
set -euo pipefail
unset TZ
export LC_ALL=C
PGD=$W/data F=$W/facts.env
mkdir -p "$W/sock" "$W/ts1"
if [ "$(id -u)" = 0 ]; then
  asp() { su postgres -s /bin/bash -c "$1"; }
  chown -R postgres "$W"
else
  asp() { bash -c "$1"; }
fi
PSQL="$BIN/psql -h $W/sock -p $PORT -U postgres -X -qAt -v ON_ERROR_STOP=1"
sql() { asp "$PSQL -d ${1:-postgres}"; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
: > "$F"
# the pgBackRest and Barman configuration restoretest's tools.sh uses too
. "$(dirname "${BASH_SOURCE[0]}")/../../internal/restoretest/toolconf.sh"
pgbr_conf 10
barman_conf
barman_server pg "backup package test"
barman_server pgz "backup package test, compressed" "backup_compression = gzip"
[ "$(id -u)" = 0 ] && chown -R postgres "$W"
cleanup() {
  local rc=$?
  [ -f "$PGD/postmaster.pid" ] && asp "$BIN/pg_ctl -D $PGD -m immediate -w stop" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

log initdb
asp "$BIN/initdb -D $PGD -A trust -U postgres -k --wal-segsize=1 >$W/initdb.log 2>&1"
cat >> "$PGD/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$W/sock'
wal_level = replica
max_wal_senders = 10
archive_mode = on
archive_command = '$PGBR archive-push %p && cp %p $W/barman/pg/incoming/%f && cp %p $W/barman/pgz/incoming/%f'
autovacuum = off
fsync = off
checkpoint_timeout = 1h
CONF
asp "$BIN/pg_ctl -D $PGD -l $W/server.log -w start" >/dev/null

work() { # work N: changes between backups (N distinct each time)
  sql <<SQL
insert into t_big select g, repeat('row ' || g, 3) from generate_series(100000 + $1 * 1000 + 1, 100000 + $1 * 1000 + 500) g;
update t_big set v = v || ' upd$1' where id % 7 = $1 % 7;
insert into t_ts select g, md5(g::text) from generate_series(100000 + $1 * 1000 + 1, 100000 + $1 * 1000 + 300) g;
delete from t_ts where id % 11 = $1 % 11;
SQL
  sql app <<SQL
insert into t_app select g, repeat('x', 3000) || g from generate_series(1000 + $1 * 100 + 1, 1000 + $1 * 100 + 20) g;
SQL
}

sql <<SQL
create tablespace ts1 location '$W/ts1';
create database app;
create table t_big (id int primary key, v text);
insert into t_big select g, repeat('row ' || g, 3) from generate_series(1, 20000) g;
create table t_ts (id int primary key, v text) tablespace ts1;
insert into t_ts select g, md5(g::text) from generate_series(1, 5000) g;
create table t_toast (id int, doc text);
alter table t_toast alter doc set storage external;
insert into t_toast select g, repeat(md5(g::text), 200) from generate_series(1, 200) g;
create unlogged table t_unlogged (id int);
insert into t_unlogged select generate_series(1, 1000);
vacuum t_big, t_ts, t_toast;
SQL
sql app <<SQL
create table t_app (id int primary key, v text) tablespace ts1;
insert into t_app select g, repeat('x', 3000) || g from generate_series(1, 50) g;
create table t_app2 (id int);
insert into t_app2 select generate_series(1, 3000);
vacuum t_app, t_app2;
SQL
echo "tblspc_oid=$(sql <<<"select oid from pg_tablespace where spcname = 'ts1'")" >> "$F"

log "pg_basebackup -Fp"
asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/plain -Fp -T $W/ts1=$W/plain-ts1 -c fast"
n=10
for kind in none client-gzip client-lz4 client-zstd server-gzip server-lz4 server-zstd; do
  log "pg_basebackup -Ft $kind"
  n=$((n + 1))
  work $n
  asp "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/tar-$kind -Ft -c fast --compress=$kind"
  # the oracle: the tars extracted by tar
  x=$W/tar-$kind.x
  mkdir -p "$x"
  untar() { # untar TAR DIR: with the compressor its suffix names
    case "$1" in
      *.lz4) lz4 -dc "$1" | tar -xf - -C "$2" ;;
      *.zst) zstd -dc "$1" | tar -xf - -C "$2" ;;
      *) tar -xf "$1" -C "$2" ;;
    esac
  }
  untar "$W/tar-$kind/$(cd "$W/tar-$kind" && ls base.tar*)" "$x"
  for t in $(cd "$W/tar-$kind" && ls | grep -E '^[0-9]+\.tar'); do
    oid=${t%%.*}
    rm -f "$x/pg_tblspc/$oid"
    mkdir -p "$x/pg_tblspc/$oid"
    untar "$W/tar-$kind/$t" "$x/pg_tblspc/$oid"
  done
done

log "pgbackrest"
asp "$PGBR stanza-create"
asp "$PGBR check"
# a diff or incr backup keeps its full backup's compression: one set per type
asp "$PGBR backup --type=full --compress-type=gz"
work 2
asp "$PGBR backup --type=diff"
work 3
asp "$PGBR backup --type=incr"
work 4
asp "$PGBR backup --type=full --compress-type=lz4 --repo1-bundle"
work 5
asp "$PGBR backup --type=incr --repo1-bundle"
work 6
asp "$PGBR backup --type=full --compress-type=zst"
work 7
asp "$PGBR backup --type=incr"
work 8
asp "$PGBR backup --type=full --compress-type=bz2"
work 9
asp "$PGBR backup --type=full --compress-type=none"
work 10
asp "$PGBR backup --type=incr"
labels=$(ls "$W/pgbr/backup/demo" | grep -E '^[0-9]{8}-[0-9]{6}F' | sort)
[ "$(echo $labels | wc -w)" = 10 ] || { echo "pgBackRest made $(echo $labels | wc -w) backups, not 10" >&2; exit 1; }
echo "pgbr_labels=$(echo $labels)" >> "$F"
tsoid=$(sql <<<"select oid from pg_tablespace where spcname = 'ts1'")
i=0
for l in $labels; do
  i=$((i + 1))
  asp "$PGBR restore --set=$l --pg1-path=$W/pgbr-restore-$i --tablespace-map=$tsoid=$W/pgbr-restore-$i-ts1"
done
# pgBackRest 2.45's block incremental (BETA): the package says it does not
# read it
asp "$PGBR backup --type=full --repo1-bundle --repo1-block --beta"
echo "pgbr_block_label=$(ls "$W/pgbr/backup/demo" | grep -E '^[0-9]{8}-[0-9]{6}F$' | sort | tail -1)" >> "$F"

log "barman"
asp "$BM archive-wal pg" >/dev/null
asp "$BM switch-wal --force pg" >/dev/null 2>&1 || true
sleep 1
asp "$BM archive-wal pg" >/dev/null
asp "$BM backup --wait-timeout 60 pg" > "$W/barman-backup.log" 2>&1 || asp "$BM backup pg" >> "$W/barman-backup.log" 2>&1
bid=$(ls "$W/barman/pg/base" | tail -1)
echo "barman_id=$bid" >> "$F"
asp "$BM recover --tablespace ts1:$W/barman-restore-ts1 pg $bid $W/barman-restore" > "$W/barman-recover.log" 2>&1
# a compressed Barman backup (backup_compression = gzip: pg_basebackup -Ft -z
# into data/)
asp "$BM switch-wal --force pgz" >/dev/null 2>&1 || true
sleep 1
asp "$BM archive-wal pgz" >/dev/null
asp "$BM backup --wait-timeout 60 pgz" > "$W/barman-backup-gz.log" 2>&1 || asp "$BM backup pgz" >> "$W/barman-backup-gz.log" 2>&1
bidz=$(ls "$W/barman/pgz/base" | tail -1)
echo "barman_gz_id=$bidz" >> "$F"
mkdir -p "$W/barman-staging"; [ "$(id -u)" = 0 ] && chown postgres "$W/barman-staging"
asp "$BM recover --recovery-staging-path $W/barman-staging --tablespace ts1:$W/barman-restore-gz-ts1 pgz $bidz $W/barman-restore-gz" > "$W/barman-recover-gz.log" 2>&1

asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
asp "$BIN/pg_controldata $W/plain" > "$W/plain.controldata"
log done
