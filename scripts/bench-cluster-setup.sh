# scripts/bench-cluster-setup.sh: sourced (not run) by bench-page.sh,
# bench-table.sh and bench-rows.sh. A private PostgreSQL 15 cluster for a
# benchmark, archiving every segment, and what the scripts time against:
# a real restore to a restore point followed by COPY.
#
# Set W (the work directory, emptied) and PORT before sourcing. Gives:
#   BIN, HERE (the repository), as CMD (a shell line as postgres),
#   P (psql on the cluster), bench_start [CONF] (walscope built into $W,
#   initdb, CONF appended to the settings below, started), bench_pgbench_small
#   SCALE SMALL_ROWS SECS (pgbench -i, a table `small`, pg_basebackup -Fp into
#   $W/base, pgbench and updates of small for SECS, restore point `bench`,
#   more WAL), bench_stop, drop_caches, seconds CMD... (wall time of a
#   command, its output discarded), bench_restore_copy TARGET TABLE OUT (a
#   real restore of $W/base to restore point TARGET, paused there with
#   hot_standby, then `COPY TABLE TO STDOUT` into OUT; prints the seconds
#   from the copy of the backup to the end of COPY). Run as root.
set -euo pipefail
: "${W:?set W before sourcing bench-cluster-setup.sh}" "${PORT:?set PORT}"
BIN=/usr/lib/postgresql/15/bin
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
as() { su postgres -s /bin/bash -c "$*"; }
P="$BIN/psql -X -q -At -h $W/sock -p $PORT -U postgres -d postgres -v ON_ERROR_STOP=1"
trap 'for d in "$W/data" "$W/restore"; do [ -f "$d/postmaster.pid" ] && as "$BIN/pg_ctl -D $d -m immediate -w stop" >/dev/null 2>&1; done; true' EXIT

bench_start() {
  rm -rf "$W"; mkdir -p "$W/arch" "$W/sock"; chown -R postgres "$W"
  (cd "$HERE" && go build -o "$W/walscope" ./cmd/walscope)
  as "$BIN/initdb -D $W/data -A trust -U postgres" >/dev/null
  cat >> "$W/data/postgresql.conf" <<C
port = $PORT
unix_socket_directories = '$W/sock'
listen_addresses = ''
wal_level = replica
archive_mode = on
archive_command = 'cp %p $W/arch/%f'
max_wal_size = 4GB
shared_buffers = 256MB
${1:-}
C
  as "$BIN/pg_ctl -D $W/data -l $W/log -w start" >/dev/null
}

bench_stop() {
  as "$P -c \"select pg_switch_wal()\"" >/dev/null
  sleep 2
  as "$BIN/pg_ctl -D $W/data -w stop" >/dev/null
}

# bench_pgbench_small SCALE SMALL_ROWS SECS: pgbench's tables at SCALE and a
# table small (id int primary key, v text) of SMALL_ROWS rows, a plain base
# backup, then SECS seconds of pgbench with updates of a fiftieth of small
# every two seconds, the restore point `bench`, and WAL after it.
bench_pgbench_small() {
  local scale=$1 rows=$2 secs=$3 i
  as "$BIN/pgbench -i -q -s $scale -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
  as "$P -c \"create table small (id int primary key, v text); insert into small select g, md5(g::text) from generate_series(1, $rows) g\""
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -X none -c fast"
  as "$BIN/pgbench -n -c 2 -T $secs -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1 &
  for i in $(seq 1 $((secs / 2))); do as "$P -c \"update small set v = md5(v) where id % 50 = $((i % 50))\""; sleep 2; done
  wait
  as "$P -c \"select pg_create_restore_point('bench')\"" >/dev/null
  as "$P -c \"update small set v = 'after' where id < 1000\"" >/dev/null
  as "$P -c \"select 'table small: ' || pg_size_pretty(pg_total_relation_size('small')) || ' of a ' || pg_size_pretty(pg_database_size('postgres')) || ' database (' || round(100.0 * pg_total_relation_size('small') / pg_database_size('postgres'), 2) || '%)'\""
  bench_stop
}

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

seconds() {
  local s e
  s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
  echo "$e - $s" | bc
}

bench_restore_copy() {
  local target=$1 table=$2 out=$3 t0 t1 rp
  t0=$(date +%s.%N)
  rm -rf "$W/restore"; cp -a "$W/base" "$W/restore"
  cat >> "$W/restore/postgresql.conf" <<C
port = $((PORT + 1))
restore_command = 'cp $W/arch/%f %p'
recovery_target_name = '$target'
recovery_target_action = 'pause'
hot_standby = on
archive_mode = off
C
  touch "$W/restore/recovery.signal"; chown -R postgres "$W/restore"
  as "$BIN/pg_ctl -D $W/restore -l $W/log-restore -w -t 3600 start" >/dev/null
  rp="$BIN/psql -X -q -At -h $W/sock -p $((PORT + 1)) -U postgres -d postgres"
  until [ "$(as "$rp -c 'select pg_is_wal_replay_paused()'" 2>/dev/null)" = t ]; do sleep 0.1; done
  as "$rp -c 'copy $table to stdout'" > "$out"
  t1=$(date +%s.%N)
  as "$BIN/pg_ctl -D $W/restore -m immediate -w stop" >/dev/null
  echo "$t1 - $t0" | bc
}

size() { du -sh "$1" | cut -f1; }
