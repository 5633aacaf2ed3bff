-- Verified near-duplicates on Citus: the rule of record on a distributed
-- table gives the rows it gives on the same rows in a local table; the
-- verified forms that work on one node refuse a distributed table (0A000).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;

CREATE TABLE vdocs_local (id bigint PRIMARY KEY, body text,
                          fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO vdocs_local (id, body)
SELECT i, format('Report %s: %s %s.', i, md5(i::text), md5((i * 7)::text)) FROM generate_series(1, 3000) i;
INSERT INTO vdocs_local (id, body)
SELECT 10000 + i, format('Report %s: %s %s!', i, md5(i::text), md5((i * 7)::text)) FROM generate_series(1, 50) i;
CREATE TABLE vdocs (LIKE vdocs_local INCLUDING ALL);
SELECT create_distributed_table('vdocs', 'id') \gset
INSERT INTO vdocs (id, body) SELECT id, body FROM vdocs_local;
SELECT count(*) AS bands FROM simhash_add_bands('vdocs', 'fp') \gset
SELECT count(*) AS bands FROM simhash_add_bands('vdocs_local', 'fp') \gset

DO $$
DECLARE
    q text;
    got bigint[];
    want bigint[];
    n integer := 0;
BEGIN
    FOR q IN SELECT body FROM vdocs_local WHERE id % 300 = 0 OR (id > 10000 AND id % 10 = 0) LOOP
        SELECT array_agg(id ORDER BY id) INTO got FROM vdocs
        WHERE fp <~> simhash(q) <= 11 AND simhash_similarity(body, q) >= 0.71;
        SELECT array_agg(id ORDER BY id) INTO want FROM vdocs_local
        WHERE fp <~> simhash(q) <= 11 AND simhash_similarity(body, q) >= 0.71;
        IF got IS DISTINCT FROM want THEN
            RAISE EXCEPTION 'the rule of record on Citus: % rows, locally %', got, want;
        END IF;
        n := n + 1;
    END LOOP;
    -- The planted copies: each found with its original.
    IF (SELECT count(*) FROM vdocs a JOIN vdocs_local b ON b.id = a.id - 10000
        WHERE a.id > 10000 AND simhash_is_near_duplicate(a.body, b.body)) <> 50 THEN
        RAISE EXCEPTION 'simhash_is_near_duplicate on Citus rows';
    END IF;
    RAISE NOTICE 'the rule of record: % queries, the same rows as one node', n;
END
$$;

DO $$
DECLARE
    what text;
BEGIN
    FOREACH what IN ARRAY ARRAY[
        $q$SELECT count(*) FROM simhash_clusters('vdocs', 'fp', 11, 'id', false, 'body')$q$,
        $q$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'body')$q$,
        $q$SELECT simhash_review('vdocs', 'fp', 'body')$q$]
    LOOP
        BEGIN
            EXECUTE what;
            RAISE EXCEPTION 'ran on a distributed table: %', what;
        EXCEPTION WHEN feature_not_supported THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- The second source (simhash_add_lsh) on Citus: a distributed table gets
-- the keys column and its GIN index on every shard; the rule with both
-- sources (OR, and UNION) finds a copy past distance 11; a verified load
-- skips it; on a reference table the verified guard refuses it.
SELECT simhash_add_lsh('vdocs', 'body') AS lsh_col \gset
SELECT simhash_add_lsh('vdocs_local', 'body') AS lsh_col \gset
INSERT INTO vdocs (id, body) VALUES (20001, 'The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.');
INSERT INTO vdocs_local SELECT id, body FROM vdocs WHERE id = 20001;
CREATE TABLE vq (q text);
INSERT INTO vq VALUES ('The committee met on Tursday uo revbrw the ersposal fer d nsw library in the north of the city. Mdmbers heard from residents who asked bor longer openirg hours, a reading room for children and a small cafs near the entrance. The arcsitect showed drahings of a two snorjy buijding with large windows facing the park, and hhe treasurer saib the cost sould be shared by tme council and a private foundation. A finau vote is expected next month after a public consultation.');
SELECT q AS copy FROM vq \gset
SELECT expect('the copy is past distance 11', simhash(:'copy') <~> (SELECT fp FROM vdocs_local WHERE id = 20001) > 11);
SELECT expect('both sources (OR) on a distributed table find the copy',
              (SELECT array_agg(id) FROM vdocs WHERE (fp <~> simhash(:'copy') <= 11
                                                       OR (body_lsh && simhash_lsh(:'copy') AND simhash_lsh_match(body, :'copy')))
                                                AND simhash_similarity(body, :'copy') >= 0.82) = '{20001}');
SELECT expect('both sources (UNION) on a distributed table find the copy',
              (SELECT array_agg(id) FROM (SELECT id FROM vdocs WHERE fp <~> simhash(:'copy') <= 11 AND simhash_similarity(body, :'copy') >= 0.82
                                          UNION SELECT id FROM vdocs WHERE body_lsh && simhash_lsh(:'copy') AND simhash_lsh_match(body, :'copy')
                                                AND simhash_similarity(body, :'copy') >= 0.82) u) = '{20001}');
CREATE TABLE vbatch (id bigint, body text);
INSERT INTO vbatch VALUES (30001, :'copy'), (30002, 'A new text about boats, harbours and the sea in winter, with nothing like the others.');
SELECT expect('a verified load into a distributed table with the keys skips the copy',
              (SELECT skipped FROM simhash_insert_new('vdocs', 'vbatch', 11, 'id', text_col => 'body', threshold => 0.82)) = 1);
SELECT expect('... as into the local table',
              (SELECT skipped FROM simhash_insert_new('vdocs_local', 'vbatch', 11, 'id', text_col => 'body', threshold => 0.82)) = 1);
CREATE TABLE vref (id bigint PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_reference_table('vref') \gset
SELECT count(*) AS bands FROM simhash_add_bands('vref', 'fp', '4x16') \gset
SELECT simhash_add_lsh('vref', 'body') AS lsh_col \gset
SELECT simhash_add_guard('vref', 'fp', 11, 'error', 'id', 'body', 0.82) AS guard \gset
INSERT INTO vref SELECT id, body FROM vdocs_local WHERE id = 20001;
DO $do$
BEGIN
    INSERT INTO vref SELECT 2, q FROM vq;
    RAISE EXCEPTION 'the verified guard on a reference table let in a copy that shares candidate keys';
EXCEPTION WHEN unique_violation THEN
    NULL;
END
$do$;
DROP TABLE vdocs, vdocs_local, vq, vbatch, vref;
