-- simhash_clusters on a distributed table runs on the workers
-- (repartitioned by bucket) and gives exactly the clusters of the same rows
-- in a local table, read by one backend.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;
\pset tuples_only on
\pset format unaligned

CREATE FUNCTION cluster_mismatches(k int, singletons boolean) RETURNS bigint LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM (SELECT * FROM simhash_clusters('docs', 'fp', k, 'id', singletons)
                                  EXCEPT ALL SELECT * FROM simhash_clusters('docs_local', 'fp', k, 'id', singletons)) a)
         + (SELECT count(*) FROM (SELECT * FROM simhash_clusters('docs_local', 'fp', k, 'id', singletons)
                                  EXCEPT ALL SELECT * FROM simhash_clusters('docs', 'fp', k, 'id', singletons)) b)
$$;
SELECT expect('distributed clusters = local clusters, k = 0..11, without singletons',
    (SELECT sum(cluster_mismatches(k, false)) FROM generate_series(0, 11) k) = 0);
SELECT expect('distributed clusters = local clusters, k = 3 and 11, with singletons',
    cluster_mismatches(3, true) = 0 AND cluster_mismatches(11, true) = 0);
SELECT expect('the clusters are not trivial',
    (SELECT count(DISTINCT cluster) FROM simhash_clusters('docs', 'fp', 11, 'id', false)) > 10
    AND (SELECT count(*) FROM simhash_clusters('docs', 'fp', 11, 'id', false)) > 100);
SELECT expect('an integer key column',
    (SELECT count(*) FROM (SELECT * FROM simhash_clusters('queries_co', 'fp', 11, 'qid', false)
                           EXCEPT ALL SELECT * FROM simhash_clusters('queries', 'fp', 11, 'qid', false)) x) = 0);
SELECT expect('the work tables are gone',
    NOT EXISTS (SELECT FROM pg_class WHERE relname LIKE 'simhash_buckets_%'));

-- Errors: before any work, or rolled back with the work table.
DO $$
BEGIN
    PERFORM simhash_clusters('docs', 'fp', 12);
    RAISE EXCEPTION 'k = 12 was accepted';
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END $$;
SELECT expect('k = 12 fails with 22023', true);
DO $$
BEGIN
    PERFORM simhash_clusters('docs', 'fp', 3, 'no_such_column');
    RAISE EXCEPTION 'a missing key column was accepted';
EXCEPTION WHEN undefined_column THEN
    NULL;
END $$;
SELECT expect('a missing key column fails with 42703, no work table left',
    NOT EXISTS (SELECT FROM pg_class WHERE relname LIKE 'simhash_buckets_%'));

-- Every function that takes a table: on a distributed, a reference and a
-- distributed partitioned table.
SELECT expect('simhash_drop_bands and simhash_add_bands on a distributed table',
    (SELECT count(*) FROM simhash_drop_bands('docs', 'fp')) = 4
    AND (SELECT count(*) FROM simhash_add_bands('docs', 'fp')) = 4
    AND plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3$$) ~ 'Index Scan on docs_fp_band0');
-- The halves: the shards' planners read them from the shards' indexes
-- (a shard this small is scanned unless scans are off on the workers too).
-- (Separate statements: a STABLE function sees the statement's snapshot.)
SELECT expect('the 2x32 layout on a distributed table',
    (SELECT count(*) FROM simhash_add_bands('docs', 'fp', '2x32')) = 2);
SELECT expect('the coordinator reads the layout', simhash_band_layouts('docs', 'fp') = '{2x32}');
BEGIN;
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL enable_seqscan = off;
SELECT expect('the shards probe the halves',
    plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3$$) ~ 'Bitmap Index Scan on docs_fp_band32_0');
COMMIT;
SELECT expect('the 2x32 layout on a distributed table: exact, and moved back',
    (SELECT array_agg(id ORDER BY id) FROM docs WHERE fp <~> (SELECT fp FROM queries WHERE qid = 3) <= 3)
        = (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = 3 AND dist <= 3)
    AND (SELECT array_agg(id ORDER BY id) FROM docs WHERE fp <~> (SELECT fp FROM queries WHERE qid = 3) <= 7)
        = (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = 3 AND dist <= 7)
    AND (SELECT count(*) FROM simhash_add_bands('docs', 'fp', '4x16')) = 4);
SELECT expect('moved back to 4x16', simhash_band_layouts('docs', 'fp') = '{4x16}');
-- The covering bands: made on every shard; under Citus the planner keeps
-- to the band conditions (a probe of the coordinator's table would see no
-- rows), which the covering indexes answer as plain bands.
SELECT expect('the 4x16c layout on a distributed table',
    (SELECT count(*) FROM simhash_add_bands('docs', 'fp', '4x16c')) = 4);
SELECT expect('the coordinator reads the covering layout',
    simhash_band_layouts('docs', 'fp') = '{4x16,4x16c}');
BEGIN;
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL enable_seqscan = off;
SELECT expect('the shards probe the covering bands as bands, no TID scan',
    plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3$$) ~ 'Bitmap Index Scan on docs_fp_cband0'
    AND plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3$$) !~ 'Tid Scan');
COMMIT;
SELECT expect('the 4x16c layout on a distributed table: exact, and moved back',
    (SELECT array_agg(id ORDER BY id) FROM docs WHERE fp <~> (SELECT fp FROM queries WHERE qid = 3) <= 3)
        = (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = 3 AND dist <= 3)
    AND (SELECT array_agg(id ORDER BY id) FROM docs WHERE fp <~> (SELECT fp FROM queries WHERE qid = 3) <= 11)
        = (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = 3 AND dist <= 11)
    AND (SELECT count(*) FROM simhash_add_bands('docs', 'fp', '4x16')) = 4);
SELECT expect('moved back to 4x16 again', simhash_band_layouts('docs', 'fp') = '{4x16}');
SELECT expect('simhash_add_bands on a reference table',
    (SELECT count(*) FROM simhash_add_bands('queries_ref', 'fp')) = 4);
SELECT expect('simhash_clusters on a reference table',
    (SELECT count(*) FROM (SELECT * FROM simhash_clusters('queries_ref', 'fp', 11, 'qid')
                           EXCEPT ALL SELECT * FROM simhash_clusters('queries', 'fp', 11, 'qid')) x) = 0);
CREATE TABLE pdocs (id bigint, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE pdocs_a PARTITION OF pdocs FOR VALUES FROM (0) TO (150000);
CREATE TABLE pdocs_b PARTITION OF pdocs FOR VALUES FROM (150000) TO (1000000);
SELECT create_distributed_table('pdocs', 'id') \gset
INSERT INTO pdocs SELECT * FROM docs_local;
SELECT expect('simhash_add_bands on a distributed partitioned table',
    (SELECT count(*) FROM simhash_add_bands('pdocs', 'fp')) = 4);
SELECT expect('simhash_clusters on a distributed partitioned table, k = 5',
    (SELECT count(*) FROM (SELECT * FROM simhash_clusters('pdocs', 'fp', 5, 'id', false)
                           EXCEPT ALL SELECT * FROM simhash_clusters('docs_local', 'fp', 5, 'id', false)) a) = 0
    AND (SELECT count(*) FROM (SELECT * FROM simhash_clusters('docs_local', 'fp', 5, 'id', false)
                           EXCEPT ALL SELECT * FROM simhash_clusters('pdocs', 'fp', 5, 'id', false)) b) = 0);
SELECT expect('distance queries on a distributed partitioned table',
    (SELECT array_agg(id ORDER BY id) FROM pdocs WHERE fp <~> (SELECT fp FROM queries WHERE qid = 3) <= 7)
    = (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = 3 AND dist <= 7));
