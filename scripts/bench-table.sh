#!/bin/bash
# scripts/bench-table.sh [SCALE] [SECONDS] [SMALL_ROWS]
#
# walscope table against a real restore plus COPY, on the same backup and
# archive, in one run (issue 27's speed goal: the rows of a table that is 1%
# of the cluster at least 10x faster than a real restore to the same target
# plus COPY). The cluster and workload are bench-page.sh's
# (scripts/bench-cluster-setup.sh): pgbench at scale SCALE (default 50,
# about 750 MB) and a table `small` of SMALL_ROWS rows (default SCALE * 2000,
# about 1% of the cluster); pg_basebackup -Fp; pgbench and updates of small
# for SECONDS (default 60), the restore point `bench`, more WAL.
# Real: the backup copied to a new data directory, restored to `bench`
# (paused, hot_standby), `COPY small TO STDOUT`: wall time from the copy to
# the end of COPY. walscope: `walscope table --relation small --target-name
# bench` on the same backup in place and the same archive. The two outputs
# must be identical (the script fails otherwise). Prints both times and the
# ratio. Run as root (servers run as postgres).
set -euo pipefail
SCALE=${1:-50}; SECS=${2:-60}; ROWS=${3:-$((SCALE * 2000))}
W=${WORK:-/tmp/walscope-bench-table}
PORT=55491
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
bench_start
bench_pgbench_small "$SCALE" "$ROWS" "$SECS"
echo "cluster $(size $W/base), table small $ROWS rows, WAL archived $(size $W/arch) ($(ls $W/arch | wc -l) files)"
drop_caches
real=$(bench_restore_copy bench small "$W/real.copy")
drop_caches
ws=$(seconds /usr/bin/time -f "%M" -o "$W/ws.rss" "$W/walscope" table --backup "$W/base" --relation small --target-name bench --out "$W/walscope.copy" "$W/arch")
cmp "$W/real.copy" "$W/walscope.copy" || { echo "walscope table's output differs from the restored server's COPY" >&2; exit 1; }
echo "real restore to 'bench' + COPY small: ${real} s ($(wc -l < $W/real.copy) rows)"
echo "walscope table --relation small:      ${ws} s (max RSS $(cat $W/ws.rss) kB), output identical"
echo "ratio: $(echo "scale=1; $real / $ws" | bc)x"
