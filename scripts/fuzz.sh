#!/usr/bin/env bash
# fuzz.sh [SECONDS] [--save-seeds] — run every fuzz target for SECONDS each
# (default 60) and print the executions each ran. With --save-seeds, copy up to
# 20 of the smallest inputs each target found interesting into its committed
# seed corpus (testdata/fuzz/<Target>/), which go test then always runs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
save=${2:-}
targets="FuzzReader:./xlog FuzzParseSegmentName:./xlog FuzzParsePageHeader:./xlog FuzzDecode:./decode FuzzPGLZ:./decode FuzzPGLZCompress:./decode FuzzPGLZCompressLong:./decode FuzzArchiveFile:./xlog/archive FuzzArchiveLayout:./xlog/archive FuzzDesc:./rmgr FuzzParseHistory:./xlog FuzzFlagsFirst:./internal/cliargs"
cache=$(go env GOCACHE)/fuzz/github.com/walscope/walscope
status=0
for t in $targets; do
  name=${t%%:*}; pkg=${t#*:}
  # Go minimizes each new interesting input for up to a minute by default,
  # which stalls large WAL inputs: bound it.
  if out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime 200x "$pkg" 2>&1); then
    res=ok
  else
    res=FAILED; status=1
  fi
  execs=$(echo "$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2)
  echo "$name: $res, ${execs:-0} executions in ${secs}s"
  [ $res = ok ] || echo "$out" | tail -20
  if [ "$save" = --save-seeds ] && [ -d "$cache/${pkg#./}/$name" ]; then
    mkdir -p "$pkg/testdata/fuzz/$name"
    ls -S -r "$cache/${pkg#./}/$name" | head -20 | while read -r f; do cp "$cache/${pkg#./}/$name/$f" "$pkg/testdata/fuzz/$name/"; done
  fi
done
exit $status
