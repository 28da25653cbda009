#!/bin/bash
# heap/testdata/wcc/generate.sh — real PostgreSQL 15 WAL written with
# wal_consistency_checking = 'heap,heap2': every Heap and Heap2 record then
# carries an image of each page it touches as the server left it right after
# the change (BKPIMAGE_APPLY off unless it is also a full-page write). It is
# the oracle of heap.Redo for every record type SQL can write, each record
# checked on its own (TestRedoAgainstImages reads it beside the fixtures and
# corpora).
#
# Cluster: initdb -k (checksums, so VISIBLE sets the page LSN and hint bits
# write FPI_FOR_HINT), 1 MB segments, wal_level = replica (so UPDATE uses
# prefix/suffix compression), wal_compression = zstd (to keep the images
# small), autovacuum off. Workload: inserts, COPY (MULTI_INSERT), HOT and
# non-HOT updates, deletes, INSERT ... ON CONFLICT (HEAP_CONFIRM and a
# speculative insertion killed by a conflict), row locks, a multixact of two
# prepared transactions, a FOR KEY SHARE lock on a row a prepared
# transaction updated (LOCK_UPDATED), TOAST, an aborted transaction, VACUUM
# (PRUNE, VACUUM, VISIBLE, catalog INPLACE), VACUUM FREEZE (FREEZE_PAGE).
#
# Writes archive.tar.zst (archive/ with the segments), ref.tar.zst (ref/:
# pg_waldump 15's outputs, as fixtures/lib.sh makes them) and settings.txt.
# Run as root (the server runs as postgres): bash heap/testdata/wcc/generate.sh
set -euo pipefail
unset TZ
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${WORK:-/tmp/walscope-heap-wcc}
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
"$BIN/postgres" --version | grep -q 'PostgreSQL) 15\.' || { echo "need PostgreSQL 15 in $BIN" >&2; exit 1; }
command -v zstd >/dev/null || { echo "need zstd" >&2; exit 1; }
rm -rf "$W"; mkdir -p "$W/archive" "$W/ref" "$W/sock"; chown -R postgres "$W"
PGD=$W/data A=$W/archive R=$W/ref
asp() { su postgres -s /bin/bash -c "$1"; }
asp "$BIN/initdb -D $PGD -k -A trust -U postgres --wal-segsize=1 >$W/initdb.log"
cat >> "$PGD/postgresql.conf" <<CONF
port = 55471
listen_addresses = ''
unix_socket_directories = '$W/sock'
wal_level = replica
wal_compression = zstd
wal_consistency_checking = 'heap,heap2'
max_prepared_transactions = 10
autovacuum = off
archive_mode = on
archive_command = 'cp %p $A/%f'
CONF
trap 'asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null 2>&1 || true' EXIT
asp "$BIN/pg_ctl -D $PGD -l $W/server.log -w start" >/dev/null
PSQL="$BIN/psql -h $W/sock -p 55471 -U postgres -X -qAt -v ON_ERROR_STOP=1"
asp "$PSQL" <<'SQL'
create table h (id int primary key, a int, b text, c text) with (fillfactor = 70);
insert into h select g, g, 'abc' || g, repeat('z', g % 40) from generate_series(1, 400) g;
checkpoint;
select count(*) from h;
update h set a = a + 1 where id % 10 = 0;
update h set b = b || 'x' where id % 17 = 0;
update h set c = repeat('q', 30) where id % 29 = 0;
update h set id = id + 100000 where id % 23 = 0;
delete from h where id % 19 = 0;
begin; select id from h where id between 100 and 120 for update; commit;
begin; select id from h where id between 130 and 135 for no key update; commit;
insert into h values (500000, 1, 'new', 'n') on conflict do nothing;
insert into h values (500000, 2, 'again', 'n') on conflict (id) do update set a = h.a + 10;
begin; insert into h values (600000, 1, 'gone', 'g'); rollback;
copy h from program 'seq 700000 700500 | sed "s/.*/&,1,copied,c/"' with (format csv);
create table mx (id int primary key, n int);
insert into mx select g, 0 from generate_series(1, 10) g;
begin; select * from mx where id = 1 for share; prepare transaction 'share1';
begin; select * from mx where id = 1 for share; prepare transaction 'share2';
begin; update mx set n = n + 1 where id = 2; prepare transaction 'upd2';
begin; select * from mx where id = 2 for key share; commit;
commit prepared 'share1';
commit prepared 'share2';
commit prepared 'upd2';
create table tt (id int, v text);
alter table tt alter column v set storage external;
insert into tt select g, repeat(md5(g::text), 120) from generate_series(1, 20) g;
update tt set v = v || 'y' where id % 3 = 0;
delete from tt where id % 4 = 0;
select count(*) from h;
vacuum h;
vacuum tt;
update h set a = -a where id % 7 = 0;
vacuum freeze h;
vacuum freeze mx;
select pg_switch_wal();
SQL
for i in $(seq 1 60); do
  [ "$(ls "$A" | wc -l)" -gt 0 ] && [ -z "$(ls "$PGD/pg_wal/archive_status" | grep ready)" ] && break; sleep 0.5
done
asp "$BIN/pg_ctl -D $PGD -m fast -w stop" >/dev/null
trap - EXIT
. "$HERE/../../../fixtures/lib.sh"
fixture_ref heap-wcc 1
sed -i 's/^wal_compression=off/wal_compression=zstd/; s/^checksums=0/checksums=1/' "$R/settings.txt"
echo "wal_consistency_checking=heap,heap2" >> "$R/settings.txt"
tarflags=(--sort=name --owner=0 --group=0 --numeric-owner --mode=u+rw,go+r)
tar -C "$W" "${tarflags[@]}" -cf - archive | zstd -q -19 -o "$HERE/archive.tar.zst.new"
tar -C "$W" "${tarflags[@]}" -cf - ref | zstd -q -19 -o "$HERE/ref.tar.zst.new"
mv "$HERE/archive.tar.zst.new" "$HERE/archive.tar.zst"
mv "$HERE/ref.tar.zst.new" "$HERE/ref.tar.zst"
cp "$R/settings.txt" "$HERE/settings.txt"
echo "heap-wcc: $(echo "$segs" | wc -l) segments, $(grep -c '^rmgr' "$R/records-00000001.txt") records"
rm -rf "$W"
