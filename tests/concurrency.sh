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
log "concurrency: exactly one row per article in both modes, no deadlock"

# --- A partitioned table: copies of one article land in different
# partitions (by a random region), and the guard on the parent still keeps
# exactly one of them. Under REPEATABLE READ, to show the guard needs no
# particular isolation level.
q >/dev/null <<SQL
CREATE TABLE parted (id bigint GENERATED ALWAYS AS IDENTITY, region int, grp int, fp simhash64)
    PARTITION BY LIST (region);
CREATE TABLE parted_0 PARTITION OF parted FOR VALUES IN (0);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES IN (2);
CREATE TABLE parted_3 PARTITION OF parted FOR VALUES IN (3);
SELECT count(*) FROM simhash_add_bands('parted', 'fp');
CREATE TRIGGER near_unique BEFORE INSERT ON parted
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');
SQL
cat > "$script" <<'SQL'
\set g random(1, 50)
\set b random(0, 63)
\set r random(0, 3)
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO parted (region, grp, fp) SELECT :r, :g, (hashint8extended(:g, 7) # (1::bigint << :b))::simhash64;
SELECT pg_sleep(0.002);
COMMIT;
SQL
log "partitioned, REPEATABLE READ: $CLIENTS pgbench clients x $PER_CLIENT inserts"
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -t "$PER_CLIENT" -f "$script" "$DB" > "$script.pgbench" 2>&1 \
    || { cat "$script.pgbench"; die "pgbench failed on the partitioned table"; }
parted_line=$(check parted); echo "$parted_line"
[[ "$parted_line" == *"$expect" ]] || die "the partitioned table let near-duplicates in"
[ "$(q -c "SELECT count(DISTINCT tableoid) FROM parted")" -gt 1 ] || die "the rows did not spread over partitions"

# --- Multi-row transactions whose rows share band values but are not
# near-duplicates: session A inserts x1, x2, x3, ...; session B inserts
# y_n, ..., y1 (the opposite order), where x_i and y_i share their first
# band and differ in the other three. A lock held to the end of the transaction
# on band values (the 0.5 guard's design) makes A and B wait for each
# other: a deadlock. The guard's locks are given back once each row is in,
# so every row goes in and nobody deadlocks.
PAIRS=20
q >/dev/null <<SQL
CREATE TABLE shared_bands (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, who text, fp simhash64);
SELECT count(*) FROM simhash_add_bands('shared_bands', 'fp');
CREATE TRIGGER near_unique BEFORE INSERT ON shared_bands
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error');
SQL
session() {
    local who=$1 order=$2 round=$3
    {
        echo "BEGIN;"
        for i in $order; do
            # The first band: the round and i; the other three: hashed from
            # the round, i and the session (about 24 bits from any other row).
            echo "INSERT INTO shared_bands (who, fp) SELECT '$who', ((($round * 1000 + $i)::bigint << 48) | (hashint8extended($round * 1000 + $i, ascii('$who')) & x'0000ffffffffffff'::bigint))::simhash64;"
            echo "SELECT pg_sleep(0.01);"
        done
        echo "COMMIT;"
    } | psql -X -q -d "$DB" -v ON_ERROR_STOP=1 > "$script.multi.$who.$round" 2>&1
}
for round in 1 2 3; do
    session a "$(seq 1 $PAIRS)" "$round" &
    session b "$(seq $PAIRS -1 1)" "$round" &
    wait
done
multi_errors=$(cat "$script".multi.* | grep -c "ERROR" || true)
multi_rows=$(q -c "SELECT count(*) FROM shared_bands")
echo "multi-row transactions: $multi_rows rows, $multi_errors errors"
[ "$multi_errors" -eq 0 ] || { cat "$script".multi.*; die "multi-row transactions failed (deadlock?)"; }
[ "$multi_rows" -eq $(( 2 * PAIRS * 3 )) ] || die "expected $(( 2 * PAIRS * 3 )) rows, found $multi_rows"

# --- The same within one statement whose rows go to different partitions
# of a guarded table: session a's rows go to partition 0 then 1, b's to 1
# then 0, sharing band values pairwise, a pause between rows. Each row's
# locks must be given back once it is in, whichever partition the next row
# goes to (a guard per partition holding its last row's locks until its
# own next row deadlocked here).
q >/dev/null <<SQL
CREATE TABLE split (region int, who text, fp simhash64) PARTITION BY LIST (region);
CREATE TABLE split_0 PARTITION OF split FOR VALUES IN (0);
CREATE TABLE split_1 PARTITION OF split FOR VALUES IN (1);
SELECT count(*) FROM simhash_add_bands('split', 'fp');
CREATE TRIGGER near_unique BEFORE INSERT ON split
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error');
SQL
split_session() {
    local who=$1 first=$2 second=$3 round=$4
    psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "
INSERT INTO split
SELECT region, '$who', ((($round * 10 + region)::bigint << 48) | (hashint8extended($round * 10 + region, ascii('$who')) & x'0000ffffffffffff'::bigint))::simhash64
FROM (VALUES (1, $first), (2, $second)) v(n, region), LATERAL (SELECT pg_sleep(CASE n WHEN 1 THEN 0 ELSE 0.2 END)) s" > "$script.split.$who.$round" 2>&1
}
for round in 1 2 3; do
    split_session a 0 1 "$round" &
    split_session b 1 0 "$round" &
    wait
done
split_errors=$(cat "$script".split.* | grep -c "ERROR" || true)
split_rows=$(q -c "SELECT count(*) FROM split")
echo "one statement over two partitions: $split_rows rows, $split_errors errors"
[ "$split_errors" -eq 0 ] || { cat "$script".split.*; die "statements over two partitions failed (deadlock?)"; }
[ "$split_rows" -eq 12 ] || die "expected 12 rows in split, found $split_rows"

# --- The application's own advisory locks: one session holds every
# advisory lock the 0.5 guard would have used for this table (keys
# hashtext(table/column) + band, value mod 1024); a guarded insert from
# another session does not wait for them.
q >/dev/null <<SQL
CREATE TABLE app_locks (id int, fp simhash64);
SELECT count(*) FROM simhash_add_bands('app_locks', 'fp');
CREATE TRIGGER near_unique BEFORE INSERT ON app_locks
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
SQL
base=$(q -c "SELECT hashtext('app_locks'::regclass::oid::text || '/fp') & ~3")
{
    echo "BEGIN;"
    echo "SELECT count(pg_advisory_xact_lock($base + n, v)) FROM generate_series(0, 3) n, generate_series(0, 1023) v;"
    echo "SELECT pg_sleep(5);"
    echo "COMMIT;"
} | psql -X -q -d "$DB" -c "SET max_locks_per_transaction = 64" -f - > /dev/null 2>&1 &
holder=$!
sleep 1
held=$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2")
t0=$(date +%s%N)
q -v VERBOSITY=verbose -c "SET lock_timeout = '3s'" -c "INSERT INTO app_locks VALUES (1, '0123456789abcdef'), (2, '0123456789abcdee')" >"$script.applocks" 2>&1 || true
t1=$(date +%s%N)
wait "$holder" || true
echo "application advisory locks held: $held; guarded insert took $(( (t1 - t0) / 1000000 )) ms: $(tr '\n' ' ' < "$script.applocks")"
[ "$held" -ge 4096 ] || die "the application's advisory locks were not taken ($held)"
grep -q "23505" "$script.applocks" || die "the guarded insert did not run to its own verdict: $(cat "$script.applocks")"
[ $(( (t1 - t0) / 1000000 )) -lt 2000 ] || die "the guarded insert waited for the application's advisory locks"


# --- The verified guard with the second source (simhash_add_lsh): each
# insert is one of 20 articles (12 tokens), as it is or with a footer of 5
# other tokens of its own, so that an article and its copy with a footer
# are about half the time past distance 11 of each other: near-duplicates
# only through their shared candidate keys (and their 5-gram Jaccard).
# 8 clients insert at once; a copy's row stays uncommitted 2 ms. The
# guard locks the keys as it locks the fingerprint's blocks: no two rows
# the rule calls near-duplicates end up in the table.
q >/dev/null <<SQL
CREATE TABLE lsh_docs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, grp int, body text,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('lsh_docs', 'fp');
SELECT simhash_add_lsh('lsh_docs', 'body');
SELECT simhash_add_guard('lsh_docs', 'fp', 11, 'skip', 'id', 'body', 0.65);
-- Article g, with a footer of its own when seed is odd.
CREATE FUNCTION lsh_copy(g int, seed int) RETURNS text LANGUAGE sql AS \$f\$
    SELECT string_agg(md5((g * 100 + j)::text), ' ')
           || CASE WHEN seed % 2 = 0 THEN ''
                   ELSE ' ' || (SELECT string_agg(md5((seed::bigint * 10 + f + 1000000)::text), ' ') FROM generate_series(1, 5) f) END
      FROM generate_series(1, 12) j;
\$f\$;
SQL
cat > "$script" <<'SQL'
\set g random(1, 20)
\set s random(1, 1000000)
WITH ins AS (INSERT INTO lsh_docs (grp, body) SELECT :g, lsh_copy(:g, :s) RETURNING 1)
SELECT pg_sleep(0.002) FROM ins;
SQL
log "verified guard with candidate keys: $CLIENTS pgbench clients x 40 inserts"
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -t 40 -f "$script" "$DB" > "$script.pgbench" 2>&1 \
    || { cat "$script.pgbench"; die "pgbench failed on the verified guard with candidate keys"; }
past=$(q -c "SELECT count(*) FROM (SELECT lsh_copy(g, 2 * s) AS a, lsh_copy(g, 2 * s + 1) AS b FROM generate_series(1, 40) s, generate_series(1, 5) g) p
              WHERE simhash(a) <~> simhash(b) > 11 AND simhash_lsh(a) && simhash_lsh(b)
                AND simhash_lsh_match(a, b) AND simhash_similarity(a, b) >= 0.65")
lsh_line=$(q -c "SET simhash.verify_k = 11; SET simhash.similarity_threshold = 0.65;
                 SELECT format('rows %s, near pairs %s', (SELECT count(*) FROM lsh_docs),
                               (SELECT count(*) FROM lsh_docs a JOIN lsh_docs b ON a.id < b.id
                                 AND (a.fp <~> b.fp <= 11 OR (a.body_lsh && b.body_lsh AND simhash_lsh_match(a.body, b.body)))
                                 AND simhash_similarity(a.body, b.body) >= 0.65))")
echo "verified guard with candidate keys: $lsh_line; of 200 pairs of copies, $past are near-duplicates only through their keys (past distance 11)"
[ "$past" -gt 0 ] || die "no pair of copies is a candidate through its keys alone: the test does not exercise them"
[[ "$lsh_line" == *"near pairs 0" ]] || die "the verified guard with candidate keys let near-duplicates in"

# The covering probe reads the band indexes' pages itself (src/btree.rs):
# while other sessions insert copies of one fingerprint (splitting the
# leaves its entries fill, in all four indexes), delete some and VACUUM
# (which deletes emptied pages), every probe of a reader answers what a
# scan under the same snapshot answers (one statement: one snapshot).
q >/dev/null <<SQL
CREATE TABLE pages_c (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, fp simhash64);
INSERT INTO pages_c (fp) SELECT hashint8extended(g, 21)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO pages_c (fp) SELECT '5a5a3c3c0f0f9696' FROM generate_series(1, 3000);
SELECT count(*) FROM simhash_add_bands('pages_c', 'fp', '4x16c');
ANALYZE pages_c;
SQL
cat > "$script.ins" <<'SQL'
INSERT INTO pages_c (fp) SELECT CASE WHEN g % 4 = 0 THEN '5a5a3c3c0f0f9697'::simhash64 ELSE '5a5a3c3c0f0f9696' END
FROM generate_series(1, 60) g;
SQL
cat > "$script.del" <<'SQL'
DELETE FROM pages_c WHERE id IN (SELECT id FROM pages_c WHERE fp <~> '5a5a3c3c0f0f9696' <= 1 ORDER BY random() LIMIT 150);
VACUUM pages_c;
SQL
cat > "$script.check" <<'SQL'
\set k random(0, 11)
SELECT 1 / (probe = scan)::int
FROM (SELECT (SELECT count(*) FROM pages_c WHERE fp <~> '5a5a3c3c0f0f9696' <= :k) AS probe,
             (SELECT count(*) FROM pages_c WHERE (fp <~> '5a5a3c3c0f0f9696') + 0 <= :k) AS scan) s;
SQL
plan=$(q -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM pages_c WHERE fp <~> '5a5a3c3c0f0f9696' <= 11")
[[ "$plan" == *"Tid Scan"* ]] || die "the covering probe's query is not a TID scan: $plan"
log "covering probe while pages split and are deleted: 6 pgbench clients for 20 s"
"$PG_BIN/pgbench" -n -c 6 -j 2 -T 20 -f "$script.ins@3" -f "$script.del@1" -f "$script.check@6" "$DB" \
    > "$script.pgbench" 2>&1 || { cat "$script.pgbench"; die "a probe of the covering layout disagreed with a scan while pages split"; }
done_=$(grep -o "actually processed: [0-9]*" "$script.pgbench" | grep -o "[0-9]*$" || true)
rows=$(q -c "SELECT count(*) FROM pages_c WHERE fp <~> '5a5a3c3c0f0f9696' <= 1")
echo "covering probe under concurrent splits: $done_ transactions (6 in 10 a check), the copies' rows at the end $rows"
[ "$rows" -gt 3000 ] || die "the inserts did not grow the copies' run: the test does not split its pages"

psql -X -q -d postgres -c "DROP DATABASE $DB"
log "concurrency: partitions under REPEATABLE READ, multi-row transactions without deadlock, no collision with application advisory locks, the verified guard with candidate keys, the covering probe under concurrent splits"
