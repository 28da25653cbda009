#!/usr/bin/env bash
# bench-pglz.sh [WALDIR [RUNS]] — walscope's pglz compressor against
# PostgreSQL's own, side by side, on the same pages.
#
# Fetches the Debian source of the installed postgresql-15 (PGLZ_PG_VERSION
# overrides the version) from deb.debian.org, checks its SHA-256 against the
# .dsc, takes src/common/pg_lzcompress.c out of it and compiles it, with
# Debian's compiler flags (pg_config --cflags) and a stand-in for the
# postgres_fe.h types, into a small harness. Nothing of PostgreSQL's code is
# kept in this repository; the download is cached in $BENCH_DIR/pglz-src.
#
# The pages are the full-page images of WALDIR (default: the pgbench archive
# of bench-pgwaldump.sh, $BENCH_DIR/archive, BENCH_DIR=/tmp/walscope-bench),
# rebuilt and without their hole, as XLogCompressBackupBlock compresses them
# (scripts/pglzbench pages; PGLZ_MAX_MB, default 64, and PGLZ_EVERY, default
# 4, pick which). Each side compresses every page RUNS times (default 7),
# alternating C and Go, one run each in turn, on one thread, timed by that
# thread's CPU time, so that a busy machine slows both alike. It prints each
# side's MB/s of input per core (the best run and the median), the ratio
# Go/C of each pair of neighbouring runs and their median (the figure to
# quote), and Go's heap allocations per page. Then each page's result
# (pglz_compress's return value and bytes) must be the same from both, size
# and content, or the script fails (pglzbench check).
# Measures; asserts only that identity.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_DIR:-/tmp/walscope-bench}
wal=${1:-$B/archive}
runs=${2:-7}
if [ ! -d "$wal" ]; then
  echo "bench-pglz.sh: no WAL directory $wal (make one with scripts/bench-pgwaldump.sh, or pass a directory of segments)" >&2
  exit 2
fi
work=$B/pglz
src=$B/pglz-src
mkdir -p "$work" "$src"

# PostgreSQL's source, from the Debian archive (main or security pool).
ver=${PGLZ_PG_VERSION:-$(dpkg-query -W -f '${Version}' postgresql-15 2>/dev/null || echo 15.18-0+deb12u1)}
dsc=postgresql-15_$ver.dsc
fetch() { # fetch FILE: from whichever pool has it
  [ -s "$src/$1" ] && return 0
  for pool in http://deb.debian.org/debian/pool/main/p/postgresql-15 \
              http://deb.debian.org/debian-security/pool/updates/main/p/postgresql-15; do
    if curl -fsS -o "$src/$1.part" "$pool/$1" 2>/dev/null; then mv "$src/$1.part" "$src/$1"; return 0; fi
  done
  rm -f "$src/$1.part"
  echo "bench-pglz.sh: cannot download $1 from deb.debian.org" >&2
  exit 2
}
fetch "$dsc"
orig=$(awk '/^Checksums-Sha256:/ {s=1; next} /^[^ ]/ {s=0} s && $3 ~ /orig\.tar/ {print $3}' "$src/$dsc")
sum=$(awk -v f="$orig" '/^Checksums-Sha256:/ {s=1; next} /^[^ ]/ {s=0} s && $3 == f {print $1}' "$src/$dsc")
fetch "$orig"
echo "$sum  $src/$orig" | sha256sum -c --quiet -
up=${orig#postgresql-15_}
top=postgresql-${up%.orig.tar.*}
[ -f "$work/$top/src/common/pg_lzcompress.c" ] ||
  tar xf "$src/$orig" -C "$work" "$top/src/common/pg_lzcompress.c" "$top/src/include/common/pg_lzcompress.h"

# pg_lzcompress.c needs only a few of c.h's types and macros: a stand-in
# postgres_fe.h, found before PostgreSQL's (which needs configure's headers).
mkdir -p "$work/shim"
cat > "$work/shim/postgres_fe.h" <<'EOF'
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef int16_t int16;
typedef int32_t int32;
typedef int64_t int64;
typedef uint32_t uint32;
#define PGDLLIMPORT
#define Min(x, y) ((x) < (y) ? (x) : (y))
#define Max(x, y) ((x) > (y) ? (x) : (y))
#define Assert(c) ((void) 0)
#define likely(x) __builtin_expect((x) != 0, 1)
#define unlikely(x) __builtin_expect((x) != 0, 0)
EOF
cat > "$work/harness.c" <<'EOF'
/* harness PAGES OUT RUNS: pglz_compress(PGLZ_strategy_default) of every page,
 * RUNS times; prints the best run's thread CPU time; writes each page's
 * result to OUT as pglzbench compress does. */
#include "postgres_fe.h"
#include "common/pg_lzcompress.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	FILE *f = fopen(argv[1], "rb");
	int runs = atoi(argv[3]);
	long size, n = 0, total = 0, off = 0, i;
	unsigned char *buf;
	char *dst;
	uint32 maxlen = 0;
	double best = 1e30;
	if (f == NULL || runs < 1) { perror(argv[1]); return 1; }
	fseek(f, 0, SEEK_END); size = ftell(f); fseek(f, 0, SEEK_SET);
	buf = malloc(size);
	if (fread(buf, 1, size, f) != (size_t) size) { perror(argv[1]); return 1; }
	fclose(f);
	for (off = 0; off + 4 <= size; n++) {
		uint32 len; memcpy(&len, buf + off, 4);
		total += len; off += 4 + len;
		if (len > maxlen) maxlen = len;
	}
	dst = malloc(PGLZ_MAX_OUTPUT(maxlen));
	for (int r = 0; r < runs; r++) {
		double t0 = now();
		for (off = 0; off + 4 <= size;) {
			uint32 len; memcpy(&len, buf + off, 4);
			pglz_compress((const char *) buf + off + 4, len, dst, PGLZ_strategy_default);
			off += 4 + len;
		}
		double t = now() - t0;
		if (t < best) best = t;
	}
	f = fopen(argv[2], "wb");
	for (off = 0, i = 0; off + 4 <= size; i++) {
		uint32 len; memcpy(&len, buf + off, 4);
		int32 m = pglz_compress((const char *) buf + off + 4, len, dst, PGLZ_strategy_default);
		fwrite(&m, 4, 1, f);
		if (m > 0) fwrite(dst, 1, m, f);
		off += 4 + len;
	}
	if (fclose(f) != 0) { perror(argv[2]); return 1; }
	printf("C  pglz: %ld pages, %.1f MB, best of %d runs %.3f s CPU, %.1f MB/s\n",
		n, total / 1048576.0, runs, best, total / 1048576.0 / best);
	return 0;
}
EOF
cflags=$(pg_config --cflags 2>/dev/null || echo -O2)
# -Wmissing-prototypes and the like are about PostgreSQL's own tree.
cc $cflags -w -DFRONTEND -I"$work/shim" -I"$work/$top/src/include" \
  -o "$work/harness" "$work/harness.c" "$work/$top/src/common/pg_lzcompress.c"
(cd "$root" && go build -o "$work/pglzbench" ./scripts/pglzbench)

"$work/pglzbench" pages -max-mb "${PGLZ_MAX_MB:-64}" -every "${PGLZ_EVERY:-4}" -o "$work/pages" "$wal"
echo "PostgreSQL $ver's pg_lzcompress.c, cc $cflags"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
mbs() { grep -o '[0-9.]* MB/s' <<<"$1" | cut -d' ' -f1; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
cs=() gs=() rs=() allocs=
for i in $(seq "$runs"); do
  # Who goes first alternates too, so neither always runs on a cache the
  # other warmed.
  if (( i % 2 )); then
    c=$("$work/harness" "$work/pages" "$work/out-c" 1)
    g=$("$work/pglzbench" compress -runs 1 -o "$work/out-go" "$work/pages")
  else
    g=$("$work/pglzbench" compress -runs 1 -o "$work/out-go" "$work/pages")
    c=$("$work/harness" "$work/pages" "$work/out-c" 1)
  fi
  cs+=("$(mbs "$c")") gs+=("$(mbs "$g")")
  rs+=("$(echo "$(mbs "$g") / $(mbs "$c")" | bc -l)")
  allocs=$(grep -o '[0-9.]* allocations per page' <<<"$g")
  printf 'run %d: C %6.1f MB/s, Go %6.1f MB/s, Go/C %.2fx\n' "$i" "${cs[-1]}" "${gs[-1]}" "${rs[-1]}"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "${c%%,*}, $(grep -o '[0-9.]* MB,' <<<"$c" | tr -d ,) of pages"
printf 'C  pglz (PostgreSQL)  best %6.1f  median %6.1f MB/s per core (thread CPU time)\n' \
  "$(printf '%s\n' "${cs[@]}" | sort -g | tail -1)" "$(printf '%s\n' "${cs[@]}" | median)"
printf 'Go pglz (walscope)    best %6.1f  median %6.1f MB/s per core, %s\n' \
  "$(printf '%s\n' "${gs[@]}" | sort -g | tail -1)" "$(printf '%s\n' "${gs[@]}" | median)" "$allocs"
printf 'ratio Go/C            median %.2fx of %d interleaved pairs (range %.2f-%.2fx)\n' \
  "$(printf '%s\n' "${rs[@]}" | median)" "$runs" "$(printf '%s\n' "${rs[@]}" | sort -g | head -1)" "$(printf '%s\n' "${rs[@]}" | sort -g | tail -1)"
if ! "$work/pglzbench" check "$work/pages" "$work/out-c" "$work/out-go"; then
  echo "bench-pglz.sh: results differ: $work/out-c $work/out-go" >&2
  exit 1
fi
echo "every page's result identical ($(stat -c %s "$work/out-c") bytes of results)"
