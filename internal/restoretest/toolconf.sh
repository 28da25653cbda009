# internal/restoretest/toolconf.sh — sourced by internal/restoretest/tools.sh
# and backup/testdata/scenario.sh: the pgBackRest and Barman configuration of
# a test's private cluster, written once here.
#
# Callers set W (the work directory), PGD (the data directory), PORT (the
# server's port, its socket in $W/sock) and BIN (the server's bin directory,
# Barman's path_prefix) first.

# pgbr_conf RETENTION: WORK/pgbackrest.conf, a repository in $W/pgbr keeping
# RETENTION full backups, stanza "demo" for the cluster; its log, lock and
# spool directories under $W. Sets PGBR, the command line with that config.
pgbr_conf() {
  mkdir -p "$W/pgbr" "$W/pgbr-log" "$W/pgbr-lock" "$W/pgbr-spool"
  cat > "$W/pgbackrest.conf" <<CONF
[global]
repo1-path=$W/pgbr
repo1-retention-full=$1
log-path=$W/pgbr-log
lock-path=$W/pgbr-lock
spool-path=$W/pgbr-spool
log-level-console=warn
log-level-file=info
start-fast=y

[demo]
pg1-path=$PGD
pg1-port=$PORT
pg1-socket-path=$W/sock
CONF
  PGBR="pgbackrest --config=$W/pgbackrest.conf --stanza=demo"
}

# barman_conf: WORK/barman.conf, a Barman home in $W/barman run by the
# postgres user as root (else the caller), with no server yet. Sets BM, the
# command line with that config.
barman_conf() {
  mkdir -p "$W/barman-log" "$W/barman.d"
  cat > "$W/barman.conf" <<CONF
[barman]
barman_home = $W/barman
barman_user = $(if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi)
log_file = $W/barman-log/barman.log
log_level = INFO
configuration_files_directory = $W/barman.d
CONF
  BM="barman -c $W/barman.conf"
}

# barman_server NAME DESCRIPTION [SETTING...]: a Barman server NAME for the
# cluster (backup_method = postgres, WAL archived by archive_command into
# $W/barman/NAME/incoming, no streaming), with extra settings lines (e.g.
# "backup_compression = gzip").
barman_server() {
  local name=$1 desc=$2
  shift 2
  mkdir -p "$W/barman/$name/incoming"
  {
    echo
    echo "[$name]"
    echo "description = $desc"
    echo "conninfo = host=$W/sock port=$PORT user=postgres dbname=postgres"
    echo "streaming_conninfo = host=$W/sock port=$PORT user=postgres"
    echo "backup_method = postgres"
    for s in "$@"; do echo "$s"; done
    echo "archiver = on"
    echo "streaming_archiver = off"
    echo "path_prefix = $BIN"
  } >> "$W/barman.conf"
}
