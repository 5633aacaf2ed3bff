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
run_sql names.sql

# simhash_insert_new into a distributed table, 8 sessions at once: each
# loads a batch of its own near-copy of one text (distance 1 or 2 from the
# others) and a row of its own far from every other. Exactly one near-copy
# stays and every own row goes in: the loads lock the target on every node.
log "Citus on PostgreSQL $PG_MAJOR: simhash_insert_new into a distributed table, 8 sessions at once"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
SET search_path = citus_test, public;
DROP TABLE IF EXISTS load_race;
CREATE TABLE load_race (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('load_race', 'id');
SELECT simhash_add_bands('load_race', 'fp', '4x16');
DO $$
BEGIN
    FOR s IN 1..8 LOOP
        EXECUTE format('DROP TABLE IF EXISTS load_race_src%s', s);
        EXECUTE format('CREATE TABLE load_race_src%s (id bigint, fp simhash64)', s);
        EXECUTE format('INSERT INTO load_race_src%s VALUES ($1, $2), ($3, $4)', s)
            USING s, ('5a5a5a5a5a5a5a5a'::simhash64::bigint # (1::bigint << (s * 7)))::simhash64,
                  100 + s, hashint8extended(s, 99)::simhash64;
    END LOOP;
END
$$;
SQL
race_dir=$(mktemp -d)
pids=()
for s in 1 2 3 4 5 6 7 8; do
    psql -X -q -At -v ON_ERROR_STOP=1 -v s="$s" >"$race_dir/$s.out" 2>&1 <<'SQL' &
SET search_path = citus_test, public;
SELECT inserted, skipped FROM simhash_insert_new('load_race', 'load_race_src' || :s, 3);
SQL
    pids+=("$!")
done
race_failed=""
for pid in "${pids[@]}"; do
    wait "$pid" || race_failed=1
done
for s in 1 2 3 4 5 6 7 8; do
    [ -z "$race_failed" ] || log "session $s: $(cat "$race_dir/$s.out")"
done
[ -z "$race_failed" ] || die "a load of the race failed"
rm -rf "$race_dir"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET search_path = citus_test, public;
DO $$
BEGIN
    IF (SELECT count(*) FROM load_race WHERE id <= 8) <> 1 THEN
        RAISE EXCEPTION 'the loads kept % near-copies, not 1', (SELECT count(*) FROM load_race WHERE id <= 8);
    END IF;
    IF (SELECT count(*) FROM load_race WHERE id > 100) <> 8 THEN
        RAISE EXCEPTION 'the loads lost rows of their own: % of 8', (SELECT count(*) FROM load_race WHERE id > 100);
    END IF;
END
$$;
SQL

# A worker killed (SIGKILL, so it restarts after crash recovery) in the
# middle of a load: the load fails as a whole (Citus's two-phase commit),
# and after recovery the table holds its rows of before or those and the
# load's, never a part, with no pair within k.
log "Citus on PostgreSQL $PG_MAJOR: a worker killed in the middle of simhash_insert_new"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
SET search_path = citus_test, public;
DROP TABLE IF EXISTS crash_target, crash_src;
CREATE TABLE crash_target (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('crash_target', 'id');
SELECT simhash_add_bands('crash_target', 'fp', '4x16');
INSERT INTO crash_target SELECT i, hashint8extended(i, 1)::simhash64 FROM generate_series(1, 20000) i;
-- A batch of new rows and near-copies of target rows (every tenth).
CREATE TABLE crash_src AS
SELECT 100000 + i AS id,
       CASE WHEN i % 10 = 0 THEN (hashint8extended(i, 1) # 1)::simhash64 ELSE hashint8extended(i, 2)::simhash64 END AS fp
FROM generate_series(1, 20000) i;
SQL
before=$(psql -X -At -c "SELECT count(*) FROM citus_test.crash_target")
load_log=$(mktemp)
# The load's transaction stays open a while after the call, so that the
# kill lands before it commits however fast the call is (a backend that
# only read for it, killed after its part, would not make it fail).
psql -X -q -At -v ON_ERROR_STOP=1 -c "BEGIN" \
    -c "SELECT * FROM simhash_insert_new('citus_test.crash_target', 'citus_test.crash_src', 3)" \
    -c "SELECT pg_sleep(5)" -c "COMMIT" >"$load_log" 2>&1 &
load=$!
# The backend of worker 1 that has written for the load, once it is seen.
victim=""
for _ in $(seq 1 600); do
    victim=$(psql -X -q -At -p $((PGPORT + 1)) -c "SELECT pid FROM pg_stat_activity
        WHERE backend_xid IS NOT NULL AND query LIKE '%crash_target%' AND pid <> pg_backend_pid() LIMIT 1" 2>/dev/null || true)
    [ -z "$victim" ] || break
    sleep 0.05
done
[ -n "$victim" ] || die "the load never reached worker 1: $(cat "$load_log")"
kill -9 "$victim"
if wait "$load"; then
    die "the load went through a worker killed under it: $(cat "$load_log")"
fi
log "the load failed as it should: $(grep -m 1 ERROR "$load_log" || true)"
rm -f "$load_log"
for _ in $(seq 1 60); do
    psql -X -q -At -p $((PGPORT + 1)) -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 1
done
psql -X -q -v ON_ERROR_STOP=1 -v before="$before" >/dev/null <<'SQL'
SET search_path = citus_test, public;
SELECT recover_prepared_transactions();
SELECT set_config('simhash_test.before', :'before', false);
DO $$
DECLARE
    n bigint := (SELECT count(*) FROM crash_target);
    loaded bigint := (SELECT count(*) FROM crash_target WHERE id > 100000);
BEGIN
    IF loaded <> 0 THEN
        RAISE EXCEPTION 'after the crash the table holds % of the failed load''s rows', loaded;
    END IF;
    IF n <> current_setting('simhash_test.before')::bigint THEN
        RAISE EXCEPTION 'after the crash the table holds % rows, not %', n, current_setting('simhash_test.before');
    END IF;
    IF EXISTS (WITH d AS MATERIALIZED (SELECT id, fp FROM crash_target)
               SELECT FROM d a JOIN d b ON a.id < b.id AND a.fp <~> b.fp <= 3) THEN
        RAISE EXCEPTION 'after the crash a pair within 3 is in the table';
    END IF;
END
$$;
-- The same load again, the worker back: it goes through.
DO $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM simhash_insert_new('crash_target', 'crash_src', 3);
    IF r.inserted <> 18000 OR r.skipped <> 2000 THEN
        RAISE EXCEPTION 'after recovery the load inserted % and skipped %, not 18000 and 2000', r.inserted, r.skipped;
    END IF;
END
$$;
DROP TABLE crash_target, crash_src, load_race;
DO $$
BEGIN
    FOR s IN 1..8 LOOP
        EXECUTE format('DROP TABLE load_race_src%s', s);
    END LOOP;
END
$$;
SQL
log "Citus on PostgreSQL $PG_MAJOR: from a driver (psycopg)"
"$PYTHON" "$ROOT/tests/citus/binding.py"
log "Citus tests of PostgreSQL $PG_MAJOR passed in $(( SECONDS - started )) s"
