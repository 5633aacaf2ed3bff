#!/usr/bin/env bash
# The README's examples as a test: every ```sql block of README.md runs, in
# the README's order, against a fresh database holding the fixture of
# tests/readme/ (a `docs` table of texts with near copies, a `staging`
# batch). A block right after a line `<!-- not run: REASON -->` is skipped
# and listed with its reason. Each block runs in its own psql session
# with ON_ERROR_STOP, so a block's SET or PREPARE does not reach the next
# one, while its tables and rows do. A failing block fails the test with
# the README line of the statement that failed.
# Needs the throwaway cluster running with the extension installed
# (scripts/test.sh does both; or scripts/cluster.sh start).
#   tests/readme.sh [FILE.md]     default: README.md
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER
require_pg
psql() { "$PG_BIN/psql" "$@"; }

readme=${1:-$ROOT/README.md}
DB=${SIMHASH_README_DB:-simhash_readme}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Split the file into blocks: $work/NNN.sql, and $work/list with
# "NNN START_LINE run|skip REASON" per block (START_LINE: the block's first
# line in the file).
awk -v dir="$work" '
    function flush() { close(out) }
    /^```/ {
        if (!infence) {
            infence = 1
            if ($0 ~ /^```sql[ \t]*$/) {
                insql = 1; n++
                out = sprintf("%s/%03d.sql", dir, n)
                printf "" > out
                reason = ""
                if (prev ~ /^<!-- not run: .* -->[ \t]*$/) {
                    reason = prev
                    sub(/^<!-- not run: /, "", reason); sub(/ -->[ \t]*$/, "", reason)
                }
                printf "%03d %d %s %s\n", n, NR + 1, (reason == "" ? "run" : "skip"), reason > (dir "/list")
            }
            next
        }
        if ($0 ~ /^```[ \t]*$/) { infence = 0; if (insql) { insql = 0; flush() } }
        next
    }
    infence && insql { print > out; next }
    infence { next }
    NF { prev = $0 }
' "$readme"
[ -s "$work/list" ] || die "no sql blocks in $readme"

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB ENCODING 'UTF8' TEMPLATE template0" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -f "$ROOT/tests/readme/fixture.sql" >/dev/null

ran=0 skipped=0
rel=${readme#"$ROOT/"}
while read -r n start what reason; do
    if [ "$what" = skip ]; then
        skipped=$((skipped + 1))
        log "$rel:$start: not run: $reason"
        continue
    fi
    # psql names the file and line of a failing statement: psql:FILE:LINE:
    if ! PGOPTIONS="-c statement_timeout=120s" psql -X -q -v ON_ERROR_STOP=1 -d "$DB" \
            -f "$work/$n.sql" >"$work/$n.out" 2>&1; then
        cat "$work/$n.out" >&2
        line=$(grep -o "^psql:$work/$n.sql:[0-9]*:" "$work/$n.out" | head -1 | sed 's/.*:\([0-9]*\):$/\1/')
        die "$rel:$((start + ${line:-1} - 1)): the block starting at line $start failed"
    fi
    ran=$((ran + 1))
done < "$work/list"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
log "$rel: $ran sql blocks ran, $skipped not run (marked)"
