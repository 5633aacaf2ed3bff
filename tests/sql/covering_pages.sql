-- The covering probe reads the band indexes' B-tree pages itself
-- (src/btree.rs): exact on a tree of three levels, for a band value whose
-- entries span many leaf pages (and for a fingerprint repeated so often
-- that the separators above keep row ids), after inserts that split pages,
-- with deleted rows, after VACUUM has deleted emptied pages, with NULLs, on
-- a temporary table (local buffers), under SERIALIZABLE (the access method
-- instead, which takes the predicate locks); and the index statistics still
-- count its scans.
\set SHOW_CONTEXT never
CREATE TABLE pages (id bigint PRIMARY KEY, fp simhash64);
-- Random fingerprints; 3,000 sharing their top band (0xabcd); 3,000 of
-- one value; NULLs.
INSERT INTO pages SELECT g, hashint8extended(g, 11)::simhash64 FROM generate_series(1, 150000) g;
INSERT INTO pages
SELECT 200000 + g, ((x'abcd'::bigint << 48) | (hashint8extended(g, 12) & x'0000ffffffffffff'::bigint))::simhash64
FROM generate_series(1, 3000) g;
INSERT INTO pages SELECT 300000 + g, '1234abcd5678ef90' FROM generate_series(1, 3000) g;
INSERT INTO pages SELECT 400000 + g, NULL FROM generate_series(1, 50) g;
CREATE TABLE pages_q (q simhash64);
INSERT INTO pages_q VALUES ('abcd000000000000'), ('abcd00ff00ff00ff'), ('abcdffffffffffff'),
    ('1234abcd5678ef90'), ('1234abcd5678ef91'), ('1234abcd0000ef90'),
    ('abce000000000000'), ('0000000000000000'), ('ffffffffffffffff');
INSERT INTO pages_q SELECT fp FROM pages WHERE id IN (7, 70000, 149999, 200001, 202999);
SELECT simhash_add_bands('pages', 'fp', '4x16c');
ANALYZE pages;
-- More leaves than one internal page points to: the tree has three levels.
SELECT pg_relation_size('pages_fp_cband0') / current_setting('block_size')::int > 500 AS three_levels;

-- Each query at k = 0, 3, 4, 7, 8 and 11 (each radius of the probe, at
-- both ends) as users write it, against a scan's answers;
-- and the plan is the probe's TID scan.
CREATE FUNCTION pages_check(tbl regclass DEFAULT 'pages')
RETURNS TABLE (queries int, equal int, rows_compared bigint, tid_scans int)
LANGUAGE plpgsql AS $$
DECLARE
    got bigint[];
    want bigint[];
    r record;
    line text;
    kk int;
BEGIN
    queries := 0; equal := 0; rows_compared := 0; tid_scans := 0;
    FOR r IN SELECT q FROM pages_q LOOP
        FOREACH kk IN ARRAY ARRAY[0, 3, 4, 7, 8, 11] LOOP
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE fp <~> %L <= %s', tbl, r.q, kk)
                INTO got;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE (fp <~> %L) + 0 <= %s', tbl, r.q, kk)
                INTO want;
            FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM %s WHERE fp <~> %L <= %s', tbl, r.q, kk) LOOP
                IF line ~ '^\s*Tid Scan' THEN
                    tid_scans := tid_scans + 1;
                END IF;
            END LOOP;
            queries := queries + 1;
            equal := equal + (got IS NOT DISTINCT FROM want)::int;
            rows_compared := rows_compared + coalesce(cardinality(want), 0);
        END LOOP;
    END LOOP;
    RETURN NEXT;
END $$;
SELECT * FROM pages_check();
-- The shared value's 3,000 rows, the top band's 3,000 and their answers.
SELECT count(*) AS same_value FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
SELECT count(*) AS top_band_within_11 FROM pages WHERE fp <~> 'abcd000000000000' <= 11;

-- Inserts after the build split the pages of both hot runs.
INSERT INTO pages SELECT 500000 + g, '1234abcd5678ef90' FROM generate_series(1, 2000) g;
INSERT INTO pages
SELECT 600000 + g, ((x'abcd'::bigint << 48) | (hashint8extended(g, 13) & x'0000ffffffffffff'::bigint))::simhash64
FROM generate_series(1, 2000) g;
INSERT INTO pages SELECT 700000 + g, hashint8extended(g, 14)::simhash64 FROM generate_series(1, 20000) g;
SELECT * FROM pages_check();

-- Deleted rows: in this transaction, then committed.
BEGIN;
DELETE FROM pages WHERE id % 3 = 0 AND (id BETWEEN 200000 AND 399999 OR id > 500000);
SELECT * FROM pages_check();
COMMIT;
SELECT * FROM pages_check();

-- Every row of the shared value gone and VACUUM run: the leaves they
-- filled are emptied and deleted, and the probe steps past them; then
-- the value again, on recycled pages.
DELETE FROM pages WHERE fp = '1234abcd5678ef90';
VACUUM pages;
SELECT count(*) AS same_value_after_vacuum FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
SELECT * FROM pages_check();
INSERT INTO pages SELECT 800000 + g, '1234abcd5678ef90' FROM generate_series(1, 1500) g;
SELECT * FROM pages_check();

-- Concurrently with readers elsewhere nothing changes here: a probe
-- inside a transaction that inserted rows sees its own rows.
BEGIN;
INSERT INTO pages SELECT 900000 + g, '1234abcd5678ef90' FROM generate_series(1, 10) g;
SELECT count(*) AS own_rows_seen FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
ROLLBACK;

-- The result kept for the next call under the same snapshot is not
-- used after ROLLBACK TO SAVEPOINT, or after a PL/pgSQL block rolled
-- back, which bring deleted rows back without a new command: each count
-- is the scan's.
BEGIN;
SELECT count(*) AS before_savepoint FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
SAVEPOINT s;
DELETE FROM pages WHERE id BETWEEN 800001 AND 800500;
SELECT count(*) AS after_delete FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
ROLLBACK TO SAVEPOINT s;
SELECT count(*) AS after_rollback_to FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
SELECT count(*) AS after_rollback_to_scan FROM pages WHERE (fp <~> '1234abcd5678ef90') + 0 <= 0;
COMMIT;
DO $$
DECLARE
    before_block bigint;
    in_block bigint;
    after_block bigint;
    scan bigint;
BEGIN
    SELECT count(*) INTO before_block FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
    BEGIN
        DELETE FROM pages WHERE id BETWEEN 800001 AND 800500;
        SELECT count(*) INTO in_block FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
        RAISE EXCEPTION 'undo the block';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
    SELECT count(*) INTO after_block FROM pages WHERE fp <~> '1234abcd5678ef90' <= 0;
    SELECT count(*) INTO scan FROM pages WHERE (fp <~> '1234abcd5678ef90') + 0 <= 0;
    RAISE NOTICE 'before the block %, in it after its delete %, after it % (the scan %)',
        before_block, in_block, after_block, scan;
END $$;

-- SERIALIZABLE: the probe goes through the access method, which takes
-- the predicate locks a serializable transaction needs; answers the same.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) AS serializable_same_value FROM pages WHERE fp <~> '1234abcd5678ef90' <= 3;
SELECT count(*) > 0 AS predicate_locks_on_the_bands
FROM pg_locks WHERE mode = 'SIReadLock' AND relation = 'pages_fp_cband0'::regclass;
COMMIT;

-- The index statistics count the probe's scans and entries: one scan
-- for each of the 137 band values probed at k = 11, as through the access
-- method, and once a query: the planner's call (to estimate the TID
-- scan's rows) and the execution's share one result.
SELECT pg_stat_force_next_flush();
SELECT idx_scan AS scans_before, idx_tup_read AS read_before
FROM pg_stat_user_indexes WHERE indexrelname = 'pages_fp_cband0' \gset
SELECT count(*) AS found FROM pages WHERE fp <~> 'abcd000000000000' <= 11;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT idx_scan - :scans_before AS band_values_scanned, idx_tup_read > :read_before AS entries_counted
FROM pg_stat_user_indexes WHERE indexrelname = 'pages_fp_cband0';

-- A temporary table: its indexes in local buffers.
CREATE TEMP TABLE pages_tmp AS SELECT * FROM pages WHERE id % 2 = 0 OR fp IS NULL;
ALTER TABLE pages_tmp ADD PRIMARY KEY (id);
SELECT simhash_add_bands('pages_tmp', 'fp', '4x16c');
ANALYZE pages_tmp;
SELECT * FROM pages_check('pages_tmp');

DROP FUNCTION pages_check;
DROP TABLE pages_tmp;
DROP TABLE pages, pages_q;
