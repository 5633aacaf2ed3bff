-- simhash_insert_new into a Citus distributed table: the same rows kept,
-- the same rows skipped, as into a local table with the same rows and the
-- same source (tests/citus.sh runs this on the coordinator).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;
SET citus.shard_count = 8;

-- A target of 5,000 texts with a generated fingerprint, distributed and
-- local; a source of near-copies of target rows (an added word), new
-- texts, and near-copies among the new texts, in an order by seq.
CREATE TABLE ins_dist (id bigint PRIMARY KEY, body text,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('ins_dist', 'id') \gset
CREATE TABLE ins_local (LIKE ins_dist INCLUDING GENERATED);
ALTER TABLE ins_local ADD PRIMARY KEY (id);
SELECT count(*) FROM simhash_add_bands('ins_dist', 'fp', '4x16') \gset
SELECT count(*) FROM simhash_add_bands('ins_local', 'fp', '4x16') \gset
INSERT INTO ins_local (id, body)
SELECT i, format('Article %s about %s and %s, with %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text))
FROM generate_series(1, 5000) i;
INSERT INTO ins_dist (id, body) SELECT id, body FROM ins_local;
CREATE TABLE ins_src (id bigint, body text, seq int);
INSERT INTO ins_src
SELECT 100000 + i, format('Article %s about %s and %s, with %s. Updated', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text)),
       hashint4(i)
FROM generate_series(1, 4000, 40) i;
INSERT INTO ins_src
SELECT 200000 + i, format('Fresh %s on %s then %s, also %s.', i, md5((i * 7)::text), md5((i * 11)::text), md5((i * 13)::text)),
       hashint4(i + 7)
FROM generate_series(1, 300) i;
INSERT INTO ins_src
SELECT 300000 + i, format('Fresh %s on %s then %s, also %s!', i, md5((i * 7)::text), md5((i * 11)::text), md5((i * 13)::text)),
       hashint4(i + 13)
FROM generate_series(1, 300, 3) i;
CREATE TABLE ins_skips_dist (skipped bigint, matched bigint, distance integer);
CREATE TABLE ins_skips_local (LIKE ins_skips_dist);

-- Each k with the target probed on the workers and read once through the
-- coordinator (simhash.load_check), and as the estimate chooses from the
-- shards' statistics.
ANALYZE ins_dist;
DO $$
DECLARE
    d record;
    l record;
    k integer;
    mode text;
BEGIN
    FOR k, mode IN SELECT * FROM (VALUES (3, 'probe'), (3, 'scan'), (3, 'auto'), (11, 'probe'), (11, 'scan')) v LOOP
        PERFORM set_config('simhash.load_check', mode, true);
        SELECT * INTO d FROM simhash_insert_new('ins_dist', 'ins_src', k, 'seq', skipped_into => 'ins_skips_dist');
        SELECT * INTO l FROM simhash_insert_new('ins_local', 'ins_src', k, 'seq', skipped_into => 'ins_skips_local');
        IF d.inserted <> l.inserted OR d.skipped <> l.skipped OR d.skipped = 0 OR d.inserted = 0 THEN
            RAISE EXCEPTION 'k = %, %: Citus inserted % and skipped %, one node % and %', k, mode, d.inserted, d.skipped, l.inserted, l.skipped;
        END IF;
        IF EXISTS (SELECT id FROM ins_dist EXCEPT SELECT id FROM ins_local)
           OR EXISTS (SELECT id FROM ins_local EXCEPT SELECT id FROM ins_dist) THEN
            RAISE EXCEPTION 'k = %, %: Citus kept other rows than one node', k, mode;
        END IF;
        IF EXISTS (SELECT skipped FROM ins_skips_dist EXCEPT SELECT skipped FROM ins_skips_local)
           OR EXISTS (SELECT skipped FROM ins_skips_local EXCEPT SELECT skipped FROM ins_skips_dist) THEN
            RAISE EXCEPTION 'k = %, %: Citus reported other skipped rows than one node', k, mode;
        END IF;
        -- Each skipped row's match is a row within k of it, in the target
        -- or among the source's rows, at the distance reported.
        IF EXISTS (SELECT FROM ins_skips_dist s JOIN ins_src x ON x.id = s.skipped
                   LEFT JOIN (SELECT id, fp FROM ins_local UNION ALL SELECT id, simhash(body) FROM ins_src) m ON m.id = s.matched
                   WHERE m.id IS NULL OR (m.fp <~> simhash(x.body)) <> s.distance OR s.distance > k) THEN
            RAISE EXCEPTION 'k = %, %: a skipped row''s match is not within k at the distance reported', k, mode;
        END IF;
        -- No pair within k among the rows loaded.
        IF EXISTS (WITH d AS MATERIALIZED (SELECT id, fp FROM ins_dist)
                   SELECT FROM d a JOIN d b ON a.id < b.id AND a.fp <~> b.fp <= k
                   WHERE a.id >= 100000 OR b.id >= 100000) THEN
            RAISE EXCEPTION 'k = %, %: a pair within k got in', k, mode;
        END IF;
        DELETE FROM ins_dist WHERE id >= 100000;
        DELETE FROM ins_local WHERE id >= 100000;
        TRUNCATE ins_skips_dist, ins_skips_local;
    END LOOP;
END
$$;

-- Verified: a candidate counts only when the texts agree.
DO $$
DECLARE
    d record;
    l record;
BEGIN
    SELECT * INTO d FROM simhash_insert_new('ins_dist', 'ins_src', 11, 'seq', text_col => 'body');
    SELECT * INTO l FROM simhash_insert_new('ins_local', 'ins_src', 11, 'seq', text_col => 'body');
    IF d.inserted <> l.inserted OR d.skipped <> l.skipped OR d.skipped = 0 THEN
        RAISE EXCEPTION 'verified: Citus inserted % and skipped %, one node % and %', d.inserted, d.skipped, l.inserted, l.skipped;
    END IF;
    IF EXISTS (SELECT id FROM ins_dist EXCEPT SELECT id FROM ins_local)
       OR EXISTS (SELECT id FROM ins_local EXCEPT SELECT id FROM ins_dist) THEN
        RAISE EXCEPTION 'verified: Citus kept other rows than one node';
    END IF;
END
$$;

-- A reference table as the target: probed, read once and verified, the
-- same rows as into the local table (probed, Citus used to refuse the
-- work table's join with it: "relation ... is not distributed").
CREATE TABLE ins_ref (LIKE ins_local INCLUDING GENERATED);
ALTER TABLE ins_ref ADD PRIMARY KEY (id);
SELECT create_reference_table('ins_ref') \gset
SELECT count(*) FROM simhash_add_bands('ins_ref', 'fp', '4x16') \gset
DELETE FROM ins_local WHERE id >= 100000;
INSERT INTO ins_ref (id, body) SELECT id, body FROM ins_local;
DO $$
DECLARE
    r record;
    l record;
    mode text;
    verified boolean;
BEGIN
    FOR mode, verified IN SELECT * FROM (VALUES ('probe', false), ('scan', false), ('probe', true)) v LOOP
        PERFORM set_config('simhash.load_check', mode, true);
        IF verified THEN
            SELECT * INTO r FROM simhash_insert_new('ins_ref', 'ins_src', 11, 'seq', text_col => 'body');
            SELECT * INTO l FROM simhash_insert_new('ins_local', 'ins_src', 11, 'seq', text_col => 'body');
        ELSE
            SELECT * INTO r FROM simhash_insert_new('ins_ref', 'ins_src', 3, 'seq');
            SELECT * INTO l FROM simhash_insert_new('ins_local', 'ins_src', 3, 'seq');
        END IF;
        IF r.inserted <> l.inserted OR r.skipped <> l.skipped OR r.skipped = 0 THEN
            RAISE EXCEPTION 'reference table, %, verified %: inserted % and skipped %, local % and %',
                mode, verified, r.inserted, r.skipped, l.inserted, l.skipped;
        END IF;
        IF EXISTS (SELECT id FROM ins_ref EXCEPT SELECT id FROM ins_local)
           OR EXISTS (SELECT id FROM ins_local EXCEPT SELECT id FROM ins_ref) THEN
            RAISE EXCEPTION 'reference table, %, verified %: other rows than the local table', mode, verified;
        END IF;
        DELETE FROM ins_ref WHERE id >= 100000;
        DELETE FROM ins_local WHERE id >= 100000;
    END LOOP;
    PERFORM set_config('simhash.load_check', 'auto', true);
END
$$;
DROP TABLE ins_ref;

-- Bad input gets its SQLSTATE on Citus too.
CREATE TABLE ins_nobands (id bigint PRIMARY KEY, body text, fp simhash64);
SELECT create_distributed_table('ins_nobands', 'id') \gset
DO $$
BEGIN
    PERFORM simhash_insert_new('ins_nobands', 'ins_src', 3);
    RAISE EXCEPTION 'a target without band indexes was accepted';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    NULL;
END
$$;
DO $$
BEGIN
    PERFORM simhash_insert_new('ins_dist', 'ins_dist', 3);
    RAISE EXCEPTION 'the target as its own source was accepted';
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END
$$;
DO $$
BEGIN
    PERFORM simhash_insert_new('ins_dist', 'ins_src', 12);
    RAISE EXCEPTION 'k = 12 was accepted';
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END
$$;
DROP TABLE ins_dist, ins_local, ins_src, ins_skips_dist, ins_skips_local, ins_nobands;
