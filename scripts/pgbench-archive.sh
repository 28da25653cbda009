# scripts/pgbench-archive.sh — sourced by the benchmark scripts.
#
# pgbench_archive DIR PORT INIT_SCALE CLIENTS SECONDS [EXTRA_CONF...]
# makes, once (DIR/archive.done marks it), a pgbench archive with Debian's
# postgresql-15 in DIR/archive: a cluster with 16 MB segments, wal_level
# replica and archive_command, `pgbench -i -s INIT_SCALE`, a checkpoint,
# then SECONDS of the TPC-B-like script on CLIENTS clients; the server is
# stopped after (also on failure). EXTRA_CONF lines go to postgresql.conf.
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

pgbench_archive() {
  local B=$1 port=$2 scale=$3 clients=$4 secs=$5
  shift 5
  bench_tools
  mkdir -p "$B"
  [ -f "$B/archive.done" ] && return 0
  rm -rf "$B/data" "$B/archive" "$B/sock"; mkdir -p "$B/archive" "$B/sock"; chown -R postgres "$B"
  su postgres -s /bin/bash -c "$bin/initdb -D $B/data -A trust -U postgres >$B/initdb.log"
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
  local as="su postgres -s /bin/bash -c"
  $as "$bin/pg_ctl -D $B/data -l $B/server.log -w start" >/dev/null
  $as "$bin/pgbench -h $B/sock -p $port -U postgres -i -s $scale postgres" >/dev/null 2>&1
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc checkpoint"
  $as "$bin/pgbench -h $B/sock -p $port -U postgres -c $clients -j 2 -T $secs postgres" >/dev/null 2>&1
  $as "$bin/psql -h $B/sock -p $port -U postgres -qc 'select pg_switch_wal()'" >/dev/null
  sleep 5
  $as "$bin/pg_ctl -D $B/data -m fast -w stop" >/dev/null
  trap - EXIT
  touch "$B/archive.done"
}
