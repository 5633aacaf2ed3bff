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
DROP TABLE vdocs, vdocs_local;
