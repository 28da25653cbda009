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
# then, per core (one reader: walscope -j 1), stats and verify against
# pg_waldump with the CPU time (user+sys) beside the wall time, on this
# archive and on a mixed PostgreSQL 15 stream (fixtures/versions/pg15's
# archive: every record type SQL writes, 21 segments of 1 MB, each timed
# run reading it 10 times);
# then what no reader can beat on this machine (the kernel copying the files
# out of the page cache into two readers, and that plus CRC-32C of every
# byte), and the overhead of zstd: walscope over the same segments compressed
# with zstd -3 (kept in $BENCH_DIR/archive-zst) against the plain ones.
# Run as root (the server runs as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench}
. "$root/scripts/pgbench-archive.sh"
pgbench_archive "$B" 55499 50 2 60 "checkpoint_timeout = 60s"
cd "$B"
segs=$(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
mb=$(du -sm archive | cut -f1)
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws="$B/walscope"; pg="$bin/pg_waldump"
echo "archive: $(echo "$segs" | wc -l) segments, $mb MB, $first .. $last; $(nproc) cores; $runs runs each"
# The page cache's state changes both programs' times by a third: files
# written by cp are cached in small pages, files read back by readahead in
# large folios, which the kernel copies out faster. Start from the same
# state on every machine: drop the cache (as root) and read the files once.
if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
  cat archive/* >/dev/null
  echo "page cache dropped and filled again by reading the archive once"
fi
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

# Per core: one reader each. CPU time (user+sys) is what the reading costs a
# core, and moves least when other work shares the machine.
tc() { # tc CMD: "wall cpu" seconds of one run of bash -c CMD
  /usr/bin/time -f '%e %U %S' -o "$B/.time" bash -c "$1" >/dev/null 2>&1 || true
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$B/.time"
}
cpair() { # cpair NAME PGCMD WSCMD
  local name=$1 pgcmd=$2 wscmd=$3 pw=() pc=() ww=() wc=() x
  for i in $(seq "$runs"); do
    x=$(tc "$pgcmd"); pw+=("${x% *}"); pc+=("${x#* }")
    x=$(tc "$wscmd"); ww+=("${x% *}"); wc+=("${x#* }")
  done
  local pwm pcm wwm wcm
  pwm=$(printf '%s\n' "${pw[@]}" | median); pcm=$(printf '%s\n' "${pc[@]}" | median)
  wwm=$(printf '%s\n' "${ww[@]}" | median); wcm=$(printf '%s\n' "${wc[@]}" | median)
  printf '%-16s pg_waldump %6.2fs (CPU %6.2fs)  walscope -j 1 %6.2fs (CPU %6.2fs)  ratio %5.2fx (CPU %5.2fx)\n' \
    "$name" "$pwm" "$pcm" "$wwm" "$wcm" "$(echo "$pwm / $wwm" | bc -l)" "$(echo "$pcm / $wcm" | bc -l)"
}
echo "per core (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
cpair "pgbench stats" "$pg --stats=record -p archive $first $last" "$ws stats -j 1 --by record -p archive $first $last"
cpair "pgbench verify" "$pg -q -p archive $first $last" "$ws verify -j 1 -p archive $first $last"
if [ ! -f pg15-mixed/.done ]; then
  rm -rf pg15-mixed; mkdir pg15-mixed
  tar -I zstd -xf "$root/fixtures/versions/pg15/archive.tar.zst" -C pg15-mixed
  touch pg15-mixed/.done
fi
m=pg15-mixed/archive; mfirst=000000010000000000000006; mlast=00000001000000000000001A
ten() { echo "for i in 1 2 3 4 5 6 7 8 9 10; do $1; done"; }
cpair "mixed stats" "$(ten "$pg --stats=record -p $m $mfirst $mlast")" "$(ten "$ws stats -j 1 --by record -p $m $mfirst $mlast")"
cpair "mixed verify" "$(ten "$pg -q -p $m $mfirst $mlast")" "$(ten "$ws verify -j 1 -p $m $mfirst $mlast")"

# The floor: two readers (the cores) copying the files to /dev/null.
half=$(( $(echo "$segs" | wc -l) / 2 ))
floor=()
for i in $(seq "$runs"); do
  floor+=("$(t bash -c "(cd archive && cat $(echo "$segs" | head -$half | tr '\n' ' ') >/dev/null) & (cd archive && cat $(echo "$segs" | tail -n +$((half+1)) | tr '\n' ' ') >/dev/null); wait")")
done
fm=$(printf '%s\n' "${floor[@]}" | median)
printf 'floor    2 x cat      %7.2fs  (no reader that copies the bytes out of the page cache on 2 cores is faster)\n' "$fm"

# zstd: the same segments compressed one by one, as archive_command would.
if [ ! -f archive-zst/.done ]; then
  rm -rf archive-zst; mkdir archive-zst
  for s in $segs; do zstd -q -3 "archive/$s" -o "archive-zst/$s.zst"; done
  touch archive-zst/.done
fi
zmb=$(du -sm archive-zst | cut -f1)
echo "zstd archive: $zmb MB (from $mb MB)"
zpair() {
  local name=$1 cmd=$2 p=() z=()
  for i in $(seq "$runs"); do
    p+=("$(t bash -c "$ws $cmd -p archive $first $last")"); z+=("$(t bash -c "$ws $cmd -p archive-zst $first $last")")
  done
  local pm zm; pm=$(printf '%s\n' "${p[@]}" | median); zm=$(printf '%s\n' "${z[@]}" | median)
  printf '%-8s plain %7.2fs  zstd %7.2fs  decompression overhead %+6.0f%%\n' "$name" "$pm" "$zm" "$(echo "($zm / $pm - 1) * 100" | bc -l)"
}
zpair stats  "stats --by record"
zpair dump   "dump"
zpair verify "verify"
/usr/bin/time -f "walscope stats over zstd peak RSS: %M KB" "$ws" stats -p archive-zst "$first" "$last" >/dev/null
/usr/bin/time -f "walscope stats peak RSS: %M KB" "$ws" stats -p archive "$first" "$last" >/dev/null
