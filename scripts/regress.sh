#!/usr/bin/env bash
# Runs the SQL regression files in tests/sql against the throwaway cluster
# (started, with the installed extension, by the caller) and compares each
# with tests/expected. On a difference it prints the diff and fails.
#   scripts/regress.sh           run the schedule
#   scripts/regress.sh NAME...   run tests/sql/NAME.sql (after setup.sql,
#                                which makes the extension): seconds
#   scripts/regress.sh --accept [NAME...]
#                                copy the results over the expected files
#                                (review `git diff tests/expected` after!)
set -euo pipefail
. "$(dirname "$0")/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"

accept=no
if [ "${1:-}" = "--accept" ]; then
    accept=yes
    shift
fi
# The tests to run: the schedule, or setup and the files named.
tests=(--schedule="$ROOT/tests/schedule")
if [ $# -gt 0 ]; then
    tests=(setup)
    for name in "$@"; do
        name=$(basename "$name" .sql)
        [ -f "$ROOT/tests/sql/$name.sql" ] || die "no such regression file: tests/sql/$name.sql"
        [ "$name" = setup ] || tests+=("$name")
    done
fi

require_pg
PG_REGRESS=$(pg_regress_path)
[ -x "$PG_REGRESS" ] || die "pg_regress not found at $PG_REGRESS"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# The regression database is dropped and made anew by pg_regress.
"$PG_REGRESS" --bindir="$PG_BIN" --inputdir="$ROOT/tests" --outputdir="$out" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=simhash_regress "${tests[@]}" \
    || status=$?
if [ $accept = yes ]; then
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
