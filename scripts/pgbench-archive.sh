# scripts/pgbench-archive.sh — sourced by the benchmark scripts.
#
# pgbench_archive DIR PORT INIT_SCALE CLIENTS SECONDS|SIZE [EXTRA_CONF...]
# makes, once (DIR/archive.done marks it), a pgbench archive with Debian's
# postgresql-15 in DIR/archive: a cluster with 16 MB segments, wal_level
# replica and archive_command, `pgbench -i -s INIT_SCALE`, a checkpoint,
# then SECONDS of the TPC-B-like script on CLIENTS clients; the server is
# stopped after (also on failure). EXTRA_CONF lines go to postgresql.conf.
# SIZE instead of SECONDS (a number followed by M or G, e.g. 20G) repeats
# rounds until the archive holds at least that much WAL: 60 s of the script
# (the history table grows, autovacuum and checkpoints come and go), then
# VACUUM FULL pgbench_accounts, as a maintenance window would (it rewrites
# the table and its index, logging every page as a full-page image: about
# 0.75 GB at scale 50, where a loaded 2-core machine writes 1-5 MB/s of
# TPC-B WAL). The data directory is removed after (it holds max_wal_size of
# WAL besides the tables, and nothing reads it).
# Sets $bin to PostgreSQL's bin directory. Run as root.
bench_tools() {
  bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
  if [ ! -x "$bin/pg_waldump" ] || [ ! -x "$bin/pgbench" ]; then
    apt-get update -qq && apt-get install -y -qq postgresql-15 >/dev/null
    bin=/usr/lib/postgresql/15/bin
  fi
  command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }
  command -v zstd >/dev/null || { apt-get update -qq && apt-get install -y -qq zstd >/dev/null; }
}

# bench_conf DIR PORT [EXTRA_CONF...] writes the archiving settings both
# archives use (and EXTRA_CONF lines) to DIR/data/postgresql.conf, and
# stops the server on exit, also on failure.
bench_conf() {
  local B=$1 port=$2
  shift 2
  {
    cat <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$B/sock'
wal_level = replica
archive_mode = on
archive_command = 'cp %p $B/archive/%f'
max_wal_size = 4GB
CONF
    local line
    for line in "$@"; do echo "$line"; done
  } >> "$B/data/postgresql.conf"
  trap 'su postgres -s /bin/bash -c "$bin/pg_ctl -D '"$B"'/data -m fast -w stop" >/dev/null 2>&1 || true' EXIT
}

pgbench_archive() {
  local B=$1 port=$2 scale=$3 clients=$4 secs=$5
  shift 5
  bench_tools
  mkdir -p "$B"
  [ -f "$B/archive.done" ] && return 0
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  su postgres -s /bin/bash -c "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  bench_conf "$B" "$port" "$@"
  local as="su postgres -s /bin/bash -c"
  $as "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  $as "$bin/pgbench -h $B/sock -p $port -U postgres -i -s $scale postgres" >/dev/null 2>&1
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc checkpoint"
  case $secs in
  *[MG])
    local want=${secs%[MG]}
    [ "${secs: -1}" = G ] && want=$((want * 1024))
    while [ "$(du -sm "$B/archive" | cut -f1)" -lt "$want" ]; do
      $as "$bin/pgbench -h $B/sock -p $port -U postgres -c $clients -j 2 -T 60 postgres" >/dev/null 2>&1
      $as "$bin/psql -h $B/sock -p $port -U postgres -qc 'vacuum full pgbench_accounts'"
    done
    ;;
  *) $as "$bin/pgbench -h $B/sock -p $port -U postgres -c $clients -j 2 -T $secs postgres" >/dev/null 2>&1 ;;
  esac
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc 'select pg_switch_wal()'" >/dev/null
  sleep 5
  $as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  case $secs in *[MG]) rm -rf "$B/data" ;; esac
  touch "$B/archive.done"
}

# pgbench_dated_archive DIR PORT INIT_SCALE CLIENTS DAYS [EXTRA_CONF...]
# makes, once (DIR/archive.done marks it), a pgbench archive whose commit
# times span DAYS real dates, one 16 MB segment a day, as a nightly batch
# sees it: the server runs under libfaketime (Debian's libfaketime; the
# clock is shifted, not sped up, so checkpoint_timeout and autovacuum keep
# their real pace within a day) and its clock is set a day forward before
# each day. `pgbench -i -s INIT_SCALE` and a checkpoint on the first date
# (DAYS days before today), then per day: the date moves on, 1 s rounds of the TPC-B-like script on CLIENTS
# clients run until the day's segment holds 14 MB, and pg_switch_wal()
# ends it (the rest is the switch's padding; the day's timed checkpoint
# comes with the jump of the clock). DIR/archive/days lists each day's first segment, in order (a round
# that overruns its segment makes a day of two; the list says so). With
# DAY_CHECKPOINT=1 each day ends with a CHECKPOINT before its switch: a
# day of a real server holds dozens of checkpoints (checkpoint_timeout 5
# min), a day of seconds none (an append ends at the last one's redo
# point). Sets $bin. Run as root.
pgbench_dated_archive() {
  local B=$1 port=$2 scale=$3 clients=$4 days=$5
  shift 5
  bench_tools
  local ft
  ft=$(ls /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 2>/dev/null || true)
  if [ -z "$ft" ]; then
    apt-get update -qq && apt-get install -y -qq libfaketime >/dev/null
    ft=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
  fi
  mkdir -p "$B"
  [ -f "$B/archive.done" ] && return 0
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"
  echo "-${days}d" >"$B/faketime"
  chown -R postgres "$B"
  # the server's processes read the shift from $B/faketime (re-read every
  # second); pgbench and psql keep the real clock
  local env="LD_PRELOAD=$ft FAKETIME_TIMESTAMP_FILE=$B/faketime FAKETIME_CACHE_DURATION=1"
  local as="su postgres -s /bin/bash -c"
  $as "env $env $bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
  bench_conf "$B" "$port" "$@"
  $as "env $env $bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  local psql="$bin/psql -h $B/sock -p $port -U postgres -Atqc"
  $as "$bin/pgbench -h $B/sock -p $port -U postgres -i -s $scale postgres" >/dev/null 2>&1
  $as "$psql checkpoint"
  $as "$psql 'select pg_switch_wal()'" >/dev/null
  local d seg f off
  : >"$B/days"
  for ((d = days - 1; d >= 0; d--)); do
    # renamed into place: a process reading the file while it is
    # rewritten would find it empty and take the real clock
    echo "-${d}d" >"$B/faketime.new"; mv "$B/faketime.new" "$B/faketime"
    sleep 1.2 # the cache's second
    seg=
    while :; do
      $as "$bin/pgbench -h $B/sock -p $port -U postgres -c $clients -j 2 -T 1 postgres" >/dev/null 2>&1
      IFS='|' read -r f off < <($as "$psql 'select * from pg_walfile_name_offset(pg_current_wal_lsn())'")
      # the first round names the day's segment (right after a switch the
      # current LSN is the boundary, which names the segment before)
      [ -n "$seg" ] || { seg=$f; echo "$seg" >>"$B/days"; }
      [ "$f" = "$seg" ] && [ "$off" -lt $((14 << 20)) ] || break
    done
    [ "${DAY_CHECKPOINT:-0}" = 1 ] && $as "$psql checkpoint"
    $as "$psql 'select pg_switch_wal()'" >/dev/null
  done
  sleep 5
  $as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  rm -rf "$B/data"
  mv "$B/days" "$B/archive/days"
  touch "$B/archive.done"
}
