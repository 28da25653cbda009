#!/bin/bash
# scripts/bench-rows.sh [SCALE] [SECONDS]   (env: RUNS, WAL_MB, REUSE, NEW, BASELINE, WORK)
#
# walscope rows --xid for a transaction near the end of the WAL against
# walscope stats over the same WAL, in one run (issue 27's speed goal:
# within 2x of stats). A PostgreSQL 15 cluster (scripts/bench-cluster-setup.sh,
# autovacuum off): pgbench at scale SCALE (default 20) and a table `small`;
# three backups by pg_basebackup -Ft: -z (base.tar.gz, the goal's case),
# --compress=server-zstd and --compress=client-lz4; then pgbench for SECONDS
# (default 60) and on, 10 s at a time, until the archive holds WAL_MB MB
# (default 1100: issue 27 speaks of 1 GB of WAL; SECONDS alone gave 641 MB
# on one run and 673 MB on another, the rate varies with the machine's
# load); then, 5 s into 10 s more of pgbench, one transaction deletes a
# tenth of small and updates some pgbench_branches rows; a little more
# pgbench. The .tar.gz is
# also extracted to a directory (rows without any decompression).
#
# Times (the median and the least of RUNS runs, default 3, taken in turns,
# with the median CPU time: the machine is shared): `walscope
# stats` over the archive, `walscope rows --backup B --xid X` over the same
# archive for each backup, and rows --format sql on base.tar.gz; and, for
# the same backup code under other commands, `walscope table --relation
# small --target-xid X` on each backup and `walscope page` of small on the
# .tar.gz and the directory. Prints the WAL size, the times, the ratios to
# stats and the peak RSS. Each command's output must be identical across the
# backups (the script fails otherwise): the same transaction read from four
# copies.
#
# Every run is a first run on its backup (WALSCOPE_CACHE_DIR=none: no
# index file of a gzip tar is read or kept), but for the cases named
# *.warm: rows and table on base.tar.gz with --cache-dir $WORK/cache, made
# by one untimed run first, as every run after the first on the same
# backup reads it (the default --cache-dir).
#
# REUSE=1 keeps a cluster built by an earlier run in $WORK (only walscope is
# rebuilt, or NEW=PATH copied); BASELINE=PATH also times another walscope binary (say the one
# before a change) in the same run, its outputs compared too. Run as root.
set -euo pipefail
SCALE=${1:-20}; SECS=${2:-60}; RUNS=${RUNS:-3}
W=${WORK:-/tmp/walscope-bench-rows}
PORT=55481
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
if [ "${REUSE:-}" = 1 ] && [ -s "$W/xid" ]; then
  if [ -n "${NEW:-}" ]; then cp "$NEW" "$W/walscope"; else (cd "$HERE" && go build -o "$W/walscope" ./cmd/walscope); fi
else
  # checkpoints every 30 s: full-page images keep the WAL coming (with the
  # default 5 min, pgbench at scale 20 wrote ~30 MB a minute after its first)
  bench_start "autovacuum = off
checkpoint_timeout = 30s"
  as "$BIN/pgbench -i -q -s $SCALE -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
  as "$P -c \"create table small (id int primary key, v text); insert into small select g, md5(g::text) from generate_series(1, 20000) g\""
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -Ft -z -X none -c fast"
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base-zst -Ft --compress=server-zstd -X none -c fast"
  as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base-lz4 -Ft --compress=client-lz4 -X none -c fast"
  as "$BIN/pgbench -n -c 2 -T $SECS -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
  while [ "$(du -sm "$W/arch" | cut -f1)" -lt "${WAL_MB:-1100}" ]; do
    as "$BIN/pgbench -n -c 2 -T 10 -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
  done
  as "$BIN/pgbench -n -c 2 -T 10 -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1 &
  sleep 5
  as "$P -c \"begin; delete from small where id % 10 = 0; update pgbench_branches set filler = 'incident' where bid <= 3; select pg_current_xact_id(); commit;\"" > "$W/xid"
  wait
  as "$BIN/pgbench -n -c 2 -T 3 -h $W/sock -p $PORT -U postgres postgres" >/dev/null 2>&1
  bench_stop
  mkdir -p "$W/plain"; tar -xzf "$W/base/base.tar.gz" -C "$W/plain"
fi
XID=$(cat "$W/xid")
export WALSCOPE_CACHE_DIR=none
echo "WAL archived $(size $W/arch) ($(ls $W/arch | wc -l) segments); backups: base.tar.gz $(size $W/base/base.tar.gz), base.tar.zst $(size $W/base-zst/base.tar.zst), base.tar.lz4 $(size $W/base-lz4/base.tar.lz4); incident xid $XID; load $(cut -d' ' -f1-3 /proc/loadavg)"

# cases: NAME BINARY ARGS...; each run's output goes to $W/out.NAME
declare -A CMD
names=()
add() { names+=("$1"); CMD[$1]="${*:2}"; }
add stats "$W/walscope" stats "$W/arch"
for bin in ${BASELINE:+baseline} new; do
  b="$W/walscope"; [ "$bin" = baseline ] && b="$BASELINE"
  add "$bin.gz" "$b" rows --backup "$W/base/base.tar.gz" --xid "$XID" "$W/arch"
  add "$bin.gz.sql" "$b" rows --backup "$W/base/base.tar.gz" --xid "$XID" --format sql "$W/arch"
  if [ "$bin" = new ]; then
    add "$bin.gz.warm" "$b" rows --cache-dir "$W/cache" --backup "$W/base/base.tar.gz" --xid "$XID" "$W/arch"
    add "$bin.table.gz.warm" "$b" table --cache-dir "$W/cache" --backup "$W/base/base.tar.gz" --relation small --target-xid "$XID" "$W/arch"
  fi
  add "$bin.zst" "$b" rows --backup "$W/base-zst/base.tar.zst" --xid "$XID" "$W/arch"
  add "$bin.lz4" "$b" rows --backup "$W/base-lz4/base.tar.lz4" --xid "$XID" "$W/arch"
  add "$bin.plain" "$b" rows --backup "$W/plain" --xid "$XID" "$W/arch"
  # the same backup code under table and page: small as of the transaction
  for bk in gz:base/base.tar.gz zst:base-zst/base.tar.zst lz4:base-lz4/base.tar.lz4 plain:plain; do
    add "$bin.table.${bk%%:*}" "$b" table --backup "$W/${bk#*:}" --relation small --target-xid "$XID" "$W/arch"
  done
  add "$bin.page.gz" "$b" page --backup "$W/base/base.tar.gz" --relation small --target-xid "$XID" --format raw "$W/arch"
  add "$bin.page.plain" "$b" page --backup "$W/plain" --relation small --target-xid "$XID" --format raw "$W/arch"
done
declare -A T RSS CPU
# the index file the *.warm cases read, made by an untimed run
rm -rf "$W/cache"
"$W/walscope" rows --cache-dir "$W/cache" --backup "$W/base/base.tar.gz" --xid "$XID" "$W/arch" > /dev/null
ls "$W/cache"/gzip-tar-index/*.gztar-index > /dev/null
for r in $(seq 1 "$RUNS"); do
  for n in "${names[@]}"; do
    s=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$W/time.$n" ${CMD[$n]} > "$W/out.$n"
    e=$(date +%s.%N)
    T[$n]+="$(echo "$e - $s" | bc) "
    read -r rss u sy < "$W/time.$n"
    RSS[$n]+="$rss "
    CPU[$n]+="$(echo "$u + $sy" | bc) "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
least() { tr ' ' '\n' | grep . | sort -g | head -1; }
# every output against the new binary's on base.tar.gz, of its kind
for n in "${names[@]}"; do
  case $n in
  stats|new.gz) ;;
  *.gz.sql) cmp "$W/out.new.gz.sql" "$W/out.$n" ;;
  *.table.*) cmp "$W/out.new.table.gz" "$W/out.$n" ;;
  *.page.*) cmp "$W/out.new.page.gz" "$W/out.$n" ;;
  *) cmp "$W/out.new.gz" "$W/out.$n" ;;
  esac || { echo "output of $n differs" >&2; exit 1; }
done
[ -s "$W/out.new.gz" ] && [ -s "$W/out.new.table.gz" ] && [ -s "$W/out.new.page.gz" ] || { echo "an empty output" >&2; exit 1; }
TS=$(echo "${T[stats]}" | median); TSL=$(echo "${T[stats]}" | least)
echo "stats: median ${TS}s, least ${TSL}s, CPU $(echo "${CPU[stats]}" | median)s (runs: ${T[stats]})"
echo "rows --xid: $(wc -l < "$W/out.new.gz") changes; table small: $(wc -l < "$W/out.new.table.gz") rows; page small: $(stat -c %s "$W/out.new.page.gz") bytes; each output identical across backups${BASELINE:+ and binaries}"
for n in "${names[@]}"; do
  [ "$n" = stats ] && continue
  t=$(echo "${T[$n]}" | median); tl=$(echo "${T[$n]}" | least)
  printf '%-20s median %5.2fs %5.2fx stats, least %5.2fs %5.2fx stats, CPU %5.2fs, peak RSS %6s kB  (runs: %s)\n' "$n" "$t" "$(echo "scale=2; $t / $TS" | bc)" \
    "$tl" "$(echo "scale=2; $tl / $TSL" | bc)" "$(echo "${CPU[$n]}" | median)" "$(echo "${RSS[$n]}" | median)" "${T[$n]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
