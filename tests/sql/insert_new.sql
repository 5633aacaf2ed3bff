-- simhash_insert_new: a set-based load that keeps exactly what guarded
-- inserts one at a time, in the same order, would keep.

-- Fingerprints set by hand: a chain (a near b, b near c, a not near c),
-- copies of target rows, copies among the source, order by a column.
CREATE TABLE ld (id bigint PRIMARY KEY, fp simhash64, note text);
SELECT count(*) FROM simhash_add_bands('ld', 'fp', '4x16');
INSERT INTO ld VALUES (1, '00000000000000ff', 't1'), (2, 'ffff0000ffff0000', 't2');
CREATE TABLE ld_src (id bigint, fp simhash64, note text, seq int);
INSERT INTO ld_src VALUES
    (10, '00000000000000fe', 'copy of t1', 5),      -- 1 bit from row 1
    (11, '0f0f0f0f0f0f0f0f', 'new a', 1),
    (12, '0f0f0f0f0f0f0f0e', 'near a', 2),          -- skipped: 1 bit from 11
    (13, '0f0f0f0f0f0f0f38', 'near 12 only', 3),    -- 4 bits from 12, 5 from 11: kept (12 was not)
    (14, '0f0f0f0f0f0f0f39', 'near 13', 4),         -- skipped: 1 bit from 13
    (15, 'abcdefabcdefabcd', 'new b', 6),
    (16, 'abcdefabcdefabcd', 'same as b', 7),
    (17, '00000000000000fe', 'same as 10', 8),      -- skipped: 1 bit from row 1, as 10
    (18, '0f0f0f0f0f0f0f0e', 'same as 12', 9),      -- skipped: 1 bit from 11, as 12
    (19, 'abcdefabcdefabcd', 'same as b again', 0); -- first of its copies: kept, 15 and 16 skipped for it
CREATE TABLE ld_skips (skipped bigint, matched bigint, distance integer);
-- One at a time, through the guard, into a copy.
CREATE TABLE ld_one (LIKE ld);
SELECT count(*) FROM simhash_add_bands('ld_one', 'fp', '4x16');
INSERT INTO ld_one SELECT * FROM ld;
SELECT simhash_add_guard('ld_one', 'fp', 3, 'skip');
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM ld_src ORDER BY seq LOOP
        INSERT INTO ld_one VALUES (r.id, r.fp, r.note);
    END LOOP;
END $$;
SELECT * FROM simhash_insert_new('ld', 'ld_src', 3, 'seq', skipped_into => 'ld_skips');
SELECT array_agg(id ORDER BY id) AS loaded FROM ld;
SELECT (SELECT array_agg(id ORDER BY id) FROM ld) = (SELECT array_agg(id ORDER BY id) FROM ld_one) AS same_as_one_at_a_time;
SELECT * FROM ld_skips ORDER BY skipped;
-- The same load with the target read once against the batch in memory
-- (simhash.load_check = scan) rather than probed: the same rows, the
-- same report.
DELETE FROM ld WHERE id >= 10;
CREATE TABLE ld_skips_scan (LIKE ld_skips);
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('ld', 'ld_src', 3, 'seq', skipped_into => 'ld_skips_scan');
RESET simhash.load_check;
SELECT (SELECT array_agg(id ORDER BY id) FROM ld) = (SELECT array_agg(id ORDER BY id) FROM ld_one) AS scan_same_as_one_at_a_time,
       (SELECT array_agg(s::text ORDER BY s::text) FROM ld_skips s) = (SELECT array_agg(s::text ORDER BY s::text) FROM ld_skips_scan s) AS scan_same_report;
-- Another order, another answer, still that of one-at-a-time inserts.
DELETE FROM ld WHERE id >= 10;
CREATE TEMP VIEW ld_src_view AS SELECT * FROM ld_src;
SELECT * FROM simhash_insert_new('ld', 'ld_src_view', 3, 'seq DESC');
SELECT array_agg(id ORDER BY id) AS loaded_in_reverse FROM ld;

-- Texts, a generated fingerprint column, and verification.
CREATE TABLE lt (id bigint PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('lt', 'fp', '4x16');
INSERT INTO lt (id, body) SELECT i, format('Doc %s: %s %s.', i, md5(i::text), md5((i * 3)::text)) FROM generate_series(1, 300) i;
CREATE TABLE lt_src AS
    SELECT 1000 + i AS id, format('Doc %s: %s %s.', i, md5(i::text), md5((i * 3)::text)) || ' ' AS body FROM generate_series(1, 20) i
    UNION ALL SELECT 2000 + i, format('New %s: %s %s.', i, md5((i * 7)::text), md5((i * 11)::text)) FROM generate_series(1, 30) i
    UNION ALL SELECT 3000 + i, format('New %s: %s %s!', i, md5((i * 7)::text), md5((i * 11)::text)) FROM generate_series(1, 10) i;
CREATE TABLE lt_one (LIKE lt INCLUDING GENERATED);
SELECT count(*) FROM simhash_add_bands('lt_one', 'fp', '4x16');
INSERT INTO lt_one (id, body) SELECT id, body FROM lt;
SELECT simhash_add_guard('lt_one', 'fp', 11, 'skip', 'id', 'body');
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM lt_src ORDER BY id LOOP
        INSERT INTO lt_one (id, body) VALUES (r.id, r.body);
    END LOOP;
END $$;
SELECT * FROM simhash_insert_new('lt', 'lt_src', 11, 'id', text_col => 'body');
SELECT (SELECT array_agg(id ORDER BY id) FROM lt) = (SELECT array_agg(id ORDER BY id) FROM lt_one) AS verified_same_as_one_at_a_time,
       (SELECT count(*) FROM lt WHERE id > 300) AS loaded;

-- Groups of near-copies in an order that mixes them, copies of target
-- rows, and one fingerprint 3,000 times (copies are settled by their
-- first, not paired: 3,000 copies took 6 minutes when they were paired),
-- probed and scanned.
CREATE TABLE lb (id bigint PRIMARY KEY, fp simhash64);
SELECT count(*) FROM simhash_add_bands('lb', 'fp', '4x16');
CREATE TABLE lb_one (LIKE lb);
SELECT count(*) FROM simhash_add_bands('lb_one', 'fp', '4x16');
SELECT simhash_add_guard('lb_one', 'fp', 3, 'skip');
INSERT INTO lb SELECT -i, (hashint8extended(i, 5) # 7)::simhash64 FROM generate_series(1, 200) i;
INSERT INTO lb_one SELECT * FROM lb;
CREATE TABLE lb_src AS
SELECT i AS id, (hashint8extended(i % 4500, 5) # (1::bigint << (i % 64)))::simhash64 AS fp, hashint4(i) AS seq
FROM generate_series(1, 10000) i
UNION ALL
SELECT 10000 + i, 'abcdef0123456789'::simhash64, hashint4(10000 + i) FROM generate_series(1, 3000) i;
SET client_min_messages = warning;  -- a NOTICE for each row the guard skips
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM lb_src ORDER BY seq LOOP
        INSERT INTO lb_one VALUES (r.id, r.fp);
    END LOOP;
END $$;
RESET client_min_messages;
CREATE TABLE lb_skips (skipped bigint, matched bigint, distance integer);
CREATE TABLE lb_skips_scan (LIKE lb_skips);
SET simhash.load_check = probe;
SELECT * FROM simhash_insert_new('lb', 'lb_src', 3, 'seq', skipped_into => 'lb_skips');
SELECT (SELECT array_agg(id ORDER BY id) FROM lb) = (SELECT array_agg(id ORDER BY id) FROM lb_one) AS probed_same_as_one_at_a_time,
       (SELECT count(*) FROM lb WHERE id > 10000) AS copies_of_one_kept,
       (SELECT count(*) FROM lb_skips WHERE matched < 0) AS skipped_for_the_target;
DELETE FROM lb WHERE id > 0;
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('lb', 'lb_src', 3, 'seq', skipped_into => 'lb_skips_scan');
RESET simhash.load_check;
SELECT (SELECT array_agg(id ORDER BY id) FROM lb) = (SELECT array_agg(id ORDER BY id) FROM lb_one) AS scanned_same_as_one_at_a_time,
       (SELECT array_agg(s::text ORDER BY s::text) FROM lb_skips s) = (SELECT array_agg(s::text ORDER BY s::text) FROM lb_skips_scan s) AS scanned_same_report,
       (SELECT bool_and(distance <= 3) FROM lb_skips) AS every_match_within_k;
-- The load's building blocks refuse what they cannot do.
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT * FROM _simhash_near_pairs(ARRAY[1, 2], ARRAY[5], 3)$$,
    $$SELECT * FROM _simhash_near_pairs(ARRAY[1], ARRAY[5], 12)$$,
    $$SELECT * FROM _simhash_skipped_in_order(ARRAY[1, 2], ARRAY[1])$$,
    $$SELECT * FROM _simhash_batch_skips('SELECT id, fp FROM lb', ARRAY[1, 2], ARRAY[1], ARRAY[5, 6], 3)$$,
    $$SELECT * FROM _simhash_batch_skips('SELECT id, fp FROM lb', ARRAY[1, 2], ARRAY[1, 2], ARRAY[5], 3)$$,
    $$SELECT * FROM _simhash_batch_skips('SELECT id, fp FROM lb', ARRAY[1, NULL], ARRAY[1, 2], ARRAY[5, 6], 3)$$,
    $$SELECT * FROM _simhash_batch_skips('SELECT id, fp FROM lb', ARRAY[1], ARRAY[1], ARRAY[5], 12)$$,
    $$SELECT * FROM _simhash_batch_skips('SELECT 1', ARRAY[1], ARRAY[1], ARRAY[5], 3)$$,
    $$SELECT * FROM _simhash_batch_skips('SELEC id', ARRAY[1], ARRAY[1], ARRAY[5], 3)$$]) q;
SELECT * FROM _simhash_near_pairs(ARRAY[7, 3, 9, NULL], ARRAY[0, 1, 3, 0], 1) ORDER BY 1, 2;
-- A batch settled in one pass, given out of order: 2 is skipped for 1
-- (one bit); 3 is kept (its neighbour 2 was skipped) though its key is
-- NULL, and 4, its copy, is skipped for that NULL key; 5 is one bit from
-- the target's row 100.
SELECT * FROM _simhash_batch_skips($$SELECT * FROM (VALUES (100::bigint, '00000000000000f0'::simhash64)) t$$,
                                  ARRAY[3, 1, 2, 4, 5], ARRAY[NULL, 11, 12, 13, 14], ARRAY[1, 7, 3, 1, 241], 1)
ORDER BY n;

-- A partitioned target, read once and probed, and the load as a prepared
-- statement (run past the point where a generic plan may be chosen): the
-- same rows as one at a time, into the partitions the rows belong to.
CREATE TABLE lp (id bigint, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)
    PARTITION BY RANGE (id);
CREATE TABLE lp_low PARTITION OF lp FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE lp_high PARTITION OF lp FOR VALUES FROM (1000) TO (MAXVALUE);
SELECT count(*) FROM simhash_add_bands('lp', 'fp');
INSERT INTO lp (id, body) SELECT id, body FROM lt WHERE id <= 300 AND id % 3 = 0;
ANALYZE lp;
CREATE TABLE lp_src AS
    SELECT id - CASE WHEN id > 2000 AND id % 2 = 0 THEN 1500 ELSE 0 END AS id, body FROM lt_src;
CREATE TABLE lp_one (LIKE lp INCLUDING GENERATED);
INSERT INTO lp_one (id, body) SELECT id, body FROM lp;
SELECT simhash_add_guard('lp_one', 'fp', 3, 'skip');
SET client_min_messages = warning;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM lp_src ORDER BY id LOOP
        INSERT INTO lp_one (id, body) VALUES (r.id, r.body);
    END LOOP;
END $$;
RESET client_min_messages;
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('lp', 'lp_src', 3, 'id');
SELECT (SELECT array_agg(id ORDER BY id) FROM lp) = (SELECT array_agg(id ORDER BY id) FROM lp_one) AS partitioned_read_same_as_one_at_a_time,
       (SELECT count(*) FROM lp_low WHERE id > 300) > 0 AND (SELECT count(*) FROM lp_high) > 0 AS new_rows_in_both_partitions,
       (SELECT count(*) FROM lp_one WHERE id > 300) < (SELECT count(*) FROM lp_src) AS some_skipped;
DELETE FROM lp WHERE id > 300;
SET simhash.load_check = probe;
PREPARE load_lp(integer) AS SELECT * FROM simhash_insert_new('lp', 'lp_src', $1, 'id');
DO $$
BEGIN
    FOR i IN 1..6 LOOP
        DELETE FROM lp WHERE id > 300;
        EXECUTE 'EXECUTE load_lp(3)';
    END LOOP;
END $$;
RESET simhash.load_check;
SELECT (SELECT array_agg(id ORDER BY id) FROM lp) = (SELECT array_agg(id ORDER BY id) FROM lp_one) AS prepared_probed_same_as_one_at_a_time;
DEALLOCATE load_lp;
-- A role with INSERT and SELECT only: the lock needs more, and says so.
CREATE ROLE simhash_loader;
GRANT INSERT, SELECT ON lp, lp_src TO simhash_loader;
SET ROLE simhash_loader;
DO $$
DECLARE hint text;
BEGIN
    PERFORM * FROM simhash_insert_new('lp', 'lp_src', 3, 'id');
EXCEPTION WHEN insufficient_privilege THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RAISE NOTICE '% %; hint: %', SQLSTATE, SQLERRM, hint;
END $$;
RESET ROLE;
DROP TABLE lp, lp_src, lp_one;
DROP ROLE simhash_loader;

-- Another BEFORE INSERT trigger on the target: one that leaves the text
-- alone lets the load through; one that changes it after the check (here
-- into a copy of a target row) makes the load fail whole (55000).
CREATE TABLE lg (id bigint PRIMARY KEY, body text, note text,
                 fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('lg', 'fp');
INSERT INTO lg (id, body) VALUES (1, 'The harbour ferry will stop running at nine this winter, the council said.');
CREATE TEMP TABLE lg_src (id bigint, body text);
INSERT INTO lg_src VALUES (10, 'rewrite: a text the trigger replaces'),
                          (11, 'Apples and pears were cheaper at the market on Sunday than a week before.');
CREATE FUNCTION lg_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.note := 'seen'; RETURN NEW; END $$;
CREATE TRIGGER lg_note BEFORE INSERT ON lg FOR EACH ROW EXECUTE FUNCTION lg_note();
SELECT current_setting('search_path') AS path_before \gset
SELECT * FROM simhash_insert_new('lg', 'lg_src', 3, 'id');
SELECT id, note FROM lg ORDER BY id;
SELECT current_setting('search_path') = :'path_before' AS search_path_as_before;
DELETE FROM lg WHERE id > 1;
-- (Its triggers fire with the caller's search_path, as under a plain
-- INSERT: this one names its table without the schema.)
CREATE FUNCTION lg_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body LIKE 'rewrite:%' THEN
        NEW.body := (SELECT body FROM lg WHERE id = 1);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER lg_rewrite BEFORE INSERT ON lg FOR EACH ROW EXECUTE FUNCTION lg_rewrite();
SELECT outcome($$SELECT * FROM simhash_insert_new('lg', 'lg_src', 3, 'id')$$);
SELECT count(*) AS rows_after_the_failed_load FROM lg;
DROP TABLE lg;
DROP FUNCTION lg_note(), lg_rewrite();

-- Bad input, each with its SQLSTATE.
CREATE TABLE lt_nobands (id bigint, fp simhash64);
CREATE TEMP VIEW lt_other_shape AS SELECT 1 AS x;
CREATE TEMP VIEW lt_key_only AS SELECT id, body AS text FROM lt_src;
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT * FROM simhash_insert_new('lt_nobands', 'ld_src', 3)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt', 3)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_src', 12)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_src', -1)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_other_shape', 3)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_key_only', 3)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'no_such_table', 3)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_src', 3, text_col => 'fp')$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_src', 3, threshold => 0.5)$$,
    $$SELECT * FROM simhash_insert_new('lt', 'lt_src', 3, fp_col => 'body')$$,
    $$SELECT * FROM simhash_insert_new('lt', NULL, 3)$$]) q;

DROP VIEW ld_src_view, lt_other_shape, lt_key_only;
DROP TABLE ld, ld_src, ld_skips, ld_skips_scan, ld_one, lb_skips, lb_skips_scan, lt, lt_src, lt_one, lt_nobands, lb, lb_one, lb_src;
