-- Query shapes that must reach the band indexes (their answers are
-- checked in band_index and rewrite_exact; here, the plans).
CREATE TABLE shp (id int PRIMARY KEY, owner name, fp simhash64);
INSERT INTO shp SELECT g, CASE WHEN g % 2 = 0 THEN 'simhash_reader' ELSE 'someone_else' END,
                       hashint8extended(g, 11)::simhash64
FROM generate_series(1, 20000) g;
SELECT count(*) FROM simhash_add_bands('shp', 'fp');
ANALYZE shp;
CREATE TABLE shp_q (qid int, q simhash64);
INSERT INTO shp_q SELECT g, hashint8extended(g, 11)::simhash64 FROM generate_series(1, 5) g;
ANALYZE shp_q;

-- The bound as smallint (what psycopg 3 sends for a small Python int),
-- bigint and numeric, as literals and as parameters.
EXPLAIN (COSTS OFF) SELECT id FROM shp WHERE fp <~> '0123456789abcdef' <= 3::smallint;
EXPLAIN (COSTS OFF) SELECT id FROM shp WHERE fp <~> '0123456789abcdef' <= 3::bigint;
EXPLAIN (COSTS OFF) SELECT id FROM shp WHERE fp <~> '0123456789abcdef' < 3.5;
PREPARE p_small(simhash64, smallint) AS SELECT id FROM shp WHERE fp <~> $1 <= $2;
PREPARE p_big(simhash64, bigint) AS SELECT id FROM shp WHERE fp <~> $1 <= $2;
PREPARE p_num(simhash64, numeric) AS SELECT id FROM shp WHERE fp <~> $1 <= $2;
EXPLAIN (COSTS OFF) EXECUTE p_small('0123456789abcdef', 3);
EXPLAIN (COSTS OFF) EXECUTE p_big('0123456789abcdef', 3);
EXPLAIN (COSTS OFF) EXECUTE p_num('0123456789abcdef', 3);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE p_small('0123456789abcdef', 3);
EXPLAIN (COSTS OFF) EXECUTE p_num('0123456789abcdef', 3);
RESET plan_cache_mode;
DEALLOCATE ALL;

-- A correlated scalar sub-select in the select list.
EXPLAIN (COSTS OFF)
SELECT qid, (SELECT count(*) FROM shp s WHERE s.fp <~> shp_q.q <= 3) AS near FROM shp_q;
SELECT qid, (SELECT count(*) FROM shp s WHERE s.fp <~> shp_q.q <= 3) AS near FROM shp_q ORDER BY qid;
-- ... and one in the condition of another sub-select.
EXPLAIN (COSTS OFF)
SELECT qid FROM shp_q WHERE (SELECT count(*) FROM shp s WHERE shp_q.q <~> s.fp <= 3) > 0;

-- Server-side cursors (DECLARE, psycopg's named cursors): the scans they
-- make on shp, counted inside the transaction, are index scans only.
BEGIN;
SELECT seq_scan AS seq0, idx_scan AS idx0 FROM pg_stat_xact_user_tables WHERE relid = 'shp'::regclass \gset
DECLARE near_cur CURSOR FOR SELECT id FROM shp WHERE fp <~> (SELECT q FROM shp_q WHERE qid = 3) <= 3;
FETCH ALL FROM near_cur;
CLOSE near_cur;
DECLARE near_cur_hold CURSOR WITH HOLD FOR SELECT id FROM shp WHERE fp <~> (SELECT q FROM shp_q WHERE qid = 4) < 4;
FETCH ALL FROM near_cur_hold;
SELECT seq_scan - :seq0 AS shp_seq_scans, idx_scan - :idx0 AS shp_index_scans
FROM pg_stat_xact_user_tables WHERE relid = 'shp'::regclass;
COMMIT;
CLOSE near_cur_hold;

-- Row-level security: a role that is not the owner sees only its rows,
-- through the indexes (the band functions are LEAKPROOF).
CREATE ROLE simhash_reader;
GRANT SELECT ON shp, shp_q TO simhash_reader;
ALTER TABLE shp ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON shp FOR SELECT USING (owner = current_user);
SET ROLE simhash_reader;
EXPLAIN (COSTS OFF) SELECT id FROM shp WHERE fp <~> '0123456789abcdef' <= 3;
EXPLAIN (COSTS OFF) SELECT id FROM shp WHERE fp <~> '0123456789abcdef' <= 7;
SELECT q.qid, s.id FROM shp_q q JOIN shp s ON s.fp <~> q.q <= 3 ORDER BY 1, 2;
RESET ROLE;
SELECT proname, proleakproof FROM pg_proc
WHERE proname IN ('hamming', 'simhash_band', 'simhash_band_neighbors', 'simhash_within')
ORDER BY proname;

DROP TABLE shp, shp_q;
DROP ROLE simhash_reader;
