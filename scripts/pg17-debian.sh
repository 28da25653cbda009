#!/bin/bash
# scripts/pg17-debian.sh [DIR] — PostgreSQL 17's pg_basebackup,
# pg_combinebackup, pg_controldata, initdb, pg_ctl and postgres for the
# incremental-backup tests of package backup (backup/incremental_test.go),
# on a Debian 12 machine whose glibc (2.36) is older than what Debian 13
# (trixie)'s postgresql-17 needs (2.38+).
#
# Debian trixie's postgresql-17, postgresql-client-17 and the libraries they
# link (glibc included) are downloaded with apt-get download through an apt
# state of their own under DIR/apt (nothing of the system's apt setup is
# changed), unpacked with dpkg -x into DIR/root, and each binary is made to
# use trixie's dynamic loader and libraries with patchelf
# (--set-interpreter, --force-rpath --set-rpath: DT_RPATH, which unlike
# DT_RUNPATH serves the libraries' own dependencies too), and DIR/bin links to
# them (default
# DIR: /opt/walscope/pg17-debian as root, else ~/.cache/walscope/pg17-debian),
# where the tests look (WALSCOPE_PG17_BIN overrides). Needs apt-get, dpkg and
# patchelf (apt-get install patchelf). Idempotent.
set -euo pipefail
if [ "$(id -u)" = 0 ]; then
  DIR=${1:-/opt/walscope/pg17-debian}
else
  DIR=${1:-$HOME/.cache/walscope/pg17-debian}
fi
command -v patchelf >/dev/null || { echo "$0: patchelf not found (apt-get install patchelf)" >&2; exit 1; }
APT=$DIR/apt
mkdir -p "$APT/state/lists/partial" "$APT/cache/archives/partial" "$APT/debs" "$DIR/root"
cat > "$APT/sources.list" <<SRC
deb http://deb.debian.org/debian trixie main
SRC
: > "$APT/status"
aptopts=(-o Dir::State="$APT/state" -o Dir::State::status="$APT/status" -o Dir::Cache="$APT/cache"
  -o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts=/nonexistent
  -o APT::Architecture=amd64 -o Debug::NoLocking=1)
apt-get "${aptopts[@]}" update -qq
# the packages and, recursively, what they depend on (an empty status: all
# of it, glibc included, comes from trixie)
pkgs=$(apt-cache "${aptopts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances postgresql-17 postgresql-client-17 \
  | grep -v '^ ' | grep -v '^<' | sort -u | grep -v -E '^(debconf|debconf-2.0|perl|perl-base|perl-modules-.*|libperl.*|postgresql-common|postgresql-client-common|ssl-cert|adduser|passwd|login|init-system-helpers|lsb-base|sysvinit-utils|tzdata|locales|ucf|sensible-utils|cron|procps|logrotate|debianutils|base-files|dpkg|coreutils|bash|dash|sed|grep|gzip|tar|util-linux|mount|libpam.*|systemd.*|libsystemd.*|libudev.*|libselinux.*|libsemanage.*|libaudit.*|libcap-ng.*|libdb5.3t64|libjson-perl|.*-perl)$' || true)
cd "$APT/debs"
for p in $pkgs; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get "${aptopts[@]}" download -qq "$p" 2>/dev/null || echo "$0: could not download $p (skipped)" >&2
done
for d in "$APT"/debs/*.deb; do dpkg -x "$d" "$DIR/root"; done
LIBDIRS="$DIR/root/usr/lib/x86_64-linux-gnu:$DIR/root/lib/x86_64-linux-gnu:$DIR/root/usr/lib/postgresql/17/lib"
LD=
for cand in "$DIR"/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$DIR"/root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$DIR"/root/usr/lib64/ld-linux-x86-64.so.2; do
  if [ -e "$cand" ]; then LD=$cand; break; fi
done
[ -n "$LD" ] || { echo "$0: trixie's ld-linux-x86-64.so.2 not found under $DIR/root" >&2; exit 1; }
# patched where dpkg -x put them: postgres finds share/ and lib/ relative
# to its own directory (Debian's /usr/lib/postgresql/17/bin ->
# /usr/share/postgresql/17), which holds under DIR/root too
for b in postgres initdb pg_ctl pg_basebackup pg_combinebackup pg_controldata pg_waldump pg_walsummary psql; do
  f=$DIR/root/usr/lib/postgresql/17/bin/$b
  [ -f "$f" ] || { echo "$0: $b not in the packages" >&2; continue; }
  patchelf --set-interpreter "$LD" --force-rpath --set-rpath "$LIBDIRS" "$f"
done
[ -L "$DIR/bin" ] || rm -rf "$DIR/bin"
ln -sfn root/usr/lib/postgresql/17/bin "$DIR/bin"
chmod -R a+rX "$DIR"
"$DIR/bin/pg_basebackup" --version
"$DIR/bin/postgres" --version
