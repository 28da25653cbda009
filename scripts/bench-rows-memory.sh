#!/bin/bash
# scripts/bench-rows-memory.sh [ROWS]
#
# walscope rows' peak memory for one large transaction (issue 27: "memory
# bounded, output streamed"): a PostgreSQL 15 cluster
# (scripts/bench-cluster-setup.sh, autovacuum off) with a narrow table
# `narrow (id int primary key, v int)` of ROWS rows (default 1000000), a
# plain base backup (pg_basebackup -Fp), then one transaction deleting every
# row. Times and peak RSS of `walscope rows --backup B --xid X` with
# --format jsonl and --format sql, at --memory 64MB, and the WAL size; with
# BASELINE=PATH the same for another walscope binary (the one before a
# change) in the same run, and its outputs must be byte-identical (the
# script fails otherwise). REUSE=1 keeps the cluster built by an earlier run
# in $WORK (default /tmp/walscope-bench-rows-mem; only walscope is rebuilt).
# Run as root.
set -euo pipefail
ROWS=${1:-1000000}
W=${WORK:-/tmp/walscope-bench-rows-mem}
PORT=55491
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
if [ "${REUSE:-}" = 1 ] && [ -s "$W/xid" ]; then
  (cd "$HERE" && go build -o "$W/walscope" ./cmd/walscope)
else
  bench_start "autovacuum = off"
  as "$P -c \"create table narrow (id int primary key, v int); insert into narrow select g, g % 1000 from generate_series(1, $ROWS) g; checkpoint\""
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -X none -c fast"
  as "$P -c \"begin; delete from narrow; select pg_current_xact_id(); commit;\"" > "$W/xid"
  bench_stop
fi
XID=$(cat "$W/xid")
echo "table narrow: $ROWS rows deleted by transaction $XID; WAL archived $(size "$W/arch") ($(ls "$W/arch" | wc -l) segments); load $(cut -d' ' -f1-3 /proc/loadavg)"
for bin in ${BASELINE:+baseline} new; do
  b="$W/walscope"; [ "$bin" = baseline ] && b="$BASELINE"
  for fmt in jsonl sql; do
    s=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$W/rss.$bin.$fmt" "$b" rows --backup "$W/base" --xid "$XID" --memory 64MB --format "$fmt" "$W/arch" > "$W/out.$bin.$fmt"
    e=$(date +%s.%N)
    printf '%-9s %-6s %7ss  peak RSS %8s kB  %s lines\n' "$bin" "$fmt" "$(echo "$e - $s" | bc)" "$(cat "$W/rss.$bin.$fmt")" "$(wc -l < "$W/out.$bin.$fmt")"
  done
done
if [ -n "${BASELINE:-}" ]; then
  for fmt in jsonl sql; do
    cmp "$W/out.baseline.$fmt" "$W/out.new.$fmt" || { echo "rows --format $fmt differs from the baseline's" >&2; exit 1; }
  done
  echo "outputs identical to the baseline's (jsonl and sql)"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
