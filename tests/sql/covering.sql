-- The covering layout '4x16c': band indexes that INCLUDE the fingerprint,
-- probed by simhash_probe() without visiting the table for the rows the
-- bands rule out, through a TID scan. Exact for every k up to 11 on skewed
-- fingerprints, HOT-updated, deleted and uncommitted rows; beyond 11, and
-- wherever the probe cannot stand in, the other plans.
\set SHOW_CONTEXT never
-- The kind of scan the plan of a query reads table tbl with.
CREATE FUNCTION scan_of(query text, tbl text DEFAULT 'cov') RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ ('Scan on ' || tbl || '( |$)') THEN
            RETURN regexp_replace(line, '^\s*(->\s*)?(.*?) on .*$', '\2');
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- Skewed fingerprints, as in band_layouts: random ones, 40 groups of 60
-- variants 0..7 bits apart (packed into one band or spread), 200 copies
-- of one value, NULLs.
CREATE TABLE cov (id bigint PRIMARY KEY, fp simhash64, note text DEFAULT 'a');
INSERT INTO cov (id, fp) SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO cov (id, fp)
SELECT 100000 + base * 100 + v,
       (hashint8extended(base, 9) # coalesce((
            SELECT bit_or(1::bigint << CASE WHEN v % 2 = 0 THEN (i * 5 + v) % 16
                                            ELSE (i * 13 + v) % 64 END)
            FROM generate_series(1, v % 8) i), 0))::simhash64
FROM generate_series(1, 40) base, generate_series(0, 59) v;
INSERT INTO cov (id, fp) SELECT 200000 + g, 'f0f0f0f00f0f0f0f' FROM generate_series(1, 200) g;
INSERT INTO cov (id, fp) SELECT 300000 + g, NULL FROM generate_series(1, 20) g;
CREATE TABLE cov_q (qid int, q simhash64);
INSERT INTO cov_q SELECT base, hashint8extended(base, 9)::simhash64 FROM generate_series(1, 40, 3) base;
INSERT INTO cov_q VALUES (100, hashint8extended(5, 3)::simhash64), (101, 'f0f0f0f00f0f0f0f'),
                         (102, 'f0f0f0f00f0f0f0e');

SELECT simhash_band_commands('cov', 'fp', '4x16c');
SELECT simhash_add_bands('cov', 'fp', '4x16c');
SELECT layout, part, index, usable FROM simhash_band_indexes('cov', 'fp');
SELECT simhash_band_layouts('cov', 'fp');
ANALYZE cov;

-- For each k, the plan of the query as users write it and its answers
-- against a scan's (the + 0 is not a distance comparison: never
-- rewritten), with the TID scan, and with the probe as a per-row filter
-- (TID scans off: each call under the same snapshot answers from the
-- first one's result).
CREATE FUNCTION covering_check()
RETURNS TABLE (k int, plan text, queries int, equal int, equal_as_filter int, rows_compared bigint)
LANGUAGE plpgsql AS $$
DECLARE
    got bigint[];
    filtered bigint[];
    want bigint[];
    r record;
BEGIN
    FOR kk IN 0..12 LOOP
        k := kk; queries := 0; equal := 0; equal_as_filter := 0; rows_compared := 0;
        plan := scan_of(format('SELECT id FROM cov WHERE fp <~> %L <= %s', 'f0f0f0f00f0f0f0f', kk));
        FOR r IN SELECT * FROM cov_q LOOP
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> %L <= %s', r.q, kk)
                INTO got;
            SET LOCAL enable_tidscan = off;
            SET LOCAL enable_bitmapscan = off;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> %L <= %s', r.q, kk)
                INTO filtered;
            RESET enable_tidscan;
            RESET enable_bitmapscan;
            SELECT array_agg(id ORDER BY id) INTO want FROM cov WHERE (fp <~> r.q) + 0 <= kk;
            queries := queries + 1;
            equal := equal + (got IS NOT DISTINCT FROM want)::int;
            equal_as_filter := equal_as_filter + (filtered IS NOT DISTINCT FROM want)::int;
            rows_compared := rows_compared + coalesce(cardinality(want), 0);
        END LOOP;
        RETURN NEXT;
    END LOOP;
END $$;
SELECT * FROM covering_check();
EXPLAIN (COSTS OFF) SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3;

-- Rows that changed: HOT updates (the index entry points at the chain's
-- first version), deletes, and this transaction's own rows; after VACUUM
-- (which leaves redirects) too.
UPDATE cov SET note = 'hot' WHERE id BETWEEN 100100 AND 100159 AND id % 3 = 0;
SELECT count(*) AS hot_updated FROM cov WHERE note = 'hot';
SELECT (SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 7)
     = (SELECT array_agg(id ORDER BY id) FROM cov WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7)
       AS exact_after_hot;
BEGIN;
DELETE FROM cov WHERE id BETWEEN 100100 AND 100110;
INSERT INTO cov (id, fp, note) VALUES (400000, hashint8extended(1, 9)::simhash64, 'new');
UPDATE cov SET note = 'again' WHERE id BETWEEN 100111 AND 100120;
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 7$$);
SELECT (SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 7)
     = (SELECT array_agg(id ORDER BY id) FROM cov WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7)
       AS exact_in_transaction;
-- UPDATE, DELETE and row locks keep to the bands: a row re-checked after
-- a concurrent update has a new row id, which a probe made before does
-- not hold. A read-only query, also in a sub-select, takes the probe.
SET LOCAL enable_seqscan = off;
SELECT scan_of($$UPDATE cov SET note = 'x' WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$) AS in_update,
       scan_of($$DELETE FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$) AS in_delete,
       scan_of($$SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3 FOR UPDATE$$) AS for_update,
       scan_of($$SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3 FOR SHARE SKIP LOCKED$$) AS for_share,
       scan_of($$SELECT s.id FROM (SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3 OFFSET 0) s$$) AS in_subselect;
RESET enable_seqscan;
UPDATE cov SET note = 'near' WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 7;
SELECT count(*) FILTER (WHERE note = 'near') = count(*) FILTER (WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7)
       AS updated_all FROM cov;
ROLLBACK;
VACUUM cov;
SELECT (SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 7)
     = (SELECT array_agg(id ORDER BY id) FROM cov WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7)
       AS exact_after_vacuum;

-- Where the probe stands in: a fingerprint known before the scan (a
-- constant, a parameter, a sub-select); not for one that changes per row
-- (a join: the 16-bit bands, which the covering indexes are too).
PREPARE cov_fp(simhash64) AS SELECT count(*) FROM cov WHERE fp <~> $1 <= 5;
SET plan_cache_mode = force_generic_plan;
SELECT scan_of('EXECUTE cov_fp(''f0f0f0f00f0f0f0f'')');
EXECUTE cov_fp('f0f0f0f00f0f0f0f');
-- k known only at run time: the bands' ANY form, exact for any k.
PREPARE cov_k(int) AS SELECT count(*) FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= $1;
SELECT scan_of('EXECUTE cov_k(3)');
EXECUTE cov_k(3);
EXECUTE cov_k(64);
RESET plan_cache_mode;
DEALLOCATE cov_fp;
DEALLOCATE cov_k;
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> (SELECT q FROM cov_q WHERE qid = 101) <= 3$$);
SET enable_seqscan = off;
SELECT scan_of($$SELECT q.qid, c.id FROM cov_q q JOIN LATERAL (SELECT id FROM cov WHERE cov.fp <~> q.q <= 3) c ON true$$);
RESET enable_seqscan;
SELECT (SELECT count(*) FROM cov_q q JOIN cov c ON c.fp <~> q.q <= 4)
     = (SELECT count(*) FROM cov_q q JOIN cov c ON (c.fp <~> q.q) + 0 <= 4) AS join_exact;

-- Inside OR and NOT: a TID scan over both probes; a scan whose filter
-- calls the probe only for rows within k (and answers from its cache).
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 3
                                        OR fp <~> 'f0f0f0f00f0f0f0f' <= 2$$) AS either;
SELECT (SELECT array_agg(id ORDER BY id) FROM cov WHERE fp <~> hashint8extended(1, 9)::simhash64 <= 3
                                                     OR fp <~> 'f0f0f0f00f0f0f0f' <= 2)
     = (SELECT array_agg(id ORDER BY id) FROM cov WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 3
                                                     OR (fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 2) AS either_exact;
-- Rows without a fingerprint: the condition is NULL for them, so NOT
-- (...) does not return them, and as a value it is NULL, not false.
SELECT (SELECT count(*) FROM cov WHERE NOT (fp <~> 'f0f0f0f00f0f0f0f' <= 5))
     = (SELECT count(*) FROM cov WHERE NOT ((fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 5)) AS negated_exact;
SELECT (fp <~> 'f0f0f0f00f0f0f0f' <= 5) AS within, count(*)
FROM cov GROUP BY 1 ORDER BY 1;
SELECT count(*) AS not_false_for_null FROM cov WHERE (fp <~> 'f0f0f0f00f0f0f0f' <= 5) IS NOT FALSE;

-- The probe itself: row ids of the rows within k, in the table's order.
SELECT cardinality(simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 0)) AS copies,
       (SELECT array_agg(ctid ORDER BY ctid) FROM cov WHERE (fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 0)
       = simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 0) AS same_ids,
       simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', -1) AS negative_k,
       simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', NULL) IS NULL AS null_k;
-- Above 11, or without the covering layout: still exact, by another
-- layout that serves k or a scan.
SELECT cardinality(simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 20))
     = (SELECT count(*) FROM cov WHERE (fp <~> 'f0f0f0f00f0f0f0f') + 0 <= 20) AS above_11;
CREATE TABLE cov_plain (id bigint, fp simhash64);
INSERT INTO cov_plain SELECT id, fp FROM cov;
SELECT cardinality(simhash_probe('cov_plain', 'fp', hashint8extended(1, 9)::simhash64, 7))
     = (SELECT count(*) FROM cov_plain WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7) AS scanned;
SELECT count(*) FROM simhash_add_bands('cov_plain', 'fp', '2x32');
SELECT cardinality(simhash_probe('cov_plain', 'fp', hashint8extended(1, 9)::simhash64, 7))
     = (SELECT count(*) FROM cov_plain WHERE (fp <~> hashint8extended(1, 9)::simhash64) + 0 <= 7) AS by_halves;

-- Bad calls, each with its SQLSTATE.
CREATE TABLE cov_parted (id bigint, fp simhash64) PARTITION BY RANGE (id);
CREATE ROLE cov_reader;
CREATE ROLE cov_column_reader;
GRANT SELECT (fp) ON cov TO cov_column_reader;
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT simhash_probe('cov', 'nope', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov', 'note', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov_parted', 'fp', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov_q', 'q', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov', '', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov', 'ctid', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe(4294967295::oid::regclass, 'fp', 'f0f0f0f00f0f0f0f', 3)$$,
    $$SELECT simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0g', 3)$$,
    $$SELECT cardinality(simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 2147483647))$$,
    $$SELECT simhash_add_bands('cov', 'fp', '4x16d')$$,
    $$SELECT simhash_drop_bands('cov', 'fp', '4x16d')$$]) q;
SET ROLE cov_reader;
SELECT outcome($$SELECT simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 3)$$) AS without_select;
RESET ROLE;
SET ROLE cov_column_reader;
SELECT cardinality(simhash_probe('cov', 'fp', 'f0f0f0f00f0f0f0f', 0)) AS with_column_select;
RESET ROLE;

-- Row-level security: the planner keeps to the bands (the policies apply
-- to what they return), and the probe refuses the table.
CREATE TABLE cov_rls (id bigint, fp simhash64, owner_name text);
INSERT INTO cov_rls SELECT id, fp, CASE WHEN id % 2 = 0 THEN 'cov_reader' ELSE 'other' END FROM cov;
SELECT count(*) FROM simhash_add_bands('cov_rls', 'fp', '4x16c');
ALTER TABLE cov_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON cov_rls USING (owner_name = current_user);
GRANT SELECT ON cov_rls TO cov_reader;
ANALYZE cov_rls;
SET ROLE cov_reader;
SET enable_seqscan = off;
SELECT scan_of($$SELECT id FROM cov_rls WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$, 'cov_rls');
RESET enable_seqscan;
SELECT count(*) AS own_rows FROM cov_rls WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3;
SELECT outcome($$SELECT simhash_probe('cov_rls', 'fp', 'f0f0f0f00f0f0f0f', 3)$$) AS probe_on_rls;
RESET ROLE;

-- Inheritance children: the parent's probe would miss their rows; the
-- bands instead.
CREATE TABLE cov_child () INHERITS (cov);
INSERT INTO cov_child (id, fp) VALUES (500000, 'f0f0f0f00f0f0f0f');
SET enable_seqscan = off;
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$) AS with_children;
RESET enable_seqscan;
SELECT count(*) AS with_child_row FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 0;
SELECT scan_of($$SELECT id FROM ONLY cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$) AS only_parent;
DROP TABLE cov_child;
ANALYZE cov;  -- which clears the table's mark of having children
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 3$$) AS without_children;

-- Moving off the covering layout drops its indexes; a guard that checks
-- k above 7 keeps them (they are 16-bit bands too, and it probes them).
SELECT simhash_band_commands('cov', 'fp', '2x32', false);
SELECT simhash_add_guard('cov', 'fp', 9);
SELECT simhash_band_commands('cov', 'fp', '2x32', false);
SELECT scan_of($$SELECT id FROM cov WHERE fp <~> 'f0f0f0f00f0f0f0f' <= 9$$);
SELECT outcome($$INSERT INTO cov (id, fp) VALUES (600000, ('f0f0f0f00f0f0f0f'::simhash64::bigint # 511)::simhash64)$$)
       AS nine_bits_away;

-- The guard reads the covering indexes as the probe does: the table only
-- for entries within k, following HOT chains, and not its own row.
SELECT simhash_add_guard('cov', 'fp', 3);
INSERT INTO cov (id, fp) VALUES (700000, 'abcdefabcdefabcd');
UPDATE cov SET note = 'hot' WHERE id = 700000;
SELECT outcome($$INSERT INTO cov (id, fp) VALUES (700001, 'abcdefabcdefabcc')$$) AS one_bit_from_hot_row;
VACUUM cov;
SELECT outcome($$INSERT INTO cov (id, fp) VALUES (700001, 'abcdefabcdefabc0')$$) AS three_bits_after_vacuum;
SELECT outcome($$INSERT INTO cov (id, fp) VALUES (700002, 'abcdefabcdef5432')$$) AS far_away;
SELECT outcome($$UPDATE cov SET note = 'again' WHERE id = 700000$$) AS update_itself;
SELECT outcome($$UPDATE cov SET fp = 'abcdefabcdefabcf' WHERE id = 700000$$) AS move_itself;
SELECT outcome($$UPDATE cov SET fp = 'abcdefabcdefabcd' WHERE id = 700002$$) AS move_onto_another;

DROP TABLE cov, cov_q, cov_plain, cov_parted, cov_rls;
DROP ROLE cov_reader;
DROP ROLE cov_column_reader;
DROP FUNCTION covering_check(), scan_of(text, text);
