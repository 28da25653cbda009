#!/usr/bin/env bash
# descdiff.sh RMGR... — compare walscope's record lines of the named resource
# managers with pg_waldump's, over every fixture and corpus timeline. Prints,
# per set and timeline, how many lines differ and the first few differences.
# A development aid for the descriptions (issue 3); the tests assert the same.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WALSCOPE_DESCDIFF_DIR:-/tmp/walscope-descdiff}
mkdir -p "$work"
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
go build -o "$run/walscope" "$root/cmd/walscope"
pattern=$(printf '%s\n' "$@" | sed 's/.*/^rmgr: &  */' | paste -sd'|')
show=${SHOW:-5}
for set in "$root"/fixtures/*/ "$root"/../shared/corpora/*/; do
  [ -f "$set/archive.tar.zst" ] || continue
  name=$(basename "$set"); d="$work/$name"
  if [ ! -d "$d/ref" ]; then mkdir -p "$d"; tar --zstd -xf "$set/archive.tar.zst" -C "$d"; tar --zstd -xf "$set/ref.tar.zst" -C "$d"; fi
  for ref in "$d"/ref/records-*.txt; do
    tl=$(basename "$ref" .txt); tl=${tl#records-}
    segs=$(ls "$d/archive" | grep -E "^$tl[0-9A-F]{16}$")
    first=$(echo "$segs" | head -1); last=$(echo "$segs" | tail -1)
    for mode in records bkp; do
      flag=""; [ $mode = bkp ] && flag=-b
      (cd "$d" && "$run/walscope" dump $flag -p archive "$first" "$last" > "$run/got.txt" 2>/dev/null) || true
      want="$d/ref/$mode-$tl.txt"
      paste -d $'\x01' "$run/got.txt" "$want" | { grep -a -E "^($pattern)" || true; } | awk -F'\x01' -v show="$show" -v tag="$name $mode-$tl" '
        $1 != $2 { n++; if (n <= show) { print tag ":\n  got:  " $1 "\n  want: " $2 } }
        END { if (n) print tag ": " n " lines differ" }'
    done
  done
done
