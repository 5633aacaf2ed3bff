#!/usr/bin/env bash
# The band index against its baselines, in one run:
#   index   `SELECT id FROM docs WHERE fp <~> q <= k` on a table with the
#           band indexes of each layout in turn (simhash_add_bands with
#           '4x16', then '2x32'; LAYOUTS="4x16c 2x32" picks among '4x16',
#           '4x16c' and '2x32'), k = 3, 7, 11,
#           with the heap rows each query rechecks (EXPLAIN ANALYZE's
#           heap blocks and rows removed by the recheck, per query)
#   scan    the same query with index and bitmap scans disabled
#   diy     what a user could write without the extension: bigint
#           fingerprints, expression indexes on the four shifted 16-bit
#           bands, `(band0 = .. OR ..) AND bit_count((fp # q)::bit(64)) <= 3`
# plus index build time and size per million rows, and insert throughput
# with and without the four indexes.
#
# Rows: fingerprints of real text (../shared/data/zh_short.jsonl.gz beside
# the checkout, 62k texts, when present) and uniformly random 64-bit values
# (hashint8extended fills all 64 bits), plus 5 planted neighbours at
# distances 1..11 of each query so that queries have answers. Queries: 200,
# half planted bases, half random. Latency is per query, measured inside the
# server (plpgsql EXECUTE, so parse and plan are included, as for a client
# sending the query text); p50 and p99 in ms.
#
# Run: bench/band_index.sh [ROWS ...]     default 1000000; e.g. 1000000 10000000
#      LAYOUTS="2x32" KS="3 7" bench/band_index.sh 100000000
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || set -- 1000000
bench_db
corpus="$ROOT/../shared/data/zh_short.jsonl.gz"
layouts=${LAYOUTS:-4x16 2x32}
ks=${KS:-3 7 11}

psql_db >/dev/null <<'SQL'
CREATE OR REPLACE FUNCTION bench_latency(query text, qs simhash64[], k int, reps int DEFAULT 1)
RETURNS TABLE (p50 double precision, p99 double precision, found bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    ms double precision[] := '{}';
    n bigint;
    total bigint := 0;
    q simhash64;
BEGIN
    FOR r IN 1..reps LOOP
        FOREACH q IN ARRAY qs LOOP
            t0 := clock_timestamp();
            EXECUTE 'SELECT count(*) FROM (' || query || ') s' INTO n USING q, k;
            ms := ms || extract(epoch FROM clock_timestamp() - t0) * 1000;
            total := total + n;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
                        percentile_cont(0.99) WITHIN GROUP (ORDER BY x), total
                 FROM unnest(ms) x;
END $$;
-- The heap rows a query fetched and checked, per query (mean): the rows
-- the bitmap heap scan (or the TID scan of the covering layout) returned
-- plus those its filter removed.
CREATE OR REPLACE FUNCTION bench_rechecks(query text, qs simhash64[], k int)
RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    q simhash64;
    plan json;
    total double precision := 0;
BEGIN
    FOREACH q IN ARRAY qs LOOP
        EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO plan USING q, k;
        SELECT total + coalesce(sum((n->>'Actual Rows')::float8 + coalesce((n->>'Rows Removed by Filter')::float8, 0)
                                    + coalesce((n->>'Rows Removed by Index Recheck')::float8, 0)), 0)
        INTO total
        FROM jsonb_path_query(plan::jsonb, 'strict $.**') n
        WHERE jsonb_typeof(n) = 'object' AND n->>'Node Type' IN ('Bitmap Heap Scan', 'Tid Scan', 'Seq Scan');
    END LOOP;
    RETURN total / cardinality(qs);
END $$;
SQL

for rows in "$@"; do
    rm -f "$ROOT/target/band_index.results" "$ROOT/target/band_index.builds" "$ROOT/target/band_index.scan"
    log "loading $rows rows"
    psql_db -c "DROP TABLE IF EXISTS docs, diy, queries, ins_src, ins_idx, ins_plain, real_fps"
    psql_db -c "CREATE TABLE real_fps (fp simhash64)"
    if [ -f "$corpus" ]; then
        zcat "$corpus" | psql_db -c "CREATE TEMP TABLE raw (doc jsonb)" \
            -c "\\copy raw FROM pstdin WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')" \
            -c "INSERT INTO real_fps SELECT simhash(doc->>'text') FROM raw WHERE simhash(doc->>'text') IS NOT NULL"
    fi
    psql_db <<SQL
CREATE TABLE queries AS
SELECT g AS qid, hashint8extended(g, 99)::simhash64 AS q FROM generate_series(1, 200) g;
CREATE UNLOGGED TABLE docs (id bigint, fp simhash64);
INSERT INTO docs SELECT row_number() OVER (), fp FROM real_fps LIMIT $rows;
INSERT INTO docs SELECT g, hashint8extended(g, 42)::simhash64
FROM generate_series((SELECT count(*) FROM docs) + 1, $rows - 1000) g;
-- 5 neighbours of each of the first 100 queries, 1..11 bits away.
INSERT INTO docs SELECT $rows - 1000 + (qid - 1) * 5 + c,
       (q::bigint # (SELECT bit_or(1::bigint << ((qid * 7 + c * 13 + i * 29) % 64))
                     FROM generate_series(1, 1 + (qid + c) % 11) i))::simhash64
FROM queries, generate_series(1, 5) c WHERE qid <= 100;
ALTER TABLE docs ADD PRIMARY KEY (id);
CREATE UNLOGGED TABLE diy AS SELECT id, fp::bigint AS fp FROM docs;
SQL
    psql_db >/dev/null <<'SQL'
CREATE INDEX diy_b0 ON diy (((fp >> 48) & 65535));
CREATE INDEX diy_b1 ON diy (((fp >> 32) & 65535));
CREATE INDEX diy_b2 ON diy (((fp >> 16) & 65535));
CREATE INDEX diy_b3 ON diy ((fp & 65535));
VACUUM ANALYZE docs; VACUUM ANALYZE diy;
SQL
    qs="(SELECT array_agg(q ORDER BY qid) FROM queries)"
    few="(SELECT array_agg(q ORDER BY qid) FROM queries WHERE qid % 40 = 1)"
    index_sql='SELECT id FROM docs WHERE fp <~> $1 <= $2'
    diy_sql='SELECT id FROM diy WHERE (((fp >> 48) & 65535) = ((($1::bigint) >> 48) & 65535) OR ((fp >> 32) & 65535) = ((($1::bigint) >> 32) & 65535) OR ((fp >> 16) & 65535) = ((($1::bigint) >> 16) & 65535) OR (fp & 65535) = (($1::bigint) & 65535)) AND bit_count((fp # $1::bigint)::bit(64)) <= $2'
    log "scan baseline"
    for k in $ks; do
        scan=$(psql_db -c "SET enable_bitmapscan = off" -c "SET enable_indexscan = off" \
               -c "SELECT round(p50::numeric, 1) || ' ' || found FROM bench_latency('$index_sql', $few, $k)")
        echo "$k $scan" >> "$ROOT/target/band_index.scan"
    done
    diy=$(psql_db -c "SELECT round(p50::numeric, 3) || ' ' || round(p99::numeric, 3) || ' ' || found FROM bench_latency(\$q\$$diy_sql\$q\$, $qs, 3)")
    for layout in $layouts; do
        log "layout $layout: building"
        t0=$(date +%s.%N)
        psql_db -c "SELECT count(*) FROM simhash_add_bands('docs', 'fp', '$layout')" >/dev/null
        t1=$(date +%s.%N)
        psql_db -c "VACUUM ANALYZE docs" >/dev/null
        build=$(python3 -c "print(round(($t1 - $t0) / ($rows / 1e6), 2))")
        sizes=$(psql_db -c "SELECT round(sum(pg_relation_size(index)) / 1e6 / ($rows / 1e6), 1) || ' ' ||
                                   round(pg_relation_size('docs') / 1e6 / ($rows / 1e6), 1)
                            FROM simhash_band_indexes('docs', 'fp')")
        psql_db -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> (SELECT q FROM queries LIMIT 1) <= 3" | head -4
        for k in $ks; do
            idx=$(psql_db -c "SELECT round(p50::numeric, 3) || ' ' || round(p99::numeric, 3) || ' ' || found FROM bench_latency('$index_sql', $qs, $k)")
            rechecks=$(psql_db -c "SELECT round(bench_rechecks('$index_sql', $few, $k)::numeric)")
            read -r sp50 sfound < <(grep "^$k " "$ROOT/target/band_index.scan" | cut -d' ' -f2-)
            echo "$layout $k $idx $rechecks $sp50 $sfound" >> "$ROOT/target/band_index.results"
            log "rows $rows layout $layout k $k: index p50/p99/found $idx, rechecks $rechecks | scan p50/found $sp50 $sfound"
        done
        echo "$layout $build $sizes" >> "$ROOT/target/band_index.builds"
    done

    log "insert throughput, 100000 rows"
    psql_db >/dev/null -c "CREATE UNLOGGED TABLE ins_src AS SELECT g AS id, hashint8extended(g, 5)::simhash64 AS fp FROM generate_series(1, 100000) g" \
        -c "CREATE UNLOGGED TABLE ins_idx (LIKE docs)" -c "SELECT simhash_add_bands('ins_idx', 'fp', '4x16')" \
        -c "CREATE UNLOGGED TABLE ins_plain (LIKE docs)" \
        -c "INSERT INTO ins_idx SELECT * FROM docs LIMIT $(( rows / 10 ))" -c "INSERT INTO ins_plain SELECT * FROM docs LIMIT $(( rows / 10 ))"
    ins() {
        local t0 t1
        t0=$(date +%s.%N); psql_db -c "INSERT INTO $1 SELECT * FROM ins_src" >/dev/null; t1=$(date +%s.%N)
        python3 -c "print(round(100000 / ($t1 - $t0)))"
    }
    ins_with=$(ins ins_idx); ins_without=$(ins ins_plain)

    echo
    echo "== band index, $rows rows (index and scan latencies in ms, per query) =="
    printf '%-6s %-4s %10s %10s %10s %9s %9s %8s\n' layout k index_p50 index_p99 rechecks scan_p50 speed-up found
    while read -r layout k ip50 ip99 ifound rechecks sp50 sfound; do
        printf '%-6s %-4s %10s %10s %10s %10s %8sx %8s\n' "$layout" "$k" "$ip50" "$ip99" "$rechecks" "$sp50" \
            "$(python3 -c "print(round($sp50 / max($ip50, 0.001)))")" "$ifound"
    done < "$ROOT/target/band_index.results"
    read -r dp50 dp99 dfound <<< "$diy"
    echo "diy (bigint + shifted-band indexes + bit_count), k=3: p50 $dp50 ms, p99 $dp99 ms, found $dfound"
    while read -r layout build isize hsize; do
        echo "build $layout: simhash_add_bands $build s per million rows; indexes $isize MB per million rows (heap $hsize MB)"
    done < "$ROOT/target/band_index.builds"
    echo "insert 100000 rows: $ins_with rows/s with the four band indexes, $ins_without rows/s without"
    rm -f "$ROOT/target/band_index.results" "$ROOT/target/band_index.builds" "$ROOT/target/band_index.scan"
done
psql_db -c "DROP TABLE IF EXISTS docs, diy, queries, ins_src, ins_idx, ins_plain, real_fps" >/dev/null
