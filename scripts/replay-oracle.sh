#!/bin/bash
# scripts/replay-oracle.sh — proves package replay against real recovery
# (replay/recovery_test.go's TestRecovery) and prints its figures: per
# server configuration and per recovery target, the pages compared (and how
# many the WAL changed), those identical after heap_mask, the tuples whose
# visibility agrees with SELECT ctid on the standby paused at the target,
# and the pg_class rows equal; then the bad-input errors.
#
# PostgreSQL 15 must be installed (Debian's postgresql-15, or
# WALSCOPE_PG15_BIN); 13, 17 and 18 run when scripts/embedded-pg.sh has
# installed them (`scripts/embedded-pg.sh 13 17 18`), else they are skipped,
# which this script says. About 3 minutes on 2 cores for all five
# configurations (the test alone runs 15 and 18: WALSCOPE_REPLAY_VERSIONS=all
# here). WALSCOPE_REPLAY_VERSIONS=0 runs 15 alone.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
WALSCOPE_REPLAY_VERSIONS=${WALSCOPE_REPLAY_VERSIONS:-all} WALSCOPE_REQUIRE_PG=1 go test ./replay/ -run '^TestRecovery$' -count=1 -v -timeout 20m >"$out" 2>&1 || status=$?
grep -E 'recovery_test.go:[0-9]+: |--- (PASS|FAIL|SKIP)|^(ok|FAIL)' "$out" | sed -E 's/^ +recovery_test.go:[0-9]+: /  /'
if [ $status -ne 0 ]; then
	echo "replay-oracle: FAILED (go test exit $status); full output:" >&2
	tail -50 "$out" >&2
fi
exit $status
