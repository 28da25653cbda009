#!/usr/bin/env bash
# bench-export.sh [RUNS] — records per second of `walscope export` and its
# peak memory, on WAL dense in records.
#
# Generates (once, with scripts/pgbench-archive.sh; kept in $BENCH_DIR, default
# /tmp/walscope-dense) a pgbench
# archive with Debian's postgresql-15: 16 MB segments, wal_level replica,
# wal_compression lz4, pgbench -i -s 10, a checkpoint, then 90 s of the
# TPC-B-like pgbench script on 4 clients: about 1.1 million records in 225 MB,
# mostly small heap, index and commit records (the WAL of an OLTP server
# between checkpoints, where records are short and many). Then exports it RUNS
# times (default 5) into Parquet, --tables records and all tables, and prints
# the median wall time, CPU time (user + system), records per second and
# peak RSS. With WALSCOPE_BASELINE=BINARY (another build of walscope, e.g.
# the previous commit's), runs it alternately with this one on the same
# input and prints its figures and the ratios too (above 1: this build is
# faster). With BENCH_ARCHIVE=DIR, exports that archive instead (the 929 MB
# one of scripts/bench-pgwaldump.sh, a corpus) and generates nothing. Run
# as root (the server runs as postgres). Measures; asserts nothing.
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-dense}
if [ -n "${BENCH_ARCHIVE:-}" ]; then
  B=$(mktemp -d /tmp/walscope-bench-export.XXXXXX)
  trap 'rm -rf "$B"' EXIT
  ln -s "$(cd "$BENCH_ARCHIVE" && pwd)" "$B/archive"
else
  . "$root/scripts/pgbench-archive.sh"
  pgbench_archive "$B" 55498 10 4 90 "checkpoint_timeout = 120s" "wal_compression = lz4"
fi
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws="$B/walscope"
cd "$B"
records=$("$ws" stats --format json archive 2>/dev/null | python3 -c 'import json,sys; print(sum(r["count"] for r in json.load(sys.stdin)["rows"]))')
echo "archive: $(ls archive/ | wc -l) segments, $(du -smL archive | cut -f1) MB, $records records; $(nproc) cores; $runs runs each"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=${WALSCOPE_BASELINE:-}
# run WHO BIN ARGS...: one export; appends "wall cpu rss_kb" to times-WHO.
# The baseline is run without the flags it predates (--no-wal-names).
run() {
  local who=$1 bin=$2; shift 2
  if [ "$who" = base ]; then
    local a=() x
    for x in "$@"; do [ "$x" = --no-wal-names ] || a+=("$x"); done
    set -- ${a[@]+"${a[@]}"}
  fi
  rm -rf out
  /usr/bin/time -o time.txt -f "%e %U %S %M" "$bin" export --out out -q "$@" archive
  awk '{print $1, $2 + $3, $4}' time.txt >>"times-$who"
}
# col WHO N: the median of field N of times-WHO.
col() { cut -d' ' -f"$2" "times-$1" | median; }
report() {
  local name=$1 who=$2 t c r
  t=$(col "$who" 1); c=$(col "$who" 2); r=$(col "$who" 3)
  printf '%-22s %-4s %6.2fs  cpu %6.2fs  %9.0f records/s  peak RSS %4.0f MB' "$name" "$who" "$t" "$c" "$(echo "$records / $t" | bc -l)" "$(echo "$r / 1024" | bc -l)"
}
bench() {
  local name=$1; shift
  rm -f times-*
  for i in $(seq "$runs"); do
    [ -z "$base" ] || run base "$base" "$@"
    run this "$ws" "$@" # last: out/ is this build's
  done
  report "$name" this; printf '  output %s\n' "$(du -sh out | cut -f1)"
  if [ -n "$base" ]; then
    report "$name" base
    printf '  ratio: wall %.2fx, cpu %.2fx\n' "$(echo "$(col base 1) / $(col this 1)" | bc -l)" "$(echo "$(col base 2) / $(col this 2)" | bc -l)"
  fi
}
bench "--tables records" --tables records
bench "records, no WAL names" --tables records --no-wal-names
bench "all tables"
bench "all tables, jsonl" --format jsonl
rm -rf out time.txt times-*
