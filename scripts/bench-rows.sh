#!/bin/bash
# scripts/bench-rows.sh [SCALE] [SECONDS]
#
# walscope rows --xid for a transaction near the end of the WAL against
# walscope stats over the same WAL, in one run (issue 27's speed goal:
# within 2x of stats). A PostgreSQL 15 cluster (scripts/bench-cluster-setup.sh,
# autovacuum off): pgbench at scale SCALE (default 20) and a table `small`;
# pg_basebackup -Ft -z; then pgbench for SECONDS (default 60); near the end,
# one transaction deletes a tenth of small and updates some
# pgbench_branches rows; a little more pgbench.
# Times: `walscope stats` over the archive, `walscope rows --backup
# base.tar.gz --xid X` (jsonl and sql) over the same archive, and rows with
# the same backup extracted to a directory; prints the WAL size, the times,
# the ratios and rows' peak RSS. Run as root.
set -euo pipefail
SCALE=${1:-20}; SECS=${2:-60}
W=${WORK:-/tmp/walscope-bench-rows}
PORT=55481
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
bench_start "autovacuum = off"
as "$BIN/pgbench -i -q -s $SCALE -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
as "$P -c \"create table small (id int primary key, v text); insert into small select g, md5(g::text) from generate_series(1, 20000) g\""
as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -Ft -z -X none -c fast"
as "$BIN/pgbench -n -c 2 -T $SECS -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1 &
sleep $((SECS - 5))
XID=$(as "$P -c \"begin; delete from small where id % 10 = 0; update pgbench_branches set filler = 'incident' where bid <= 3; select pg_current_xact_id(); commit;\"")
wait
as "$BIN/pgbench -n -c 2 -T 3 -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
bench_stop
echo "WAL archived $(size $W/arch) ($(ls $W/arch | wc -l) segments), backup $(size $W/base), incident xid $XID"
TS=$(seconds "$W/walscope" stats "$W/arch")
TR=$(seconds /usr/bin/time -f "%M" -o "$W/rss" "$W/walscope" rows --backup "$W/base/base.tar.gz" --xid "$XID" "$W/arch")
RSS=$(cat "$W/rss")
TQ=$(seconds "$W/walscope" rows --backup "$W/base/base.tar.gz" --xid "$XID" --format sql "$W/arch")
N=$("$W/walscope" rows --backup "$W/base/base.tar.gz" --xid "$XID" "$W/arch" | wc -l)
# the same backup extracted: rows without the gunzip of the tar (read
# twice: backup.Open indexes it, the replay extracts the files it needs)
mkdir -p "$W/plain"; tar -xzf "$W/base/base.tar.gz" -C "$W/plain"
TP=$(seconds "$W/walscope" rows --backup "$W/plain" --xid "$XID" "$W/arch")
echo "stats: ${TS}s; rows --xid (jsonl, $N changes): ${TR}s, peak RSS ${RSS} kB; rows --format sql: ${TQ}s; rows --xid with the backup extracted: ${TP}s"
echo "ratio rows/stats: $(echo "scale=2; $TR / $TS" | bc) (backup.tar.gz), $(echo "scale=2; $TP / $TS" | bc) (extracted)"
