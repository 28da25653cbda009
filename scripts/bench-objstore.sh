#!/usr/bin/env bash
# bench-objstore.sh [ARCHIVE] [RUNS] — walscope reading an archive in place
# from an S3 server against reading it from local disk, and listing 10^5
# objects.
#
# Starts versitygw (go install github.com/versity/versitygw/cmd/versitygw,
# as .ci/run does) on a free loopback port over a temporary directory,
# uploads ARCHIVE (default /tmp/walscope-bench/archive, built by
# bench-pgwaldump.sh) with internal/objstoretest/objput, then times,
# alternating, RUNS rounds (default 3) of
#   walscope stats ARCHIVE   vs   walscope stats s3://bench/archive
# printing wall and CPU seconds and peak RSS of each (/usr/bin/time), the
# ratio of the medians, and whether the outputs are identical. Then it
# makes 10^5 empty objects (files in the gateway's bucket directory) and
# times their listing (objls: the paginated listing every command starts
# with). The gateway runs on the same 2 cores: its CPU time is printed too.
# Measures; asserts nothing.
set -euo pipefail
archive=${1:-/tmp/walscope-bench/archive}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
gw=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
[ -x "$gw" ] || { echo "versitygw is not installed (see .ci/run)" >&2; exit 1; }
tmp=$(mktemp -d)
cleanup() { [ -n "${gwpid:-}" ] && kill "$gwpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/walscope" ./cmd/walscope &&
  go build -o "$tmp/objput" ./internal/objstoretest/objput && go build -o "$tmp/objls" ./internal/objstoretest/objls)
mkdir -p "$tmp/gw/bench"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$gw" --access bench --secret bench-secret --port "127.0.0.1:$port" posix "$tmp/gw" >"$tmp/gw.log" 2>&1 &
gwpid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1
s=$(date +%s%N)
"$tmp/objput" "$archive" s3://bench/archive
e=$(date +%s%N)
echo "uploaded $(du -sh "$archive" | cut -f1) in $(echo "($e - $s) / 1000000000" | bc -l | cut -c1-5) s; $(nproc) cores"
gwcpu() { awk '{print $14 + $15}' "/proc/$gwpid/stat"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for ((r = 1; r <= runs; r++)); do
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$tmp/walscope" stats "$archive" >"$tmp/local.out" 2>/dev/null
  read -r w u sy m <"$tmp/t"; echo "$w" >>"$tmp/local.w"
  echo "local run $r: ${w} s wall, $(echo "$u + $sy" | bc) s CPU, peak RSS $((m / 1024)) MB"
  c0=$(gwcpu)
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$tmp/walscope" stats s3://bench/archive >"$tmp/s3.out" 2>/dev/null
  c1=$(gwcpu)
  read -r w u sy m <"$tmp/t"; echo "$w" >>"$tmp/s3.w"
  echo "s3    run $r: ${w} s wall, $(echo "$u + $sy" | bc) s CPU (+ gateway $(echo "($c1 - $c0) / 100" | bc -l | cut -c1-4) s), peak RSS $((m / 1024)) MB"
done
lw=$(median <"$tmp/local.w"); sw=$(median <"$tmp/s3.w")
echo "median: local ${lw} s, s3 ${sw} s: s3/local = $(echo "$sw / $lw" | bc -l | cut -c1-4)"
cmp -s "$tmp/local.out" "$tmp/s3.out" && echo "outputs identical" || echo "OUTPUTS DIFFER"
mkdir -p "$tmp/gw/bench/many"
python3 -c '
import sys
d = sys.argv[1]
for i in range(100000):
    open("%s/00000001%08X%08X" % (d, i // 256, i % 256), "wb").close()
' "$tmp/gw/bench/many"
c0=$(gwcpu)
/usr/bin/time -f "listing: %e s wall, %U+%S s CPU, peak RSS %M KB" "$tmp/objls" s3://bench/many
c1=$(gwcpu)
echo "gateway CPU during the listing: $(echo "($c1 - $c0) / 100" | bc -l | cut -c1-5) s"
