#!/usr/bin/env bash
# bench-short.sh [RUNS] — walscope against pg_waldump on switched, mostly
# empty segments (issue 16, goal 2).
#
# Makes, once (kept in $BENCH_DIR, default /tmp/walscope-bench-short), an
# archive with Debian's postgresql-15: 16 MB segments, wal_level replica,
# archive_command cp, then SWITCHES (default 200) rounds of a little work (one
# insert) and `select pg_switch_wal()`, so that most segments hold a few KB of
# WAL followed by zeroes. Then times, on the same files, RUNS alternating runs
# of each pair (default 7) and prints the median times and ratios:
#   pg_waldump --stats=record  vs  walscope stats --by record
#   pg_waldump -q              vs  walscope verify
# and both again with walscope -j 1 (one reader: no span set-up per 64 MB).
# WALSCOPE=path times another walscope binary (a build from before a change).
# Run as root (the server runs as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench-short}
switches=${SWITCHES:-200}
port=55498
. "$root/scripts/pgbench-archive.sh"
bench_tools
mkdir -p "$B"
if [ ! -f "$B/archive.done" ]; then
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  as="su postgres -s /bin/bash -c"
  $as "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  cat >> "$B/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$B/sock'
wal_level = replica
archive_mode = on
archive_command = 'cp %p $B/archive/%f'
CONF
  trap '$as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null 2>&1 || true' EXIT
  $as "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc 'create table t (i int, s text)'"
  for i in $(seq "$switches"); do
    echo "insert into t select g, md5(g::text) from generate_series(1, 10) g; select pg_switch_wal();"
  done | $as "$bin/psql -h $B/sock -p $port -U postgres -q" >/dev/null
  sleep 5
  $as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  touch "$B/archive.done"
fi
cd "$B"
segs=$(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws=${WALSCOPE:-$B/walscope}; pg="$bin/pg_waldump"
echo "archive: $(echo "$segs" | wc -l) segments, $(du -sm archive | cut -f1) MB stored, $first .. $last; $(nproc) cores; $runs runs each"
cat archive/* >/dev/null
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
pair() {
  local name=$1 pgcmd=$2 wscmd=$3 p=() w=()
  for i in $(seq "$runs"); do
    p+=("$(t bash -c "$pgcmd")"); w+=("$(t bash -c "$wscmd")")
  done
  local pm wm; pm=$(printf '%s\n' "${p[@]}" | median); wm=$(printf '%s\n' "${w[@]}" | median)
  printf '%-10s pg_waldump %7.3fs  walscope %7.3fs  ratio %5.2fx\n' "$name" "$pm" "$wm" "$(echo "$pm / $wm" | bc -l)"
}
pair stats  "$pg --stats=record -p archive $first $last" "$ws stats --by record -p archive $first $last"
pair verify "$pg -q -p archive $first $last"             "$ws verify -p archive $first $last"
pair "stats -j1"  "$pg --stats=record -p archive $first $last" "$ws stats -j 1 --by record -p archive $first $last"
pair "verify -j1" "$pg -q -p archive $first $last"             "$ws verify -j 1 -p archive $first $last"
