-- Band layouts: the 32-bit halves beside the 16-bit bands. Every layout
-- returns exactly what a scan returns, for every k it serves, on skewed
-- fingerprints too; beyond that, a scan. The planner and the guard read
-- the layout from the index definitions.
\set SHOW_CONTEXT never
-- EXPLAIN's lines without the "Disabled" marks PostgreSQL 18 adds where
-- a disabled plan type is used anyway; and only the scans, without the
-- partitions' aliases.
CREATE FUNCTION plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        CONTINUE WHEN line ~ '^\s*Disabled: true$';
        RETURN NEXT line;
    END LOOP;
END $$;
CREATE FUNCTION scans(query text) RETURNS SETOF text LANGUAGE sql AS $$
    SELECT regexp_replace(trim(replace(l, '->', '')), '^(.* on \S+).*$', '\1')
    FROM plan(query) l WHERE l LIKE '%Scan on%'
$$;

-- The keys and their neighbours.
SELECT simhash_band32('0123456789abcdef', 0) = x'01234567'::bigint AS half0,
       simhash_band32('0123456789abcdef', 1) = x'89abcdef'::bigint AS half1,
       simhash_band32('ffffffffffffffff', 1) AS max_half,
       simhash_band32('0123456789abcdef', 2) IS NULL AS no_half2,
       simhash_band32('0123456789abcdef', -1) IS NULL AS no_half_minus1;
SELECT k, cardinality(simhash_band32_neighbors('0123456789abcdef', 0, k)) AS keys
FROM generate_series(-1, 8) k ORDER BY k;
SELECT simhash_band32_neighbors('0123456789abcdef', 2, 3) IS NULL AS no_half2;
-- 'auto': the layout for the rows, the heap bytes a row and the k queried.
SELECT r, k, b, simhash_layout_for(r, k, b)
FROM (VALUES (0::float8, 11, 44::float8), (1e4, 11, 44), (1e6, 3, 44), (1e6, 7, 44), (1e6, 11, 44),
             (1e7, 3, 44), (1e7, 3, 2000), (1e7, 7, 44), (1e7, 11, 44), (1e9, 3, 44),
             (1e9, 7, 44), (1e9, 11, 44), (1e7, 40, 44), (1e7, -1, 44), (1e7, 7, NULL),
             (NULL, 7, 44), ('NaN', 7, 'NaN'), ('Infinity', 7, 44)) v(r, k, b);
-- k NULL: the rule of record's simhash.verify_k.
SELECT simhash_layout_for(1e7, NULL, 44) AS for_verify_k_11;
SET simhash.verify_k = 3;
SELECT simhash_layout_for(1e7, NULL, 44) AS for_verify_k_3, simhash_layout_for(1e7) AS no_row_bytes;
RESET simhash.verify_k;
SELECT layout, serves, round(probe_ms::numeric, 2) AS probe_ms, index_bytes, round(cost::numeric) AS cost, chosen
FROM simhash_layout_estimates(1e7, 7, 44);
SELECT layout, serves, probe_ms IS NULL AS no_probe, cost IS NULL AS no_cost, chosen
FROM simhash_layout_estimates(1e7, 11, 44);
SELECT count(*) AS no_rows FROM simhash_layout_estimates(NULL, 7, 44);

-- Skewed fingerprints: hashed integers; 40 bases with 60 variants each,
-- 0..7 bits flipped, packed into one half (so that half's key is shared
-- by the whole group: a hot key) or spread over the whole value; 200
-- copies of one value; NULLs.
CREATE TABLE lay (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO lay SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO lay
SELECT 100000 + base * 100 + v,
       (hashint8extended(base, 9) # coalesce((
            SELECT bit_or(1::bigint << CASE WHEN v % 2 = 0 THEN (i * 7 + v) % 32
                                            ELSE (i * 13 + v) % 64 END)
            FROM generate_series(1, v % 8) i), 0))::simhash64
FROM generate_series(1, 40) base, generate_series(0, 59) v;
INSERT INTO lay SELECT 200000 + g, 'f0f0f0f00f0f0f0f' FROM generate_series(1, 200) g;
INSERT INTO lay SELECT 300000 + g, NULL FROM generate_series(1, 20) g;
CREATE TABLE lay_q (qid int, q simhash64);
INSERT INTO lay_q SELECT base, hashint8extended(base, 9)::simhash64 FROM generate_series(1, 40, 3) base;
INSERT INTO lay_q VALUES (100, hashint8extended(5, 3)::simhash64), (101, 'f0f0f0f00f0f0f0f'),
                         (102, 'f0f0f0f00f0f0f0e');

-- For each k, the answer of the query as users write it (k a constant,
-- the indexes preferred) against a scan; and whether the plan probed the
-- indexes of the layout.
CREATE FUNCTION layout_check(layout text)
RETURNS TABLE (k int, probed text, queries int, equal int, rows_compared bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan text;
    got bigint[];
    want bigint[];
    r record;
BEGIN
    FOR kk IN 0..11 LOOP
        k := kk; queries := 0; equal := 0; rows_compared := 0;
        SET LOCAL enable_seqscan = off;
        EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM lay WHERE fp <~> %L <= %s',
                       'f0f0f0f00f0f0f0f', kk) INTO plan;
        probed := CASE WHEN plan LIKE 'Bitmap Heap Scan%' THEN 'bitmap' ELSE split_part(plan, ' on ', 1) END;
        FOR r IN SELECT * FROM lay_q LOOP
            SET LOCAL enable_seqscan = off;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM lay WHERE fp <~> %L <= %s', r.q, kk)
                INTO got;
            RESET enable_seqscan;
            -- Not a distance comparison (the + 0): never rewritten, a scan.
            SELECT array_agg(id ORDER BY id) INTO want FROM lay WHERE (fp <~> r.q) + 0 <= kk;
            queries := queries + 1;
            equal := equal + (got IS NOT DISTINCT FROM want)::int;
            rows_compared := rows_compared + coalesce(cardinality(want), 0);
        END LOOP;
        RETURN NEXT;
    END LOOP;
END $$;

-- 2x32 alone: probed up to k = 7, scanned beyond.
SELECT simhash_add_bands('lay', 'fp', '2x32');
SELECT simhash_band_layouts('lay', 'fp');
ANALYZE lay;
SELECT * FROM layout_check('2x32');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM lay WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 1;
EXPLAIN (COSTS OFF) SELECT id FROM lay WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3;
-- A bound known only at run time: the halves cannot serve every k, so
-- they are not offered (a scan, never a wrong answer).
PREPARE lay_k(int) AS SELECT count(*) FROM lay WHERE fp <~> 'f0f0f0f00f0f0f0f' <= $1;
SET plan_cache_mode = force_generic_plan;
SELECT plan('EXECUTE lay_k(3)');
EXECUTE lay_k(3);
EXECUTE lay_k(40);
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE lay_k(3);
RESET plan_cache_mode;
DEALLOCATE lay_k;
RESET enable_seqscan;

-- Moving to 4x16: the halves go, the bands come; exact up to 11.
SELECT simhash_band_commands('lay', 'fp', '4x16');
SELECT simhash_add_bands('lay', 'fp', '4x16');
SELECT simhash_band_layouts('lay', 'fp');
SELECT * FROM layout_check('4x16');

-- Both: the planner picks by cost; still exact.
SELECT simhash_add_bands('lay', 'fp', '4x16+2x32');
SELECT simhash_band_layouts('lay', 'fp');
ANALYZE lay;
SELECT * FROM layout_check('4x16+2x32');

-- 'auto' follows the table's size (its statistics), the bytes a row and
-- the k queried: pretend it grew.
SELECT simhash_band_commands('lay', 'fp', 'auto', false);
UPDATE pg_class SET reltuples = 5e6 WHERE oid = 'lay'::regclass;
SELECT layout, serves, chosen, table_rows, row_bytes < 1 AS row_bytes_small
FROM simhash_layout_choice('lay', 3);
SELECT simhash_band_commands('lay', 'fp', k => 3);
SELECT simhash_add_bands('lay', 'fp', k => 3);
SELECT simhash_band_layouts('lay', 'fp');
-- For k = 7 (and the default, simhash.verify_k = 11): the covering bands;
-- moved there and back concurrently, statement by statement.
SELECT layout FROM simhash_layout_choice('lay', 7) WHERE chosen;
SELECT layout FROM simhash_layout_choice('lay') WHERE chosen;
SELECT simhash_band_commands('lay', 'fp', k => 7) \gexec
SELECT simhash_band_layouts('lay', 'fp');
SELECT * FROM layout_check('4x16c');
UPDATE pg_class SET reltuples = 5e6 WHERE oid = 'lay'::regclass;  -- CREATE INDEX counted the rows
SELECT simhash_band_commands('lay', 'fp', 'auto', true, 3) \gexec
SELECT simhash_band_layouts('lay', 'fp');
SELECT outcome($$SELECT simhash_layout_choice(NULL)$$);

-- Hand-made indexes of the documented form count, B-tree or hash.
SELECT simhash_drop_bands('lay', 'fp');
CREATE INDEX lay_h0 ON lay USING hash (simhash_band32(fp, 0));
CREATE INDEX lay_h1 ON lay (simhash_band32(fp, 1));
SELECT layout, part, index, valid, usable FROM simhash_band_indexes('lay', 'fp');
SELECT simhash_band_layouts('lay', 'fp');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM lay WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 2;
RESET enable_seqscan;
SELECT count(*) FROM lay WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 2;
-- A partial index is not one: it does not cover every row.
SELECT simhash_drop_bands('lay', 'fp', '2x32');
CREATE INDEX lay_p0 ON lay (simhash_band32(fp, 0)) WHERE id > 0;
CREATE INDEX lay_p1 ON lay (simhash_band32(fp, 1));
SELECT simhash_band_layouts('lay', 'fp');
SELECT simhash_drop_bands('lay', 'fp');

-- The guard probes the halves when they are all there is.
CREATE TABLE gl (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO gl SELECT g, hashint8extended(g, 11)::simhash64 FROM generate_series(1, 2000) g;
SELECT simhash_add_bands('gl', 'fp', '2x32');
SELECT simhash_add_guard('gl', 'fp', 3);
SELECT simhash_band_layouts('gl', 'fp');
INSERT INTO gl VALUES (5001, (hashint8extended(17, 11) # 7)::simhash64);  -- 3 bits from row 17
INSERT INTO gl VALUES (5002, (hashint8extended(17, 11) # 15)::simhash64); -- 4 bits: fine
-- k above 7: the guard needs the 16-bit bands, and set-up keeps them.
SELECT simhash_add_guard('gl', 'fp', 9);
SELECT simhash_band_layouts('gl', 'fp');
SELECT simhash_band_commands('gl', 'fp', '2x32', false);
INSERT INTO gl VALUES (5003, (hashint8extended(18, 11) # 511)::simhash64); -- 9 bits from row 18
DROP TABLE gl;

-- Errors.
SELECT simhash_add_bands('lay', 'fp', '3x21');
SELECT simhash_add_bands('lay', 'fp', NULL);
SELECT simhash_add_bands('lay', 'fp', '');
SELECT simhash_drop_bands('lay', 'fp', '8x8');
SELECT outcome($$SELECT simhash_add_bands(NULL, 'fp')$$);
SELECT outcome($$SELECT simhash_add_bands('lay', NULL)$$);
SELECT outcome($$SELECT simhash_band_commands('lay', 'fp', '2x32', NULL)$$);
SELECT outcome($$SELECT simhash_band_commands('lay', 'fp', '2x32', false)$$);
CREATE TABLE lay_parted (id bigint, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE lay_parted_1 PARTITION OF lay_parted FOR VALUES FROM (0) TO (100000);
CREATE TABLE lay_parted_2 PARTITION OF lay_parted FOR VALUES FROM (100000) TO (1000000);
SELECT simhash_band_commands('lay_parted', 'fp', '2x32');
-- Partitioned, in one transaction: the parent's indexes count.
INSERT INTO lay_parted SELECT id, fp FROM lay;
SELECT simhash_add_bands('lay_parted', 'fp', '2x32');
ANALYZE lay_parted;
-- (Each partition's conditions are folded to constant arrays: the scans
-- are what matters.)
SET enable_seqscan = off;
SELECT scans($$SELECT id FROM lay_parted WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$);
RESET enable_seqscan;
SELECT (SELECT count(*) FROM lay_parted WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3)
     = (SELECT count(*) FROM lay WHERE (fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 3) AS parted_exact;

-- Partitioned, concurrently, PostgreSQL's way: the table's index ON ONLY,
-- each partition's CONCURRENTLY, then attached. The layout counts once
-- the table's indexes are valid, that is once every partition's is
-- attached.
CREATE TABLE lay_p2 (id bigint, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE lay_p2_a PARTITION OF lay_p2 FOR VALUES FROM (0) TO (100000);
CREATE TABLE lay_p2_b PARTITION OF lay_p2 FOR VALUES FROM (100000) TO (1000000);
INSERT INTO lay_p2 SELECT id, fp FROM lay;
CREATE INDEX lay_p2_h0 ON ONLY lay_p2 (simhash_band32(fp, 0));
CREATE INDEX lay_p2_h1 ON ONLY lay_p2 (simhash_band32(fp, 1));
CREATE INDEX CONCURRENTLY lay_p2_a_h0 ON lay_p2_a (simhash_band32(fp, 0));
CREATE INDEX CONCURRENTLY lay_p2_a_h1 ON lay_p2_a (simhash_band32(fp, 1));
CREATE INDEX CONCURRENTLY lay_p2_b_h0 ON lay_p2_b (simhash_band32(fp, 0));
CREATE INDEX CONCURRENTLY lay_p2_b_h1 ON lay_p2_b (simhash_band32(fp, 1));
ALTER INDEX lay_p2_h0 ATTACH PARTITION lay_p2_a_h0;
ALTER INDEX lay_p2_h1 ATTACH PARTITION lay_p2_a_h1;
ALTER INDEX lay_p2_h0 ATTACH PARTITION lay_p2_b_h0;
SELECT simhash_band_layouts('lay_p2', 'fp');  -- half 1 not valid yet
ALTER INDEX lay_p2_h1 ATTACH PARTITION lay_p2_b_h1;
SELECT simhash_band_layouts('lay_p2', 'fp');
ANALYZE lay_p2;
SET enable_seqscan = off;
SELECT scans($$SELECT id FROM lay_p2 WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$);
RESET enable_seqscan;
SELECT (SELECT count(*) FROM lay_p2 WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3)
     = (SELECT count(*) FROM lay WHERE (fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 3) AS p2_exact;

DROP TABLE lay, lay_q, lay_parted, lay_p2;
DROP FUNCTION layout_check(text), scans(text), plan(text);
