#!/bin/bash
# scripts/bench-rows-memory.sh [ROWS]
#
# walscope rows' peak memory for one large transaction (issue 27: "memory
# bounded, output streamed"): a PostgreSQL 15 cluster
# (scripts/bench-cluster-setup.sh, autovacuum off) with a narrow table
# `narrow (id int primary key, v int)` of ROWS rows (default 1000000) and a
# copy of it `trunc`, a plain base backup (pg_basebackup -Fp), then one
# transaction deleting every row of narrow (delete) and one truncating trunc
# (truncate: its rows are read from the pages). Times and peak RSS of
# `walscope rows --backup B --xid X` for each with --format jsonl and
# --format sql, at --memory 64MB, and the WAL size; with
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
  as "$P -c \"create table narrow (id int primary key, v int); insert into narrow select g, g % 1000 from generate_series(1, $ROWS) g; create table trunc as select * from narrow; checkpoint\""
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -X none -c fast"
  as "$P -c \"begin; delete from narrow; select pg_current_xact_id(); commit;\"" > "$W/xid"
  as "$P -c \"begin; truncate trunc; select pg_current_xact_id(); commit;\"" > "$W/xid.truncate"
  bench_stop
fi
declare -A XID=([delete]=$(cat "$W/xid") [truncate]=$(cat "$W/xid.truncate"))
echo "tables narrow and trunc: $ROWS rows each, deleted by transaction ${XID[delete]}, truncated by ${XID[truncate]}; WAL archived $(size "$W/arch") ($(ls "$W/arch" | wc -l) segments); load $(cut -d' ' -f1-3 /proc/loadavg)"
for inc in delete truncate; do
  for bin in ${BASELINE:+baseline} new; do
    b="$W/walscope"; [ "$bin" = baseline ] && b="$BASELINE"
    for fmt in jsonl sql; do
      o="$W/out.$inc.$bin.$fmt"
      s=$(date +%s.%N)
      /usr/bin/time -f "%M" -o "$W/rss" "$b" rows --backup "$W/base" --xid "${XID[$inc]}" --memory 64MB --format "$fmt" "$W/arch" > "$o"
      e=$(date +%s.%N)
      printf '%-9s %-9s %-6s %7ss  peak RSS %8s kB  %s lines\n' "$inc" "$bin" "$fmt" "$(echo "$e - $s" | bc)" "$(cat "$W/rss")" "$(wc -l < "$o")"
    done
  done
  if [ -n "${BASELINE:-}" ]; then
    for fmt in jsonl sql; do
      cmp "$W/out.$inc.baseline.$fmt" "$W/out.$inc.new.$fmt" || { echo "$inc: rows --format $fmt differs from the baseline's" >&2; exit 1; }
    done
    echo "$inc: outputs identical to the baseline's (jsonl and sql)"
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
