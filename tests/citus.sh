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

# The guard on a reference table, 8 sessions at once: each inserts its own
# near-copy of one fingerprint (distance 1 or 2 from the others) and then
# a row of its own far from every other. Exactly one near-copy stays, every
# own row goes in, every node's copy is the same, and a session refused
# gets 23505 (or 40P01, a deadlock across the copies, which Citus breaks).
log "Citus on PostgreSQL $PG_MAJOR: the guard on a reference table, 8 sessions at once"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
SET search_path = citus_test, public;
DROP TABLE IF EXISTS ref_race;
CREATE TABLE ref_race (id bigint PRIMARY KEY, fp simhash64);
SELECT create_reference_table('ref_race');
SELECT simhash_add_guard('ref_race', 'fp', 3);
SQL
race_dir=$(mktemp -d)
for s in 1 2 3 4 5 6 7 8; do
    (psql -X -q -v VERBOSITY=sqlstate -v s="$s" >"$race_dir/$s.out" 2>&1 <<'SQL'
SET search_path = citus_test, public;
INSERT INTO ref_race VALUES (:s, ('5a5a5a5a5a5a5a5a'::simhash64::bigint # (1::bigint << (:s * 7)))::simhash64);
INSERT INTO ref_race VALUES (100 + :s, hashint8extended(:s, 99)::simhash64);
SQL
    ) &
done
wait
for s in 1 2 3 4 5 6 7 8; do
    if grep -q ERROR "$race_dir/$s.out" && ! grep -qE '^ERROR:  (23505|40P01)$' "$race_dir/$s.out"; then
        die "session $s of the reference-table race failed otherwise: $(cat "$race_dir/$s.out")"
    fi
done
rm -rf "$race_dir"
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
SET search_path = citus_test, public;
DO $$
BEGIN
    IF (SELECT count(*) FROM ref_race WHERE id <= 8) <> 1 THEN
        RAISE EXCEPTION 'the race kept % near-copies, not 1', (SELECT count(*) FROM ref_race WHERE id <= 8);
    END IF;
    IF (SELECT count(*) FROM ref_race WHERE id > 100) <> 8 THEN
        RAISE EXCEPTION 'the race lost rows of its own: % of 8', (SELECT count(*) FROM ref_race WHERE id > 100);
    END IF;
    IF (SELECT count(DISTINCT result) FROM run_command_on_placements('ref_race',
            'SELECT string_agg(id::text, '','' ORDER BY id) FROM %s')) <> 1 THEN
        RAISE EXCEPTION 'after the race the copies of the reference table differ';
    END IF;
END
$$;
DROP TABLE ref_race;
SQL
run_sql verified.sql
run_sql insert_new.sql
log "Citus on PostgreSQL $PG_MAJOR: from a driver (psycopg)"
"$PYTHON" "$ROOT/tests/citus/binding.py"
log "Citus tests of PostgreSQL $PG_MAJOR passed in $(( SECONDS - started )) s"
