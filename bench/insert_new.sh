#!/usr/bin/env bash
# The set-based load against a plain load of the same rows, side by side
# in one run: SOURCE rows (one in PLANTED an edited copy of a target row,
# one in PLANTED an edited copy of an earlier source row, the rest new)
# into a target of TARGET rows with its band indexes,
#
#   plain   INSERT INTO target (id, body) SELECT id, body FROM source
#   new     SELECT * FROM simhash_insert_new('target', 'source', K, 'id')
#
# REPS times interleaved: the rates and their ratio (target of the issue:
# at least 0.5x), the rows each kept, and how many rows were planted.
#
# Run: bench/insert_new.sh [CORPUS]   default ../shared/data/zh_short.jsonl.gz
# TARGET=1000000 SOURCE=100000 PLANTED=20 K=3 REPS=3 LAYOUT=4x16 (the
# target's band layout: 4x16c, 2x32 ...). Uses the throwaway
# cluster. At millions of rows give the target the layout it would have
# there (LAYOUT=auto: 2x32 from 2^22 rows): on 4x16 a probe of a
# 10,000,000-row target of these texts rechecked about 1,600 heap rows,
# mostly outside shared buffers (37 ms a probe, against 0.54 ms on 2x32).
#
# The texts, TEXTS=:
#   clauses (the default)  each row 3 to 6 clauses of the corpus (its
#       texts cut at ，。！？；、 and line ends; distinct clauses of at
#       least MIN_CLAUSE characters, default 4), picked by hashes of the
#       row's number and joined with ，: short texts like the corpus's
#       own (about 90 characters), distinct as fingerprints at any size.
#       A planted copy changes one character: the second ('的') of a
#       target row, the last before the final 。 ('了') of the source row
#       two before it.
#   pairs  two texts of the corpus joined (the texts of the runs before
#       this option): at millions of rows a short text joined to a long
#       one is the long one, and many rows fall within k of each other
#       (74% of a 200,000-row batch into 2,000,000 were skipped).
# The texts are made in SQL from the row's number, so a row's text is the
# same in every run and no table of them is kept beside the target.
#
# Each load is timed inside a transaction that is rolled back, on one
# target built once (FRESH=1: a fresh target for each load instead, as
# before this option; slow at millions of rows, where building the target
# takes longer than a plain load). After each rollback, VACUUM (the rolled-
# back rows out of the heap and the indexes) and CHECKPOINT. A load after
# a vacuumed rollback finds room in the index pages that the first load
# into the freshly built indexes has to split, so before the rounds one
# plain load is rolled back untimed (PRIME=0 skips it): every timed load,
# of either kind, then meets the same state of the indexes. The time is
# the statement's (clock_timestamp() before and after), not the commit's
# or rollback's.
#
# CITUS=1: on a fresh Citus cluster of scripts/citus.sh (a coordinator and
# two workers, in CITUS_BENCH_DIR, default /tmp/simhash-citus-bench-pgNN,
# ports from CITUS_BENCH_PORT, default 55450; destroyed at the end), the
# target distributed by id over SHARDS shards (default 32); the source is
# a local table on the coordinator, as a staging table is.
#
# PROFILE=1: then one more call, each of its statements with its duration
# (auto_explain with ANALYZE, so slower than the rounds; on Citus without
# ANALYZE, which Citus refuses for its INSERT ... SELECT).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TARGET=${TARGET:-1000000}
SOURCE=${SOURCE:-100000}
PLANTED=${PLANTED:-20}
K=${K:-3}
LAYOUT=${LAYOUT:-4x16}
REPS=${REPS:-3}
TEXTS=${TEXTS:-clauses}
MIN_CLAUSE=${MIN_CLAUSE:-4}
FRESH=${FRESH:-}
PRIME=${PRIME:-1}
corpus=${1:-$ROOT/../shared/data/zh_short.jsonl.gz}
[ -f "$corpus" ] || die "corpus not found: $corpus"
case $TEXTS in clauses|pairs) ;; *) die "TEXTS is clauses or pairs, not $TEXTS" ;; esac

CITUS=${CITUS:-}
SHARDS=${SHARDS:-32}
work=$(mktemp -d)
if [ -n "$CITUS" ]; then
    trap 'citus_sh destroy >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    log "a fresh Citus cluster in $CITUS_BENCH_DIR (ports $CITUS_BENCH_PORT-$((CITUS_BENCH_PORT + 2))), $SHARDS shards"
    citus_bench_db
    distribute="SELECT create_distributed_table('ins_target', 'id', shard_count => $SHARDS);"
else
    trap 'rm -rf "$work"' EXIT
    bench_db
    distribute=""
fi
q() { psql_db "$@"; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(round($(now) - $1, 1))"; }
copy_text_of "$corpus" > "$work/data"
docs=$(wc -l < "$work/data")
log "$(basename "$corpus"): $docs documents; target $TARGET rows, source $SOURCE, texts: $TEXTS; this processor: $(instruction_set)"

t_gen=$(now)
q <<SQL >/dev/null
SET client_min_messages = warning;
DROP TABLE IF EXISTS ins_src_texts, ins_clauses, ins_base, ins_source, ins_target;
CREATE TABLE ins_src_texts (n serial PRIMARY KEY, body text);
\\copy ins_src_texts (body) FROM '$work/data'
-- The distinct clauses, numbered in code point order.
CREATE TABLE ins_clauses (n integer PRIMARY KEY, body text NOT NULL);
INSERT INTO ins_clauses
SELECT row_number() OVER (ORDER BY c COLLATE "C"), c
FROM (SELECT DISTINCT btrim(c) AS c
      FROM ins_src_texts, regexp_split_to_table(body, '[，。！？；、\n]+') c) x
WHERE char_length(c) >= $MIN_CLAUSE;
ANALYZE ins_src_texts, ins_clauses;
SQL
clauses=$(q -c "SELECT count(*) FROM ins_clauses")
[ "$TEXTS" != clauses ] || log "$clauses distinct clauses of at least $MIN_CLAUSE characters"

# Hashes of a row's number: hashint8extended (the one hash partitioning
# uses, so the same on every platform and version), seeded per use.
h() { printf '(hashint8extended(%s, %s) & 9223372036854775807)' "$1" "$2"; }

# texts_of QUERY: the rows of QUERY (which has a column key, bigint) with
# a column body, the text of that key.
texts_of() {
    if [ "$TEXTS" = clauses ]; then
        cat <<SQL
SELECT g.*, c1.body || '，' || c2.body || '，' || c3.body
            || CASE WHEN g.m >= 4 THEN '，' || c4.body ELSE '' END
            || CASE WHEN g.m >= 5 THEN '，' || c5.body ELSE '' END
            || CASE WHEN g.m >= 6 THEN '，' || c6.body ELSE '' END || '。' AS body
FROM (SELECT s.*, 3 + $(h s.key 0) % 4 AS m FROM ($1) s) g
JOIN ins_clauses c1 ON c1.n = 1 + $(h g.key 1) % $clauses
JOIN ins_clauses c2 ON c2.n = 1 + $(h g.key 2) % $clauses
JOIN ins_clauses c3 ON c3.n = 1 + $(h g.key 3) % $clauses
JOIN ins_clauses c4 ON c4.n = 1 + $(h g.key 4) % $clauses
JOIN ins_clauses c5 ON c5.n = 1 + $(h g.key 5) % $clauses
JOIN ins_clauses c6 ON c6.n = 1 + $(h g.key 6) % $clauses
SQL
    else
        # Two texts joined, distinct for every key up to docs * docs.
        cat <<SQL
SELECT g.*, a.body || b.body AS body FROM ($1) g
JOIN ins_src_texts a ON a.n = 1 + (g.key % $docs)
JOIN ins_src_texts b ON b.n = 1 + ((g.key * 7919 + g.key / $docs) % $docs)
SQL
    fi
}
target_rows=$(texts_of "SELECT i AS key FROM generate_series(1, $TARGET::bigint) i")
# The source: new rows, edited copies of target rows, edited copies of
# earlier source rows (pairs: the new row's two texts the other way round,
# with a 。, as the runs before TEXTS).
if [ "$TEXTS" = clauses ]; then
    source_rows="SELECT $TARGET + i AS id,
       CASE edit WHEN 1 THEN overlay(body placing '的' from 2 for 1)
                 WHEN 2 THEN overlay(body placing '了' from char_length(body) - 1 for 1)
                 ELSE body END
FROM ($(texts_of "SELECT i, CASE WHEN i % $PLANTED = 0 THEN 1 + $(h i 7) % $TARGET
                                 WHEN i % $PLANTED = 1 AND i > $PLANTED THEN $TARGET + i - 2
                                 ELSE $TARGET + i END AS key,
                            CASE WHEN i % $PLANTED = 0 THEN 1
                                 WHEN i % $PLANTED = 1 AND i > $PLANTED THEN 2
                                 ELSE 0 END AS edit
                     FROM generate_series(1, $SOURCE::bigint) i")) x"
else
    source_rows="SELECT $TARGET + t.key,
       CASE WHEN t.key % $PLANTED = 0 THEN overlay(t.body placing '的' from 2 for 1)
            WHEN t.key % $PLANTED = 1 AND t.key > $PLANTED THEN a.body || b.body || '。'
            ELSE b.body || a.body END
FROM ($(texts_of "SELECT i AS key FROM generate_series(1, $SOURCE::bigint) i")) t
JOIN ins_src_texts a ON a.n = 1 + ((t.key - 1) % $docs)
JOIN ins_src_texts b ON b.n = 1 + (((t.key - 1) * 104729 + 17) % $docs)"
fi
q <<SQL >/dev/null
CREATE TABLE ins_source (id bigint, body text);
INSERT INTO ins_source $source_rows;
ANALYZE ins_source;
SQL
log "clauses and source made in $(since "$t_gen") s"

build() {
    local t0 t1
    t0=$(now)
    q <<SQL >/dev/null
SET client_min_messages = warning;
DROP TABLE IF EXISTS ins_target;
CREATE TABLE ins_target (id bigint PRIMARY KEY, body text NOT NULL,
                         fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
$distribute
INSERT INTO ins_target (id, body) SELECT key, body FROM ($target_rows) r;
SQL
    t1=$(now)
    q <<SQL >/dev/null
SELECT count(*) FROM simhash_add_bands('ins_target', 'fp', '$LAYOUT');
VACUUM ANALYZE ins_target;
CHECKPOINT;
SQL
    log "target built: rows with their fingerprints $(python3 -c "print(round($t1 - $t0, 1))") s, band indexes and VACUUM ANALYZE $(since "$t1") s"
}
build
q <<SQL | sed 's/^/    /' >&2
SELECT 'target: ' || pg_size_pretty(pg_table_size('ins_target')) || ' heap, '
       || pg_size_pretty(pg_indexes_size('ins_target')) || ' indexes; source '
       || pg_size_pretty(pg_total_relation_size('ins_source')) || '; database '
       || pg_size_pretty(pg_database_size(current_database()));
SELECT 'text length, target: mean ' || round(avg(char_length(body))) || ', median '
       || percentile_disc(0.5) WITHIN GROUP (ORDER BY char_length(body))
FROM ins_target;
SELECT 'target rows whose fingerprint another target row has: ' || coalesce(sum(c), 0)
FROM (SELECT count(*) AS c FROM ins_target GROUP BY fp HAVING count(*) > 1) x;
SELECT 'largest 16-bit band bucket: ' || max(c) || ' rows (uniform: '
       || round($TARGET / 65536.0) || ')'
FROM (SELECT count(*) AS c FROM ins_target, generate_series(0, 3) b
      GROUP BY b, simhash_band(fp, b)) x;
SQL
if [ "$TEXTS" = clauses ]; then
    # A character changed moves a short text's fingerprint by more than k
    # now and then: how many of the planted copies are within k of the row
    # they copy, which is how many the new load must skip at least.
    q <<SQL | sed 's/^/    /' >&2
SELECT 'planted in the source: ' || count(t.id) || ' copies of target rows ('
       || count(t.id) FILTER (WHERE simhash(s.body) <~> t.fp <= $K) || ' within k of it), '
       || count(e.id) || ' of earlier source rows ('
       || count(e.id) FILTER (WHERE simhash(s.body) <~> simhash(e.body) <= $K) || ' within k of it)'
FROM generate_series(1, $SOURCE::bigint) i
JOIN ins_source s ON s.id = $TARGET + i
LEFT JOIN ins_target t ON i % $PLANTED = 0 AND t.id = 1 + $(h i 7) % $TARGET
LEFT JOIN ins_source e ON i % $PLANTED = 1 AND i > $PLANTED AND e.id = $TARGET + i - 2;
SQL
fi

# A load of VARIANT, timed: "variant t0 t1 rows-in" on standard output.
load() {
    local stmt
    if [ "$1" = plain ]; then
        stmt="INSERT INTO ins_target (id, body) SELECT id, body FROM ins_source;"
    else
        stmt="SELECT * FROM simhash_insert_new('ins_target', 'ins_source', $K, 'id');"
    fi
    q <<SQL
SET client_min_messages = warning;
BEGIN;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset
\\o /dev/null
$stmt
\\o
SELECT extract(epoch FROM clock_timestamp()) AS t1 \\gset
SELECT count(*) - $TARGET AS kept FROM ins_target \\gset
$([ -n "$FRESH" ] && echo COMMIT || echo ROLLBACK);
\\echo $1 :t0 :t1 :kept
SQL
}
after_rollback() {
    local t0
    t0=$(now)
    q -c "VACUUM ins_target" -c "CHECKPOINT"
    log "VACUUM and CHECKPOINT after the rollback: $(since "$t0") s"
}
if [ -z "$FRESH" ] && [ "$PRIME" = 1 ]; then
    log "an untimed plain load, rolled back (PRIME=0 skips it)"
    load plain >/dev/null
    after_rollback
fi
: > "$work/times"
first=1
for rep in $(seq 1 "$REPS"); do
    for variant in plain new; do
        if [ -n "$FRESH" ] && [ -z "$first" ]; then build; fi
        first=
        load "$variant" | tee -a "$work/times" | while read -r v t0 t1 kept; do
            log "round $rep: $v $(python3 -c "print(round($t1 - $t0, 2))") s, $kept rows in"
        done
        [ -n "$FRESH" ] || after_rollback
    done
done
if [ -n "${PROFILE:-}" ]; then
    # Where the time of one call goes: each statement it runs, with its
    # duration, from auto_explain (nested statements, ANALYZE on).
    [ -z "$FRESH" ] || build
    # Citus refuses to explain an INSERT ... SELECT through the coordinator
    # with ANALYZE, so there the durations come without it.
    analyze=$([ -n "$CITUS" ] && echo off || echo on)
    q <<SQL 2>&1 | python3 -c '
import re, sys
text = sys.stdin.read()
for m in re.finditer(r"duration: ([0-9.]+) ms\s+plan:\s*Query Text: (.*?)\n", text):
    ms, query = float(m.group(1)), " ".join(m.group(2).split())
    if ms >= 5:
        print("%10.1f ms  %s" % (ms, query[:110]))
'
BEGIN;
LOAD 'auto_explain';
SET LOCAL auto_explain.log_min_duration = 0;
SET LOCAL auto_explain.log_nested_statements = on;
SET LOCAL auto_explain.log_level = notice;
SET LOCAL auto_explain.log_analyze = $analyze;
SET LOCAL client_min_messages = notice;
SELECT * FROM simhash_insert_new('ins_target', 'ins_source', $K, 'id');
ROLLBACK;
SQL
fi
q -c "DROP TABLE ins_target, ins_source, ins_src_texts, ins_clauses"
python3 - "$work/times" "$SOURCE" "$TARGET" "$K" "$REPS" "${CITUS:+, Citus: coordinator + 2 workers, $SHARDS shards}" "$TEXTS" <<'PY'
import statistics, sys
path, source, target, k, reps, where, texts = sys.argv[1:]
secs, kept = {}, {}
for line in open(path):
    v, t0, t1, n = line.split()
    secs.setdefault(v, []).append(float(t1) - float(t0))
    kept[v] = int(n)
med = {v: statistics.median(s) for v, s in secs.items()}
print(f"\n== {source} rows into {target} with band indexes, k = {k}, texts: {texts}, median of {reps}{where} ==")
print("%-7s %9s %10s %10s %9s" % ("load", "seconds", "rows/s", "rows-in", "vs-plain"))
for v in ["plain", "new"]:
    print("%-7s %9.2f %10.0f %10d %8.2fx" % (v, med[v], int(source) / med[v], kept[v], med["plain"] / med[v]))
PY
