#!/usr/bin/env bash
# simhash_insert_new under concurrent loads at every isolation level: 2, 4
# and 8 sessions load overlapping batches of near copies of the same
# articles into one target at once, each retrying its transaction on
# 40001. Whatever the order the loads commit in, a serial replay keeps
# exactly one row of each article that any batch holds: the target must
# end with that, and no pair within k. Then the plain case: a load under
# REPEATABLE READ whose snapshot is older than an insert of a near copy
# it waited for fails with 40001 instead of letting the copy in. Needs the
# throwaway cluster running with the extension installed.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

DB=simhash_load_isolation
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
q >/dev/null <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE ld (id bigint, fp simhash64);
SELECT count(*) FROM simhash_add_bands('ld', 'fp', '4x16');
-- 200 articles far apart; every batch row is one of them with one bit
-- flipped, so two rows of one article are within 2 of each other.
CREATE TABLE article AS
    SELECT a, ('x' || md5(a::text))::bit(64)::bigint AS base FROM generate_series(1, 200) a;
SQL
for s in $(seq 1 8); do
    q >/dev/null <<SQL
CREATE TABLE src_$s AS
    SELECT $s * 1000 + row_number() OVER () AS id,
           (base # (1::bigint << ((a * 7 + $s * 13) % 64)))::simhash64 AS fp
      FROM (SELECT * FROM article ORDER BY md5(a::text || '$s') LIMIT 150) x;
SQL
done

# load ISOLATION SOURCE: one load in its own transaction, its snapshot
# taken before it waits for the lock, retried on 40001.
load() {
    local iso=$1 src=$2 try err
    err=$(mktemp)
    for try in $(seq 1 50); do
        if psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" >/dev/null 2>"$err" <<SQL
BEGIN ISOLATION LEVEL $iso;
SELECT count(*) FROM ld;
SELECT pg_sleep(random() / 50);
SELECT * FROM simhash_insert_new('ld', '$src', 3, 'id');
COMMIT;
SQL
        then
            rm -f "$err"
            return 0
        fi
        grep -q "could not serialize" "$err" || { cat "$err" >&2; rm -f "$err"; return 1; }
    done
    rm -f "$err"
    echo "load of $src under $iso: 50 serialization failures in a row" >&2
    return 1
}

for iso in "READ COMMITTED" "REPEATABLE READ" "SERIALIZABLE"; do
    for n in 2 4 8; do
        q -c "TRUNCATE ld"
        pids=()
        for s in $(seq 1 "$n"); do
            load "$iso" "src_$s" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || die "a load under $iso failed"; done
        sources=$(seq -s ' UNION ALL ' -f 'SELECT fp FROM src_%g' 1 "$n")
        want=$(q -c "SELECT count(DISTINCT a.a) FROM ($sources) s JOIN article a
                       ON hamming(s.fp, a.base::simhash64) <= 1")
        got=$(q -c "SELECT count(*) FROM ld")
        pairs=$(q -c "SELECT count(*) FROM ld x JOIN ld y ON x.id < y.id AND hamming(x.fp, y.fp) <= 3")
        [ "$pairs" = 0 ] || die "$iso, $n loads: $pairs pairs within 3 in the target"
        [ "$got" = "$want" ] || die "$iso, $n loads: $got rows where a serial replay keeps $want"
        log "$iso, $n concurrent loads: $got rows, one per article, no pair within 3"
    done
done

# A plain insert of a near copy, open while a REPEATABLE READ load whose
# snapshot is older waits for the lock: the load fails with 40001.
q >/dev/null <<'SQL'
TRUNCATE ld;
CREATE TABLE one (id bigint, fp simhash64);
INSERT INTO one VALUES (1, '0f0f0f0f0f0f0f0f');
SQL
psql -X -q -At -d "$DB" >/dev/null <<'SQL' &
BEGIN;
INSERT INTO ld VALUES (99, '0f0f0f0f0f0f0f0e');
SELECT pg_sleep(1.5);
COMMIT;
SQL
writer=$!
sleep 0.5
out=$(psql -X -q -At -d "$DB" 2>&1 <<'SQL' || true
\set VERBOSITY verbose
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM ld;
SELECT * FROM simhash_insert_new('ld', 'one', 3, 'id');
COMMIT;
SQL
)
wait $writer
echo "$out" | grep -q "40001" || die "a REPEATABLE READ load after an open insert of a near copy: no 40001 ($out)"
[ "$(q -c "SELECT count(*) FROM ld")" = 1 ] || die "the near copy got in beside the insert it waited for"
log "a REPEATABLE READ load older than an insert it waited for: 40001, nothing let in"

# The same with the second source: the near copy the insert holds is one
# only the candidate keys find (an English paragraph with 5% of its
# letters changed, past distance 11). A verified REPEATABLE READ load
# fails with 40001; under READ COMMITTED it waits, then skips the copy.
original='The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.'
copy='The committee met on Tursday uo revbrw the ersposal fer d nsw library in the north of the city. Mdmbers heard from residents who asked bor longer openirg hours, a reading room for children and a small cafs near the entrance. The arcsitect showed drahings of a two snorjy buijding with large windows facing the park, and hhe treasurer saib the cost sould be shared by tme council and a private foundation. A finau vote is expected next month after a public consultation.'
q >/dev/null <<SQL
CREATE TABLE lk (id bigint, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('lk', 'fp', '4x16');
SELECT simhash_add_lsh('lk', 'body');
CREATE TABLE lk_one (id bigint, body text);
INSERT INTO lk_one VALUES (1, '$copy');
SQL
[ "$(q -c "SELECT simhash('$original') <~> simhash('$copy') > 11")" = t ] \
    || die "the paragraph and its copy are within 11: the case would not test the keys"
for iso in "REPEATABLE READ" "READ COMMITTED"; do
    q -c "TRUNCATE lk"
    psql -X -q -At -d "$DB" >/dev/null <<SQL &
BEGIN;
INSERT INTO lk (id, body) VALUES (99, '$original');
SELECT pg_sleep(1.5);
COMMIT;
SQL
    writer=$!
    sleep 0.5
    out=$(psql -X -q -At -d "$DB" 2>&1 <<SQL || true
\set VERBOSITY verbose
BEGIN ISOLATION LEVEL $iso;
SELECT count(*) FROM lk;
SELECT * FROM simhash_insert_new('lk', 'lk_one', 11, 'id', text_col => 'body');
COMMIT;
SQL
)
    wait $writer
    if [ "$iso" = "REPEATABLE READ" ]; then
        echo "$out" | grep -q "40001" || die "a verified REPEATABLE READ load, a copy only the keys find: no 40001 ($out)"
    else
        echo "$out" | grep -q "^0|1$" || die "a verified READ COMMITTED load, a copy only the keys find: not skipped ($out)"
    fi
    [ "$(q -c "SELECT count(*) FROM lk")" = 1 ] || die "$iso: the copy only the keys find got in beside the insert it waited for"
    log "$iso, a verified load of a copy only the second source finds, older than an insert it waited for: nothing let in"
done
psql -X -q -d postgres -c "DROP DATABASE $DB"
