#!/usr/bin/env bash
# The Citus tests of PostgreSQL $SIMHASH_PG: builds Citus from a source
# tarball (skipped when that version is installed), starts a throwaway
# Citus cluster (a coordinator and two workers, scripts/citus.sh), and runs
# tests/citus/*.sql and the driver test tests/citus/binding.py against a
# distributed table, comparing every answer with the same rows in a local
# table.
#
# The tarball: citus-<version>.tar.gz in $SIMHASH_CITUS_SOURCES, by default
# the vendor/ folder of the shared folder beside the checkout
# (../shared/vendor). Citus 13.x serves PostgreSQL 15 to 17, 14.x 16 to 18;
# the newest that serves $SIMHASH_PG is taken. Without one, the test says
# it skipped and why, and passes: Citus is in no package registry.
#
# The driver test runs in a virtual environment with psycopg 3 from PyPI
# ($ROOT/.cache/test-venv).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$(dirname "$0")/../scripts/common.sh"
require_pg

SOURCES=${SIMHASH_CITUS_SOURCES:-$ROOT/../shared/vendor}

# The newest Citus tarball in $SOURCES that supports $PG_MAJOR.
tarball_for() {
    local series
    case $PG_MAJOR in
        15) series="13" ;;
        16|17) series="14 13" ;;
        18) series="14" ;;
        *) series="" ;;
    esac
    local s t
    for s in $series; do
        t=$(find "$SOURCES" -maxdepth 1 -name "citus-$s.*.tar.gz" 2>/dev/null | sort -V | tail -n 1 || true)
        if [ -n "$t" ]; then
            printf '%s' "$t"
            return
        fi
    done
}

tarball=$(tarball_for)
if [ -z "$tarball" ]; then
    log "SKIPPED the Citus tests of PostgreSQL $PG_MAJOR: no Citus source tarball for it in $SOURCES (citus-13.x.tar.gz serves 15-17, citus-14.x.tar.gz 16-18; SIMHASH_CITUS_SOURCES names another folder)"
    exit 0
fi

"$ROOT/scripts/citus.sh" build "$tarball"
"$ROOT/scripts/citus.sh" start
trap '"$ROOT/scripts/citus.sh" stop' EXIT
eval "$("$ROOT/scripts/citus.sh" env)"
export PGHOST PGPORT PGUSER PGDATABASE

# The library was rebuilt since the cluster's database was made, maybe at
# the same version with new objects: make the extension anew (Citus makes it
# anew on the workers too). The tests' own objects, in the schema
# citus_test, are made anew by setup.sql.
psql -X -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
    -c "DROP SCHEMA IF EXISTS citus_test CASCADE" -c "DROP EXTENSION simhash CASCADE" -c "CREATE EXTENSION simhash"

PYTHON=$(psycopg_python)

started=$SECONDS
run_sql() {
    log "Citus on PostgreSQL $PG_MAJOR: $1"
    psql -X -q -v ON_ERROR_STOP=1 -f "$ROOT/tests/citus/$1"
}
run_sql setup.sql
run_sql queries.sql
run_sql clusters.sql
run_sql guard.sql
run_sql verified.sql
log "Citus on PostgreSQL $PG_MAJOR: from a driver (psycopg)"
"$PYTHON" "$ROOT/tests/citus/binding.py"
log "Citus tests of PostgreSQL $PG_MAJOR passed in $(( SECONDS - started )) s"
