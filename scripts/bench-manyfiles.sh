#!/usr/bin/env bash
# bench-manyfiles.sh [N...] — walscope verify over many files (issue 16, goal 3).
#
# Builds, per N (default 1250 2500 5000 10000 100000), a directory holding the
# two real 1 MB segments of fixtures/sample (PostgreSQL 15) followed by N empty
# files named as the next segments, as a broken archive_command leaves them;
# kept in $BENCH_DIR (default /tmp/walscope-bench-manyfiles). Then times
# `walscope verify` on it at -j 1 and with one worker per core, prints the
# time and peak RSS, checks that both report the same, and times
# `pg_waldump -q` over the same files (it stops at the first empty file, so
# it is a reference for start-up and listing, not a rival).
# WALSCOPE=path times another walscope binary (a build from before a change).
# Measures; asserts nothing but that -j changes no finding.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench-manyfiles}
pg=${PG_WALDUMP:-/usr/lib/postgresql/15/bin/pg_waldump}
ns=("$@"); [ ${#ns[@]} -gt 0 ] || ns=(1250 2500 5000 10000 100000)
mkdir -p "$B"
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws=${WALSCOPE:-$B/walscope}
name() { printf '00000001%08X%08X' $(($1 / 4096)) $(($1 % 4096)); } # 1 MB segments
t() { /usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -1; }
echo "$(nproc) cores"
for n in "${ns[@]}"; do
  d="$B/d$n"
  if [ ! -e "$d/.done" ]; then
    rm -rf "$d"; mkdir -p "$d"
    cp "$root"/fixtures/sample/0000000100000000000000{06,07} "$d/"
    (cd "$d" && for i in $(seq 8 $((n + 7))); do name "$i"; echo; done | xargs touch)
    touch "$d/.done"
  fi
  cmp <("$ws" verify -j 1 "$d" 2>&1 || true) <("$ws" verify "$d" 2>&1 || true) >/dev/null ||
    echo "N=$n: -j 1 and -j $(nproc) differ"
  read -r w1 m1 < <(t "$ws" verify -j 1 "$d" || true)
  read -r wj mj < <(t "$ws" verify "$d" || true)
  read -r p pm < <(t "$pg" -q -p "$d" "$(name 6)" "$(name $((n + 7)))" || true)
  printf 'N=%-7d walscope verify -j1 %6.2fs %6d KB   -j%d %6.2fs %6d KB   pg_waldump -q %6.2fs (stops at the first empty file)\n' \
    "$n" "$w1" "$m1" "$(nproc)" "$wj" "$mj" "$p"
done
