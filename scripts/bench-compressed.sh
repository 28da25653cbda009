#!/usr/bin/env bash
# bench-compressed.sh ARCHIVE [RUNS] — walscope over compressed archives
# against what a DBA would do without it (issue 16, goal 5).
#
# ARCHIVE is a directory of plain segment files (the 929 MB pgbench archive
# that bench-pgwaldump.sh makes in /tmp/walscope-bench/archive, say). The
# script makes, once, three compressed copies beside it (in $BENCH_DIR,
# default ARCHIVE's parent, as compressed-<name>/), each segment compressed
# on its own with the tool's command line as archive_command and backup tools
# store them: zstd -3 (<seg>.zst), lz4 -1 (<seg>.lz4), gzip -6 (<seg>.gz), and
# wal-g's layout (wal_005/<seg>.lz4, wal-g's default method: hard links to
# the lz4 files). It checks that `walscope stats` prints the same over every
# copy as over ARCHIVE, then times RUNS interleaved runs (default 5) of:
#   plain     walscope stats ARCHIVE
#   walscope  walscope stats <copy>
#   rival     decompress every file of the copy into a new directory
#             (xargs -P <cores>: the tool's own -dc, one process per file) and
#             run pg_waldump --stats over it, in one shell: the time to an
#             answer without walscope
# and prints medians of wall time and CPU time (user+sys, children included)
# with the ratios rival/walscope (goal: >= 2) and walscope/plain (goal for
# lz4: <= 1.3). WALSCOPE=path times another walscope binary (a build from
# before a change); WALSCOPE_ARGS adds flags (-j 1, say). Measures; asserts
# only that the outputs agree. Needs zstd, lz4, gzip and PostgreSQL's
# pg_waldump (scripts/pgbench-archive.sh's bench_tools installs what is
# missing when run as root).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ARCHIVE [RUNS]" >&2; exit 2; }
arch=$(cd "$1" && pwd)
runs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pgbench-archive.sh"
bench_tools # sets $bin
command -v lz4 >/dev/null || { apt-get update -qq && apt-get install -y -qq lz4 >/dev/null; }
pg="$bin/pg_waldump"
B=${BENCH_DIR:-$(dirname "$arch")}
C="$B/compressed-$(basename "$arch")"
cores=$(nproc)
segs=$(cd "$arch" && ls | grep -E '^[0-9A-F]{24}$' | sort)
first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
nseg=$(echo "$segs" | wc -l)

# The copies, made once: .done holds the list of segments and their sizes,
# so that a different ARCHIVE (or a changed one) is compressed again.
stamp=$(cd "$arch" && ls -l $segs | awk '{print $5, $9}' | md5sum | cut -d' ' -f1)
if [ "$(cat "$C/.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$C"; mkdir -p "$C/zst" "$C/lz4" "$C/gz" "$C/walg/wal_005"
  echo "compressing $nseg segments three ways into $C ..."
  echo "$segs" | (cd "$arch" && xargs -P "$cores" -I{} sh -c '
    zstd -q -3 "{}" -o "'"$C"'/zst/{}.zst"
    lz4 -q -1 "{}" "'"$C"'/lz4/{}.lz4"
    gzip -6 -c "{}" > "'"$C"'/gz/{}.gz"')
  for s in $segs; do ln "$C/lz4/$s.lz4" "$C/walg/wal_005/$s.lz4"; done
  echo "$stamp" > "$C/.done"
fi

ws=${WALSCOPE:-}
if [ -z "$ws" ]; then
  ws="$B/walscope-bench-compressed"
  (cd "$root" && CGO_ENABLED=0 go build -o "$ws" ./cmd/walscope)
fi
wsargs=${WALSCOPE_ARGS:-}

# The same answer from every copy.
"$ws" stats $wsargs "$arch" > "$C/plain.out" 2>/dev/null || true
for f in zst lz4 gz walg; do
  "$ws" stats $wsargs "$C/$f" > "$C/$f.out" 2>/dev/null || true
  cmp -s "$C/plain.out" "$C/$f.out" || { echo "walscope stats over $f differs from over the plain files:" >&2; diff "$C/plain.out" "$C/$f.out" | head >&2; exit 1; }
done

# A run's wall and CPU seconds: "wall cpu".
T="$B/bench-compressed.time"
t() { /usr/bin/time -f '%e %U %S' -o "$T" "$@" >/dev/null 2>&1 || true; awk '{printf "%s %.2f\n", $1, $2 + $3}' "$T"; }
rival() { # FORMAT: decompress every file, then pg_waldump --stats
  local f=$1 tool ext out="$B/bench-compressed.rival"
  case $f in zst) tool=zstd ext=.zst ;; lz4|walg) tool=lz4 ext=.lz4 ;; gz) tool=gzip ext=.gz ;; esac
  local dir="$C/$f"; [ "$f" = walg ] && dir="$C/walg/wal_005"
  rm -rf "$out"; mkdir "$out"
  t bash -c "cd '$dir' && ls | xargs -P $cores -I{} sh -c '$tool -dc {} > $out/\$(basename {} $ext)' && '$pg' --stats -p '$out' $first $last"
  rm -rf "$out"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A W U
add() { W[$1]+="$2 "; U[$1]+="$3 "; }
cat "$arch"/* "$C"/*/* "$C"/walg/wal_005/* >/dev/null 2>&1 || true
echo "archive: $nseg segments, $(du -sm "$arch" | cut -f1) MB plain; zstd $(du -sm "$C/zst" | cut -f1) MB, lz4 $(du -sm "$C/lz4" | cut -f1) MB, gzip $(du -sm "$C/gz" | cut -f1) MB"
echo "$cores cores, load $(cut -d' ' -f1-3 /proc/loadavg); $runs interleaved runs; walscope ${WALSCOPE:-(this tree)} $wsargs"
for i in $(seq "$runs"); do
  add plain $(t "$ws" stats $wsargs "$arch")
  for f in zst lz4 gz walg; do
    add "ws-$f" $(t "$ws" stats $wsargs "$C/$f")
    add "rv-$f" $(rival $f)
  done
done
med() { echo "$1" | tr ' ' '\n' | grep . | median; }
pw=$(med "${W[plain]}"); pu=$(med "${U[plain]}")
printf '%-6s %8s %8s   %8s %8s   %-22s %-22s\n' "" "walscope" "" "rival" "" "rival/walscope" "walscope/plain"
printf '%-6s %8s %8s   %8s %8s   %-22s %-22s\n' format "wall s" "cpu s" "wall s" "cpu s" "(wall, cpu)" "(wall, cpu)"
printf '%-6s %8.2f %8.2f\n' plain "$pw" "$pu"
for f in zst lz4 gz walg; do
  ww=$(med "${W[ws-$f]}"); wu=$(med "${U[ws-$f]}"); rw=$(med "${W[rv-$f]}"); ru=$(med "${U[rv-$f]}")
  printf '%-6s %8.2f %8.2f   %8.2f %8.2f   %5.2fx %5.2fx          %5.2fx %5.2fx\n' "$f" "$ww" "$wu" "$rw" "$ru" \
    "$(echo "$rw / $ww" | bc -l)" "$(echo "$ru / $wu" | bc -l)" "$(echo "$ww / $pw" | bc -l)" "$(echo "$wu / $pu" | bc -l)"
done
echo "(walg: wal-g's layout, wal_005/<seg>.lz4; rival: xargs -P $cores <tool> -dc, then pg_waldump --stats)"
