#!/usr/bin/env bash
# bench-export.sh [RUNS] — records per second of `walscope export` and its
# peak memory, on WAL dense in records.
#
# Generates (once, with scripts/pgbench-archive.sh; kept in $BENCH_DIR, default
# /tmp/walscope-dense) a pgbench
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
. "$root/scripts/pgbench-archive.sh"
pgbench_archive "$B" 55498 10 4 90 "checkpoint_timeout = 120s" "wal_compression = lz4"
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
