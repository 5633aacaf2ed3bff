-- simhash_clusters: connected components of "distance <= k".
CREATE TABLE items (id bigint PRIMARY KEY, fp simhash64);
-- Groups of near copies (group g: ids 10g..10g+4, each 1 bit from the base),
-- a chain (101..104: each link 3 bits from the previous, the ends 9 apart),
-- singletons, exact duplicates and a NULL.
INSERT INTO items SELECT 10 * g + c, (hashint8extended(g, 1) # (CASE WHEN c = 0 THEN 0 ELSE 1::bigint << (c * 11) END))::simhash64
FROM generate_series(1, 5) g, generate_series(0, 4) c;
INSERT INTO items VALUES (101, '0000000000000000'), (102, '0000000000000007'),
                         (103, '000000000000003f'), (104, '00000000000001ff');
INSERT INTO items SELECT 200 + g, hashint8extended(g, 2)::simhash64 FROM generate_series(1, 5) g;
INSERT INTO items VALUES (301, 'ffff0000ffff0000'), (302, 'ffff0000ffff0000'), (303, NULL);
-- A star that joins step by step as k grows: 402, 403 and 404 are 5, 8
-- and 11 bits from 401 (and 13 or more from each other).
INSERT INTO items VALUES (401, 'aaaaaaaaaaaaaaaa'), (402, 'aaaaaaaaaaaaaab5'),
                         (403, 'aaaaaa55aaaaaaaa'), (404, 'aaaaaaaaad55aaaa');
SELECT cluster, array_agg(id ORDER BY id) AS members
FROM simhash_clusters('items', 'fp', 3) GROUP BY cluster ORDER BY cluster;
-- Without singletons; k = 0 is exact duplicates only.
SELECT count(*) FROM simhash_clusters('items', 'fp', 3, 'id', false);
SELECT cluster, array_agg(id ORDER BY id) FROM simhash_clusters('items', 'fp', 0, 'id', false) GROUP BY cluster;
-- The same components as a brute-force self-join, followed transitively,
-- at every k (at 9 the chain's ends are within k of each other).
CREATE FUNCTION disagreements(k int) RETURNS bigint LANGUAGE sql AS $$
WITH RECURSIVE edges AS (
    SELECT a.id AS a, b.id AS b FROM items a JOIN items b ON hamming(a.fp, b.fp) <= k
), reach AS (
    SELECT a, b FROM edges
    UNION
    SELECT r.a, e.b FROM reach r JOIN edges e ON e.a = r.b
)
SELECT count(*)
FROM (SELECT a, min(b) AS cluster FROM reach GROUP BY a) want
FULL JOIN simhash_clusters('items', 'fp', k) got ON got.id = want.a
WHERE got.cluster IS DISTINCT FROM want.cluster
$$;
SELECT k, disagreements(k), (SELECT count(DISTINCT cluster) FROM simhash_clusters('items', 'fp', k)) AS clusters
FROM generate_series(0, 11) k;
-- Past simhash.cluster_memory (about 75 bytes a row), the buckets grouped
-- in one query: the same components at every k, with and without
-- singletons; and the in-memory path is not taken.
BEGIN;
SET LOCAL simhash.cluster_memory = '1kB';
SET LOCAL track_functions = 'all';
SELECT k, disagreements(k) FROM generate_series(0, 11) k;
SELECT count(*) FROM simhash_clusters('items', 'fp', 3, 'id', false);
SELECT cluster, array_agg(id ORDER BY id) FROM simhash_clusters('items', 'fp', 0, 'id', false) GROUP BY cluster;
SELECT pg_stat_get_xact_function_calls('_simhash_bucket_links(bigint[],bigint[],integer)'::regprocedure) > 0 AS by_buckets,
       pg_stat_get_xact_function_calls('simhash_clusters_query(text,integer,boolean)'::regprocedure) IS NULL AS not_in_memory;
COMMIT;
BEGIN;
SET LOCAL simhash.cluster_memory = 'lots';
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'fp', 3)$$);
COMMIT;
-- By buckets, what is held is bounded too: one bucket's rows (about 75
-- bytes each) and the links of the rows that have a neighbour (about 80
-- bytes each), within simhash.cluster_memory or 1MB, whichever is larger
-- (a small setting sends clustering to the buckets): past it, 53200
-- naming the setting, not an allocation the OOM killer answers.
CREATE TABLE linked AS SELECT g AS id, hashint8extended(CASE WHEN g < 20000 THEN g / 2 ELSE g END, 7)::simhash64 AS fp
  FROM generate_series(0, 29999) g;  -- 10,000 pairs, 10,000 rows alone
CREATE TABLE one_bucket AS SELECT g AS id, '00000000000000ff'::simhash64 AS fp FROM generate_series(1, 20000) g;
BEGIN;
SET LOCAL simhash.cluster_memory = '1kB';
\set SHOW_CONTEXT never
SELECT outcome($$SELECT count(*) FROM simhash_clusters('linked', 'fp', 0)$$) AS links_past_the_bound;
SELECT outcome($$SELECT count(*) FROM simhash_clusters('one_bucket', 'fp', 0)$$) AS bucket_past_the_bound;
\set SHOW_CONTEXT errors
SET LOCAL simhash.cluster_memory = '2MB';
SELECT count(*) AS linked_within_2MB FROM simhash_clusters('linked', 'fp', 0, 'id', false);
COMMIT;
DROP TABLE linked, one_bucket;
DROP FUNCTION disagreements(int);
-- Flag the copies (the README's statement), then keep one row (the lowest
-- id) per cluster and delete the rest.
ALTER TABLE items ADD COLUMN dup_of bigint;
UPDATE items d SET dup_of = c.cluster
FROM simhash_clusters('items', 'fp', 3, 'id', false) c
WHERE d.id = c.id AND c.id <> c.cluster AND d.dup_of IS DISTINCT FROM c.cluster;
SELECT dup_of, array_agg(id ORDER BY id) FROM items WHERE dup_of IS NOT NULL GROUP BY dup_of ORDER BY dup_of;
DELETE FROM items i USING simhash_clusters('items', 'fp', 3, 'id', false) c
WHERE i.id = c.id AND c.id <> c.cluster;
SELECT count(*) AS left_rows, count(*) FILTER (WHERE fp IS NULL) AS nulls,
       count(*) FILTER (WHERE dup_of IS NOT NULL) AS flagged_left FROM items;
-- Errors.
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'fp', 12)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'fp', -1)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'nope', 3)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('nope', 'fp', 3)$$);
-- simhash_clusters_query takes (key, fingerprint) rows: a key of any
-- integer type, a fingerprint as simhash64 or bigint. Anything else is a
-- specific error naming the columns it expects, never an internal one.
INSERT INTO items VALUES (501, 'ffff0000ffff0000'), (502, 'ffff0000ffff0001');
SELECT (SELECT array_agg(c ORDER BY c) FROM simhash_clusters_query('SELECT id::int, fp FROM items', 1, false) c)
     = (SELECT array_agg(c ORDER BY c) FROM simhash_clusters('items', 'fp', 1, 'id', false) c) AS int_key_simhash64_fp,
       (SELECT array_agg(c ORDER BY c) FROM simhash_clusters_query('SELECT id::smallint, fp::bigint FROM items', 1, false) c)
     = (SELECT array_agg(c ORDER BY c) FROM simhash_clusters('items', 'fp', 1, 'id', false) c) AS smallint_key_bigint_fp;
SELECT * FROM simhash_clusters_query('SELECT id::smallint, fp FROM items', 1, false);
SELECT * FROM simhash_clusters_query('SELECT 1', 3, true);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT 1::bigint, ''x''::text', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT 1::bigint, 1.5::numeric', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT ''a''::text, 1::bigint', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT fp, id FROM items', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT 1::bigint, 2::bigint, 3::bigint', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELEC 1', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('CREATE TABLE nope (a int)', 3, true)$$);
SELECT outcome($$SELECT * FROM simhash_clusters_query('SELECT 1::bigint, fp FROM items', 12, true)$$);
-- A long run stops at once on a statement timeout.
CREATE TABLE many AS SELECT g AS id, hashint8extended(g, 3)::simhash64 AS fp FROM generate_series(1, 400000) g;
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '200ms';
SELECT count(*) FROM simhash_clusters('many', 'fp', 11);
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1 second' AS cancelled_promptly;
-- The same by buckets (the error's context lines are the SPI query's).
\set SHOW_CONTEXT never
SET simhash.cluster_memory = '1kB';
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '200ms';
SELECT count(*) FROM simhash_clusters('many', 'fp', 11);
RESET statement_timeout;
RESET simhash.cluster_memory;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1 second' AS cancelled_promptly_by_buckets;
\set SHOW_CONTEXT errors
DROP TABLE items, many;
