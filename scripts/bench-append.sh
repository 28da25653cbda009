#!/usr/bin/env bash
# bench-append.sh [RUNS] — what appending one day to an incremental dataset
# (`walscope export --append`) costs against the dataset's age, and how long
# reading a 10^5-segment manifest takes (issue 29).
#
# Measures on two archives of Debian's postgresql-15 (16 MB segments,
# wal_level replica, wal_compression lz4, pgbench -s 10 on 4 clients), each
# generated once (scripts/pgbench-archive.sh) and kept:
# - the dated archive ($BENCH_DATED_DIR, default /tmp/walscope-append-dated):
#   the server's clock, shifted by libfaketime, moves a day forward before
#   each day's 14 MB of the TPC-B-like script and pg_switch_wal(): a day is
#   a segment and a date, as a nightly batch sees it (pgbench_dated_archive;
#   its archive/days names each day's first segment).
# - the one-date archive ($BENCH_DIR, default /tmp/walscope-append): rounds of
#   60 s of the script and a VACUUM FULL of pgbench_accounts until 600 MB
#   are archived (about 40 segments), written in minutes; a "day" is one
#   segment of it, by index (DAY_SEGMENTS=K makes it K), so every day lands
#   in one day=... partition: merging's worst case, every night rewriting
#   the same day's files.
# Day 1 also holds the segments of the initial load. DAYS="1 5 10" sets the
# days measured (default 1 10 30); ARCHIVES="dated" (or "one-date") measures
# one archive only.
# For N in 1, 10 and 30: a dataset holding days 1 to N-1 (built night by
# night, not timed), then RUNS times (default 3) each of
#   append: export --append DATASET ARCHIVE-of-days-1..N (day N added)
#   alone:  export --out OUT -s START -e END SEGMENTS: the WAL the append
#           exported (a batch ends at the last checkpoint's redo point its
#           input holds: from the end of day N-1's batch to day N's),
#           exported by itself
#   young:  export --append YOUNG ARCHIVE-of-days-1..N, YOUNG a dataset of
#           one batch, the dataset's last made again from its segments
#           alone (N > 1): the same WAL appended with the same work, to a
#           dataset of one night
# and prints the medians and their ratios (append / alone, append / young;
# issue 29 asks that an append cost what the day's WAL costs, not the
# archive's: within 1.2x of exporting the day alone) of the wall time, and
# of the CPU time (user + system: on a machine other work loads, wall times
# mostly say how much of the cores the runs got; the load averages are
# printed before and after). append / young is the dataset's age alone;
# append / alone also what an incremental dataset records that a plain
# export does not (below).
# APPEND_FLAGS="--no-merge" adds flags to the timed append (the nights
# before are appended without them); WALSCOPE_BIN=PATH measures that binary
# rather than a build of the checkout (with ALONE_BIN=PATH, the day alone
# is exported by that one: an older build's append against the same
# export). What an append records that the day alone does not: each
# segment's CRC-32C (SHA-256 before manifest version 2), the growth
# aggregate with its sampled image sizing and checkpoint spacing replay. Then `go test -bench ReadManifest ./export` (10^5 segments
# in 1,000 batch manifests, read and checked). Run as root (the server runs
# as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-append}
BD=${BENCH_DATED_DIR:-/tmp/walscope-append-dated-ckpt}
. "$root/scripts/pgbench-archive.sh"
ds=${DAY_SEGMENTS:-1}          # segments per day (one-date archive)
list=${DAYS:-1 10 30}          # the days measured
maxN=${list##* }
pgbench_archive "$B" 55499 10 4 600M "checkpoint_timeout = 120s" "wal_compression = lz4"
DAY_CHECKPOINT=1 pgbench_dated_archive "$BD" 55498 10 4 $((maxN + 2)) "checkpoint_timeout = 120s" "wal_compression = lz4"
# WALSCOPE_BIN=PATH measures that binary (an older build, to compare)
# instead of the checkout's.
if [ -n "${WALSCOPE_BIN:-}" ]; then
  ws=$(realpath "$WALSCOPE_BIN")
else
  (cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
  ws="$B/walscope"
fi
alone=${ALONE_BIN:+$(realpath "$ALONE_BIN")}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# secs CMD...: "WALL CPU" seconds of a run, to the millisecond (bash's
# time: /usr/bin/time's hundredths were a sixth of a 60 ms night).
secs() {
  local TIMEFORMAT='%3R %3U %3S'
  { time "$@" >/dev/null 2>&1; } 2>t.txt
  awk '{print $1, $2 + $3}' t.txt
}
export WALSCOPE_NOSYNC=${WALSCOPE_NOSYNC:-0}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(nproc) cores; $runs runs each"
# measure DIR TITLE: the table for the archive DIR/archive. end[k] is the
# index (in the sorted segment names) after day k's last segment; day 1
# also holds every segment before it.
measure() {
  local A=$1 title=$2 n i k N
  cd "$A"
  mapfile -t segs < <(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
  n=${#segs[@]}
  end=()
  if [ -f archive/days ]; then
    # the dated archive: archive/days names each day's first segment
    mapfile -t starts < archive/days
    [ "${#starts[@]}" -ge "$maxN" ] || { echo "$A: only ${#starts[@]} days" >&2; exit 1; }
    local -A index=()
    for ((i = 0; i < n; i++)); do index[${segs[$i]}]=$i; done
    for ((k = 1; k <= maxN; k++)); do
      if [ "$k" -lt "${#starts[@]}" ]; then end[$k]=${index[${starts[$k]}]}; else end[$k]=$n; fi
    done
  else
    # the one-date archive: its last segments, DAY_SEGMENTS a day
    local first=$((n - ds * maxN))
    [ "$first" -ge 1 ] || { echo "only $n segments: need $((ds * maxN + 1))" >&2; exit 1; }
    for ((k = 1; k <= maxN; k++)); do end[$k]=$((first + ds * k)); done
  fi
  end[0]=0
  echo "$title: $n segments of 16 MB, $(du -smL archive | cut -f1) MB"
  for N in $list; do
    rm -rf ds
    for ((k = 1; k < N; k++)); do "$ws" export --append ds -q "$(days "$k")" >/dev/null 2>&1; done
    all=$(days "$N")
    # What the append exports: the WAL from the dataset's end (the last
    # checkpoint's redo point its input held) to the last redo point day
    # N holds; the same WAL exported alone (its segments, -s and -e).
    rm -rf ds.run; cp -a ds ds.run 2>/dev/null || mkdir ds.run
    "$ws" export --append ds.run -q "$all" >/dev/null 2>&1
    local range
    # (the batch manifests only: the manifest directory also holds the
    # checkpoint spacing's state file)
    range=$(last_batch ds.run "$(ls ds/_walscope_manifest 2>/dev/null | grep -c '^_batch-.*\.json$')")
    if [ -z "$range" ]; then
      echo "day $N: nothing to append (day $N holds no checkpoint record)"
      continue
    fi
    set -- $range
    local s=$1 e=$2 sseg=$3 eseg=$4
    rm -rf alone-in; mkdir alone-in
    for ((i = 0; i < n; i++)); do
      [[ "${segs[$i]:8}" < "$sseg" || "${segs[$i]:8}" > "$eseg" ]] || ln -s "$A/archive/${segs[$i]}" alone-in/
    done
    local mb=$(( ($(lsn2int "$e") - $(lsn2int "$s")) >> 20 ))
    # young: a dataset of one batch, the last one of ds made again from
    # its segments alone (the segments from its start's on), to which the
    # same input appends the same WAL: against it the append to N-1 nights
    # costs what the dataset's age adds, the same work done (an
    # incremental export of the day alone; `alone` above does not checksum
    # segments or keep the growth aggregate).
    local young=
    if [ "$N" -gt 1 ]; then
      local lb
      lb=$(last_batch ds 0 | cut -d' ' -f3)
      rm -rf young young.run young-in; mkdir young-in
      for ((i = 0; i < ${end[$((N - 1))]}; i++)); do
        [[ "${segs[$i]:8}" < "$lb" ]] || ln -s "$A/archive/${segs[$i]}" young-in/
      done
      "$ws" export --append young -q young-in >/dev/null 2>&1 || true
      cp -a young young.run 2>/dev/null || mkdir young.run
      "$ws" export --append young.run -q "$all" >/dev/null 2>&1 || true
      if [ "$(last_batch young.run 1)" = "$range" ]; then
        young=1
      else
        echo "day $N: the one-batch dataset appends ($(last_batch young.run 1 | cut -d' ' -f1-2)), not $s $e: not timed"
      fi
    fi
    : >a.txt; : >b.txt; : >c.txt
    for r in $(seq "$runs"); do
      rm -rf ds.run; cp -a ds ds.run 2>/dev/null || mkdir ds.run
      # shellcheck disable=SC2086 # APPEND_FLAGS: words
      secs "$ws" export --append ds.run -q ${APPEND_FLAGS:-} "$all" >>a.txt
      rm -rf out; secs "${alone:-$ws}" export --out out -q -s "$s" -e "$e" alone-in >>b.txt
      if [ -n "$young" ]; then
        rm -rf young.run; cp -a young young.run
        # shellcheck disable=SC2086
        secs "$ws" export --append young.run -q ${APPEND_FLAGS:-} "$all" >>c.txt
      fi
    done
    a=$(cut -d' ' -f1 a.txt | median); b=$(cut -d' ' -f1 b.txt | median)
    acpu=$(cut -d' ' -f2 a.txt | median); bcpu=$(cut -d' ' -f2 b.txt | median)
    printf 'day %2d (%2d nights before): %s..%s (%d MB): append %6.3fs, the same WAL alone %6.3fs: %.2fx; CPU %6.3fs against %6.3fs: %.2fx\n' \
      "$N" $((N - 1)) "$s" "$e" "$mb" "$a" "$b" "$(echo "$a / $b" | bc -l)" "$acpu" "$bcpu" "$(echo "$acpu / $bcpu" | bc -l)"
    if [ -n "$young" ]; then
      c=$(cut -d' ' -f1 c.txt | median); ccpu=$(cut -d' ' -f2 c.txt | median)
      printf '        the same append to a dataset of that night'"'"'s batch alone %6.3fs: %.2fx; CPU %6.3fs: %.2fx (the dataset'"'"'s age)\n' \
        "$c" "$(echo "$a / $c" | bc -l)" "$ccpu" "$(echo "$acpu / $ccpu" | bc -l)"
    fi
  done
  rm -rf ds ds.run out alone-in days-* young young.run young-in a.txt b.txt c.txt t.txt
}
# lsn2int LSN: the LSN as a number.
lsn2int() { echo $(( (16#${1%/*} << 32) + 16#${1#*/} )); }
# last_batch DS BEFORE: "START END STARTSEG ENDSEG" of DS's last batch when
# it has more than BEFORE batches (the segment numbers as the last 16 hex
# digits of a segment file name, 16 MB segments), else nothing.
last_batch() {
  local f
  f=$(ls "$1"/_walscope_manifest/_batch-*.json 2>/dev/null | tail -1)
  [ -n "$f" ] && [ "$(ls "$1"/_walscope_manifest/_batch-*.json | wc -l)" -gt "$2" ] || return 0
  python3 - "$f" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
def n(l):
    hi, lo = l.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)
def seg(v):
    return "%08X%08X" % (v >> 32, (v & 0xFFFFFFFF) >> 24)
s, e = n(b["start_lsn"]), n(b["end_lsn"])
print(b["start_lsn"], b["end_lsn"], seg(s), seg(e))
PY
}
# days K: an archive directory holding the segments of days 1..K (links).
days() {
  local k=$1 d="days-$1" i
  rm -rf "$d"; mkdir "$d"
  for ((i = 0; i < ${end[$k]}; i++)); do ln -s "$A/archive/${segs[$i]}" "$d/${segs[$i]}"; done
  echo "$d"
}
for a in ${ARCHIVES:-dated one-date}; do
  case $a in
  dated) measure "$BD" "dated archive (a day a date, as nightly batches see it)" ;;
  one-date) measure "$B" "one-date archive (every day in one day= partition: merging's worst case)" ;;
  *) echo "ARCHIVES: dated or one-date, not $a" >&2; exit 2 ;;
  esac
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$root" && go test -run XXX -bench ReadManifest -benchtime 5x ./export | grep -E '^Benchmark')
