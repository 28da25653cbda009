#!/usr/bin/env bash
# fuzz.sh [SECONDS] [--save-seeds] — run every fuzz target for SECONDS each
# (default 60) and print the executions each ran. With --save-seeds, copy up to
# 20 of the smallest inputs each target found interesting into its committed
# seed corpus (testdata/fuzz/<Target>/), which go test then always runs.
# Every target of the module is run (FUZZ=REGEXP: those whose names match).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
save=${2:-}
# every fuzz target of the module, as NAME:./PACKAGE (a list kept by hand
# fell behind the packages added after it); FUZZ=REGEXP runs the matching ones
targets=$(grep -roE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . |
  sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz.*)$|\2:./\1|' | sort -t: -k2,2 -k1,1 | grep -E "^(${FUZZ:-.*}):" || true)
[ -n "$targets" ] || { echo "no fuzz target matches ${FUZZ:-}" >&2; exit 2; }
cache=$(go env GOCACHE)/fuzz/github.com/walscope/walscope
status=0
for t in $targets; do
  name=${t%%:*}; pkg=${t#*:}
  # Go minimizes each new interesting input for up to a minute by default,
  # which stalls large WAL inputs: bound it.
  if out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime 200x "$pkg" 2>&1); then
    res=ok
  elif echo "$out" | grep -q '^    context deadline exceeded$' && ! echo "$out" | grep -q 'Failing input written'; then
    # Go 1.26's fuzzing coordinator fails a target whose worker is
    # still running an input when -fuzztime ends (golang/go#75804, fixed
    # in 1.27): no input failed, none was written
    res="ok (the deadline race of golang/go#75804, no failing input)"
  else
    res=FAILED; status=1
  fi
  # (none when a seed fails before fuzzing starts: not a reason to stop)
  execs=$(echo "$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2 || true)
  echo "$name: $res, ${execs:-0} executions in ${secs}s"
  if [ "$res" = FAILED ]; then echo "$out" | tail -20; fi
  if [ "$save" = --save-seeds ] && [ -d "$cache/${pkg#./}/$name" ]; then
    mkdir -p "$pkg/testdata/fuzz/$name"
    ls -S -r "$cache/${pkg#./}/$name" | head -20 | while read -r f; do cp "$cache/${pkg#./}/$name/$f" "$pkg/testdata/fuzz/$name/"; done
  fi
done
exit $status
