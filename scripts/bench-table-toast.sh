#!/bin/bash
# scripts/bench-table-toast.sh [MB] [OLD_REV]
#
# walscope table's memory on a table whose TOAST relation is large (issue
# 27: "memory bounded"). A PostgreSQL 15 cluster (bench-cluster-setup.sh):
# a table `docs` of MB megabytes (default 400) of incompressible values
# stored out of line (STORAGE EXTERNAL: about 2 kB chunks), a plain base
# backup, then a few updates and the restore point `bench`. Runs `walscope
# table --relation docs --target-name bench` and prints its time and peak
# RSS with the TOAST relation's size; with OLD_REV (a git revision) the same
# with walscope built at that revision, and the ratio of the two peaks.
# Checks the output against the restored server's COPY (cmp). Run as root.
set -euo pipefail
MB=${1:-400}; OLD=${2:-}
W=${WORK:-/tmp/walscope-bench-toast}
PORT=55493
. "$(dirname "${BASH_SOURCE[0]}")/bench-cluster-setup.sh"
bench_start "autovacuum = off"
rows=$((MB * 1024 / 8)) # 8 kB values
as "$P -c \"create table docs (id int primary key, body text); alter table docs alter column body set storage external;
insert into docs select g, (select string_agg(md5(g::text || h::text), '') from generate_series(1, 256) h) from generate_series(1, $rows) g\""
as "$BIN/pg_basebackup -h $W/sock -p $PORT -U postgres -D $W/base -X none -c fast"
as "$P -c \"update docs set body = body || 'x' where id % 100 = 0\""
as "$P -c \"select pg_create_restore_point('bench')\"" >/dev/null
toast=$(as "$P -c \"select pg_size_pretty(pg_total_relation_size(reltoastrelid)) from pg_class where relname = 'docs'\"")
as "$P -c \"copy docs to '$W/real.copy'\""
bench_stop
run() { # BINARY LABEL
  /usr/bin/time -f "%e %M" -o "$W/$2.time" "$1" table --backup "$W/base" --relation docs --target-name bench --out "$W/$2.copy" "$W/arch"
  cmp "$W/real.copy" "$W/$2.copy" || { echo "$2: walscope table's output differs from the server's COPY" >&2; exit 1; }
  read -r secs rss < "$W/$2.time"
  echo "$2: walscope table --relation docs: ${secs} s, max RSS $((rss / 1024)) MB, output identical ($(wc -l < "$W/$2.copy") rows)"
}
echo "docs: $rows rows, TOAST relation $toast; WAL $(du -sm "$W/arch" | cut -f1) MB"
run "$W/walscope" now
if [ -n "$OLD" ]; then
  rm -rf "$W/old-src"; git -C "$HERE" worktree add -q --detach "$W/old-src" "$OLD"
  (cd "$W/old-src" && go build -o "$W/walscope-old" ./cmd/walscope)
  git -C "$HERE" worktree remove --force "$W/old-src"
  run "$W/walscope-old" "$OLD"
  read -r _ a < "$W/now.time"; read -r _ b < "$W/$OLD.time"
  echo "peak RSS: $(echo "scale=1; $b / $a" | bc)x less than at $OLD"
fi
