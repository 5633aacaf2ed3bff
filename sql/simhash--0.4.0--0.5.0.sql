-- simhash 0.4.0 -> 0.5.0: scale-out on Citus. No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.5.0'" to load this file. \quit

-- The library (not this script) adds the planner hook that runs generic
-- plans of distance queries on Citus distributed tables.

-- Clustering a Citus distributed table on its workers
-- (simhash_core::scatter): each row goes to the k + 1 buckets of its
-- fingerprint's blocks (two fingerprints within k share one), each bucket
-- is clustered where it lands, and only the links of rows that have a
-- neighbour come back to be joined.
CREATE FUNCTION simhash_bucket_keys(fp simhash64, k integer) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_bucket_keys_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_bucket_links(keys bigint[], fps bigint[], k integer)
    RETURNS TABLE (id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'simhash_bucket_links_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_join_links(query text)
    RETURNS TABLE (id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'simhash_join_links_wrapper'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- On a hash-distributed Citus table the work runs on the workers through
-- an unlogged distributed work table, simhash_buckets_<pid>_<n>, made in
-- the table's schema (so the caller needs CREATE there) and dropped at the
-- end; every other table is read by one backend, as simhash_clusters_query
-- does. The same clusters either way.
CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, fp_col name, k integer,
                                 key_col name DEFAULT 'id', singletons boolean DEFAULT true)
    RETURNS TABLE (id bigint, cluster bigint)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    distributed boolean := false;
    work text;
    links text;
BEGIN
    -- k out of range: the same 22023 on both paths, before any work.
    PERFORM @extschema@.simhash_bucket_keys(0::bigint::@extschema@.simhash64, k);
    IF EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                                WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1
                                  AND p.partmethod OPERATOR(pg_catalog.=) ''h'')'
            INTO distributed USING tbl;
    END IF;
    IF NOT distributed THEN
        RETURN QUERY SELECT c.id, c.cluster FROM @extschema@.simhash_clusters_query(
            pg_catalog.format('SELECT %I::bigint, %I::bigint FROM %s WHERE %I IS NOT NULL', key_col, fp_col, tbl, fp_col),
            k, singletons) c;
        RETURN;
    END IF;

    SELECT pg_catalog.format('%I.%I', n.nspname,
               'simhash_buckets_' OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid()
               OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||) (pg_catalog.random() OPERATOR(pg_catalog.*) 1e9)::bigint)
      INTO work
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) tbl;
    EXECUTE pg_catalog.format('CREATE UNLOGGED TABLE %s (bucket bigint, id bigint, fp bigint)', work);
    EXECUTE pg_catalog.format('SELECT pg_catalog.create_distributed_table(%L, ''bucket'', colocate_with => ''none'')', work);
    -- Worker to worker: Citus repartitions the rows by bucket.
    EXECUTE pg_catalog.format(
        'INSERT INTO %s (bucket, id, fp)
         SELECT b, t.%I::bigint, t.%I::bigint
           FROM %s t, LATERAL pg_catalog.unnest(@extschema@.simhash_bucket_keys(t.%I::bigint::@extschema@.simhash64, %s)) b
          WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL',
        work, key_col, fp_col, tbl, fp_col, k, fp_col, key_col);
    -- Grouped by the work table's distribution column: each worker
    -- clusters its buckets and returns their links.
    links := pg_catalog.format(
        'SELECT l.id, l.cluster
           FROM (SELECT pg_catalog.array_agg(w.id) AS ids, pg_catalog.array_agg(w.fp) AS fps
                   FROM %s w GROUP BY w.bucket HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) g,
                LATERAL @extschema@.simhash_bucket_links(g.ids, g.fps, %s) l',
        work, k);
    IF singletons THEN
        RETURN QUERY EXECUTE pg_catalog.format(
            'WITH c AS MATERIALIZED (SELECT j.id, j.cluster FROM @extschema@.simhash_join_links(%L) j)
             SELECT t.key, COALESCE(c.cluster, t.key)
               FROM (SELECT %I::bigint AS key FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL) t
               LEFT JOIN c ON c.id OPERATOR(pg_catalog.=) t.key',
            links, key_col, tbl, fp_col, key_col);
    ELSE
        RETURN QUERY SELECT j.id, j.cluster FROM @extschema@.simhash_join_links(links) j;
    END IF;
    EXECUTE pg_catalog.format('DROP TABLE %s', work);
END
$$;
