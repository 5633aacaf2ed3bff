-- simhash 0.6.0 -> 0.7.0. No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.7.0'" to load this file. \quit

-- simhash_band_commands (and so simhash_add_bands): a NULL layout is
-- refused as NULL, not as an unknown layout named "NULL".
CREATE OR REPLACE FUNCTION simhash_band_commands(tbl regclass, col name DEFAULT 'fp',
                                      layout text DEFAULT 'auto',
                                      concurrently boolean DEFAULT true)
    RETURNS SETOF text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    nsp oid;
    rel name;
    kind "char";
    col_type oid;
    remote regclass;
    n_rows double precision;
    shards bigint := 0;
    wanted text[];
    kept text[] := '{}';
    taken text[] := '{}';
    l text;
    fn text;
    parts integer;
    label text;
    t text;
    c text;
    candidate text;
    how text := CASE WHEN $4 THEN 'CONCURRENTLY ' ELSE '' END;  -- $4: concurrently, a keyword
    idx regclass;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'the table and the column of band indexes must not be NULL'
            USING ERRCODE = '22023';
    END IF;
    IF $4 IS NULL THEN
        RAISE EXCEPTION 'concurrently must be true or false, not NULL' USING ERRCODE = '22023';
    END IF;
    IF layout IS NULL THEN
        RAISE EXCEPTION 'the band layout must be given, not NULL' USING ERRCODE = '22023',
            HINT = 'The layouts are ''auto'', ''4x16'', ''4x16c'' and ''2x32'', or several joined by ''+''.';
    END IF;
    SELECT cl.relowner, cl.relnamespace, cl.relname, cl.relkind INTO owner, nsp, rel, kind
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
    IF layout = 'auto' THEN
        -- A Citus table: the coordinator's statistics say nothing of the
        -- shards, so count; each shard is indexed and probed on its own,
        -- so its size is what counts.
        IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
            EXECUTE 'SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1'
                INTO shards USING tbl;
        END IF;
        IF shards > 0 THEN
            EXECUTE format('SELECT count(*) FROM %s', tbl) INTO n_rows;
            n_rows := n_rows / shards;
        ELSE
            n_rows := @extschema@.simhash_table_rows(tbl);
        END IF;
        wanted := ARRAY[@extschema@.simhash_layout_for(coalesce(n_rows, 0))];
    ELSE
        wanted := string_to_array(layout, '+');
        IF wanted IS NULL OR cardinality(wanted) = 0
           OR NOT wanted <@ ARRAY['4x16', '4x16c', '2x32'] THEN
            RAISE EXCEPTION 'unknown band layout "%"', coalesce(layout, 'NULL')
                USING ERRCODE = '22023',
                      HINT = 'The layouts are ''auto'', ''4x16'', ''4x16c'' and ''2x32'', or several joined by ''+''.';
        END IF;
    END IF;
    IF NOT wanted && ARRAY['4x16', '4x16c'] AND EXISTS (
        SELECT FROM pg_trigger tg
        WHERE tg.tgrelid = tbl AND tg.tgfoid = '@extschema@.simhash_near_unique'::regproc
          AND split_part(encode(tg.tgargs, 'escape'), '\000', 1) = col
          AND split_part(encode(tg.tgargs, 'escape'), '\000', 2) ~ '^\s*\d{1,4}\s*$'
          AND split_part(encode(tg.tgargs, 'escape'), '\000', 2)::integer > 7)
    THEN
        kept := ARRAY['4x16', '4x16c'];
        RAISE NOTICE 'keeping the 4x16 band indexes of column "%" of %', col, tbl
            USING DETAIL = 'A near-unique guard of the column checks a distance above 7, which only they answer by probing.';
    END IF;
    IF $4 AND kind = 'p' THEN
        RAISE EXCEPTION 'cannot build or drop band indexes of partitioned table % concurrently', tbl
            USING ERRCODE = '0A000',
                  HINT = 'Use concurrently => false (which holds off writes while the indexes build); or make each index on the table with CREATE INDEX ... ON ONLY, build it on each partition CONCURRENTLY and ALTER INDEX ... ATTACH PARTITION it: the table''s index, valid once every partition''s is attached, is what queries on the table read the layout from.';
    END IF;
    FOREACH l IN ARRAY wanted LOOP
        fn := CASE l WHEN '2x32' THEN 'simhash_band32' ELSE 'simhash_band' END;
        parts := CASE l WHEN '2x32' THEN 2 ELSE 4 END;
        FOR n IN 0..parts - 1 LOOP
            CONTINUE WHEN EXISTS (SELECT FROM @extschema@.simhash_band_indexes(tbl, col) b
                                  WHERE b.layout = l AND b.part = n AND b.usable);
            -- <table>_<column>_band<n> (band32_<n> for the halves, cband<n>
            -- covering),
            -- shortened to 63 bytes a whole character at a time (the longer
            -- name first, as PostgreSQL shortens the names it picks), and
            -- numbered when the name is taken.
            candidate := NULL;
            FOR attempt IN 0..999 LOOP
                label := CASE l WHEN '4x16' THEN '_band' || n WHEN '4x16c' THEN '_cband' || n
                                ELSE '_band32_' || n END
                         || CASE WHEN attempt = 0 THEN '' ELSE '_' || attempt END;
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
                EXIT WHEN NOT EXISTS (SELECT FROM pg_class WHERE relnamespace = nsp AND relname = candidate)
                          AND NOT candidate = ANY (taken);
                candidate := NULL;
            END LOOP;
            IF candidate IS NULL THEN
                RAISE EXCEPTION 'could not choose a name for band index % of %', n, tbl
                    USING ERRCODE = '42P07';
            END IF;
            taken := taken || candidate;
            RETURN NEXT format('CREATE INDEX %s%I ON %s (@extschema@.%s(%I, %s))%s',
                               how, candidate, tbl, fn, col, n,
                               CASE l WHEN '4x16c' THEN format(' INCLUDE (%I)', col) ELSE '' END);
        END LOOP;
    END LOOP;
    FOR idx IN
        SELECT b.index FROM @extschema@.simhash_band_indexes(tbl, col) b
        WHERE NOT b.layout = ANY (wanted || kept) OR NOT b.valid
    LOOP
        RETURN NEXT format('DROP INDEX %s%s', how, idx);
    END LOOP;
END
$$;

-- Verified near-duplicates: the similarity of two texts, the rule of
-- record, the explanation of a pair, and the threshold's default.
CREATE FUNCTION simhash_similarity(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_similarity_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

CREATE FUNCTION simhash_is_near_duplicate(a text, b text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_is_near_duplicate_text_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 2000;

CREATE FUNCTION simhash_explain(a text, b text, top integer DEFAULT 10) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'simhash_explain_text_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 5000;

CREATE FUNCTION simhash_setting_threshold() RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN coalesce(nullif(current_setting('simhash.similarity_threshold', true), '')::double precision, 0.82);

-- simhash_add_guard: verification on a text column (text_col,
-- threshold); refuses (55000) while another BEFORE row trigger of INSERT
-- or UPDATE would fire after the guard and could change the row it
-- checked. New arguments: dropped and made anew (triggers call
-- simhash_near_unique, not this).
DROP FUNCTION simhash_add_guard(regclass, name, integer, text, name);
CREATE FUNCTION simhash_add_guard(tbl regclass, col name DEFAULT 'fp', k integer DEFAULT 3,
                                  on_conflict text DEFAULT 'error', key_col name DEFAULT 'id',
                                  text_col name DEFAULT NULL, threshold double precision DEFAULT NULL)
    RETURNS name
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    distributed boolean := false;
    guard name := left(col, 40) || '_near_unique';
    later name;
    text_type oid;
BEGIN
    SELECT cl.relowner INTO owner FROM pg_class cl WHERE cl.oid = tbl;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
    END IF;
    IF k IS NULL OR k < 0 OR k > 11 THEN
        RAISE EXCEPTION 'simhash_add_guard() distance must be an integer from 0 to 11, not %', coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF on_conflict IS NULL OR lower(on_conflict) NOT IN ('error', 'skip') THEN
        RAISE EXCEPTION 'simhash_add_guard() action must be "error" or "skip", not "%"', coalesce(on_conflict, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1)'
            INTO distributed USING tbl;
    END IF;
    IF distributed THEN
        RAISE EXCEPTION 'simhash_add_guard() cannot guard Citus table %', tbl
            USING ERRCODE = '0A000',
                  DETAIL = 'On a distributed or reference table the guard would check one shard at a time, not the table.',
                  HINT = 'Guard a local staging table and move its rows on, or find near-duplicates after loading with simhash_clusters().';
    END IF;
    IF key_col IS NOT NULL AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = key_col
                                                                     AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', key_col, tbl
            USING ERRCODE = '42703';
    END IF;
    IF text_col IS NULL AND threshold IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_add_guard() threshold needs the text column to verify on'
            USING ERRCODE = '22023';
    END IF;
    IF text_col IS NOT NULL THEN
        SELECT a.atttypid INTO text_type FROM pg_attribute a
        WHERE a.attrelid = tbl AND a.attname = text_col AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'column "%" of relation % does not exist', text_col, tbl
                USING ERRCODE = '42703';
        END IF;
        IF text_type <> 'text'::regtype THEN
            RAISE EXCEPTION 'column "%" of relation % is of type %, not text', text_col, tbl, format_type(text_type, NULL)
                USING ERRCODE = '42804';
        END IF;
        threshold := coalesce(threshold, @extschema@.simhash_setting_threshold());
        IF threshold = 'NaN'::double precision OR threshold < 0 OR threshold > 1 THEN
            RAISE EXCEPTION 'simhash_add_guard() similarity threshold must be from 0 to 1, not %', threshold
                USING ERRCODE = '22023';
        END IF;
        IF key_col IS NULL THEN
            RAISE EXCEPTION 'simhash_add_guard() with a text column needs a key column'
                USING ERRCODE = '22023', HINT = 'Give key_col (default ''id'').';
        END IF;
    END IF;
    -- The guard must see the row as it will be stored: no other BEFORE
    -- row trigger of INSERT or UPDATE may fire after it (triggers fire in
    -- the order of their names). The guard checks this on every row too.
    SELECT tg.tgname INTO later FROM pg_trigger tg
    WHERE tg.tgrelid = tbl AND NOT tg.tgisinternal AND tg.tgenabled <> 'D'
      AND tg.tgtype & 3 = 3 AND tg.tgtype & 20 <> 0
      AND tg.tgfoid <> '@extschema@.simhash_near_unique'::regproc
      AND tg.tgname COLLATE "C" > guard COLLATE "C"
    ORDER BY tg.tgname COLLATE "C" LIMIT 1;
    IF later IS NOT NULL THEN
        RAISE EXCEPTION 'near-unique guard "%" on % must be the last BEFORE row trigger', guard, tbl
            USING ERRCODE = '55000',
                  DETAIL = format('Trigger "%s" fires after it (triggers fire in the order of their names) and could change the fingerprint or the text after the guard checked the row.', later),
                  HINT = 'Rename that trigger so that its name sorts before the guard''s, or make it an AFTER trigger.';
    END IF;
    -- Checks the column and, unless a layout that serves k is there, makes
    -- the band indexes (the 16-bit bands for k above 7, which the halves
    -- do not probe).
    IF NOT EXISTS (SELECT FROM unnest(@extschema@.simhash_band_layouts(tbl, col)) l
                   WHERE l = '4x16' OR k <= 7) THEN
        PERFORM @extschema@.simhash_add_bands(tbl, col, CASE WHEN k > 7 THEN '4x16' ELSE 'auto' END);
    END IF;
    IF text_col IS NULL THEN
        EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                       'EXECUTE FUNCTION @extschema@.simhash_near_unique(%L, %L, %L, %L)',
                       guard, tbl, col, k, lower(on_conflict), key_col);
    ELSE
        EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                       'EXECUTE FUNCTION @extschema@.simhash_near_unique(%L, %L, %L, %L, %L, %L)',
                       guard, tbl, col, k, lower(on_conflict), key_col, text_col, threshold::text);
    END IF;
    IF lower(on_conflict) = 'skip' THEN
        EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION @extschema@.simhash_near_unique_report()',
                       guard || '_report', tbl);
    ELSIF EXISTS (SELECT FROM pg_trigger WHERE tgrelid = tbl AND tgname = guard || '_report') THEN
        EXECUTE format('DROP TRIGGER %I ON %s', guard || '_report', tbl);
    END IF;
    RETURN guard;
END
$$;

-- simhash_clusters: verified clustering (text_col, threshold); every name
-- of the generated statements qualified (a table with a column named "b"
-- made the bucket path fail with 42702). New arguments: dropped and made
-- anew.
DROP FUNCTION simhash_clusters(regclass, name, integer, name, boolean);
CREATE FUNCTION simhash_clusters(tbl regclass, fp_col name, k integer,
                                 key_col name DEFAULT 'id', singletons boolean DEFAULT true,
                                 text_col name DEFAULT NULL, threshold double precision DEFAULT NULL)
    RETURNS TABLE (id bigint, cluster bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    distributed boolean := false;
    work text;
    links text;
    cap double precision;
BEGIN
    -- As a strict function: no rows for a NULL among the first five.
    IF tbl IS NULL OR fp_col IS NULL OR k IS NULL OR key_col IS NULL OR singletons IS NULL THEN
        RETURN;
    END IF;
    -- k out of range: the same 22023 on both paths, before any work.
    PERFORM @extschema@.simhash_bucket_keys(0::bigint::@extschema@.simhash64, k);
    IF text_col IS NULL AND threshold IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_clusters: a threshold needs the text column to verify on'
            USING ERRCODE = '22023';
    END IF;
    IF text_col IS NOT NULL THEN
        threshold := coalesce(threshold, @extschema@.simhash_setting_threshold());
        IF threshold = 'NaN'::double precision OR threshold < 0 OR threshold > 1 THEN
            RAISE EXCEPTION 'simhash_clusters: the similarity threshold must be from 0 to 1, not %', threshold
                USING ERRCODE = '22023';
        END IF;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                       WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) text_col
                         AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
                         AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype) THEN
            RAISE EXCEPTION 'column "%" of relation % is not a text column', text_col, tbl
                USING ERRCODE = '42804';
        END IF;
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                                WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1
                                  AND p.partmethod OPERATOR(pg_catalog.=) ''h'')'
            INTO distributed USING tbl;
    END IF;
    IF text_col IS NOT NULL AND distributed THEN
        RAISE EXCEPTION 'simhash_clusters: verified clustering of distributed table % is not supported', tbl
            USING ERRCODE = '0A000',
                  HINT = 'Cluster by fingerprint alone (without text_col), then verify the pairs of each cluster with simhash_similarity().';
    ELSIF text_col IS NOT NULL THEN
        -- The verified pairs: each row's neighbours within k through the
        -- band indexes, each pair once, kept when their texts agree.
        links := pg_catalog.format(
            'SELECT x.%1$I::bigint, y.%1$I::bigint
               FROM %2$s x JOIN %2$s y
                 ON y.%3$I OPERATOR(@extschema@.<~>) x.%3$I OPERATOR(pg_catalog.<=) %4$s
                AND y.%1$I::bigint OPERATOR(pg_catalog.>) x.%1$I::bigint
              WHERE x.%1$I IS NOT NULL AND x.%3$I IS NOT NULL AND y.%3$I IS NOT NULL
                AND @extschema@.simhash_similarity(x.%5$I, y.%5$I) OPERATOR(pg_catalog.>=) %6$s',
            key_col, tbl, fp_col, k, text_col, threshold);
    ELSIF NOT distributed THEN
        -- In memory (about 75 bytes a row) when that fits in
        -- simhash.cluster_memory (default 1GB); else by buckets, whose
        -- grouping PostgreSQL spills to disk past work_mem.
        cap := pg_catalog.pg_size_bytes(COALESCE(NULLIF(pg_catalog.current_setting('simhash.cluster_memory', true), ''), '1GB'));
        IF @extschema@.simhash_table_rows(tbl) OPERATOR(pg_catalog.*) 75 OPERATOR(pg_catalog.<=) cap THEN
            RETURN QUERY SELECT c.id, c.cluster FROM @extschema@.simhash_clusters_query(
                pg_catalog.format('SELECT r.%I::bigint, r.%I::bigint FROM %s r WHERE r.%I IS NOT NULL', key_col, fp_col, tbl, fp_col),
                k, singletons) c;
            RETURN;
        END IF;
        links := pg_catalog.format(
            'SELECT l.id, l.cluster
               FROM (SELECT pg_catalog.array_agg(w.id) AS ids, pg_catalog.array_agg(w.fp) AS fps
                       FROM (SELECT bk.bucket AS bucket, t.%I::bigint AS id, t.%I::bigint AS fp
                               FROM %s t, LATERAL pg_catalog.unnest(@extschema@.simhash_bucket_keys(t.%I::bigint::@extschema@.simhash64, %s)) AS bk(bucket)
                              WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL) w
                      GROUP BY w.bucket HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) g,
                    LATERAL @extschema@.simhash_bucket_links(g.ids, g.fps, %s) l',
            key_col, fp_col, tbl, fp_col, k, fp_col, key_col, k);
    ELSE
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
             SELECT bk.bucket, t.%I::bigint, t.%I::bigint
               FROM %s t, LATERAL pg_catalog.unnest(@extschema@.simhash_bucket_keys(t.%I::bigint::@extschema@.simhash64, %s)) AS bk(bucket)
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
    END IF;
    IF singletons THEN
        RETURN QUERY EXECUTE pg_catalog.format(
            'WITH c AS MATERIALIZED (SELECT j.id, j.cluster FROM @extschema@.simhash_join_links(%L) j)
             SELECT t.key, COALESCE(c.cluster, t.key)
               FROM (SELECT r.%I::bigint AS key FROM %s r WHERE r.%I IS NOT NULL AND r.%I IS NOT NULL) t
               LEFT JOIN c ON c.id OPERATOR(pg_catalog.=) t.key',
            links, key_col, tbl, fp_col, key_col);
    ELSE
        RETURN QUERY SELECT j.id, j.cluster FROM @extschema@.simhash_join_links(links) j;
    END IF;
    IF work IS NOT NULL THEN
        EXECUTE pg_catalog.format('DROP TABLE %s', work);
    END IF;
END
$$;


-- simhash_review: a self-contained HTML page to review near-duplicate
-- candidates of a table (written by the review page's author; see the
-- README's "Reviewing a table").
