# internal/restoretest/lib.sh — sourced by scenario.sh and tools.sh: what both
# need to drive a PostgreSQL 15 server of their own in a work folder W with
# port PORT, as the postgres user when run as root.
# Callers set W, PORT and BIN first; lib.sh sets PGD, PSQL, asp, bgsp, log,
# sql, val, fact, wait_archived and pg_initdb.
set -euo pipefail
unset TZ
export LC_ALL=C
"$BIN/postgres" --version | grep -q 'PostgreSQL) 15\.' || { echo "$(basename "$0"): $BIN is not PostgreSQL 15" >&2; exit 1; }
PGD=$W/data F=$W/facts.env
mkdir -p "$W/sock"
PSQL="$BIN/psql -h $W/sock -p $PORT -U postgres -d postgres -X -qAt -v ON_ERROR_STOP=1"
# asp runs a command line as the server's user; bgsp runs a script file so.
if [ "$(id -u)" = 0 ]; then
  asp() { su postgres -s /bin/bash -c "$1"; }
  bgsp() { su postgres -s /bin/bash "$@"; }
else
  asp() { bash -c "$1"; }
  bgsp() { bash "$@"; }
fi
log() { echo "[$(date -u +%H:%M:%S.%N | cut -c1-12)] $*" >&2; }
sql() { asp "$PSQL" ; }                      # a script on stdin
val() { asp "$PSQL -c \"$1\""; }             # one value
fact() { echo "$1=$2" >> "$F"; }
# wait_archived waits until archive_command has taken every finished segment.
wait_archived() {
  local i
  for i in $(seq 1 300); do
    ls "$PGD/pg_wal/archive_status" | grep -q '\.ready$' || return 0
    sleep 0.1
  done
  echo "$(basename "$0"): archiving did not finish" >&2; exit 1
}
# pg_initdb ARCHIVE_COMMAND [MORE CONF LINES]: initdb (1 MB segments) and the
# settings both scripts share, then start the server.
pg_initdb() {
  asp "$BIN/initdb -D $PGD -A trust -U postgres --wal-segsize=1 >$W/initdb.log 2>&1"
  cat >> "$PGD/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$W/sock'
wal_level = replica
archive_mode = on
archive_command = '$1'
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
fsync = off
logging_collector = off
${2:-}
CONF
  asp "$BIN/pg_ctl -D $PGD -l $W/server.log -w start" >/dev/null
}
