-- The defects of the round-4 audit, one reproduction each: every one of
-- these failed before its fix.

-- 1. Rows with a NULL fingerprint (a NULL, empty or featureless text) are
-- never checked by the guard, so one-at-a-time inserts keep them all; the
-- load kept one (probed) or failed with 22004 (read once).
CREATE TABLE n4 (id bigint, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('n4', 'fp', '4x16');
INSERT INTO n4 (id, body) VALUES (100, 'the quick brown fox jumps over the lazy dog near the river bank today');
CREATE TABLE n4_src (id bigint, body text);
INSERT INTO n4_src VALUES (1, NULL), (2, NULL), (3, ''), (4, '!!'), (5, '!!'),
    (6, 'the quick brown fox jumps over the lazy dog near the river bank today!');
CREATE TABLE n4_skips (skipped bigint, matched bigint, distance integer);
SET simhash.load_check = probe;
SELECT * FROM simhash_insert_new('n4', 'n4_src', 3, 'id', skipped_into => 'n4_skips');
SELECT array_agg(id ORDER BY id) AS probed_kept FROM n4 WHERE id < 100;
DELETE FROM n4 WHERE id < 100;
TRUNCATE n4_skips;
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('n4', 'n4_src', 3, 'id', skipped_into => 'n4_skips');
SELECT array_agg(id ORDER BY id) AS read_once_kept FROM n4 WHERE id < 100;
SELECT * FROM n4_skips ORDER BY skipped;
RESET simhash.load_check;

-- 2. A target row whose key is NULL still counts: its near copies are
-- skipped (read once it was left out of the check), reported as matching
-- NULL; a keyed row within k is the one named when there is one.
TRUNCATE n4, n4_skips;
INSERT INTO n4 (id, body) VALUES (NULL, 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima');
DELETE FROM n4_src;
INSERT INTO n4_src VALUES (7, 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima'),
                          (8, 'something else entirely, a text of its own about the weather and the sea');
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('n4', 'n4_src', 3, 'id', skipped_into => 'n4_skips');
SELECT * FROM n4_skips;
DELETE FROM n4 WHERE id IS NOT NULL;
TRUNCATE n4_skips;
SET simhash.load_check = probe;
SELECT * FROM simhash_insert_new('n4', 'n4_src', 3, 'id', skipped_into => 'n4_skips');
SELECT * FROM n4_skips;
RESET simhash.load_check;

-- 3. A verified load: a candidate whose text is NULL on either side counts
-- by its fingerprint alone, as the verified guard counts it (the
-- fingerprint written by the application).
CREATE TABLE v4 (id bigint PRIMARY KEY, body text, fp simhash64);
SELECT count(*) FROM simhash_add_bands('v4', 'fp', '4x16');
INSERT INTO v4 VALUES (1, NULL, '00000000000000ff');
CREATE TABLE v4_one (LIKE v4);
SELECT count(*) FROM simhash_add_bands('v4_one', 'fp', '4x16');
INSERT INTO v4_one SELECT * FROM v4;
SELECT simhash_add_guard('v4_one', 'fp', 3, 'skip', 'id', 'body', 0.8);
CREATE TABLE v4_src (id bigint, body text, fp simhash64);
INSERT INTO v4_src VALUES (2, 'a text of its own', '00000000000000fe'),      -- near 1 (NULL text): skipped
                          (3, NULL, 'ffff0000ffff0000'),
                          (4, 'another text', 'ffff0000ffff0001');           -- near 3 (NULL text): skipped
INSERT INTO v4_one SELECT * FROM v4_src ORDER BY id;
SELECT * FROM simhash_insert_new('v4', 'v4_src', 3, 'id', text_col => 'body', threshold => 0.8);
SELECT (SELECT array_agg(id ORDER BY id) FROM v4) AS loaded,
       (SELECT array_agg(id ORDER BY id) FROM v4_one) AS one_at_a_time;

-- 4. The session's extra_float_digits no longer changes a stored threshold.
SET extra_float_digits = -14;
SELECT simhash_add_guard('v4', 'fp', 3, 'error', 'id', 'body', 0.71);
RESET extra_float_digits;
SELECT encode(tgargs, 'escape') LIKE '%0.71%' AS threshold_kept FROM pg_trigger
 WHERE tgrelid = 'v4'::regclass AND tgname = 'fp_near_unique';

-- 5. Two columns whose names share their first 40 characters: the second
-- guard is refused (it replaced the first, which was left unguarded).
CREATE TABLE g4 (id bigint PRIMARY KEY,
    "a_fingerprint_column_with_a_long_name_xx_one" simhash64,
    "a_fingerprint_column_with_a_long_name_xx_two" simhash64);
SELECT simhash_add_guard('g4', 'a_fingerprint_column_with_a_long_name_xx_one');
SELECT simhash_add_guard('g4', 'a_fingerprint_column_with_a_long_name_xx_two');
-- The same column again is no conflict (CREATE OR REPLACE, as before).
SELECT simhash_add_guard('g4', 'a_fingerprint_column_with_a_long_name_xx_one', 2);
SELECT count(*) AS guards FROM pg_trigger WHERE tgrelid = 'g4'::regclass AND NOT tgisinternal;

-- 6. The batch's pairs are bounded by simhash.load_memory: 53200 with a
-- hint naming it, not hundreds of megabytes.
SET simhash.load_memory = '1MB';
SELECT count(*) FROM _simhash_near_pairs(
    (SELECT array_agg(i) FROM generate_series(1, 3000) i),
    (SELECT array_agg(i::bigint) FROM generate_series(1, 3000) i), 11);
-- And the pairs the order rule is given (those of the fingerprint and of
-- the second source's keys, which a verified load adds to them).
SELECT count(*) FROM _simhash_skipped_in_order(
    (SELECT array_agg(i + 1) FROM generate_series(1, 30000) i),
    (SELECT array_agg(i) FROM generate_series(1, 30000) i));
RESET simhash.load_memory;
-- A load without verification settles its batch without holding the
-- pairs: 3,000 fingerprints within 11 of each other, read once.
CREATE TABLE p4 (id bigint PRIMARY KEY, fp simhash64);
SELECT count(*) FROM simhash_add_bands('p4', 'fp', '4x16');
CREATE TABLE p4_src AS SELECT i::bigint AS id, lpad(to_hex(i % 2048), 16, '0')::simhash64 AS fp
    FROM generate_series(1, 3000) i;
SET simhash.load_memory = '1MB';
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('p4', 'p4_src', 11, 'id');
TRUNCATE p4;
SET simhash.load_check = probe;
SELECT * FROM simhash_insert_new('p4', 'p4_src', 11, 'id');
RESET simhash.load_check;
-- The batch itself is bounded by it, before anything is allocated (under
-- Linux's overcommit a refused allocation is the OOM killer).
TRUNCATE p4;
SET simhash.load_memory = '100kB';
\set VERBOSITY terse
SELECT * FROM simhash_insert_new('p4', 'p4_src', 11, 'id');
\set VERBOSITY default
RESET simhash.load_memory;

-- 7. A cancel within the batch's pairs comes within a second of the
-- timeout, whatever the fingerprints (it came every 65,536 rows: never
-- in a batch of fingerprints that share their bands).
CREATE FUNCTION pg_temp.late(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE q;
    RETURN 'finished';
EXCEPTION WHEN query_canceled THEN
    RETURN CASE WHEN clock_timestamp() - t0 < interval '1.5 s' THEN 'cancelled in time'
                ELSE 'cancelled late: ' || (clock_timestamp() - t0)::text END;
END $f$;
CREATE TABLE c4 (id bigint PRIMARY KEY, fp simhash64);
SELECT count(*) FROM simhash_add_bands('c4', 'fp', '4x16');
CREATE TABLE c4_src AS SELECT i::bigint AS id, ((i::bigint * 7919) << 32)::simhash64 AS fp FROM generate_series(1, 60000) i;
CREATE TEMP TABLE marks4 AS SELECT 'a' || repeat(chr(769), 10000000) AS s;
CREATE TEMP TABLE explain4 AS SELECT string_agg(md5(i::text), ' ') AS s, string_agg(md5((i + 7)::text), ' ') AS t
  FROM generate_series(1, 490000) i;
SET statement_timeout = '300ms';
SELECT pg_temp.late($q$SELECT count(*) FROM _simhash_near_pairs(
    (SELECT array_agg(i) FROM generate_series(1, 60000) i),
    (SELECT array_agg((i::bigint * 7919) << 32) FROM generate_series(1, 60000) i), 0)$q$) AS near_pairs;
-- The load's own searches on such a batch (60,000 rows whose
-- fingerprints share their low 32 bits: all work between row counts),
-- read once and probed (they stopped 13-31 s late).
SET statement_timeout = '300ms';
SET simhash.load_check = scan;
SELECT pg_temp.late($q$SELECT * FROM simhash_insert_new('c4', 'c4_src', 0, 'id')$q$) AS load_read_once;
SET statement_timeout = '300ms';
SET simhash.load_check = probe;
SELECT pg_temp.late($q$SELECT * FROM simhash_insert_new('c4', 'c4_src', 0, 'id')$q$) AS load_probed;
RESET simhash.load_check;
-- A run of combining marks: normalized a bounded window at a time, with
-- checks inside the run (simhash_similarity stopped 16 s late on 200 MB).
SELECT pg_temp.late($q$SELECT simhash_similarity(s, 'a') FROM marks4$q$) AS similarity_of_marks;
SET statement_timeout = '100ms';
SELECT pg_temp.late($q$SELECT simhash(s) FROM marks4$q$) AS simhash_of_marks;
-- simhash_explain of two texts just under its 16 MB: checked after the
-- walk too (it stopped 2.7 s late).
SET statement_timeout = '300ms';
SELECT pg_temp.late($q$SELECT simhash_explain(s, t) FROM explain4$q$) AS explain_of_16mb;
RESET statement_timeout;
SELECT simhash_similarity(s, 'á') AS marks_similar_to_one_accent FROM marks4;
SELECT 1 AS after_cancel;

-- 9. The verified guard checks an UPDATE that changes only the text when
-- the application writes the fingerprint itself (it let a verified
-- duplicate pair in).
CREATE TABLE u4 (id bigint PRIMARY KEY, body text, fp simhash64);
SELECT count(*) FROM simhash_add_bands('u4', 'fp', '4x16');
SELECT simhash_add_guard('u4', 'fp', 3, 'error', 'id', 'body', 0.8);
INSERT INTO u4 VALUES (1, 'the first story, about a lighthouse keeper and his dog', '00000000000000ff'),
                      (2, 'a second story, about nothing like the first at all', '00000000000000fe');
UPDATE u4 SET body = (SELECT body FROM u4 WHERE id = 1) WHERE id = 2;
UPDATE u4 SET body = body || '' WHERE id = 2;   -- the same text: no check, no error
SELECT id, left(body, 12) FROM u4 ORDER BY id;
DROP TABLE u4;

-- 8. simhash_review's key must tell rows apart (keys 1, 1, 2, 2 counted
-- 8 pairs for 6): a shared key is refused, with a hint.
CREATE TABLE r4 (id int, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('r4', 'fp', '4x16');
INSERT INTO r4 (id, body) SELECT 1 + i / 2, 'the same story about a cat that sat on the mat all day long'
  FROM generate_series(0, 3) i;
SELECT length(simhash_review('r4', 'fp', 'body')) > 0 AS reviewed;
CREATE TEMP VIEW r4_rows AS SELECT row_number() OVER () AS id, body, fp FROM r4;
SELECT simhash_review('r4_rows', 'fp', 'body') LIKE '%6 pairs%' AS six_pairs;
-- 10. simhash_review of a table with a text over 16 MB: the page, not
-- simhash_explain's limit (the whole review failed).
CREATE TABLE big4 (id int PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('big4', 'fp', '4x16');
INSERT INTO big4 (id, body)
SELECT i, string_agg(format('Sentence %s of the long report on %s.', j, md5(j::text)), ' ') || repeat(' x', i)
  FROM generate_series(1, 2) i, generate_series(1, 240000) j GROUP BY i;
SELECT octet_length(body) > 16777216 AS over_16mb FROM big4 ORDER BY id;
SELECT length(simhash_review('big4', 'fp', 'body')) > 1000 AS reviewed;
DROP TABLE big4;
-- 11. A target keyed by an identity column or a sequence, loaded from a
-- staging table without ids (42804), or with NULL ids (428C9): the ids are
-- left to their defaults, and the report names the source's rows by their
-- place in the load's order. A key that is no integer is refused with a
-- hint (it failed with 22P02 or 42846), and key_col => NULL loads it.
CREATE TABLE id4 (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text,
                  fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('id4', 'fp', '4x16');
INSERT INTO id4 (body) VALUES ('an old story about the harbour and the boats that left it at dawn');
CREATE TABLE id4_src (body text);
INSERT INTO id4_src VALUES ('a new story about the mountains and the snow that fell all winter'),
                           ('an old story about the harbour and the boats that left it at dawn!'),
                           ('a new story about the mountains and the snow that fell all winter!!');
CREATE TABLE id4_skips (skipped bigint, matched bigint, distance integer);
SELECT * FROM simhash_insert_new('id4', 'id4_src', 3, skipped_into => 'id4_skips');
SELECT id, left(body, 20) FROM id4 ORDER BY id;
SELECT * FROM id4_skips ORDER BY skipped;
CREATE TABLE id4_src2 (id bigint, body text);
INSERT INTO id4_src2 VALUES (NULL, 'a third story, of a garden and the bees that visit it each spring');
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('id4', 'id4_src2', 3);
RESET simhash.load_check;
SELECT count(*) AS rows_with_ids FROM id4 WHERE id IS NOT NULL;
CREATE TABLE uu4 (id uuid PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('uu4', 'fp', '4x16');
INSERT INTO uu4 VALUES ('00000000-0000-0000-0000-000000000001', 'an old story about the harbour and the boats that left it at dawn');
CREATE TABLE uu4_src AS SELECT '00000000-0000-0000-0000-000000000002'::uuid AS id, body FROM id4_src;
SELECT * FROM simhash_insert_new('uu4', 'uu4_src', 3);
SELECT * FROM simhash_insert_new('uu4', 'uu4_src', 3, key_col => NULL);
DROP TABLE id4, id4_src, id4_src2, id4_skips, uu4, uu4_src;

-- 12. Upserts through an expression or NULLS NOT DISTINCT unique index:
-- the row the upsert updates is not a near-duplicate of the new one (a
-- 'skip' guard dropped the upsert: INSERT 0 0, the old body kept).
CREATE TABLE up4 (id bigint PRIMARY KEY, url text, tag text, body text,
                  fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE UNIQUE INDEX up4_url ON up4 (lower(url));
CREATE UNIQUE INDEX up4_tag ON up4 (tag) NULLS NOT DISTINCT;
SELECT count(*) FROM simhash_add_bands('up4', 'fp', '4x16');
SELECT simhash_add_guard('up4', 'fp', 3, 'skip');
INSERT INTO up4 VALUES (1, 'HTTP://A.example/x', 't', 'the first version of an article about tides, moons and harbours');
INSERT INTO up4 VALUES (2, 'http://a.example/X', 'u', 'the first version of an article about tides, moons and harbours!')
    ON CONFLICT (lower(url)) DO UPDATE SET body = excluded.body;
INSERT INTO up4 VALUES (3, 'http://b.example/', NULL, 'a note on the weather at sea, from a ship off the cape in winter');
INSERT INTO up4 VALUES (4, 'http://c.example/', NULL, 'a note on the weather at sea, from a ship off the cape in winter!')
    ON CONFLICT (tag) DO UPDATE SET body = excluded.body;
SELECT id, right(body, 12) AS ends FROM up4 ORDER BY id;
-- Without a conflict on the key, the near-copy is still skipped.
INSERT INTO up4 VALUES (5, 'http://d.example/', 'v', 'the first version of an article about tides, moons and harbours')
    ON CONFLICT (lower(url)) DO UPDATE SET body = excluded.body;
SELECT count(*) AS rows FROM up4;
DROP TABLE up4;

-- 13. Smaller ones. order_by cannot carry a statement of its own:
CREATE TABLE ob4 (id bigint PRIMARY KEY, fp simhash64);
SELECT count(*) FROM simhash_add_bands('ob4', 'fp', '4x16');
CREATE TABLE ob4_src (id bigint, fp simhash64);
INSERT INTO ob4_src VALUES (1, '0000000000000001');
SELECT * FROM simhash_insert_new('ob4', 'ob4_src', 3, 'id); CREATE TABLE ob4_pwn(); SELECT (1');
SELECT to_regclass('ob4_pwn') IS NULL AS nothing_ran;
-- skipped_into's triggers run with the caller's search_path (they failed
-- with 42P01, as the target's did before 0.7.0):
CREATE SCHEMA app4;
CREATE TABLE app4.audit (skipped bigint);
CREATE FUNCTION app4.audit_skip() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO audit VALUES (NEW.skipped); RETURN NEW; END $f$;
CREATE TABLE ob4_skips (skipped bigint, matched bigint, distance integer);
CREATE TRIGGER audit BEFORE INSERT ON ob4_skips FOR EACH ROW EXECUTE FUNCTION app4.audit_skip();
INSERT INTO ob4_src VALUES (2, '0000000000000003');
SET search_path = app4, public;
SELECT * FROM simhash_insert_new('ob4', 'ob4_src', 3, 'id', skipped_into => 'ob4_skips');
RESET search_path;
SELECT * FROM app4.audit;
-- A verified load into a target whose other trigger rewrites the text but
-- keeps the fingerprint the application wrote: refused, not let in.
CREATE TABLE tx4 (id bigint PRIMARY KEY, body text, fp simhash64);
SELECT count(*) FROM simhash_add_bands('tx4', 'fp', '4x16');
CREATE FUNCTION pg_temp.rewrite() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN NEW.body := 'rewritten: ' || NEW.body; RETURN NEW; END $f$;
CREATE TRIGGER a_rewrite BEFORE INSERT ON tx4 FOR EACH ROW EXECUTE FUNCTION pg_temp.rewrite();
CREATE TABLE tx4_src (id bigint, body text, fp simhash64);
INSERT INTO tx4_src VALUES (1, 'a text', '0000000000000001');
SELECT * FROM simhash_insert_new('tx4', 'tx4_src', 3, 'id', text_col => 'body');
SELECT count(*) AS loaded FROM tx4;
DROP TABLE ob4, ob4_src, ob4_skips, tx4, tx4_src, c4, c4_src;
DROP SCHEMA app4 CASCADE;

-- 14. Bad input to the functions this round added: NULL, empty, out of
-- range, malformed, and a cancel on a large text (SQLSTATEs only).
SELECT simhash_lsh(NULL) IS NULL AS lsh_null, simhash_lsh('') IS NULL AS lsh_empty,
       simhash_lsh(repeat(' ', 1000)) IS NULL AS lsh_spaces;
SELECT _simhash_one_statement('') AS no_statement, _simhash_one_statement('SELECT 1; SELECT 2') AS two,
       _simhash_one_statement('SELECT 1') AS one;
SELECT _simhash_xid_unseen(-1) AS negative_xid, _simhash_xid_unseen(NULL) IS NULL AS null_xid;
SELECT count(*) AS null_places_left_out FROM _simhash_batch_order(ARRAY[1, NULL, 3], ARRAY[5, 5, 5], 3);
\set VERBOSITY sqlstate
SELECT _simhash_one_statement('SELEC 1');
SELECT * FROM _simhash_batch_order(ARRAY[1, 2], ARRAY[5], 3);
SELECT * FROM _simhash_batch_order(ARRAY[1], ARRAY[5], 12);
SELECT * FROM _simhash_batch_order(ARRAY[1], ARRAY[5], -1);
SELECT _simhash_latest_rows('SELEC 1');
SELECT _simhash_latest_rows('CREATE TABLE latest4 ()');
\set VERBOSITY default
SELECT _simhash_latest_rows('SELECT 1') AS a_row, _simhash_latest_rows('SELECT 1 WHERE false') AS no_row;
CREATE TEMP TABLE lsh4 AS SELECT repeat('word ', 4000000) AS s;
SET statement_timeout = '300ms';
SELECT pg_temp.late($q$SELECT simhash_lsh(s) FROM lsh4$q$) AS lsh_of_20mb;
RESET statement_timeout;

DROP TABLE n4, n4_src, n4_skips, v4, v4_one, v4_src, g4, p4, p4_src, r4 CASCADE;
