#!/usr/bin/env bash
# bench-pgwaldump.sh [RUNS] — walscope against pg_waldump on the same WAL.
#
# Generates (once; kept in $BENCH_DIR, default /tmp/walscope-bench) a pgbench
# archive of at least 700 MB with Debian's postgresql-15: 16 MB segments,
# wal_level replica, pgbench -i -s 50 then a timed pgbench run. Then times, on
# the same files, RUNS alternating runs of each pair (default 5) and prints the
# median times and ratios:
#   pg_waldump --stats=record   vs  walscope stats --by record
#   pg_waldump (to /dev/null)   vs  walscope dump  (to /dev/null)
#   pg_waldump -q               vs  walscope verify
# Run as root (the server runs as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench}
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
if [ ! -x "$bin/pg_waldump" ]; then
  apt-get update -qq && apt-get install -y -qq postgresql-15 >/dev/null
  bin=/usr/lib/postgresql/15/bin
fi
command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
mkdir -p "$B"
if [ ! -f "$B/archive.done" ]; then
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  su postgres -s /bin/bash -c "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  cat >> "$B/data/postgresql.conf" <<CONF
port = 55499
listen_addresses = ''
unix_socket_directories = '$B/sock'
wal_level = replica
archive_mode = on
archive_command = 'cp %p $B/archive/%f'
max_wal_size = 4GB
checkpoint_timeout = 60s
CONF
  trap 'su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null 2>&1 || true' EXIT
  su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  su postgres -s /bin/bash -c "$bin/pgbench -h $B/sock -p 55499 -U postgres -i -s 50 postgres" >/dev/null 2>&1
  su postgres -s /bin/bash -c "$bin/pgbench -h $B/sock -p 55499 -U postgres -c 2 -j 2 -T 60 postgres" >/dev/null 2>&1
  su postgres -s /bin/bash -c "$bin/psql -h $B/sock -p 55499 -U postgres -qc 'select pg_switch_wal()'" >/dev/null
  sleep 5
  su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  touch "$B/archive.done"
fi
cd "$B"
segs=$(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
mb=$(du -sm archive | cut -f1)
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws="$B/walscope"; pg="$bin/pg_waldump"
echo "archive: $(echo "$segs" | wc -l) segments, $mb MB, $first .. $last; $(nproc) cores; $runs runs each"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
pair() {
  local name=$1 pgcmd=$2 wscmd=$3 p=() w=()
  for i in $(seq "$runs"); do
    p+=("$(t bash -c "$pgcmd")"); w+=("$(t bash -c "$wscmd")")
  done
  local pm wm; pm=$(printf '%s\n' "${p[@]}" | median); wm=$(printf '%s\n' "${w[@]}" | median)
  printf '%-8s pg_waldump %7.2fs  walscope %7.2fs  ratio %5.2fx\n' "$name" "$pm" "$wm" "$(echo "$pm / $wm" | bc -l)"
}
pair stats  "$pg --stats=record -p archive $first $last" "$ws stats --by record -p archive $first $last"
pair dump   "$pg -p archive $first $last"                "$ws dump -p archive $first $last"
pair verify "$pg -q -p archive $first $last"             "$ws verify -p archive $first $last"
/usr/bin/time -f "walscope stats peak RSS: %M KB" "$ws" stats -p archive "$first" "$last" >/dev/null
