#!/bin/bash
# scripts/bench-page.sh [SCALE] [SECONDS]
#
# walscope page against a real restore, on the same backup and archive, in
# one run (issue 26's speed goal: rebuilding a table that is 1% of the
# cluster at least 10x faster than a real restore to the same target).
# A PostgreSQL 15 cluster: pgbench at scale SCALE (default 50, about 750 MB)
# and a table `small` of about 1% of it; pg_basebackup -Fp; then pgbench and
# updates of `small` for SECONDS (default 60), a restore point, more WAL.
# Real restore: the backup copied to a new data directory (as a restore
# must), restore_command from the archive, recovery_target_name, paused
# there with hot_standby: wall time until `COPY small TO STDOUT` has run.
# walscope: `walscope page --relation small --target-name ... --format raw`
# reading the same backup in place and the same archive.
# Prints both times and the ratio. Run as root (servers run as postgres).
set -euo pipefail
SCALE=${1:-50}; SECS=${2:-60}
BIN=/usr/lib/postgresql/15/bin
command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
W=${WORK:-/tmp/walscope-bench-page}
PORT=55471
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
as() { su postgres -s /bin/bash -c "$*"; }
rm -rf "$W"; mkdir -p "$W/arch" "$W/sock"; chown -R postgres "$W"
trap 'for d in $W/data $W/restore; do [ -f $d/postmaster.pid ] && as "$BIN/pg_ctl -D $d -m immediate -w stop" >/dev/null 2>&1; done; true' EXIT
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
C
as "$BIN/pg_ctl -D $W/data -l $W/log -w start" >/dev/null
P="$BIN/psql -X -q -At -h $W/sock -p $PORT -U postgres -d postgres -v ON_ERROR_STOP=1"
as "$BIN/pgbench -i -q -s $SCALE -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
ROWS=$((SCALE * 1000))
as "$P -c \"create table small (id int primary key, v text); insert into small select g, md5(g::text) from generate_series(1, $ROWS) g\""
as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -X none -c fast"
as "$BIN/pgbench -n -c 2 -T $SECS -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1 &
for i in $(seq 1 $((SECS / 2))); do as "$P -c \"update small set v = md5(v) where id % 50 = $((i % 50))\""; sleep 2; done
wait
as "$P -c \"select pg_create_restore_point('bench')\"" >/dev/null
as "$P -c \"update small set v = 'after' where id < 1000; select pg_switch_wal()\"" >/dev/null
sleep 2
as "$BIN/pg_ctl -D $W/data -w stop" >/dev/null
size() { du -sh "$1" | cut -f1; }
echo "cluster $(size $W/base), small $(as "echo") table rows $ROWS, WAL archived $(size $W/arch) ($(ls $W/arch | wc -l) files)"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true

t0=$(date +%s.%N)
rm -rf "$W/restore"; cp -a "$W/base" "$W/restore"
cat >> "$W/restore/postgresql.conf" <<C
port = $((PORT + 1))
restore_command = 'cp $W/arch/%f %p'
recovery_target_name = 'bench'
recovery_target_action = 'pause'
hot_standby = on
archive_mode = off
C
touch "$W/restore/recovery.signal"; chown -R postgres "$W/restore"
as "$BIN/pg_ctl -D $W/restore -l $W/log-restore -w -t 3600 start" >/dev/null
RP="$BIN/psql -X -q -At -h $W/sock -p $((PORT + 1)) -U postgres -d postgres"
until [ "$(as "$RP -c 'select pg_is_wal_replay_paused()'" 2>/dev/null)" = t ]; do sleep 0.1; done
as "$RP -c 'copy small to stdout'" > "$W/real.copy"
t1=$(date +%s.%N)
as "$BIN/pg_ctl -D $W/restore -m immediate -w stop" >/dev/null
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true

t2=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$W/ws.rss" "$W/walscope" page --backup "$W/base" --relation small --target-name bench --format raw --out "$W/small.pages" "$W/arch"
t3=$(date +%s.%N)
real=$(echo "$t1 - $t0" | bc); ws=$(echo "$t3 - $t2" | bc)
echo "real restore to 'bench' + COPY small: ${real} s"
echo "walscope page --relation small:       ${ws} s (max RSS $(cat $W/ws.rss) kB, $(stat -c %s $W/small.pages) bytes of pages)"
echo "ratio: $(echo "scale=1; $real / $ws" | bc)x"
