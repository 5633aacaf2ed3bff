-- The tables of the Citus tests, on the coordinator of a fresh cluster
-- (tests/citus.sh). The same rows go into a plain local table, docs_local,
-- the oracle every distributed answer is compared with.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET citus.shard_count = 8;
DROP SCHEMA IF EXISTS citus_test CASCADE;
CREATE SCHEMA citus_test;
SET search_path = citus_test, public;

CREATE TABLE docs_local (id bigint PRIMARY KEY, fp simhash64);
-- 20,000 uniformly random fingerprints.
INSERT INTO docs_local
SELECT i, hashint8extended(i, 42)::simhash64 FROM generate_series(1, 20000) i;
-- For each of 12 query fingerprints, one row at every distance 0..12,
-- the differing bits at an offset that moves with the query (so the
-- neighbours straddle band boundaries).
INSERT INTO docs_local
SELECT 100000 + q * 100 + d,
       (hashint8extended(q, 7) # ((((1::bigint << d) - 1)) << ((q * 5) % 50)))::simhash64
FROM generate_series(1, 12) q, generate_series(0, 12) d;
-- A hot bucket: 2,000 rows sharing their top 16 bits.
INSERT INTO docs_local
SELECT 200000 + i,
       ((hashint8extended(i, 3) & x'0000ffffffffffff'::bigint) | (x'1234'::bigint << 48))::simhash64
FROM generate_series(1, 2000) i;
-- Exact copies (clusters of equal fingerprints) and rows without one.
INSERT INTO docs_local
SELECT 300000 + i, hashint8extended(i % 50, 42)::simhash64 FROM generate_series(1, 150) i;
INSERT INTO docs_local SELECT 400000 + i, NULL FROM generate_series(1, 10) i;

-- The query fingerprints: the planted bases, random ones, hot-bucket ones.
CREATE TABLE queries (qid bigint PRIMARY KEY, fp simhash64 NOT NULL);
INSERT INTO queries SELECT q, hashint8extended(q, 7)::simhash64 FROM generate_series(1, 12) q;
INSERT INTO queries SELECT 100 + q, hashint8extended(q, 99)::simhash64 FROM generate_series(1, 6) q;
INSERT INTO queries
SELECT 200 + row_number() OVER (ORDER BY id), fp FROM docs_local WHERE id IN (200001, 200500, 201999);

CREATE TABLE docs (LIKE docs_local INCLUDING ALL);
SELECT create_distributed_table('docs', 'id') \gset
INSERT INTO docs SELECT * FROM docs_local;

-- The same queries as a reference table and as a table co-located with docs.
CREATE TABLE queries_ref (LIKE queries INCLUDING ALL);
SELECT create_reference_table('queries_ref') \gset
INSERT INTO queries_ref SELECT * FROM queries;
CREATE TABLE queries_co (LIKE queries INCLUDING ALL);
SELECT create_distributed_table('queries_co', 'qid', colocate_with => 'docs') \gset
INSERT INTO queries_co SELECT * FROM queries;

SELECT count(*) AS band_indexes FROM simhash_add_bands('docs', 'fp') \gset
SELECT count(*) AS band_indexes FROM simhash_add_bands('docs_local', 'fp') \gset
ANALYZE docs_local, docs, queries, queries_ref, queries_co;

-- The oracle: every (query, row, distance) pair within 12, by scanning.
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TABLE oracle AS
SELECT q.qid, d.id, hamming(q.fp, d.fp) AS dist
FROM queries q CROSS JOIN docs_local d
WHERE d.fp IS NOT NULL AND hamming(q.fp, d.fp) <= 12;
RESET enable_indexscan;
RESET enable_bitmapscan;

-- expect(name, ok): raises when ok is not true, else says "ok: name".
CREATE FUNCTION expect(name text, ok boolean, detail text DEFAULT '') RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'FAILED: % %', name, detail;
    END IF;
    RETURN 'ok: ' || name;
END $$;
