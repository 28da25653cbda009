#!/usr/bin/env bash
# bench-export.sh [RUNS] — records per second of `walscope export` and its
# peak memory, on WAL dense in records.
#
# Generates (once; kept in $BENCH_DIR, default /tmp/walscope-dense) a pgbench
# archive with Debian's postgresql-15: 16 MB segments, wal_level replica,
# wal_compression lz4, pgbench -i -s 10, a checkpoint, then 90 s of the
# TPC-B-like pgbench script on 4 clients: about 1.1 million records in 225 MB,
# mostly small heap, index and commit records (the WAL of an OLTP server
# between checkpoints, where records are short and many). Then exports it RUNS
# times (default 5) into Parquet, --tables records and all tables, and prints
# the median wall time, records per second and peak RSS. Run as root (the
# server runs as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-dense}
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
if [ ! -x "$bin/pgbench" ]; then
  apt-get update -qq && apt-get install -y -qq postgresql-15 >/dev/null
  bin=/usr/lib/postgresql/15/bin
fi
command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
mkdir -p "$B"
if [ ! -f "$B/archive.done" ]; then
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  su postgres -s /bin/bash -c "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  cat >> "$B/data/postgresql.conf" <<CONF
port = 55498
listen_addresses = ''
unix_socket_directories = '$B/sock'
wal_level = replica
archive_mode = on
archive_command = 'cp %p $B/archive/%f'
max_wal_size = 4GB
checkpoint_timeout = 120s
wal_compression = lz4
CONF
  trap 'su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null 2>&1 || true' EXIT
  su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  su postgres -s /bin/bash -c "$bin/pgbench -h $B/sock -p 55498 -U postgres -i -s 10 postgres" >/dev/null 2>&1
  su postgres -s /bin/bash -c "$bin/psql -h $B/sock -p 55498 -U postgres -qc checkpoint"
  su postgres -s /bin/bash -c "$bin/pgbench -h $B/sock -p 55498 -U postgres -c 4 -j 2 -T 90 postgres" >/dev/null 2>&1
  su postgres -s /bin/bash -c "$bin/psql -h $B/sock -p 55498 -U postgres -qc 'select pg_switch_wal()'" >/dev/null
  sleep 3
  su postgres -s /bin/bash -c "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  touch "$B/archive.done"
fi
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws="$B/walscope"
cd "$B"
records=$("$ws" stats --format json archive 2>/dev/null | python3 -c 'import json,sys; print(sum(r["count"] for r in json.load(sys.stdin)["rows"]))')
echo "archive: $(ls archive | wc -l) segments, $(du -sm archive | cut -f1) MB, $records records; $(nproc) cores; $runs runs each"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
bench() {
  local name=$1; shift
  local ts=() rss=()
  for i in $(seq "$runs"); do
    rm -rf out
    local s e
    s=$(date +%s.%N)
    /usr/bin/time -o time.txt -f "%M" "$ws" export --out out -q "$@" archive
    e=$(date +%s.%N)
    ts+=("$(echo "$e - $s" | bc)"); rss+=("$(cat time.txt)")
  done
  local tm rm_; tm=$(printf '%s\n' "${ts[@]}" | median); rm_=$(printf '%s\n' "${rss[@]}" | median)
  printf '%-22s %6.2fs  %9.0f records/s  peak RSS %4.0f MB  output %s\n' "$name" "$tm" "$(echo "$records / $tm" | bc -l)" "$(echo "$rm_ / 1024" | bc -l)" "$(du -sh out | cut -f1)"
}
bench "--tables records" --tables records
bench "all tables" 
bench "all tables, jsonl" --format jsonl
rm -rf out time.txt
