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
# the ratio (above 1: walscope is faster). Then the package initialisation
# walscope pays at every start (GODEBUG=inittrace=1), the largest first.
# pg_waldump: $PG_WALDUMP, or Debian's postgresql-15. Measures; asserts
# nothing.
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
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
pair() {
  local name=$1 p=() w=()
  shift
  local pgargs=() wsargs=()
  while [ "$1" != "--" ]; do pgargs+=("$1"); shift; done
  shift
  wsargs=("$@")
  for ((r = 0; r < runs; r++)); do
    p+=("$(loop "$pg" "${pgargs[@]}")")
    w+=("$(loop "$ws" "${wsargs[@]}")")
  done
  local pm wm
  pm=$(printf '%s\n' "${p[@]}" | median)
  wm=$(printf '%s\n' "${w[@]}" | median)
  printf '%-8s pg_waldump %6.2f ms  walscope %6.2f ms  ratio %5.2fx\n' "$name" "$pm" "$wm" "$(echo "$pm / $wm" | bc -l)"
}
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
