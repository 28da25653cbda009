#!/usr/bin/env bash
# bench-scale.sh DIR [RUNS] — does walscope scale with the archive (issue 16,
# goal 7)? Peak memory should be flat and time linear in the WAL read.
#
# Makes, once, DIR/archive: a pgbench archive of $SIZE (default 20G) with
# Debian's postgresql-15 (scripts/pgbench-archive.sh: scale 50, 2 clients,
# rounds of 60 s of TPC-B and a VACUUM FULL of pgbench_accounts until the
# archive is that large; checkpoints every 60 s, synchronous_commit and fsync
# off: nothing here needs durability, and a loaded machine writes far more
# WAL without waiting for its disk). About 40 minutes for 20 GB on a loaded
# 2-core machine. Then, for each size of $SIZES (GB, default "1 5 20"), a
# prefix of the archive (DIR/prefix-<N>G: hard links to its first N*64
# segments; the largest size is the archive itself when it has no more),
# times RUNS runs (default 3; medians) of
#   walscope stats     and  pg_waldump --stats
#   walscope verify    and  pg_waldump -q
# and prints wall and CPU (user+sys) seconds, peak RSS (/usr/bin/time %M)
# and CPU seconds per GB of each. WALSCOPE=path times another walscope
# binary. Run as root (the server runs as postgres). Measures; asserts nothing.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [RUNS]" >&2; exit 2; }
mkdir -p "$1"
B=$(cd "$1" && pwd)
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pgbench-archive.sh"
pgbench_archive "$B" 55497 50 2 "${SIZE:-20G}" "checkpoint_timeout = 60s" "max_wal_size = 2GB" \
  "synchronous_commit = off" "fsync = off"
pg="$bin/pg_waldump"
ws=${WALSCOPE:-}
if [ -z "$ws" ]; then
  ws="$B/walscope"
  (cd "$root" && CGO_ENABLED=0 go build -o "$ws" ./cmd/walscope)
fi
segs=$(cd "$B/archive" && ls | grep -E '^[0-9A-F]{24}$' | sort)
total=$(echo "$segs" | wc -l)
segmb=$(( $(stat -c %s "$B/archive/$(echo "$segs" | head -1)") >> 20 ))
echo "archive: $total segments of $segmb MB ($(du -sm "$B/archive" | cut -f1) MB), $(echo "$segs" | head -1) .. $(echo "$segs" | tail -1)"
echo "$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB RAM, load $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each; walscope ${WALSCOPE:-(this tree)}"

T="$B/bench-scale.time"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# measure NAME GB CMD...: RUNS runs; prints one row.
measure() {
  local name=$1 gb=$2 w=() us=() sy=() m=() rc=0
  shift 2
  for i in $(seq "$runs"); do
    /usr/bin/time -f '%e %U %S %M %x' -o "$T" "$@" >/dev/null 2>&1 || true
    read -r e u s k x < <(tail -1 "$T")
    w+=("$e"); us+=("$u"); sy+=("$s"); m+=("$k"); rc=$x
  done
  local wm um sm mm
  wm=$(printf '%s\n' "${w[@]}" | median); um=$(printf '%s\n' "${us[@]}" | median)
  sm=$(printf '%s\n' "${sy[@]}" | median); mm=$(printf '%s\n' "${m[@]}" | median)
  printf '%6s %-20s %8.2f %8.2f %8.2f %9.1f %9.3f %9.3f %4s\n' "${gb}G" "$name" "$wm" "$um" "$sm" "$(echo "$mm / 1024" | bc -l)" \
    "$(echo "$um / $gb" | bc -l)" "$(echo "($um + $sm) / $gb" | bc -l)" "$rc"
}
# user: the program's own work; sys: the kernel's, mostly copying the files
# out of the page cache, or reading them from the disk where they do not fit
# (then wall time is the disk's too).
printf '%6s %-20s %8s %8s %8s %9s %9s %9s %4s\n' size program "wall s" "user s" "sys s" "RSS MB" "user s/GB" "cpu s/GB" exit
for gb in ${SIZES:-1 5 20}; do
  n=$(( gb * 1024 / segmb ))
  if [ "$n" -ge "$total" ]; then
    dir="$B/archive"; n=$total
  else
    dir="$B/prefix-${gb}G"
    if [ "$(ls "$dir" 2>/dev/null | wc -l)" != "$n" ]; then
      rm -rf "$dir"; mkdir "$dir"
      for s in $(echo "$segs" | head -"$n"); do ln "$B/archive/$s" "$dir/$s"; done
    fi
  fi
  first=$(echo "$segs" | head -1); last=$(echo "$segs" | head -"$n" | tail -1)
  real=$(echo "scale=2; $n * $segmb / 1024" | bc)
  # Read the files once, so that every program finds them in the page cache,
  # where they fit (half the memory available); else each run reads the disk
  # and its wall time is the disk's (compare CPU times then).
  if [ $((n * segmb)) -lt $(( $(awk '/MemAvailable/{print $2}' /proc/meminfo) / 2048 )) ]; then
    cat "$dir"/* >/dev/null
  fi
  measure "walscope stats" "$real" "$ws" stats "$dir"
  measure "pg_waldump --stats" "$real" "$pg" --stats -p "$dir" "$first" "$last"
  measure "walscope verify" "$real" "$ws" verify "$dir"
  measure "pg_waldump -q" "$real" "$pg" -q -p "$dir" "$first" "$last"
done
echo "(exit: the last run's; a prefix ends inside a record, which pg_waldump reports as an error)"
