#!/usr/bin/env bash
# bench-short.sh [RUNS] — walscope against pg_waldump on switched, mostly
# empty segments (issue 16, goal 2).
#
# Makes, once (kept in $BENCH_DIR, default /tmp/walscope-bench-short), an
# archive with Debian's postgresql-15: 16 MB segments, wal_level replica,
# archive_command cp (sparse: the zeroes after each switch take no disk),
# then SWITCHES (default 200) rounds of a little work (one insert) and
# `select pg_switch_wal()`, so that most segments hold a few KB of WAL
# followed by zeroes. Then times, on the same files, RUNS alternating runs
# of each pair (default 7) and prints the median times and ratios:
#   pg_waldump --stats=record  vs  walscope stats --by record
#   pg_waldump -q              vs  walscope verify
# and both again with walscope -j 1 (one reader: no span set-up per 64 MB).
# With perf installed, also the CPU time of each (task-clock, median of the
# runs), which other work on the machine moves less than the wall time.
# WALSCOPE=path times another walscope binary instead of a build of the tree;
# BEFORE=path times one more (a build from before a change) in the same
# rounds, with its own ratios. Run as root (the server runs as postgres).
# Measures; asserts nothing.
set -euo pipefail
runs=${1:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench-short}
switches=${SWITCHES:-200}
port=55498
. "$root/scripts/pgbench-archive.sh"
bench_tools
mkdir -p "$B"
if [ ! -f "$B/archive.done" ]; then
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  as="su postgres -s /bin/bash -c"
  $as "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  cat >> "$B/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$B/sock'
wal_level = replica
archive_mode = on
archive_command = 'cp --sparse=always %p $B/archive/%f'
CONF
  trap '$as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null 2>&1 || true' EXIT
  $as "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc 'create table t (i int, s text)'"
  for i in $(seq "$switches"); do
    echo "insert into t select g, md5(g::text) from generate_series(1, 10) g; select pg_switch_wal();"
  done | $as "$bin/psql -h $B/sock -p $port -U postgres -q" >/dev/null
  sleep 5
  $as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  touch "$B/archive.done"
fi
cd "$B"
segs=$(ls archive | grep -E '^[0-9A-F]{24}$' | sort)
first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
(cd "$root" && go build -o "$B/walscope" ./cmd/walscope)
ws=${WALSCOPE:-$B/walscope}; pg="$bin/pg_waldump"
echo "archive: $(echo "$segs" | wc -l) segments, $(du -sm archive | cut -f1) MB stored, $first .. $last; $(nproc) cores; $runs runs each"
cat archive/* >/dev/null
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc; }
# c CMD: CPU milliseconds of one run of CMD (perf's task-clock; CMD is
# split into words, not run by a shell, whose own start would count).
haveperf=
perf stat -x, -e task-clock true >/dev/null 2>&1 && haveperf=1
# shellcheck disable=SC2086
c() { perf stat -x, -e task-clock $1 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1; exit}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
before=${BEFORE:-}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
pair() {
  local name=$1 pgcmd=$2 wscmd=$3 p=() w=() b=() pc=() wc=() bc=()
  local bcmd=${wscmd/#$ws /$before }
  for i in $(seq "$runs"); do
    p+=("$(t bash -c "$pgcmd")"); w+=("$(t bash -c "$wscmd")")
    [ -n "$before" ] && b+=("$(t bash -c "$bcmd")")
    if [ -n "$haveperf" ]; then
      pc+=("$(c "$pgcmd")"); wc+=("$(c "$wscmd")")
      [ -n "$before" ] && bc+=("$(c "$bcmd")")
    fi
  done
  local pm wm line; pm=$(printf '%s\n' "${p[@]}" | median); wm=$(printf '%s\n' "${w[@]}" | median)
  line=$(printf '%-10s pg_waldump %7.3fs  walscope %7.3fs  ratio %5.2fx' "$name" "$pm" "$wm" "$(echo "$pm / $wm" | bc -l)")
  local pcm wcm
  if [ -n "$haveperf" ]; then
    pcm=$(printf '%s\n' "${pc[@]}" | median); wcm=$(printf '%s\n' "${wc[@]}" | median)
    line+=$(printf '   CPU %6.1f / %6.1f ms  ratio %5.2fx' "$pcm" "$wcm" "$(echo "$pcm / $wcm" | bc -l)")
  fi
  echo "$line"
  if [ -n "$before" ]; then
    local bm; bm=$(printf '%s\n' "${b[@]}" | median)
    line=$(printf '%-10s    before: walscope %7.3fs  ratio %5.2fx' "" "$bm" "$(echo "$pm / $bm" | bc -l)")
    if [ -n "$haveperf" ]; then
      local bcm; bcm=$(printf '%s\n' "${bc[@]}" | median)
      line+=$(printf '                 CPU %6.1f ms  ratio %5.2fx' "$bcm" "$(echo "$pcm / $bcm" | bc -l)")
    fi
    echo "$line"
  fi
}
pair stats  "$pg --stats=record -p archive $first $last" "$ws stats --by record -p archive $first $last"
pair verify "$pg -q -p archive $first $last"             "$ws verify -p archive $first $last"
pair "stats -j1"  "$pg --stats=record -p archive $first $last" "$ws stats -j 1 --by record -p archive $first $last"
pair "verify -j1" "$pg -q -p archive $first $last"             "$ws verify -j 1 -p archive $first $last"
