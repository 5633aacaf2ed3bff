-- Defects of an audit of 0.6.0, each pinned by what it got wrong.

-- 1. A cancel in the middle of a long text leaves the backend computing
-- the same fingerprints as a new one (golden values of definition 3).
CREATE TEMP TABLE big AS
    SELECT repeat('alpha bravo charlie delta echo foxtrot golf hotel india juliet ', 400000) AS t;
SELECT simhash('the quick brown fox jumps over the lazy dog; alpha bravo charlie') AS before_cancel;
SET statement_timeout = '20ms';
SELECT simhash(t) IS NOT NULL FROM big;
RESET statement_timeout;
SELECT simhash('the quick brown fox jumps over the lazy dog; alpha bravo charlie') AS after_cancel,
       simhash('alpha bravo charlie') AS short_after_cancel;
SET statement_timeout = '20ms';
SELECT count(*) FROM big, simhash_features(t);
RESET statement_timeout;
SELECT simhash('alpha bravo charlie') AS after_features_cancel;
-- Invalid bytes can only come from a damaged value; a cancel mid-way is
-- the case every user meets. A whole-table cancel through an index build:
CREATE TEMP TABLE bigs AS SELECT i, t FROM big, generate_series(1, 3) i;
SET statement_timeout = '20ms';
CREATE INDEX ON bigs (simhash(t));
RESET statement_timeout;
SELECT simhash('alpha bravo charlie') AS after_index_cancel;
DROP TABLE big, bigs;


-- 2. A view owned by another role on the covering layout: the reader
-- gets the rows the view shows, with or without the probe.
CREATE ROLE trust_alice;
CREATE ROLE trust_bob;
CREATE ROLE trust_carol;
GRANT CREATE ON SCHEMA public TO trust_alice;
SET ROLE trust_alice;
CREATE TABLE pt (id bigint PRIMARY KEY, fp simhash64, secret text);
INSERT INTO pt SELECT i, hashint8extended(i, 7)::simhash64, 's' || i FROM generate_series(1, 3000) i;
INSERT INTO pt VALUES (5000, 'dffb3cf2c8abdb9d', 'x'), (5001, 'dffb3cf2c8abdb9c', 'y');
SELECT count(*) FROM simhash_add_bands('pt', 'fp', '4x16c');
ANALYZE pt;
CREATE VIEW pv AS SELECT id, fp FROM pt;
CREATE VIEW pv_filtered AS SELECT id, fp FROM pt WHERE id > 5000;
GRANT SELECT ON pv, pv_filtered TO trust_bob;
GRANT SELECT (id, fp) ON pt TO trust_carol;
RESET ROLE;
SET ROLE trust_bob;
SELECT array_agg(id ORDER BY id) AS through_view FROM pv WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3;
SELECT array_agg(id ORDER BY id) AS through_filtering_view FROM pv_filtered WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3;
SELECT array_agg(id ORDER BY id) AS without_probe FROM pv WHERE (fp <~> 'dffb3cf2c8abdb9d') + 0 <= 3;
PREPARE by_view(simhash64) AS SELECT count(*) FROM pv WHERE fp <~> $1 <= 3;
EXECUTE by_view('dffb3cf2c8abdb9d');
SELECT outcome($$SELECT simhash_probe('pt', 'fp', 'dffb3cf2c8abdb9d', 3)$$) AS direct_probe;
RESET ROLE;
-- 5. Column privileges only: the distance query works (band indexes); the
-- probe, which hands out row locations, is refused as SELECT ctid is.
SET ROLE trust_carol;
SELECT array_agg(id ORDER BY id) AS column_reader FROM pt WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3;
SELECT outcome($$SELECT ctid FROM pt LIMIT 1$$) AS select_ctid;
SELECT outcome($$SELECT simhash_probe('pt', 'fp', 'dffb3cf2c8abdb9d', 3)$$) AS direct_probe;
RESET ROLE;
-- The owner still gets the probe's plan, and the same rows.
SET ROLE trust_alice;
SELECT array_agg(id ORDER BY id) AS owner FROM pt WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3;
SELECT plan_has($$SELECT id FROM pt WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3$$, 'Tid Scan') AS owner_gets_tid_scan;
RESET ROLE;
SET ROLE trust_bob;
SELECT plan_has($$SELECT id FROM pv WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3$$, 'Tid Scan') AS view_reader_gets_tid_scan,
       plan_has($$SELECT id FROM pv WHERE fp <~> 'dffb3cf2c8abdb9d' <= 3$$, 'Bitmap Index Scan') AS view_reader_gets_bands;
RESET ROLE;
DEALLOCATE by_view;

-- 2. The guard and INSERT ... ON CONFLICT: as with a unique constraint.
CREATE TABLE up (id bigint PRIMARY KEY, body text,
                 fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT simhash_add_guard('up', 'fp', 3, 'error');
INSERT INTO up (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank today.');
SELECT outcome($$INSERT INTO up (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank today.')
                 ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body$$) AS reupsert_same;
SELECT outcome($$INSERT INTO up (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank today!')
                 ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body$$) AS reupsert_edited;
SELECT body FROM up WHERE id = 1;
SELECT outcome($$INSERT INTO up (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank today!')
                 ON CONFLICT DO NOTHING$$) AS do_nothing_unchanged;
SELECT outcome($$INSERT INTO up (id, body) VALUES (1, 'x')$$) AS plain_insert_same_key;
SELECT outcome($$INSERT INTO up (id, body) VALUES (2, 'The quick brown fox jumps over the lazy dog near the river bank today!')
                 ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body$$) AS near_copy_other_key;
CREATE TABLE up_fp (id bigint PRIMARY KEY, fp simhash64);
SELECT simhash_add_guard('up_fp', 'fp', 3, 'error');
INSERT INTO up_fp VALUES (1, 'abcdefabcdefabcd');
SELECT outcome($$INSERT INTO up_fp VALUES (1, 'abcdefabcdefabcc') ON CONFLICT (id) DO UPDATE SET fp = EXCLUDED.fp$$) AS moved_by_a_bit;
SELECT fp FROM up_fp;
-- 'skip': the upsert is not lost.
SELECT simhash_add_guard('up', 'fp', 3, 'skip');
INSERT INTO up (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank today?')
    ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body;
SELECT body FROM up WHERE id = 1;
INSERT INTO up (id, body) VALUES (3, 'The quick brown fox jumps over the lazy dog near the river bank today?')
    ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body;
SELECT count(*) AS rows_after_near_copy FROM up;

-- 3. Another BEFORE trigger that sorts after the guard: refused at set-up
-- and at run time, never a guard switched off.
CREATE FUNCTION fill_fp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fp := 'abcdefabcdefabcd';
    RETURN NEW;
END $$;
CREATE TABLE tr (id bigint PRIMARY KEY, fp simhash64);
CREATE TRIGGER zz_fill BEFORE INSERT ON tr FOR EACH ROW EXECUTE FUNCTION fill_fp();
SELECT outcome($$SELECT simhash_add_guard('tr', 'fp', 3)$$) AS setup;
DROP TRIGGER zz_fill ON tr;
SELECT simhash_add_guard('tr', 'fp', 3);
CREATE TRIGGER zz_fill BEFORE INSERT ON tr FOR EACH ROW EXECUTE FUNCTION fill_fp();
SELECT outcome($$INSERT INTO tr (id) VALUES (1)$$) AS run_time;
ALTER TABLE tr DISABLE TRIGGER zz_fill;
CREATE TRIGGER a_fill BEFORE INSERT ON tr FOR EACH ROW EXECUTE FUNCTION fill_fp();
INSERT INTO tr (id) VALUES (1);
SELECT outcome($$INSERT INTO tr (id) VALUES (2)$$) AS sorted_before;

-- 4. Clustering by buckets on a table with a column named "b".
CREATE TABLE cb (id bigint, fp simhash64, b int, w int, bk int);
INSERT INTO cb SELECT i, hashint8extended(i / 2, 3)::simhash64, i, i, i FROM generate_series(1, 200) i;
SET simhash.cluster_memory = '1kB';
SELECT count(*) AS pairs FROM simhash_clusters('cb', 'fp', 3, 'id', false);
RESET simhash.cluster_memory;
SELECT count(*) AS pairs_in_memory FROM simhash_clusters('cb', 'fp', 3, 'id', false);

-- 6 and 7. Bad input.
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT * FROM _simhash_join_links('SELECT 1, 2')$$,
    $$SELECT * FROM _simhash_join_links('SELECT ''a''::text, 2::bigint WHERE false')$$,
    $$SELECT * FROM _simhash_join_links('SELECT 1::bigint')$$,
    $$SELECT * FROM _simhash_join_links('SELECT 1::bigint, 2::bigint')$$,
    $$SELECT simhash_add_bands('cb', 'fp', NULL)$$]) q;
-- An error through SPI carries no Rust backtrace, whatever the server's
-- environment (the test cluster runs with RUST_BACKTRACE=1).
SELECT * FROM simhash_clusters_query('SELECT 1/0, 1::bigint', 3, true);

DROP TABLE pt CASCADE;
DROP TABLE up, up_fp, tr, cb;
DROP FUNCTION fill_fp();
REVOKE CREATE ON SCHEMA public FROM trust_alice;
DROP ROLE trust_alice;
DROP ROLE trust_bob;
DROP ROLE trust_carol;

-- Memory: clustering in memory stops at simhash.cluster_memory with 53200,
-- never an aborted backend.
SET simhash.cluster_memory = '1kB';
SELECT outcome($$SELECT count(*) FROM simhash_clusters_query('SELECT i, i::bigint FROM generate_series(1, 1000) i', 3, true)$$) AS over_the_setting;
RESET simhash.cluster_memory;
SELECT count(*) AS within_the_setting FROM simhash_clusters_query('SELECT i, i::bigint FROM generate_series(1, 1000) i', 3, true);
