#!/usr/bin/env bash
# Runs the SQL regression files in tests/sql against the throwaway cluster
# (started, with the installed extension, by the caller) and compares each
# with tests/expected. On a difference it prints the diff and fails.
#   scripts/regress.sh           run the schedule
#   scripts/regress.sh --accept  copy the results over the expected files
#                                (review `git diff tests/expected` after!)
set -euo pipefail
. "$(dirname "$0")/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"

require_pg
PG_REGRESS=$(pg_regress_path)
[ -x "$PG_REGRESS" ] || die "pg_regress not found at $PG_REGRESS"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# The regression database is dropped and made anew by pg_regress.
"$PG_REGRESS" --bindir="$PG_BIN" --inputdir="$ROOT/tests" --outputdir="$out" --schedule="$ROOT/tests/schedule" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=simhash_regress \
    || status=$?
if [ "${1:-}" = "--accept" ]; then
    mkdir -p "$ROOT/tests/expected"
    # Only where the result differs from every expected variant: a file
    # that matches an alternative (name_1.out) for this version stays.
    for r in "$out"/results/*.out; do
        name=$(basename "$r" .out)
        same=no
        for e in "$ROOT/tests/expected/$name.out" "$ROOT/tests/expected/${name}"_[0-9].out; do
            [ -f "$e" ] && cmp -s "$r" "$e" && same=yes
        done
        [ $same = yes ] || cp "$r" "$ROOT/tests/expected/$name.out"
    done
    log "results copied to tests/expected: review them with git diff"
    exit 0
fi
if [ $status -ne 0 ]; then
    [ -f "$out/regression.diffs" ] && cat "$out/regression.diffs"
    die "SQL regression tests failed"
fi
