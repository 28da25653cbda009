#!/bin/bash
# scripts/bench-page.sh [SCALE] [SECONDS] [SMALL_ROWS]
#
# walscope page against a real restore, on the same backup and archive, in
# one run (issue 26's speed goal: rebuilding a table that is 1% of the
# cluster at least 10x faster than a real restore to the same target).
# A PostgreSQL 15 cluster (scripts/bench-cluster-setup.sh): pgbench at scale
# SCALE (default 50, about 750 MB) and a table `small` of SMALL_ROWS rows
# (default SCALE * 2000: about 1% of it); pg_basebackup -Fp; then pgbench
# and updates of `small` for SECONDS (default 60), a restore point, more WAL.
# Real restore: the backup copied to a new data directory (as a restore
# must), restore_command from the archive, recovery_target_name, paused
# there with hot_standby: wall time until `COPY small TO STDOUT` has run.
# walscope: `walscope page --relation small --target-name ... --format raw`
# reading the same backup in place and the same archive.
# Prints both times and the ratio. Run as root (servers run as postgres).
set -euo pipefail
SCALE=${1:-50}; SECS=${2:-60}; ROWS=${3:-$((SCALE * 2000))}
W=${WORK:-/tmp/walscope-bench-page}
PORT=55471
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
bench_start
bench_pgbench_small "$SCALE" "$ROWS" "$SECS"
echo "cluster $(size $W/base), table small $ROWS rows, WAL archived $(size $W/arch) ($(ls $W/arch | wc -l) files)"
drop_caches
real=$(bench_restore_copy bench small "$W/real.copy")
drop_caches
ws=$(seconds /usr/bin/time -f "%M" -o "$W/ws.rss" "$W/walscope" page --backup "$W/base" --relation small --target-name bench --format raw --out "$W/small.pages" "$W/arch")
echo "real restore to 'bench' + COPY small: ${real} s"
echo "walscope page --relation small:       ${ws} s (max RSS $(cat $W/ws.rss) kB, $(stat -c %s $W/small.pages) bytes of pages)"
echo "ratio: $(echo "scale=1; $real / $ws" | bc)x"
