#!/usr/bin/env bash
# The band index: build cost, size, point-query latency at k = 3, 7, 11,
# and what it costs inserts, against a sequential scan and against the
# plain-SQL band index a user would write without this extension. The
# thorough companion of bench/band_index.sh: session prepared statements
# (the generic plans an application gets), answers checked, the
# do-it-yourself SQL at k = 7 and 11 too, a covering-index variant, and
# inserts into the full-size table.
#
# Data, per table size N (rows of `docs(id bigint primary key, fp simhash64)`):
#   - the fingerprints of the real texts of zh_short.jsonl.gz (62k short
#     Chinese texts; skipped, with a note, when the corpus is not there),
#   - uniformly random fingerprints filling all 64 bits
#     (hashint8extended(g, seed)); a check fails the run unless every bit
#     is set in about half of the rows and every band takes most values,
#   - 1,100 planted near-duplicates: for each of the 100 "in table" query
#     fingerprints one copy at each distance 1..11 (d distinct random bits
#     flipped), so queries have answers.
# 200 query fingerprints: 100 taken from rows of the table (50 from the
# texts, 50 random rows; 100 random rows when there is no corpus), 100
# random values not in the table (the usual miss).
#
# What is measured, per N:
#   build        SELECT simhash_add_bands('docs', 'fp', LAYOUT, k => LAYOUT_K)
#                (LAYOUT default 'auto', LAYOUT_K default none: the rule of
#                record's simhash.verify_k): seconds per million rows, size
#                of its indexes (pg_relation_size) in MB per million rows
#                (1 MB = 2^20 bytes) and bytes per row; heap size for
#                reference. For 'auto', simhash_layout_choice (what it
#                weighed) and the layout it chose are printed.
#   index        `SELECT id FROM docs WHERE fp <~> $1 <= k`, k = 3, 7, 11, as
#                session prepared statements (PREPARE near3 ...). Each query
#                runs once untimed (so the plan cache is past its 5 custom
#                plans), then REPS passes are timed, each execution on its
#                own with clock_timestamp() around `EXECUTE near3(q)` inside
#                a PL/pgSQL loop (bench/band_index_full.sql): server time, no
#                client round trip. p50 and p99 in ms. The plan used
#                (pg_prepared_statements' generic/custom counts, EXPLAIN and
#                EXPLAIN (ANALYZE, BUFFERS) of one query) is printed.
#   exact        every answer of the index, as ids, against a scan: the 200
#                queries against all rows in one join (indexes and TID scans
#                off), at k = 3, 7 and 11; the run fails on a difference.
#   beside       BESIDE="2x32 4x16": each of those layouts in turn, after
#                the index queries (simhash_add_bands moves the table), its
#                indexes' size and the same timed queries at the k it
#                serves, its answers checked as above (default none).
#   scan         baseline: the same statement with enable_bitmapscan,
#                enable_indexscan, enable_indexonlyscan and enable_tidscan
#                off, on 10 of the
#                queries, once each; p50 and the speed-up scan p50 / index
#                p50. Parallel query is left at the server's default
#                (max_parallel_workers_per_gather = 2), so the scan may use
#                workers; its plan is printed.
#   diy          baseline: what a user writes without the extension. A copy
#                `diy(id bigint primary key, fp bigint)` with the same bits,
#                expression indexes on ((fp >> 48) & 65535), ((fp >> 32) &
#                65535), ((fp >> 16) & 65535), (fp & 65535), and for k = 3
#                `WHERE (band0 = q0 OR ... band3 = q3) AND
#                bit_count((fp # q)::bit(64)) <= 3`. For k = 7 and 11 the
#                same with `band_n = ANY (array)`, the arrays from this
#                extension's simhash_band_neighbors (a user would have to
#                enumerate the neighbours some other way). Its build time
#                and size too.
#   covering     an alternative tried: indexes
#                (simhash_band(fp, n)) INCLUDE (fp, id), queried as the
#                UNION of four index-only scans (each arm filters on the
#                distance from the index tuple, no heap visit). Reported
#                whether it wins or not; its build time and size too. The
#                indexes are dropped again afterwards. COVERING=0 skips it,
#                DIY=0 the do-it-yourself baseline.
#   insert       rows/s of one INSERT ... SELECT of INSERT_ROWS new rows
#                (random fingerprints) into docs with the four band indexes,
#                and into the same table without them (the indexes dropped
#                inside the transaction); the primary key stays in both.
#                Each insert is rolled back, then VACUUM; INSERT_ROUNDS
#                rounds each (default 3; 0 skips it), alternating, median.
# Answers are checked, and the script fails on a difference: the index's
# row count against the scan's for each scanned query and k, and the DIY and
# covering ones against the index's for all 200 queries and every k.
# The final summary has one line per (N, k), then the targets at 10M rows:
# k = 3 p50 < 2 ms and >= 300x the scan, k = 7 p50 < 20 ms, k = 11 p50 <
# 100 ms; for the layout 'auto' picks for k = 7 (LAYOUT_K=7), k = 3 >=
# 1,000x, k = 7 >= 500x and k = 11 >= 100x the scan. Everything is warm: the data fit in this machine's page cache,
# and the heap of 10M rows (422 MB) in the cluster's shared_buffers
# (512 MB). At k = 11 a query visits most heap pages (42,000 of 54,000 at
# 10M), so it slows down several times when they come from the page cache
# instead, as with a heap larger than shared_buffers.
#
# Run it from anywhere in the checkout:
#   bench/band_index_full.sh                    N = 1,000,000
#   bench/band_index_full.sh 1000000 10000000   each size in turn, one summary
#   REPS=3 bench/band_index_full.sh             timed passes over the 200
#                                               queries (default 2)
#   INSERT_ROWS=100000 COVERING=0 bench/...     smaller insert test, no
#                                               covering variant
#   LAYOUT_K=7 BESIDE=2x32 DIY=0 COVERING=0 INSERT_ROUNDS=0 \
#     bench/band_index_full.sh 10000000         the layout 'auto' picks for
#                                               k = 7 beside the halves
#   LAYOUT=4x16c bench/...                      a layout of your choice
#   CORPUS=path.jsonl.gz bench/...              another JSON-lines corpus
#                                               {"id", "text"}, gzip'd or not
# It needs the extension installed (scripts/install.sh) and (re)starts the
# throwaway cluster with scripts/cluster.sh (SIMHASH_PGPORT and
# SIMHASH_PGDATA pick another one), whose configuration preloads the
# library, as the parse-time rewrite of `fp <~> q <= k` needs. It uses the
# database simhash_bench_band, made if missing, where it makes the extension
# anew (so its SQL matches the installed library) and rebuilds its tables
# on every run. `bench/band_index_full.sh 1000000 10000000` takes about 4
# minutes on 2 cores and some 4 GB of disk at most (10M rows with the
# DIY copy and the covering indexes beside them) plus up to 4 GB of WAL.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
cd "$ROOT"

DB=simhash_bench_band
REPS=${REPS:-2}
INSERT_ROWS=${INSERT_ROWS:-200000}
COVERING=${COVERING:-1}
DIY=${DIY:-1}
INSERT_ROUNDS=${INSERT_ROUNDS:-3}
LAYOUT=${LAYOUT:-auto}
LAYOUT_K=${LAYOUT_K:-}
BESIDE=${BESIDE:-}
CORPUS=${CORPUS:-$ROOT/../shared/data/zh_short.jsonl.gz}
PLANTED=1100 # 100 queries x distances 1..11
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000)
for n in "${SIZES[@]}"; do
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 100000 ] || die "each size must be a number >= 100000, not '$n'"
done
[[ "$REPS" =~ ^[0-9]+$ ]] && [ "$REPS" -ge 1 ] || die "REPS must be a number >= 1, not '$REPS'"
[[ "$INSERT_ROWS" =~ ^[0-9]+$ ]] && [ "$INSERT_ROWS" -ge 1000 ] || die "INSERT_ROWS must be a number >= 1000"
[[ "$INSERT_ROUNDS" =~ ^[0-9]+$ ]] || die "INSERT_ROUNDS must be a number, not '$INSERT_ROUNDS'"
[ -z "$LAYOUT_K" ] || [[ "$LAYOUT_K" =~ ^[0-9]+$ ]] || die "LAYOUT_K must be a number, not '$LAYOUT_K'"
for l in $LAYOUT $BESIDE; do
    [[ "$l" =~ ^(auto|4x16|4x16c|2x32)(\+(4x16|4x16c|2x32))*$ ]] || die "unknown layout '$l'"
done

export PGCLIENTENCODING=UTF8 PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

log "starting the throwaway cluster"
"$ROOT/scripts/cluster.sh" start
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

# Aligned output for what is shown, -At for values read back.
psql_db() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off -d "$DB" "$@"; }

if [ -z "$(psql -X -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
    psql -X -q -d postgres -c "CREATE DATABASE $DB"
fi
psql_db -c "DROP EXTENSION IF EXISTS simhash CASCADE" -c "CREATE EXTENSION simhash"
psql_db -c "DROP TABLE IF EXISTS band_bench_samples, band_bench_results, band_bench_layouts"
psql_db -f "$ROOT/bench/band_index_full.sql"

log "fingerprinting the corpus"
psql_db -c "DROP TABLE IF EXISTS corpus_fp, corpus_raw" \
        -c "CREATE TABLE corpus_fp (src text, fp simhash64)"
if [ -f "$CORPUS" ]; then
    # Each JSON line is one CSV field: valid JSON holds no raw control
    # characters, so \x01 and \x02 as quote and delimiter never occur in it.
    zcat -f -- "$CORPUS" | psql_db \
        -c "CREATE UNLOGGED TABLE corpus_raw (doc jsonb)" \
        -c "\\copy corpus_raw FROM pstdin WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')" \
        -c "INSERT INTO corpus_fp SELECT doc->>'id', simhash(doc->>'text') FROM corpus_raw" \
        -c "DELETE FROM corpus_fp WHERE fp IS NULL" \
        -c "DROP TABLE corpus_raw"
    echo "corpus: $(basename "$CORPUS"), $(psql_db -At -c "SELECT count(*) FROM corpus_fp") fingerprints"
else
    echo "note: no corpus at $CORPUS; the table holds random fingerprints only"
fi

run_size() {
    local n=$1 started=$SECONDS
    local v=(-v n="$n" -v planted="$PLANTED" -v reps="$REPS")

    log "N = $n: loading docs"
    psql_db "${v[@]}" <<'SQL'
DROP TABLE IF EXISTS docs, diy, band_bench_queries, band_bench_truth CASCADE;
-- The cluster commits asynchronously; a commit whose WAL is not flushed yet
-- leaves its rows without hint bits, and the VACUUM below would then not
-- mark their pages all-visible (no index-only scans for the covering
-- variant). Synchronous commits here (cheap: fsync is off).
SET synchronous_commit = on;
SELECT clock_timestamp() AS t0 \gset
CREATE TABLE docs (id bigint, fp simhash64);
SELECT least(count(*), :n / 4) AS c FROM corpus_fp \gset
-- The texts' fingerprints, ids 1..c; random ones after them; the planted
-- near-duplicates at the end, ids n - planted + 1 .. n.
INSERT INTO docs
SELECT row_number() OVER (ORDER BY src), fp FROM corpus_fp ORDER BY src LIMIT :c;
INSERT INTO docs
SELECT g, hashint8extended(g, 20240601)::simhash64 FROM generate_series(:c + 1, :n - :planted) g;
ALTER TABLE docs ADD PRIMARY KEY (id);

CREATE TABLE band_bench_queries (qid int PRIMARY KEY, kind text, q simhash64);
SELECT CASE WHEN :c > 0 THEN 50 ELSE 0 END AS nt \gset
INSERT INTO band_bench_queries
SELECT i, 'in table, text', d.fp FROM generate_series(1, :nt) i
JOIN docs d ON d.id = 1 + (hashint8extended(i, 11) & 9223372036854775807) % greatest(:c, 1);
INSERT INTO band_bench_queries
SELECT i, 'in table, random', d.fp FROM generate_series(:nt + 1, 100) i
JOIN docs d ON d.id = :c + 1 + (hashint8extended(i, 13) & 9223372036854775807) % (:n - :planted - :c);
INSERT INTO band_bench_queries
SELECT i, 'not in table', hashint8extended(i, 31337)::simhash64 FROM generate_series(101, 200) i;
-- Query qid's copy at distance d: d distinct bits flipped.
INSERT INTO docs
SELECT :n - :planted + (b.qid - 1) * 11 + d, (b.q::bigint # m.mask)::simhash64
FROM band_bench_queries b, generate_series(1, 11) d,
LATERAL (SELECT bit_or(1::bigint << bit) AS mask
         FROM (SELECT bit FROM generate_series(0, 63) bit
               ORDER BY hashint8extended(bit, b.qid * 100 + d) LIMIT d) s) m
WHERE b.qid <= 100;
VACUUM (ANALYZE) docs;
INSERT INTO band_bench_results VALUES
    (:n, 'load_s', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)),
    (:n, 'rows', (SELECT count(*) FROM docs)),
    (:n, 'corpus_rows', :c),
    (:n, 'heap_bytes', pg_relation_size('docs')),
    (:n, 'pkey_bytes', pg_relation_size('docs_pkey'));

-- All 64 bits of the random rows vary, and every band takes most of its
-- 65,536 values (the texts' fingerprints, before them, are skewed).
SELECT count(*) AS sampled_rows,
       round(min(f), 3) AS min_bit_share, round(max(f), 3) AS max_bit_share,
       round(max(f) FILTER (WHERE bit = 63), 3) AS top_bit_share
FROM (SELECT bit, avg((fp::bigint >> bit) & 1) AS f, count(*)
      FROM docs, generate_series(0, 63) bit WHERE id > :c AND id <= :c + 200000 GROUP BY bit) s \gset
SELECT min(c) AS min_band_values, max(c) AS max_band_values
FROM (SELECT count(DISTINCT simhash_band(fp, b)) AS c
      FROM docs, generate_series(0, 3) b WHERE id > :c AND id <= :c + 200000 GROUP BY b) s \gset
\echo bits of the first 200000 random rows: share of rows with a bit set, per bit: min :min_bit_share, max :max_bit_share, top bit :top_bit_share; distinct values per band: :min_band_values to :max_band_values
SELECT :min_bit_share >= 0.45 AND :max_bit_share <= 0.55 AND :min_band_values >= 40000 AS bits_ok \gset
\if :bits_ok
\else
\warn 'the fingerprints do not fill all 64 bits'
SELECT 1 / 0;
\endif
-- The scan's answers, for the exactness check: every row within 11 of
-- each query, by one join over all rows before the table has band indexes
-- (written NOT (d > 11), which the parse-time rewrite leaves alone).
CREATE TABLE band_bench_truth AS
SELECT b.qid, d.id, d.fp <~> b.q AS dist
FROM band_bench_queries b, docs d WHERE NOT (d.fp <~> b.q > 11);
SELECT count(*) AS rows, pg_size_pretty(pg_relation_size('docs')) AS heap,
       pg_size_pretty(pg_relation_size('docs_pkey')) AS primary_key,
       round((SELECT value FROM band_bench_results WHERE n = :n AND metric = 'load_s')::numeric, 1) AS load_s
FROM docs;
SQL

    log "N = $n: building the band indexes (layout $LAYOUT${LAYOUT_K:+, k $LAYOUT_K})"
    psql_db "${v[@]}" -v layout="$LAYOUT" -v layout_k="$LAYOUT_K" <<'SQL'
\echo 'simhash_layout_choice(''docs'', ' :'layout_k' '): what ''auto'' weighs (probe ms and index bytes a row estimated)'
SELECT layout, serves, round(probe_ms::numeric, 3) AS probe_ms, index_bytes,
       round(cost::numeric) AS cost, chosen, table_rows, round(row_bytes::numeric, 1) AS row_bytes
FROM simhash_layout_choice('docs', nullif(:'layout_k', '')::int);
SELECT band_bench_elapsed(format('SELECT simhash_add_bands(%L, %L, %L, k => %s)', 'docs', 'fp', :'layout',
                                 coalesce(nullif(:'layout_k', ''), 'NULL'))) AS s \gset
ANALYZE docs;
-- A covering index serves 4x16 too: named for what was built.
SELECT array_to_string(CASE WHEN '4x16c' = ANY (l) THEN array_remove(l, '4x16') ELSE l END, '+') AS chosen
FROM simhash_band_layouts('docs', 'fp') l \gset
INSERT INTO band_bench_results VALUES
    (:n, 'build_s', :s),
    (:n, 'bands_bytes', (SELECT sum(pg_relation_size(index)) FROM simhash_band_indexes('docs', 'fp')));
INSERT INTO band_bench_layouts VALUES (:n, 'index', :'chosen',
    (SELECT sum(pg_relation_size(index)) FROM simhash_band_indexes('docs', 'fp')) / :n::float8);
SELECT index, layout, part, pg_size_pretty(pg_relation_size(index)) AS size
FROM simhash_band_indexes('docs', 'fp') ORDER BY 1;
\echo simhash_add_bands(..., :'layout'): the layout :'chosen' in :s s
SQL

    log "N = $n: index queries, k = 3, 7, 11 (200 queries, 1 warm-up + $REPS timed passes)"
    psql_db "${v[@]}" <<'SQL'
SELECT array_agg(qid ORDER BY qid) AS all_q FROM band_bench_queries \gset
SELECT q AS q1 FROM band_bench_queries WHERE qid = 1 \gset
PREPARE near3(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 3;
PREPARE near7(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 7;
PREPARE near11(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 11;
CALL band_bench_run(:n, 'index', 3, 'near3', :'all_q', :reps, 1);
CALL band_bench_run(:n, 'index', 7, 'near7', :'all_q', :reps, 1);
CALL band_bench_run(:n, 'index', 11, 'near11', :'all_q', :reps, 1);
\echo
\echo plans chosen by the plan cache (5 custom plans, then generic when it is no dearer):
SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;
\echo rows returned, mean per query, by kind of query:
SELECT kind, k, round(avg(nrows), 1) AS mean_rows, max(nrows) AS max_rows
FROM band_bench_samples s JOIN band_bench_queries USING (qid)
WHERE n = :n AND variant = 'index' AND pass = 1 GROUP BY kind, k ORDER BY kind, k;
\echo EXPLAIN EXECUTE near3(query 1), the generic plan:
EXPLAIN (COSTS OFF) EXECUTE near3(:'q1');
\echo EXPLAIN (ANALYZE, BUFFERS) of query 1 at k = 3, 7, 11:
EXPLAIN (ANALYZE, BUFFERS) EXECUTE near3(:'q1');
EXPLAIN (ANALYZE, BUFFERS) EXECUTE near7(:'q1');
EXPLAIN (ANALYZE, BUFFERS) EXECUTE near11(:'q1');
SQL

    log "N = $n: sequential scan baseline (10 queries per k)"
    psql_db "${v[@]}" <<'SQL'
SELECT array_agg(qid ORDER BY qid) AS scan_q FROM band_bench_queries WHERE qid % 20 = 1 \gset
SELECT q AS q1 FROM band_bench_queries WHERE qid = 1 \gset
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_tidscan = off;  -- the covering layout's probe
PREPARE scan3(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 3;
PREPARE scan7(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 7;
PREPARE scan11(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 11;
CALL band_bench_run(:n, 'scan', 3, 'scan3', :'scan_q', 1, 0);
CALL band_bench_run(:n, 'scan', 7, 'scan7', :'scan_q', 1, 0);
CALL band_bench_run(:n, 'scan', 11, 'scan11', :'scan_q', 1, 0);
\echo EXPLAIN (ANALYZE) of the scan, query 1, k = 3:
EXPLAIN (ANALYZE, BUFFERS) EXECUTE scan3(:'q1');
SELECT band_bench_check(:n, 'index', 'scan') AS "index = scan, (k, query) pairs";
SQL

    log "N = $n: every answer against the scan's, as ids"
    psql_db -c "SELECT band_bench_exact() AS \"index = scan as ids, (k, query) pairs\""

    for layout in $BESIDE; do
        log "N = $n: beside, layout $layout"
        psql_db "${v[@]}" -v layout="$layout" <<'SQL'
SELECT array_agg(qid ORDER BY qid) AS all_q FROM band_bench_queries \gset
SELECT count(*) FROM simhash_add_bands('docs', 'fp', :'layout') \gset
VACUUM ANALYZE docs;
INSERT INTO band_bench_layouts VALUES (:n, 'beside:' || :'layout', :'layout',
    (SELECT sum(pg_relation_size(index)) FROM simhash_band_indexes('docs', 'fp')) / :n::float8);
SELECT 'beside:' || :'layout' AS variant \gset
-- k = 11 only on a layout that serves it (not the halves alone).
SELECT :'layout' ~ '4x16' AS k11, CASE WHEN :'layout' ~ '4x16' THEN '{3,7,11}' ELSE '{3,7}' END AS ks \gset
PREPARE near3(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 3;
PREPARE near7(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 7;
PREPARE near11(simhash64) AS SELECT id FROM docs WHERE fp <~> $1 <= 11;
CALL band_bench_run(:n, :'variant', 3, 'near3', :'all_q', :reps, 1);
CALL band_bench_run(:n, :'variant', 7, 'near7', :'all_q', :reps, 1);
\if :k11
CALL band_bench_run(:n, :'variant', 11, 'near11', :'all_q', :reps, 1);
\endif
SELECT band_bench_exact(:'ks') AS "beside = scan as ids, (k, query) pairs";
SQL
    done

    if [ "$DIY" != 0 ]; then
    log "N = $n: the plain-SQL baseline (table diy, bigint, four expression indexes)"
    psql_db "${v[@]}" <<'SQL'
SELECT array_agg(qid ORDER BY qid) AS all_q FROM band_bench_queries \gset
SELECT q::bigint AS q1 FROM band_bench_queries WHERE qid = 1 \gset
CREATE TABLE diy AS SELECT id, fp::bigint AS fp FROM docs;
ALTER TABLE diy ADD PRIMARY KEY (id);
VACUUM (ANALYZE) diy;
SELECT sum(band_bench_elapsed(format('CREATE INDEX diy_band%s ON diy ((%s))', b, e))) AS s
FROM (VALUES (0, '(fp >> 48) & 65535'), (1, '(fp >> 32) & 65535'),
             (2, '(fp >> 16) & 65535'), (3, 'fp & 65535')) v(b, e) \gset
ANALYZE diy;
INSERT INTO band_bench_results VALUES
    (:n, 'diy_build_s', :s),
    (:n, 'diy_bytes', (SELECT sum(pg_relation_size(c.oid)) FROM pg_class c
                       WHERE c.relname ~ '^diy_band[0-3]$'));
PREPARE diy3(bigint) AS SELECT id FROM diy
WHERE (((fp >> 48) & 65535) = (($1 >> 48) & 65535) OR ((fp >> 32) & 65535) = (($1 >> 32) & 65535)
    OR ((fp >> 16) & 65535) = (($1 >> 16) & 65535) OR (fp & 65535) = ($1 & 65535))
  AND bit_count((fp # $1)::bit(64)) <= 3;
PREPARE diy7(bigint) AS SELECT id FROM diy
WHERE (((fp >> 48) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 0, 7))
    OR ((fp >> 32) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 1, 7))
    OR ((fp >> 16) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 2, 7))
    OR (fp & 65535) = ANY (simhash_band_neighbors($1::simhash64, 3, 7)))
  AND bit_count((fp # $1)::bit(64)) <= 7;
PREPARE diy11(bigint) AS SELECT id FROM diy
WHERE (((fp >> 48) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 0, 11))
    OR ((fp >> 32) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 1, 11))
    OR ((fp >> 16) & 65535) = ANY (simhash_band_neighbors($1::simhash64, 2, 11))
    OR (fp & 65535) = ANY (simhash_band_neighbors($1::simhash64, 3, 11)))
  AND bit_count((fp # $1)::bit(64)) <= 11;
CALL band_bench_run(:n, 'diy', 3, 'diy3', :'all_q', :reps, 1, '::bigint');
CALL band_bench_run(:n, 'diy', 7, 'diy7', :'all_q', :reps, 1, '::bigint');
CALL band_bench_run(:n, 'diy', 11, 'diy11', :'all_q', :reps, 1, '::bigint');
SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;
\echo EXPLAIN (ANALYZE, BUFFERS) EXECUTE diy3(query 1), diy11(query 1):
EXPLAIN (ANALYZE, BUFFERS) EXECUTE diy3(:q1);
EXPLAIN (ANALYZE, BUFFERS) EXECUTE diy11(:q1);
SELECT band_bench_check(:n, 'diy', 'index') AS "diy = index, (k, query) pairs";
\echo diy indexes: :s s
DROP TABLE diy;
SQL
    fi

    if [ "$COVERING" != 0 ]; then
        log "N = $n: covering variant: (simhash_band(fp, n)) INCLUDE (fp, id), UNION of index-only scans"
        psql_db "${v[@]}" <<'SQL'
SELECT array_agg(qid ORDER BY qid) AS all_q FROM band_bench_queries \gset
SELECT q AS q1 FROM band_bench_queries WHERE qid = 1 \gset
SELECT relallvisible || ' of ' || relpages AS vm FROM pg_class WHERE oid = 'docs'::regclass \gset
\echo heap pages all-visible (index-only scans skip the heap on those): :vm
SELECT sum(band_bench_elapsed(format(
           'CREATE INDEX docs_fp_cov%s ON docs (simhash_band(fp, %s)) INCLUDE (fp, id)', b, b))) AS s
FROM generate_series(0, 3) b \gset
INSERT INTO band_bench_results VALUES
    (:n, 'cov_build_s', :s),
    (:n, 'cov_bytes', (SELECT sum(pg_relation_size(c.oid)) FROM pg_class c
                       WHERE c.relname ~ '^docs_fp_cov[0-3]$'));
-- `NOT (d > k)` rather than `d <= k`: the parse-time rewrite leaves it
-- alone, so each arm uses its own index only (the planner folds it back
-- to `d <= k`).
PREPARE cov3(simhash64) AS
          SELECT id FROM docs WHERE simhash_band(fp, 0) = simhash_band($1, 0) AND NOT (fp <~> $1 > 3)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 1) = simhash_band($1, 1) AND NOT (fp <~> $1 > 3)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 2) = simhash_band($1, 2) AND NOT (fp <~> $1 > 3)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 3) = simhash_band($1, 3) AND NOT (fp <~> $1 > 3);
PREPARE cov7(simhash64) AS
          SELECT id FROM docs WHERE simhash_band(fp, 0) = ANY (simhash_band_neighbors($1, 0, 7)) AND NOT (fp <~> $1 > 7)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 1) = ANY (simhash_band_neighbors($1, 1, 7)) AND NOT (fp <~> $1 > 7)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 2) = ANY (simhash_band_neighbors($1, 2, 7)) AND NOT (fp <~> $1 > 7)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 3) = ANY (simhash_band_neighbors($1, 3, 7)) AND NOT (fp <~> $1 > 7);
PREPARE cov11(simhash64) AS
          SELECT id FROM docs WHERE simhash_band(fp, 0) = ANY (simhash_band_neighbors($1, 0, 11)) AND NOT (fp <~> $1 > 11)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 1) = ANY (simhash_band_neighbors($1, 1, 11)) AND NOT (fp <~> $1 > 11)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 2) = ANY (simhash_band_neighbors($1, 2, 11)) AND NOT (fp <~> $1 > 11)
    UNION SELECT id FROM docs WHERE simhash_band(fp, 3) = ANY (simhash_band_neighbors($1, 3, 11)) AND NOT (fp <~> $1 > 11);
CALL band_bench_run(:n, 'covering', 3, 'cov3', :'all_q', :reps, 1);
CALL band_bench_run(:n, 'covering', 7, 'cov7', :'all_q', :reps, 1);
CALL band_bench_run(:n, 'covering', 11, 'cov11', :'all_q', :reps, 1);
SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;
\echo EXPLAIN (ANALYZE, BUFFERS) EXECUTE cov11(query 1):
EXPLAIN (ANALYZE, BUFFERS) EXECUTE cov11(:'q1');
SELECT band_bench_check(:n, 'covering', 'index') AS "covering = index, (k, query) pairs";
\echo covering indexes: :s s
DROP INDEX docs_fp_cov0, docs_fp_cov1, docs_fp_cov2, docs_fp_cov3;
SQL
    fi

    [ "$INSERT_ROUNDS" = 0 ] || log "N = $n: inserts, $INSERT_ROWS rows, with and without the band indexes ($INSERT_ROUNDS rounds)"
    for round in $(seq 1 "$INSERT_ROUNDS"); do
        psql_db "${v[@]}" -v rows="$INSERT_ROWS" -v round="$round" <<'SQL'
SELECT format('INSERT INTO docs SELECT g, hashint8extended(g, %s)::simhash64 FROM generate_series(%s, %s) g',
              1000 + :round, :n + 1, :n + :rows) AS ins \gset
BEGIN;
SELECT band_bench_elapsed(:'ins') AS s \gset
ROLLBACK;
INSERT INTO band_bench_results VALUES (:n, 'insert_bands_s', :s);
VACUUM (INDEX_CLEANUP ON) docs;
BEGIN;
SELECT count(*) AS dropped FROM simhash_drop_bands('docs', 'fp') \gset
SELECT band_bench_elapsed(:'ins') AS s2 \gset
ROLLBACK;
INSERT INTO band_bench_results VALUES (:n, 'insert_plain_s', :s2);
VACUUM (INDEX_CLEANUP ON) docs;
\echo round :round: with the :dropped band indexes :s s, without :s2 s
SQL
    done
    psql_db -v n="$n" -v rows="$INSERT_ROWS" -v wall="$((SECONDS - started))" <<'SQL'
INSERT INTO band_bench_results
SELECT :n, 'wall_s', :wall
UNION ALL
SELECT :n, CASE metric WHEN 'insert_bands_s' THEN 'insert_bands_rows_s' ELSE 'insert_plain_rows_s' END,
       :rows / percentile_cont(0.5) WITHIN GROUP (ORDER BY value)
FROM band_bench_results
WHERE n = :n AND metric IN ('insert_bands_s', 'insert_plain_s') GROUP BY metric;
SQL
    log "N = $n: done in $((SECONDS - started)) s"
}

for n in "${SIZES[@]}"; do
    run_size "$n"
done

log "summary"
psql_db <<'SQL'
CREATE TEMP VIEW lat AS
SELECT n, variant, k,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
       count(*) AS runs
FROM band_bench_samples GROUP BY n, variant, k;
CREATE TEMP VIEW res AS
SELECT n, jsonb_object_agg(metric, value) AS m FROM band_bench_results GROUP BY n;
CREATE TEMP VIEW summary AS
SELECT i.n, i.k, i.p50 AS index_p50, i.p99 AS index_p99, s.p50 AS scan_p50,
       s.p50 / i.p50 AS speedup, d.p50 AS diy_p50, d.p99 AS diy_p99,
       c.p50 AS cov_p50, c.p99 AS cov_p99, r.m
FROM lat i
JOIN res r USING (n)
LEFT JOIN lat s ON s.n = i.n AND s.k = i.k AND s.variant = 'scan'
LEFT JOIN lat d ON d.n = i.n AND d.k = i.k AND d.variant = 'diy'
LEFT JOIN lat c ON c.n = i.n AND c.k = i.k AND c.variant = 'covering'
WHERE i.variant = 'index';

\echo 'Query latency in ms (server-side, per execution, generic plans); build, size and inserts per table size.'
\echo 'diy at k = 7 and 11 uses simhash_band_neighbors() for its arrays (marked *).'
SELECT n AS "N", k,
       round(index_p50::numeric, 3) AS "index p50", round(index_p99::numeric, 3) AS "index p99",
       round(scan_p50::numeric, 1) AS "scan p50", round(speedup::numeric) || 'x' AS "speed-up",
       round(diy_p50::numeric, 3) || CASE WHEN k > 3 THEN '*' ELSE '' END AS "diy p50",
       round(diy_p99::numeric, 3) || CASE WHEN k > 3 THEN '*' ELSE '' END AS "diy p99",
       round(((m->>'build_s')::float8 / (n / 1e6))::numeric, 2) AS "build s/M rows",
       round(((m->>'bands_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "index MB/M rows",
       round((m->>'insert_bands_rows_s')::numeric) AS "insert rows/s, bands",
       round((m->>'insert_plain_rows_s')::numeric) AS "insert rows/s, no bands"
FROM summary ORDER BY n, k;

\echo 'Per table size: heap and the alternatives'' indexes (MB per million rows, build s per million rows).'
SELECT n AS "N",
       round(((m->>'heap_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "heap MB/M",
       round(((m->>'pkey_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "pkey MB/M",
       round(((m->>'bands_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "bands MB/M",
       round(((m->>'build_s')::float8 / (n / 1e6))::numeric, 2) AS "bands s/M",
       round(((m->>'diy_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "diy MB/M",
       round(((m->>'diy_build_s')::float8 / (n / 1e6))::numeric, 2) AS "diy s/M",
       round(((m->>'cov_bytes')::float8 / 2^20 / (n / 1e6))::numeric, 1) AS "covering MB/M",
       round(((m->>'cov_build_s')::float8 / (n / 1e6))::numeric, 2) AS "covering s/M",
       (m->>'corpus_rows')::bigint AS "text rows",
       round((m->>'wall_s')::numeric) AS "wall s"
FROM res ORDER BY n;

\echo 'Covering variant (INCLUDE (fp, id), UNION of four index-only scans) against the band indexes, ms.'
SELECT n AS "N", k, round(index_p50::numeric, 3) AS "index p50", round(index_p99::numeric, 3) AS "index p99",
       round(cov_p50::numeric, 3) AS "covering p50", round(cov_p99::numeric, 3) AS "covering p99",
       round((index_p50 / cov_p50)::numeric, 2) AS "index/covering"
FROM summary WHERE cov_p50 IS NOT NULL ORDER BY n, k;

\echo 'Layouts side by side: the one built (index) and those BESIDE it, each against the same scan (ms, index bytes per row).'
SELECT l.n AS "N", l.variant, l.layout, t.k, round(t.p50::numeric, 3) AS p50, round(t.p99::numeric, 3) AS p99,
       round(s.p50::numeric, 1) AS "scan p50", round((s.p50 / t.p50)::numeric) || 'x' AS "speed-up",
       round(l.index_bytes_per_row::numeric, 1) AS "index B/row",
       round(((r.m->>'heap_bytes')::float8 / l.n)::numeric, 1) AS "heap B/row"
FROM band_bench_layouts l
JOIN lat t ON t.n = l.n AND t.variant = l.variant
LEFT JOIN lat s ON s.n = l.n AND s.k = t.k AND s.variant = 'scan'
JOIN res r ON r.n = l.n
ORDER BY l.n, l.variant <> 'index', l.variant, t.k;

\echo 'Targets (stated for N = 10M): k = 3 p50 < 2 ms and >= 300x the scan; k = 7 p50 < 20 ms; k = 11 p50 < 100 ms;'
\echo 'for the layout ''auto'' picks for k = 7 (LAYOUT_K=7): k = 3 >= 1,000x, k = 7 >= 500x, k = 11 >= 100x the scan.'
SELECT n AS "N", k, target,
       CASE WHEN ok THEN 'met' ELSE 'MISSED' END AS result
FROM (
    SELECT n, k, 'p50 < 2 ms' AS target, index_p50 < 2 AS ok FROM summary WHERE k = 3
    UNION ALL SELECT n, k, '>= 300x scan', speedup >= 300 FROM summary WHERE k = 3
    UNION ALL SELECT n, k, 'p50 < 20 ms', index_p50 < 20 FROM summary WHERE k = 7
    UNION ALL SELECT n, k, 'p50 < 100 ms', index_p50 < 100 FROM summary WHERE k = 11
    UNION ALL SELECT n, k, '>= 1,000x scan', speedup >= 1000 FROM summary WHERE k = 3
    UNION ALL SELECT n, k, '>= 500x scan', speedup >= 500 FROM summary WHERE k = 7
    UNION ALL SELECT n, k, '>= 100x scan', speedup >= 100 FROM summary WHERE k = 11
) t ORDER BY n, k, target;
SQL
