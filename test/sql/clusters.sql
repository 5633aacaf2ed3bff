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
SELECT cluster, array_agg(id ORDER BY id) AS members
FROM simhash_clusters('items', 'fp', 3) GROUP BY cluster ORDER BY cluster;
-- Without singletons; k = 0 is exact duplicates only.
SELECT count(*) FROM simhash_clusters('items', 'fp', 3, 'id', false);
SELECT cluster, array_agg(id ORDER BY id) FROM simhash_clusters('items', 'fp', 0, 'id', false) GROUP BY cluster;
-- The same components as a brute-force self-join, followed transitively.
WITH RECURSIVE edges AS (
    SELECT a.id AS a, b.id AS b FROM items a JOIN items b ON hamming(a.fp, b.fp) <= 3
), reach AS (
    SELECT a, b FROM edges
    UNION
    SELECT r.a, e.b FROM reach r JOIN edges e ON e.a = r.b
)
SELECT count(*) AS disagreements
FROM (SELECT a, min(b) AS cluster FROM reach GROUP BY a) want
FULL JOIN simhash_clusters('items', 'fp', 3) got ON got.id = want.a
WHERE got.cluster IS DISTINCT FROM want.cluster;
-- Keep one row (the lowest id) per cluster and delete the rest.
DELETE FROM items i USING simhash_clusters('items', 'fp', 3, 'id', false) c
WHERE i.id = c.id AND c.id <> c.cluster;
SELECT count(*) AS left_rows, count(*) FILTER (WHERE fp IS NULL) AS nulls FROM items;
-- Errors.
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'fp', 8)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'fp', -1)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('items', 'nope', 3)$$);
SELECT outcome($$SELECT * FROM simhash_clusters('nope', 'fp', 3)$$);
-- A long run stops at once on a statement timeout.
CREATE TABLE many AS SELECT g AS id, hashint8extended(g, 3)::simhash64 AS fp FROM generate_series(1, 400000) g;
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '200ms';
SELECT count(*) FROM simhash_clusters('many', 'fp', 7);
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1 second' AS cancelled_promptly;
DROP TABLE items, many;
