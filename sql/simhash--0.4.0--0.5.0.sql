-- simhash 0.4.0 -> 0.5.0: scale-out on Citus. No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.5.0'" to load this file. \quit

-- The library (not this script) adds the planner hook that runs generic
-- plans of distance queries on Citus distributed tables.

-- simhash_add_bands refuses foreign tables and partitioned tables with
-- foreign partitions (42809, with a HINT): CREATE INDEX skipped those
-- partitions without a word.
CREATE OR REPLACE FUNCTION simhash_add_bands(tbl regclass, col name DEFAULT 'fp')
    RETURNS SETOF regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    nsp oid;
    rel name;
    col_type oid;
    idx oid;
    label text;
    t text;
    c text;
    candidate text;
    attempt int;
    remote regclass;
BEGIN
    SELECT cl.relowner, cl.relnamespace, cl.relname INTO owner, nsp, rel
    FROM pg_class cl WHERE cl.oid = tbl;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
    END IF;
    -- Foreign tables hold no rows here to index: CREATE INDEX refuses one,
    -- and on a partitioned table it skips foreign partitions without a
    -- word, which would leave their rows without band indexes.
    SELECT fc.oid INTO remote
    FROM pg_class fc
    WHERE fc.relkind = 'f'
      AND (fc.oid = tbl OR fc.oid IN (SELECT pt.relid FROM pg_partition_tree(tbl) pt))
    ORDER BY fc.oid = tbl DESC, fc.oid
    LIMIT 1;
    IF remote IS NOT NULL THEN
        RAISE EXCEPTION 'cannot create band indexes on foreign table %', remote
            USING ERRCODE = '42809',
                  DETAIL = CASE WHEN remote = tbl THEN 'Its rows are on another server.'
                                ELSE format('%s is a partition of %s; its rows are on another server.', remote, tbl) END,
                  HINT = 'Run simhash_add_bands on the table on the remote server; with postgres_fdw''s extensions ''simhash'' option the distance conditions are sent there and use those indexes.';
    END IF;
    SELECT a.atttypid INTO col_type FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tbl
            USING ERRCODE = '42703';
    END IF;
    IF col_type <> '@extschema@.simhash64'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is of type %, not simhash64',
            col, tbl, format_type(col_type, NULL)
            USING ERRCODE = '42804';
    END IF;
    FOR n IN 0..3 LOOP
        -- An index of the form the planner matches: B-tree, whole table,
        -- the one expression simhash_band(col, n), valid.
        SELECT i.indexrelid INTO idx
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = tbl AND i.indnatts = 1 AND i.indkey[0] = 0
          AND i.indpred IS NULL AND i.indisvalid AND i.indisready
          AND ic.relam = (SELECT am.oid FROM pg_am am WHERE am.amname = 'btree')
          AND pg_get_expr(i.indexprs, i.indrelid)
              = format('%s.simhash_band(%s, %s)', '@extschema@', quote_ident(col), n)
        ORDER BY i.indexrelid
        LIMIT 1;
        IF NOT FOUND THEN
            idx := NULL;
            FOR attempt IN 0..999 LOOP
                label := '_band' || n || CASE WHEN attempt = 0 THEN '' ELSE '_' || attempt END;
                t := rel;
                c := col;
                WHILE octet_length(t) + 1 + octet_length(c) + octet_length(label) > 63 LOOP
                    IF octet_length(t) >= octet_length(c) THEN
                        t := left(t, -1);
                    ELSE
                        c := left(c, -1);
                    END IF;
                END LOOP;
                candidate := t || '_' || c || label;
                EXIT WHEN NOT EXISTS (SELECT FROM pg_class WHERE relnamespace = nsp AND relname = candidate);
                candidate := NULL;
            END LOOP;
            IF candidate IS NULL THEN
                RAISE EXCEPTION 'could not choose a name for band index % of %', n, tbl
                    USING ERRCODE = '42P07';
            END IF;
            EXECUTE format('CREATE INDEX %I ON %s (@extschema@.simhash_band(%I, %s))',
                           candidate, tbl, col, n);
            SELECT cl.oid INTO STRICT idx FROM pg_class cl
            WHERE cl.relnamespace = nsp AND cl.relname = candidate;
        END IF;
        RETURN NEXT idx::regclass;
    END LOOP;
END
$$;

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
