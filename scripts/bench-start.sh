#!/usr/bin/env bash
# bench-start.sh [RUNS] [LOOPS] — walscope's start against pg_waldump's: the
# time of one run on one 1 MB segment, start included, where a loop over
# files or an archive_command pays it for every file.
#
# Builds walscope (CGO_ENABLED=0, as released) and prints its size, then
# times, alternating, RUNS rounds (default 5) of LOOPS runs (default 200) of
#   pg_waldump --stats SEG   vs  walscope stats SEG
#   pg_waldump -q SEG        vs  walscope verify SEG
#   pg_waldump --version     vs  walscope --version (the start alone)
# on fixtures/sample/000000010000000000000006 (PostgreSQL 15, 1 MB
# segments, 6398 records), and prints the median time per run and
# the ratio (above 1: walscope is faster). With perf installed, also the
# CPU time per run (task-clock, `perf stat -r LOOPS`, median of the
# rounds): on a machine other work loads, CPU time moves less than wall
# time. BEFORE=path times another walscope binary too (a build from before
# a change), in the same rounds, with its ratio to pg_waldump. Then the
# package initialisation walscope pays at every start
# (GODEBUG=inittrace=1), the largest first. pg_waldump: $PG_WALDUMP, or
# Debian's postgresql-15. Measures; asserts nothing.
set -euo pipefail
runs=${1:-5}
loops=${2:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
pg=${PG_WALDUMP:-/usr/lib/postgresql/15/bin/pg_waldump}
seg="$root/fixtures/sample/000000010000000000000006"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/walscope" ./cmd/walscope)
ws="$tmp/walscope"
size=$(stat -c %s "$ws")
printf 'binary: %.1f MB (%d bytes); %s cores; %d rounds of %d runs\n' "$(echo "$size / 1048576" | bc -l)" "$size" "$(nproc)" "$runs" "$loops"
# loop CMD...: milliseconds per run of CMD over $loops runs.
loop() {
  local s e
  s=$(date +%s%N)
  for ((i = 0; i < loops; i++)); do "$@" >/dev/null 2>&1 || true; done
  e=$(date +%s%N)
  echo "($e - $s) / $loops / 1000000" | bc -l
}
# cpu CMD...: CPU milliseconds per run of CMD (perf's task-clock), or
# nothing without perf.
haveperf=
perf stat -x, -e task-clock true >/dev/null 2>&1 && haveperf=1
cpu() {
  [ -n "$haveperf" ] || return 0
  perf stat -x, -e task-clock -r "$loops" "$@" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1; exit}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
before=${BEFORE:-}
pair() {
  local name=$1 p=() w=() b=() pc=() wc=() bc=()
  shift
  local pgargs=() wsargs=()
  while [ "$1" != "--" ]; do pgargs+=("$1"); shift; done
  shift
  wsargs=("$@")
  for ((r = 0; r < runs; r++)); do
    p+=("$(loop "$pg" "${pgargs[@]}")")
    w+=("$(loop "$ws" "${wsargs[@]}")")
    [ -n "$before" ] && b+=("$(loop "$before" "${wsargs[@]}")")
    if [ -n "$haveperf" ]; then
      pc+=("$(cpu "$pg" "${pgargs[@]}")")
      wc+=("$(cpu "$ws" "${wsargs[@]}")")
      [ -n "$before" ] && bc+=("$(cpu "$before" "${wsargs[@]}")")
    fi
  done
  local pm wm
  pm=$(printf '%s\n' "${p[@]}" | median)
  wm=$(printf '%s\n' "${w[@]}" | median)
  local line
  line=$(printf '%-8s pg_waldump %6.2f ms  walscope %6.2f ms  ratio %5.2fx' "$name" "$pm" "$wm" "$(echo "$pm / $wm" | bc -l)")
  if [ -n "$haveperf" ]; then
    local pcm wcm
    pcm=$(printf '%s\n' "${pc[@]}" | median); wcm=$(printf '%s\n' "${wc[@]}" | median)
    line+=$(printf '   CPU %5.2f / %5.2f ms  ratio %5.2fx' "$pcm" "$wcm" "$(echo "$pcm / $wcm" | bc -l)")
  fi
  echo "$line"
  if [ -n "$before" ]; then
    local bm
    bm=$(printf '%s\n' "${b[@]}" | median)
    line=$(printf '%-8s    before: walscope %6.2f ms  ratio %5.2fx' "" "$bm" "$(echo "$pm / $bm" | bc -l)")
    if [ -n "$haveperf" ]; then
      local bcm
      bcm=$(printf '%s\n' "${bc[@]}" | median)
      line+=$(printf '                           CPU %5.2f ms  ratio %5.2fx' "$bcm" "$(echo "$(printf '%s\n' "${pc[@]}" | median) / $bcm" | bc -l)")
    fi
    echo "$line"
  fi
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
pair stats --stats "$seg" -- stats "$seg"
pair verify -q "$seg" -- verify "$seg"
# the start alone: --version (--help, which renders the usage, on builds
# without it)
startarg=--version
"$ws" --version >/dev/null 2>&1 || startarg=--help
pair start --version -- "$startarg"
echo "package initialisation (GODEBUG=inittrace=1, walscope $startarg), largest first:"
GODEBUG=inittrace=1 "$ws" "$startarg" 2>"$tmp/init" >/dev/null
grep '^init ' "$tmp/init" | sort -k5 -g -r | head -6
awk '/^init / {t += $5; n++} END {printf "total: %d packages, %.2f ms\n", n, t}' "$tmp/init"
