-- Names that carry SQL, on Citus: a distributed table whose name closes a
-- dollar quote ($q$) and goes on with a statement. The load asks every
-- shard for its row estimate (simhash.load_check = auto), with the
-- shard's name quoted: nothing of the name runs on a worker. Then every
-- function that takes a name, on that table and hostile column names.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;
SET citus.shard_count = 4;
CREATE TABLE "A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--"
    ("k $q$';--" bigint PRIMARY KEY, "b $$'""; --ß" text,
     "f$q$'; DROP TABLE t4_canary;--" simhash64 GENERATED ALWAYS AS (simhash("b $$'""; --ß")) STORED);
CREATE TABLE t4_canary (x int);
CREATE TEMP VIEW hostile AS
    SELECT 'citus_test."A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--"'::regclass AS t;
SELECT create_distributed_table(hostile.t, 'k $q$'';--') FROM hostile \gset
SELECT count(*) FROM hostile, simhash_add_bands(hostile.t, 'f$q$''; DROP TABLE t4_canary;--', '4x16') \gset
INSERT INTO "A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--" ("k $q$';--", "b $$'""; --ß")
SELECT i, format('Story %s: %s %s %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text)) FROM generate_series(1, 200) i;
ANALYZE "A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--";
CREATE TABLE t4_src ("k $q$';--" bigint, "b $$'""; --ß" text);
INSERT INTO t4_src SELECT 1000 + i, format('Story %s: %s %s %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text)) || '!!'
  FROM generate_series(1, 10) i;
INSERT INTO t4_src VALUES (2000, 'A story of its own, about nothing that came before it at all.');
RESET simhash.load_check;
SELECT inserted, skipped FROM hostile, simhash_insert_new(hostile.t, 'citus_test.t4_src', 3, NULL,
                                                        'f$q$''; DROP TABLE t4_canary;--', 'k $q$'';--') \gset
DO $$
BEGIN
    IF EXISTS (SELECT FROM run_command_on_workers(
                   $c$SELECT to_regclass('public.t4_pwn') IS NOT NULL OR to_regclass('citus_test.t4_pwn') IS NOT NULL$c$)
               WHERE result <> 'f') THEN
        RAISE EXCEPTION 'the table''s name ran SQL on a worker';
    END IF;
    IF to_regclass('citus_test.t4_canary') IS NULL THEN
        RAISE EXCEPTION 'a column''s name ran SQL';
    END IF;
END
$$;
SELECT :inserted = 1 AND :skipped = 10 AS loaded \gset
\if :loaded
\else
    \echo 'the load of the hostile-named table kept' :inserted 'and skipped' :skipped '(want 1 and 10)'
    SELECT 1/0;
\endif
SET simhash.load_check = probe;
DELETE FROM "A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--" WHERE "k $q$';--" > 200;
SELECT inserted, skipped FROM hostile, simhash_insert_new(hostile.t, 'citus_test.t4_src', 3, NULL,
                                                        'f$q$''; DROP TABLE t4_canary;--', 'k $q$'';--') \gset
RESET simhash.load_check;
SELECT :inserted = 1 AND :skipped = 10 AS loaded \gset
\if :loaded
\else
    \echo 'probed: the load of the hostile-named table kept' :inserted 'and skipped' :skipped '(want 1 and 10)'
    SELECT 1/0;
\endif
SELECT count(*) FROM hostile, simhash_band_commands(hostile.t, 'f$q$''; DROP TABLE t4_canary;--', '2x32') \gset
SELECT count(*) AS clustered FROM hostile, simhash_clusters(hostile.t, 'f$q$''; DROP TABLE t4_canary;--', 3, 'k $q$'';--') \gset
-- The review page refuses a distributed table (it reviews a local
-- sample), naming the table as it is.
DO $do$
BEGIN
    PERFORM simhash_review(t, 'f$q$''; DROP TABLE t4_canary;--', 'b $$''"; --ß', 'k $q$'';--') FROM hostile;
    RAISE EXCEPTION 'simhash_review reviewed a distributed table';
EXCEPTION WHEN feature_not_supported THEN
    IF SQLERRM NOT LIKE '%"A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--"%' THEN
        RAISE EXCEPTION 'the refusal does not name the table: %', SQLERRM;
    END IF;
END
$do$;
DO $$
BEGIN
    IF to_regclass('citus_test.t4_canary') IS NULL THEN
        RAISE EXCEPTION 'a column''s name ran SQL';
    END IF;
END
$$;
DROP VIEW hostile;
DROP TABLE "A$q$::text::regclass AND false;CREATE TABLE t4_pwn();--", t4_src, t4_canary;
