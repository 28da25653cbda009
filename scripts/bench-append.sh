#!/usr/bin/env bash
# bench-append.sh [RUNS] — what appending one day to an incremental dataset
# (`walscope export --append`) costs against the dataset's age, and how long
# reading a 10^5-segment manifest takes (issue 29).
#
# Generates (once, with scripts/pgbench-archive.sh; kept in $BENCH_DIR,
# default /tmp/walscope-append) a pgbench archive with Debian's
# postgresql-15: 16 MB segments, wal_level replica, wal_compression lz4,
# pgbench -i -s 10, then rounds of 60 s of the TPC-B-like script on 4
# clients and a VACUUM FULL of pgbench_accounts until 600 MB are archived
# (about 40 segments). A "day" is one segment of it, by index (the first day also
# holds the segments of the initial load): PostgreSQL wrote the archive in
# minutes, so the days are simulated by cutting the real WAL, not by its
# commit times (all rows land in one day=... partition).
#
# DAY_SEGMENTS=K makes a day K segments (default 1); DAYS="1 5 10" the days
# measured (default 1 10 30; the archive must hold K * the last of them).
# For N in 1, 10 and 30: a dataset holding days 1 to N-1 (built night by
# night, not timed), then RUNS times (default 3) each of
#   append: export --append DATASET ARCHIVE-of-days-1..N (day N added)
#   alone:  export --out OUT DAY-N's-segment (that day exported by itself)
# and prints the medians and their ratio (append / alone; issue 29 asks for
# at most 1.2x) of the wall time, and of the CPU time (user + system: on a
# machine other work loads, wall times mostly say how much of the cores
# the runs got; the load averages are printed before and after).
# APPEND_FLAGS="--no-merge" adds flags to the timed append (the nights
# before are appended without them); WALSCOPE_BIN=PATH measures that binary
# rather than a build of the checkout. Then `go test -bench ReadManifest ./export` (10^5 segments
# in 1,000 batch manifests, read and checked). Run as root (the server runs
# as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-append}
. "$root/scripts/pgbench-archive.sh"
pgbench_archive "$B" 55499 10 4 600M "checkpoint_timeout = 120s" "wal_compression = lz4"
# WALSCOPE_BIN=PATH measures that binary (an older build, to compare)
# instead of the checkout's.
if [ -n "${WALSCOPE_BIN:-}" ]; then
  ws=$(realpath "$WALSCOPE_BIN")
else
  (cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
  ws="$B/walscope"
fi
cd "$B"
mapfile -t segs < <(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
n=${#segs[@]}
ds=${DAY_SEGMENTS:-1}          # segments per day
list=${DAYS:-1 10 30}          # the days measured
maxN=${list##* }
first=$((n - ds * maxN)) # days 1..maxN: the last segments; day 1 also holds those before
[ "$first" -ge 1 ] || { echo "only $n segments: need $((ds * maxN + 1))" >&2; exit 1; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "archive: $n segments of 16 MB, $(du -smL archive | cut -f1) MB; $(nproc) cores; $runs runs each; $ds segment(s) a day"
# days K: an archive directory holding the segments of days 1..K (links).
days() {
  local k=$1 d="days-$1" i
  rm -rf "$d"; mkdir "$d"
  for ((i = 0; i < first + ds * k; i++)); do ln -s "$B/archive/${segs[$i]}" "$d/${segs[$i]}"; done
  echo "$d"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# secs CMD...: "WALL CPU" seconds of a run, to the millisecond (bash's
# time: /usr/bin/time's hundredths were a sixth of a 60 ms night).
secs() {
  local TIMEFORMAT='%3R %3U %3S'
  { time "$@" >/dev/null 2>&1; } 2>t.txt
  awk '{print $1, $2 + $3}' t.txt
}
export WALSCOPE_NOSYNC=${WALSCOPE_NOSYNC:-0}
for N in $list; do
  rm -rf ds
  for ((k = 1; k < N; k++)); do "$ws" export --append ds -q "$(days "$k")" >/dev/null 2>&1; done
  all=$(days "$N")
  # day N's own segments (day 1's: the initial load's too)
  rm -rf alone-in; mkdir alone-in
  lo=$((first + ds * (N - 1))); [ "$N" -gt 1 ] || lo=0
  for ((i = lo; i < first + ds * N; i++)); do ln -s "$B/archive/${segs[$i]}" alone-in/; done
  : >a.txt; : >b.txt
  for r in $(seq "$runs"); do
    rm -rf ds.run; cp -a ds ds.run 2>/dev/null || mkdir ds.run
    # shellcheck disable=SC2086 # APPEND_FLAGS: words
    secs "$ws" export --append ds.run -q ${APPEND_FLAGS:-} "$all" >>a.txt
    rm -rf out; secs "$ws" export --out out -q alone-in >>b.txt
  done
  a=$(cut -d' ' -f1 a.txt | median); b=$(cut -d' ' -f1 b.txt | median)
  acpu=$(cut -d' ' -f2 a.txt | median); bcpu=$(cut -d' ' -f2 b.txt | median)
  printf 'day %2d (%2d batches before): append %6.3fs, the day alone %6.3fs: %.2fx; CPU %6.3fs against %6.3fs: %.2fx\n' \
    "$N" $((N - 1)) "$a" "$b" "$(echo "$a / $b" | bc -l)" "$acpu" "$bcpu" "$(echo "$acpu / $bcpu" | bc -l)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf ds ds.run out alone-in days-* a.txt b.txt t.txt
(cd "$root" && go test -run XXX -bench ReadManifest -benchtime 5x ./export | grep -E '^Benchmark')
