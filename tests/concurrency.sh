#!/usr/bin/env bash
# Real concurrent sessions against the near-unique trigger: many clients
# insert near-duplicates of the same few "articles" at the same moment.
# Passes when exactly one row per article survives, no near-duplicate pair
# is in the table, every other insert was refused (error mode) or skipped
# (skip mode), and no session deadlocked. Needs the throwaway cluster
# running with the extension installed (scripts/test.sh does both).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

DB=simhash_concurrency
ARTICLES=50
CLIENTS=8
PER_CLIENT=100
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
q >/dev/null <<SQL
CREATE EXTENSION simhash;
CREATE TABLE docs_error (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, grp int, fp simhash64);
CREATE TABLE docs_skip (LIKE docs_error INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('docs_error', 'fp');
SELECT count(*) FROM simhash_add_bands('docs_skip', 'fp');
CREATE TRIGGER near_unique BEFORE INSERT OR UPDATE ON docs_error
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error');
CREATE TRIGGER near_unique BEFORE INSERT OR UPDATE ON docs_skip
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');
SQL

# Every insert is its article's fingerprint with one random bit flipped, so
# any two inserts of one article are within distance 2 and articles are far
# apart (hashed 64-bit values). Each insert's transaction stays open 2 ms
# after the row is in, which is when a check without locking lets another
# session's copy through (without the trigger's locks, about eight of these
# 800 inserts get in beside their article's first row).
script=$(mktemp)
trap 'rm -f "$script" "$script".*' EXIT
cat > "$script" <<'SQL'
\set g random(1, 50)
\set b random(0, 63)
WITH ins AS (INSERT INTO docs_skip (grp, fp) SELECT :g, (hashint8extended(:g, 7) # (1::bigint << :b))::simhash64 RETURNING 1)
SELECT pg_sleep(0.002) FROM ins;
SQL
log "skip mode: $CLIENTS pgbench clients x $PER_CLIENT inserts"
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -t "$PER_CLIENT" -f "$script" "$DB" > "$script.pgbench" 2>&1 \
    || { cat "$script.pgbench"; die "pgbench failed"; }
grep -E "failed|processed" "$script.pgbench" || true

log "error mode: $CLIENTS psql sessions x $PER_CLIENT single-row inserts"
for c in $(seq 1 "$CLIENTS"); do
    (
        for i in $(seq 1 "$PER_CLIENT"); do
            g=$(( (RANDOM % ARTICLES) + 1 )); b=$(( RANDOM % 64 ))
            echo "WITH ins AS (INSERT INTO docs_error (grp, fp) SELECT $g, (hashint8extended($g, 7) # (1::bigint << $b))::simhash64 RETURNING 1) SELECT pg_sleep(0.002) FROM ins;"
        done | psql -X -q -d "$DB" -v VERBOSITY=verbose > "$script.out$c" 2>&1 || true
    ) &
done
wait
refused=$(cat "$script".out* | grep -c "ERROR:  23505" || true)
deadlocks=$(cat "$script".out* | grep -c "40P01" || true)
others=$(cat "$script".out* | grep "ERROR:" | grep -vc "ERROR:  23505" || true)

check() {
    local table=$1
    q <<SQL
SELECT format('%s: rows %s, articles %s, rows per article max %s, near pairs %s',
              '$table', count(*), count(DISTINCT grp), max(n), (SELECT count(*) FROM $table a JOIN $table b ON a.id < b.id AND a.fp <~> b.fp <= 3))
FROM (SELECT grp, count(*) OVER (PARTITION BY grp) AS n FROM $table) s;
SQL
}
skip_line=$(check docs_skip); error_line=$(check docs_error)
echo "$skip_line"; echo "$error_line"
echo "error mode: refused $refused, deadlocks $deadlocks, other errors $others"

expect="rows $ARTICLES, articles $ARTICLES, rows per article max 1, near pairs 0"
[[ "$skip_line" == *"$expect" ]] || die "skip mode let near-duplicates in"
[[ "$error_line" == *"$expect" ]] || die "error mode let near-duplicates in"
[ "$refused" -eq $(( CLIENTS * PER_CLIENT - ARTICLES )) ] || die "expected $(( CLIENTS * PER_CLIENT - ARTICLES )) refusals, saw $refused"
[ "$deadlocks" -eq 0 ] && [ "$others" -eq 0 ] || die "unexpected errors (deadlocks: $deadlocks, others: $others)"
psql -X -q -d postgres -c "DROP DATABASE $DB"
log "concurrency: exactly one row per article in both modes, no deadlock"
