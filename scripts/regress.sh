#!/usr/bin/env bash
# Runs the SQL regression files in test/sql against the throwaway cluster
# (started, with the installed extension, by the caller) and compares each
# with test/expected. On a difference it prints the diff and fails.
#   scripts/regress.sh           run the schedule
#   scripts/regress.sh --accept  copy the results over the expected files
#                                (review `git diff test/expected` after!)
set -euo pipefail
. "$(dirname "$0")/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"

PG_REGRESS=$($PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress
[ -x "$PG_REGRESS" ] || die "pg_regress not found at $PG_REGRESS"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# The regression database is dropped and made anew by pg_regress.
"$PG_REGRESS" --inputdir="$ROOT/test" --outputdir="$out" --schedule="$ROOT/test/schedule" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=simhash_regress \
    || status=$?
if [ "${1:-}" = "--accept" ]; then
    mkdir -p "$ROOT/test/expected"
    cp "$out"/results/*.out "$ROOT/test/expected/"
    log "results copied to test/expected: review them with git diff"
    exit 0
fi
if [ $status -ne 0 ]; then
    [ -f "$out/regression.diffs" ] && cat "$out/regression.diffs"
    die "SQL regression tests failed"
fi
