-- The band index: plain distance conditions use it, and always return
-- exactly what a sequential scan returns.

-- Fingerprints: hashed integers (all 64 bits random), 300 copies of one
-- value, NULLs, and planted neighbours of a few bases at every distance
-- 0..16, with the flipped bits spread over all bands or packed into one.
CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64, body text);
INSERT INTO docs SELECT g, hashint8extended(g, 42)::simhash64, 'doc ' || g
FROM generate_series(1, 20000) g;
INSERT INTO docs SELECT 100000 + g, 'a5a55a5a0f0ff0f0', 'same' FROM generate_series(1, 300) g;
INSERT INTO docs SELECT 200000 + g, NULL, 'null' FROM generate_series(1, 50) g;
CREATE FUNCTION flip(fp simhash64, bits int[]) RETURNS simhash64 LANGUAGE sql IMMUTABLE AS $$
    SELECT (fp::bigint # coalesce((SELECT bit_or(1::bigint << b) FROM unnest(bits) b), 0))::simhash64
$$;
INSERT INTO docs
SELECT 300000 + base * 100 + d * 2 + spread::int,
       flip(hashint8extended(base, 7)::simhash64,
            CASE WHEN spread
                 -- d bits spread round-robin over the four bands
                 THEN ARRAY(SELECT (i % 4) * 16 + i / 4 FROM generate_series(0, d - 1) i)
                 -- d bits packed into band 1
                 ELSE ARRAY(SELECT 32 + i FROM generate_series(0, d - 1) i) END),
       'planted'
FROM generate_series(1, 5) base, generate_series(0, 16) d, (VALUES (true), (false)) s(spread);
SELECT simhash_add_bands('docs', 'fp');
ANALYZE docs;

-- Queries: the bases, a hashed value, the repeated value.
CREATE TABLE queries (qid int, q simhash64);
INSERT INTO queries SELECT base, hashint8extended(base, 7)::simhash64 FROM generate_series(1, 5) base;
INSERT INTO queries VALUES (6, hashint8extended(17, 42)::simhash64), (7, 'a5a55a5a0f0ff0f0');

-- Answers with the indexes forced, then with only a scan allowed.
CREATE TABLE answers (k int, qid int, indexed bigint[], scanned bigint[]);
SET enable_seqscan = off;
INSERT INTO answers SELECT k, qid,
    ARRAY(SELECT id FROM docs WHERE fp <~> q <= k ORDER BY id), NULL
FROM queries, generate_series(0, 16) k;
RESET enable_seqscan;
SET enable_bitmapscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off;
UPDATE answers SET scanned = ARRAY(SELECT id FROM docs, queries q
                                   WHERE q.qid = answers.qid AND hamming(fp, q.q) <= k ORDER BY id);
RESET enable_bitmapscan; RESET enable_indexscan; RESET enable_indexonlyscan;
SELECT count(*) AS cases, count(*) FILTER (WHERE indexed = scanned) AS indexed_equals_scan,
       sum(cardinality(scanned)) AS rows_compared
FROM answers;
-- The planted rows at distance <= k are all there, per k, spread or packed.
SELECT k, sum(cardinality(scanned)) FILTER (WHERE qid <= 5) AS planted_found
FROM answers GROUP BY k ORDER BY k;

-- EXPLAIN: every form a user writes reaches the four band indexes.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' < 4 AND body <> 'x';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE hamming(fp, '0123456789abcdef') <= 2;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE 3 >= '0123456789abcdef' <~> fp;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' = 1;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 7;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_within(fp, '0123456789abcdef', 11);
RESET enable_seqscan;
-- Beyond k = 11 a scan is the plan.
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 12;
-- Prepared statements: custom plans and the generic plan.
PREPARE near(simhash64, int) AS SELECT id FROM docs WHERE fp <~> $1 <= $2 ORDER BY id;
EXPLAIN (COSTS OFF) EXECUTE near('0123456789abcdef', 3);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE near('0123456789abcdef', 3);
SELECT count(*) FROM answers a
WHERE a.qid = 1 AND a.indexed = ARRAY(SELECT id FROM docs WHERE fp <~> (SELECT q FROM queries WHERE qid = 1) <= a.k ORDER BY id);
EXECUTE near(hashint8extended(1, 7)::simhash64, 16);
RESET plan_cache_mode;
-- The correlated form an ETL job uses.
EXPLAIN (COSTS OFF)
SELECT b.qid, m.id FROM queries b CROSS JOIN LATERAL (SELECT id FROM docs d WHERE d.fp <~> b.q <= 3) m;
SELECT b.qid, count(m.id) FROM queries b
CROSS JOIN LATERAL (SELECT id FROM docs d WHERE d.fp <~> b.q <= 3) m GROUP BY b.qid ORDER BY b.qid;
-- Inside EXISTS, a CTE and a view.
EXPLAIN (COSTS OFF) SELECT qid FROM queries b
WHERE EXISTS (SELECT 1 FROM docs d WHERE d.fp <~> b.q <= 2 AND d.id <> 0);
CREATE VIEW near_one AS SELECT id FROM docs WHERE fp <~> 'a5a55a5a0f0ff0f0' <= 3;
SELECT pg_get_viewdef('near_one');
SELECT count(*) FROM near_one;

-- A negative bound matches nothing, however it is written (as the plain
-- comparison does: the rewrite never changes an answer), and the band
-- functions raise no error (they are LEAKPROOF): a band that does not
-- exist is NULL.
SELECT count(*) FROM docs WHERE fp <~> '0123456789abcdef' <= -1;
SELECT simhash_within('0123456789abcdef', '0123456789abcdef', -3);
SELECT simhash_band_neighbors('0123456789abcdef', 0, -1);
SELECT simhash_band_neighbors('0123456789abcdef', 4, 3) IS NULL AS no_band_4;
-- ... while bounds nothing can meet are simply empty.
SELECT count(*) FROM docs WHERE fp <~> '0123456789abcdef' < 0;
SELECT count(*) FROM docs WHERE fp <~> '0123456789abcdef' <= NULL;
-- Edge bounds: 0 is exact equality, 64 every non-NULL row.
SELECT count(*) FROM docs WHERE fp <~> 'a5a55a5a0f0ff0f0' <= 0;
SELECT count(*) = (SELECT count(fp) FROM docs) AS all_rows FROM docs WHERE fp <~> '0000000000000000' <= 64;
SELECT cardinality(simhash_band_neighbors('0123456789abcdef', 2, 3)) AS k3,
       cardinality(simhash_band_neighbors('0123456789abcdef', 2, 7)) AS k7,
       cardinality(simhash_band_neighbors('0123456789abcdef', 2, 11)) AS k11,
       cardinality(simhash_band_neighbors('0123456789abcdef', 2, 64)) AS k64;

-- Changes are seen at once: insert, update, delete, then VACUUM, REINDEX.
SET enable_seqscan = off;
INSERT INTO docs VALUES (900001, flip('0123456789abcdef', '{1,20,40}'), 'new');
SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3;
UPDATE docs SET fp = flip('0123456789abcdef', '{5}') WHERE id = 900001;
SELECT id, fp <~> '0123456789abcdef' AS d FROM docs WHERE fp <~> '0123456789abcdef' <= 1;
UPDATE docs SET fp = 'fedcba9876543210' WHERE id = 900001;
SELECT count(*) FROM docs WHERE fp <~> '0123456789abcdef' <= 3;
DELETE FROM docs WHERE id BETWEEN 100001 AND 100150;
SELECT count(*) FROM docs WHERE fp <~> 'a5a55a5a0f0ff0f0' <= 0;
VACUUM docs;
REINDEX TABLE docs;
SELECT count(*) FROM docs WHERE fp <~> 'a5a55a5a0f0ff0f0' <= 0;
RESET enable_seqscan;

-- simhash_add_bands: idempotent, checked; simhash_drop_bands undoes it.
SELECT simhash_add_bands('docs', 'fp');
SELECT outcome('SELECT simhash_add_bands(''docs'', ''nope'')');
SELECT outcome('SELECT simhash_add_bands(''docs'', ''body'')');
SELECT outcome('SELECT simhash_add_bands(''no_such_table'', ''fp'')');
CREATE ROLE simhash_regress_other;
GRANT SELECT ON docs TO simhash_regress_other;
SET ROLE simhash_regress_other;
SELECT outcome('SELECT simhash_add_bands(''docs'', ''fp'')');
SELECT outcome('SELECT simhash_drop_bands(''docs'', ''fp'')');
RESET ROLE;
DROP VIEW near_one;
SELECT simhash_drop_bands('docs', 'fp');
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3;
-- Hand-written DDL of the documented form works the same.
CREATE INDEX docs_b0 ON docs (simhash_band(fp, 0));
CREATE INDEX docs_b1 ON docs (simhash_band(fp, 1));
CREATE INDEX docs_b2 ON docs (simhash_band(fp, 2));
CREATE INDEX docs_b3 ON docs (simhash_band(fp, 3));
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3;
SELECT count(*) FROM docs WHERE fp <~> 'a5a55a5a0f0ff0f0' <= 0;
RESET enable_seqscan;
DROP TABLE docs, queries, answers;
DROP FUNCTION flip(simhash64, int[]);
DROP ROLE simhash_regress_other;
