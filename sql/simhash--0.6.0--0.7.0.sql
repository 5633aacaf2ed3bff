-- simhash 0.6.0 -> 0.7.0. No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.7.0'" to load this file. \quit

-- The functions that are only steps of others leave the user's namespace
-- of names: an underscore prefix marks them internal, not stable (the
-- README's Reference). Renamed first, as the bodies below call them so.
ALTER FUNCTION simhash_table_rows(regclass) RENAME TO _simhash_table_rows;
ALTER FUNCTION simhash_bucket_keys(simhash64, integer) RENAME TO _simhash_bucket_keys;
ALTER FUNCTION simhash_bucket_links(bigint[], bigint[], integer) RENAME TO _simhash_bucket_links;
ALTER FUNCTION simhash_join_links(text) RENAME TO _simhash_join_links;

-- The probe runs in the leader only: a parallel worker cannot read the
-- leader's temporary tables.
ALTER FUNCTION simhash_probe(regclass, text, simhash64, integer) PARALLEL RESTRICTED;

-- 'auto' chooses the layout by the k the table is queried with, its rows
-- and their width (simhash_layout_for's new arguments,
-- simhash_layout_estimates, simhash_layout_choice); simhash_band_commands
-- and simhash_add_bands take that k. A NULL layout is refused as NULL, not
-- as an unknown layout named "NULL".
DROP FUNCTION simhash_add_bands(regclass, name, text);
DROP FUNCTION simhash_band_commands(regclass, name, text, boolean);
DROP FUNCTION simhash_layout_for(double precision);

CREATE FUNCTION simhash_layout_for(rows double precision, k integer DEFAULT NULL,
                                   row_bytes double precision DEFAULT NULL) RETURNS text
    AS 'MODULE_PATHNAME', 'simhash_layout_for_k_fn_wrapper'
    LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION simhash_layout_estimates(rows double precision, k integer DEFAULT NULL,
                                         row_bytes double precision DEFAULT NULL)
    RETURNS TABLE (layout text, serves boolean, probe_ms double precision,
                   index_bytes double precision, cost double precision, chosen boolean)
    AS 'MODULE_PATHNAME', 'simhash_layout_estimates_fn_wrapper'
    LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION simhash_layout_choice(tbl regclass, k integer DEFAULT NULL)
    RETURNS TABLE (layout text, serves boolean, probe_ms double precision,
                   index_bytes double precision, cost double precision, chosen boolean,
                   table_rows double precision, row_bytes double precision)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shards bigint := 0;
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'the table must not be NULL' USING ERRCODE = '22023';
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1'
            INTO shards USING tbl;
    END IF;
    IF shards > 0 THEN
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO table_rows;
        table_rows := table_rows / shards;
        row_bytes := NULL;
    ELSE
        table_rows := @extschema@._simhash_table_rows(tbl);
        SELECT sum(pg_table_size(cl.oid)) INTO row_bytes
        FROM pg_class cl
        WHERE (cl.oid = tbl AND cl.relkind <> 'p')
           OR cl.oid IN (SELECT pt.relid FROM pg_partition_tree(tbl) pt WHERE pt.isleaf);
        row_bytes := CASE WHEN table_rows >= 1 THEN row_bytes / table_rows END;
    END IF;
    RETURN QUERY
        SELECT e.layout, e.serves, e.probe_ms, e.index_bytes, e.cost, e.chosen, table_rows, row_bytes
        FROM @extschema@.simhash_layout_estimates(table_rows, k, row_bytes) e;
END
$$;

CREATE FUNCTION simhash_band_commands(tbl regclass, col name DEFAULT 'fp',
                                      layout text DEFAULT 'auto',
                                      concurrently boolean DEFAULT true,
                                      k integer DEFAULT NULL)
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
        SELECT ARRAY[c.layout] INTO wanted
        FROM @extschema@.simhash_layout_choice(tbl, k) c WHERE c.chosen;
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

CREATE FUNCTION simhash_add_bands(tbl regclass, col name DEFAULT 'fp', layout text DEFAULT 'auto',
                                  k integer DEFAULT NULL)
    RETURNS SETOF regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    command text;
BEGIN
    FOR command IN SELECT * FROM @extschema@.simhash_band_commands(tbl, col, layout, false, k) LOOP
        EXECUTE command;
    END LOOP;
    RETURN QUERY
        SELECT DISTINCT ON (b.layout, b.part) b.index
        FROM @extschema@.simhash_band_indexes(tbl, col) b
        WHERE b.usable
        ORDER BY b.layout DESC, b.part, b.index::oid;
END
$$;

-- Verified near-duplicates: the similarity of two texts, the rule of
-- record, the explanation of a pair, and the threshold's default.
CREATE FUNCTION simhash_similarity(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_similarity_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

-- Candidate keys beside the fingerprint: MinHash-LSH of the character
-- 5-grams of the text as simhash_similarity normalizes it, 32 bands of 4
-- hashes, each band's key an integer (NULL for a text without a word
-- character). Two texts whose grams overlap by Jaccard 0.5 share a key
-- with probability 0.98, by 0.3 with 0.5: a copy the fingerprint moves
-- past distance 11 (scattered edits, a footer) is still found through a
-- GIN index on a generated column of these keys (&&), then verified.
CREATE FUNCTION simhash_lsh(text) RETURNS integer[]
    AS 'MODULE_PATHNAME', 'simhash_lsh_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

-- "Shares a candidate key": integer[] &&& integer[], for a column of
-- simhash_lsh() keys and a text's keys: at least simhash_lsh_min_shared()
-- bands with the same key at the same place, as every other path of the
-- rule compares them (a key that turns up at another band's place does
-- not count; && would count it). The planner estimates it as it does
-- equality: a band key is about unique to its row, so a text shares keys
-- with a handful of rows. && on the same arrays estimates a share of the
-- table (4% at 1M rows), which starts parallel workers and JIT for a
-- query that reads tens of rows. Both are answered by the GIN index
-- simhash_add_lsh builds (operator class simhash_lsh_ops): the index finds
-- the rows that have one of the keys anywhere, and each is rechecked with
-- the operator's own function.
CREATE FUNCTION _simhash_keys_overlap(integer[], integer[]) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_keys_share_place_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- GIN's consistent function of simhash_lsh_ops: a row with one of the
-- query's keys may match, to be rechecked (strategy 1, for &&& and &&).
CREATE FUNCTION _simhash_lsh_consistent(internal, smallint, integer[], integer, internal, internal, internal, internal)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_lsh_consistent_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR &&& (
    FUNCTION = _simhash_keys_overlap,
    LEFTARG = integer[], RIGHTARG = integer[],
    COMMUTATOR = &&&,
    RESTRICT = eqsel, JOIN = eqjoinsel
);

CREATE OPERATOR CLASS simhash_lsh_ops FOR TYPE integer[] USING gin AS
    OPERATOR 1 &&& (integer[], integer[]),
    FUNCTION 1 pg_catalog.btint4cmp(integer, integer),
    FUNCTION 2 pg_catalog.ginarrayextract(anyarray, internal, internal),
    FUNCTION 3 pg_catalog.ginqueryarrayextract(anyarray, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 _simhash_lsh_consistent(internal, smallint, integer[], integer, internal, internal, internal, internal),
    STORAGE integer;

-- The arrays' own && answers through the same index.
ALTER OPERATOR FAMILY simhash_lsh_ops USING gin ADD OPERATOR 1 pg_catalog.&& (anyarray, anyarray);

-- How many bands two arrays of candidate keys share (place by place),
-- and how many the rule asks of a candidate of the second source: a copy
-- shares several, two texts on one subject now and then one.
CREATE FUNCTION simhash_lsh_shared(a integer[], b integer[]) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_lsh_shared_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash_lsh_min_shared() RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_lsh_min_shared_wrapper'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- The Jaccard similarity of the two texts' character 5-grams (as
-- simhash_similarity normalizes them): distinct grams of both over those
-- of either.
CREATE FUNCTION simhash_jaccard(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_jaccard_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

-- The containment of the smaller set of the two texts' character 5-grams
-- in the larger: distinct grams of both over those of the text with
-- fewer (1 for a text with a footer appended, against the text).
CREATE FUNCTION simhash_containment(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_containment_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

-- The second test of a candidate that only the keys found (past k),
-- besides the similarity threshold: a 5-gram Jaccard of at least
-- simhash_lsh_min_jaccard() (0.5) or a containment of at least
-- simhash_lsh_min_containment() (0.85), both from one pass over each
-- text. Two long texts on one subject share a key now and then, and
-- contain each other's trigrams, but not each other's 5-grams; a short
-- text that a footer doubles keeps every 5-gram but not a Jaccard of 0.5.
CREATE FUNCTION simhash_lsh_match(a text, b text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_lsh_match_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

CREATE FUNCTION simhash_lsh_min_jaccard() RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_lsh_min_jaccard_wrapper'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION simhash_lsh_min_containment() RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_lsh_min_containment_wrapper'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- The column of tbl that holds simhash_lsh(text_col) (a stored generated
-- column, integer[]), or NULL when the table has none: where the rule of
-- record finds its second source of candidates (the verified guard,
-- clustering, the load and the review page look here).
CREATE FUNCTION simhash_lsh_column(tbl regclass, text_col name) RETURNS name
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN (SELECT a.attname FROM pg_catalog.pg_attribute a
              JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid
                                          AND d.adnum OPERATOR(pg_catalog.=) a.attnum
             WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attnum OPERATOR(pg_catalog.>) 0
               AND NOT a.attisdropped AND a.attgenerated OPERATOR(pg_catalog.=) 's'
               AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int4[]'::pg_catalog.regtype
               AND pg_catalog.pg_get_expr(d.adbin, d.adrelid) OPERATOR(pg_catalog.=)
                   pg_catalog.format('%s(%I)', '@extschema@.simhash_lsh(text)'::pg_catalog.regprocedure::pg_catalog.oid::pg_catalog.regproc, text_col)
             ORDER BY a.attnum LIMIT 1);

-- Adds the second source of candidates to a table, in one call: a stored
-- generated column <text_col>_lsh of simhash_lsh(text_col), and a GIN
-- index on it. Returns the column's name. A table that has them already
-- gets nothing new (the index only, when it lacks one). Adding a stored
-- column rewrites the table under an ACCESS EXCLUSIVE lock, as any
-- ALTER TABLE ... ADD COLUMN ... STORED does.
CREATE FUNCTION simhash_add_lsh(tbl regclass, text_col name DEFAULT 'body') RETURNS name
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col name;
BEGIN
    IF tbl IS NULL OR text_col IS NULL THEN
        RAISE EXCEPTION 'simhash_add_lsh: the table and the text column must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = text_col
                     AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', text_col, tbl USING ERRCODE = '42703';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = text_col
                     AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype) THEN
        RAISE EXCEPTION 'column "%" of relation % is not a text column', text_col, tbl USING ERRCODE = '42804';
    END IF;
    col := @extschema@.simhash_lsh_column(tbl, text_col);
    IF col IS NULL THEN
        -- A name's longest is 63 bytes: the text column's name cut to
        -- leave room for the suffix, on a character boundary.
        col := text_col;
        WHILE octet_length(col || '_lsh') > 63 LOOP
            col := left(col, -1);
        END LOOP;
        col := col || '_lsh';
        IF EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col
                     AND a.attnum > 0 AND NOT a.attisdropped) THEN
            RAISE EXCEPTION 'simhash_add_lsh: % already has a column "%" that is not simhash_lsh(%)', tbl, col, quote_ident(text_col)
                USING ERRCODE = '42701',
                      HINT = 'Rename that column, or make it a stored generated column of simhash_lsh() of the text.';
        END IF;
        EXECUTE format('ALTER TABLE %s ADD COLUMN %I pg_catalog.int4[] GENERATED ALWAYS AS (%s(%I)) STORED',
                       tbl, col, '@extschema@.simhash_lsh(text)'::regprocedure::oid::regproc, text_col);
    END IF;
    -- The index of the operator class simhash_lsh_ops, which answers
    -- &&& (and &&); a GIN index of another class answers && alone.
    IF NOT EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am m ON m.oid = c.relam
                     JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = col
                    WHERE i.indrelid = tbl AND m.amname = 'gin' AND i.indnatts = 1 AND i.indkey[0] = a.attnum
                      AND i.indclass[0] = (
                          SELECT o.oid FROM pg_opclass o JOIN pg_am g ON g.oid = o.opcmethod
                           WHERE o.opcname = 'simhash_lsh_ops' AND g.amname = 'gin'
                             AND o.opcnamespace = '@extschema@'::regnamespace)
                      AND i.indpred IS NULL) THEN
        EXECUTE format('CREATE INDEX ON %s USING gin (%I %s)', tbl, col, '@extschema@.simhash_lsh_ops');
    END IF;
    RETURN col;
END
$$;

CREATE FUNCTION simhash_is_near_duplicate(a text, b text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_is_near_duplicate_text_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 7000;

CREATE FUNCTION simhash_explain(a text, b text, top integer DEFAULT 10) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'simhash_explain_text_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 5000;

CREATE FUNCTION _simhash_setting_threshold() RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN coalesce(nullif(current_setting('simhash.similarity_threshold', true), '')::double precision, 0.71);

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
    -- The threshold goes into the trigger's arguments as text: with every
    -- digit, whatever the session's extra_float_digits.
    SET extra_float_digits = 3
AS $$
DECLARE
    owner oid;
    citus_table boolean := false;
    distributed boolean := false;
    unsafe_triggers text;
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
            INTO citus_table USING tbl;
        EXECUTE 'SELECT pg_catalog.count(*) > 1 FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1'
            INTO distributed USING tbl;
    END IF;
    IF distributed THEN
        RAISE EXCEPTION 'simhash_add_guard() cannot guard Citus table %', tbl
            USING ERRCODE = '0A000',
                  DETAIL = 'On a distributed table with more than one shard the guard would check one shard at a time, not the table.',
                  HINT = 'Load with simhash_insert_new(), guard a reference table, or find near-duplicates after loading with simhash_clusters().';
    END IF;
    -- Two columns whose names share their first 40 characters would get
    -- the same trigger name, and the second guard would replace the first.
    IF EXISTS (SELECT FROM pg_trigger g
                WHERE g.tgrelid = tbl AND g.tgname = guard
                  AND g.tgfoid = '@extschema@.simhash_near_unique()'::regprocedure
                  AND pg_catalog.substring(g.tgargs, 1, pg_catalog.octet_length(col::text) OPERATOR(pg_catalog.+) 1)
                      IS DISTINCT FROM pg_catalog.convert_to(col::text, pg_catalog.getdatabaseencoding()) OPERATOR(pg_catalog.||) '\x00'::bytea) THEN
        RAISE EXCEPTION 'simhash_add_guard(): the trigger "%" of % already guards another column', guard, tbl
            USING ERRCODE = '42710',
                  DETAIL = format('Its name is made of the first 40 characters of the column''s name, which %I shares.', col),
                  HINT = 'Rename one of the columns, or drop the other guard first.';
    END IF;
    -- A Citus table with one shard (a reference table, whose every node
    -- holds all rows): the triggers go onto its shards, which Citus allows
    -- only with citus.enable_unsafe_triggers, set here for this call.
    IF citus_table THEN
        unsafe_triggers := current_setting('citus.enable_unsafe_triggers', true);
        PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
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
        threshold := coalesce(threshold, @extschema@._simhash_setting_threshold());
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
    -- the band indexes: the layout 'auto' picks for the guard's k (for k
    -- above 7 the 16-bit bands, plain or covering: the halves do not probe
    -- it).
    IF NOT EXISTS (SELECT FROM unnest(@extschema@.simhash_band_layouts(tbl, col)) l
                   WHERE l = '4x16' OR k <= 7) THEN
        PERFORM @extschema@.simhash_add_bands(tbl, col, 'auto', k);
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
    IF citus_table THEN
        PERFORM set_config('citus.enable_unsafe_triggers', coalesce(unsafe_triggers, 'off'), true);
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
    -- The threshold goes into its statements as text: with every digit.
    SET extra_float_digits = 3
AS $$
DECLARE
    distributed boolean := false;
    work text;
    links text;
    cap double precision;
    lsh name;
BEGIN
    -- As a strict function: no rows for a NULL among the first five.
    IF tbl IS NULL OR fp_col IS NULL OR k IS NULL OR key_col IS NULL OR singletons IS NULL THEN
        RETURN;
    END IF;
    -- k out of range: the same 22023 on both paths, before any work.
    PERFORM @extschema@._simhash_bucket_keys(0::bigint::@extschema@.simhash64, k);
    -- The columns, named as the caller named them.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) fp_col
                     AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', fp_col, tbl USING ERRCODE = '42703';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) key_col
                     AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', key_col, tbl USING ERRCODE = '42703';
    END IF;
    IF text_col IS NULL AND threshold IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_clusters: a threshold needs the text column to verify on'
            USING ERRCODE = '22023';
    END IF;
    IF text_col IS NOT NULL THEN
        threshold := coalesce(threshold, @extschema@._simhash_setting_threshold());
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
        -- band indexes, each pair once, kept when their texts agree; a
        -- pair with a NULL text by its fingerprints alone, as the verified
        -- guard and load decide it.
        links := pg_catalog.format(
            'SELECT x.%1$I::bigint, y.%1$I::bigint
               FROM %2$s x JOIN %2$s y
                 ON y.%3$I OPERATOR(@extschema@.<~>) x.%3$I OPERATOR(pg_catalog.<=) %4$s
                AND y.%1$I::bigint OPERATOR(pg_catalog.>) x.%1$I::bigint
              WHERE x.%1$I IS NOT NULL AND x.%3$I IS NOT NULL AND y.%3$I IS NOT NULL
                AND (x.%5$I IS NULL OR y.%5$I IS NULL
                     OR @extschema@.simhash_similarity(x.%5$I, y.%5$I) OPERATOR(pg_catalog.>=) %6$s)',
            key_col, tbl, fp_col, k, text_col, threshold);
        -- The second source, when the table has it (simhash_add_lsh): the
        -- pairs that share a candidate key through its GIN index, those
        -- the fingerprint left out, verified the same way.
        lsh := @extschema@.simhash_lsh_column(tbl, text_col);
        IF lsh IS NOT NULL THEN
            links := links OPERATOR(pg_catalog.||) pg_catalog.format(
                ' UNION ALL
                 SELECT x.%1$I::bigint, y.%1$I::bigint
                   FROM %2$s x JOIN %2$s y
                     ON y.%7$I OPERATOR(pg_catalog.&&) x.%7$I
                    AND @extschema@.simhash_lsh_shared(y.%7$I, x.%7$I) OPERATOR(pg_catalog.>=) @extschema@.simhash_lsh_min_shared()
                    AND y.%1$I::bigint OPERATOR(pg_catalog.>) x.%1$I::bigint
                  WHERE x.%1$I IS NOT NULL AND x.%3$I IS NOT NULL AND y.%3$I IS NOT NULL
                    AND @extschema@.hamming(x.%3$I, y.%3$I) OPERATOR(pg_catalog.>) %4$s
                    AND @extschema@.simhash_similarity(x.%5$I, y.%5$I) OPERATOR(pg_catalog.>=) %6$s
                    AND @extschema@.simhash_lsh_match(x.%5$I, y.%5$I)',
                key_col, tbl, fp_col, k, text_col, threshold, lsh);
        END IF;
    ELSIF NOT distributed THEN
        -- In memory (about 75 bytes a row) when that fits in
        -- simhash.cluster_memory (default 1GB); else by buckets, whose
        -- grouping PostgreSQL spills to disk past work_mem.
        cap := pg_catalog.pg_size_bytes(COALESCE(NULLIF(pg_catalog.current_setting('simhash.cluster_memory', true), ''), '1GB'));
        IF @extschema@._simhash_table_rows(tbl) OPERATOR(pg_catalog.*) 75 OPERATOR(pg_catalog.<=) cap THEN
            RETURN QUERY SELECT c.id, c.cluster FROM @extschema@.simhash_clusters_query(
                pg_catalog.format('SELECT r.%I::bigint, r.%I::bigint FROM %s r WHERE r.%I IS NOT NULL', key_col, fp_col, tbl, fp_col),
                k, singletons) c;
            RETURN;
        END IF;
        links := pg_catalog.format(
            'SELECT l.id, l.cluster
               FROM (SELECT pg_catalog.array_agg(w.id) AS ids, pg_catalog.array_agg(w.fp) AS fps
                       FROM (SELECT bk.bucket AS bucket, t.%I::bigint AS id, t.%I::bigint AS fp
                               FROM %s t, LATERAL pg_catalog.unnest(@extschema@._simhash_bucket_keys(t.%I::bigint::@extschema@.simhash64, %s)) AS bk(bucket)
                              WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL) w
                      GROUP BY w.bucket HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) g,
                    LATERAL @extschema@._simhash_bucket_links(g.ids, g.fps, %s) l',
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
               FROM %s t, LATERAL pg_catalog.unnest(@extschema@._simhash_bucket_keys(t.%I::bigint::@extschema@.simhash64, %s)) AS bk(bucket)
              WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL',
            work, key_col, fp_col, tbl, fp_col, k, fp_col, key_col);
        -- Grouped by the work table's distribution column: each worker
        -- clusters its buckets and returns their links.
        links := pg_catalog.format(
            'SELECT l.id, l.cluster
               FROM (SELECT pg_catalog.array_agg(w.id) AS ids, pg_catalog.array_agg(w.fp) AS fps
                       FROM %s w GROUP BY w.bucket HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) g,
                    LATERAL @extschema@._simhash_bucket_links(g.ids, g.fps, %s) l',
            work, k);
    END IF;
    IF singletons THEN
        RETURN QUERY EXECUTE pg_catalog.format(
            'WITH c AS MATERIALIZED (SELECT j.id, j.cluster FROM @extschema@._simhash_join_links(%L) j)
             SELECT t.key, COALESCE(c.cluster, t.key)
               FROM (SELECT r.%I::bigint AS key FROM %s r WHERE r.%I IS NOT NULL AND r.%I IS NOT NULL) t
               LEFT JOIN c ON c.id OPERATOR(pg_catalog.=) t.key',
            links, key_col, tbl, fp_col, key_col);
    ELSE
        RETURN QUERY SELECT j.id, j.cluster FROM @extschema@._simhash_join_links(links) j;
    END IF;
    IF work IS NOT NULL THEN
        EXECUTE pg_catalog.format('DROP TABLE %s', work);
    END IF;
END
$$;


-- simhash_insert_new: a set-based load that skips near-duplicates.
CREATE FUNCTION _simhash_skipped_in_order(later bigint[], earlier bigint[])
    RETURNS TABLE (skipped bigint, matched bigint)
    AS 'MODULE_PATHNAME', 'simhash_skipped_in_order_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION _simhash_near_pairs(n bigint[], fp bigint[], k integer)
    RETURNS TABLE (later bigint, earlier bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_near_pairs_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;


CREATE FUNCTION _simhash_batch_skips(query text, n bigint[], key bigint[], fp bigint[], k integer)
    RETURNS TABLE (n bigint, matched bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_batch_skips_wrapper'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- The rows of a batch (n[i], fp[i]) that one-at-a-time guarded inserts
-- in the order of n would skip for an earlier kept row of the batch
-- within k, each with the first such row, found in memory without holding
-- the pairs. For simhash_insert_new.
CREATE FUNCTION _simhash_batch_order(n bigint[], fp bigint[], k integer)
    RETURNS TABLE (skipped bigint, matched bigint)
    AS 'MODULE_PATHNAME', 'simhash_batch_order_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Whether query is one statement (parsed, not run). For simhash_insert_new,
-- which splices its order_by into a statement.
CREATE FUNCTION _simhash_one_statement(query text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_one_statement_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Whether the transaction's snapshot cannot see a row version made by
-- transaction xid (a row's xmin as a number): always false under READ
-- COMMITTED. For simhash_insert_new under REPEATABLE READ and SERIALIZABLE.
CREATE FUNCTION _simhash_xid_unseen(xid bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_xid_unseen_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- Whether query returns a row when run with a snapshot taken now rather
-- than the transaction's. For simhash_insert_new under REPEATABLE READ and
-- SERIALIZABLE: the target's rows its check must see, as a unique index
-- sees them.
CREATE FUNCTION _simhash_latest_rows(query text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_latest_rows_wrapper'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

CREATE FUNCTION _simhash_load_scans(target_rows double precision, batch_rows double precision, k integer,
                                   shards integer DEFAULT 1)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_load_scans_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The steps of simhash_insert_new, in the order it runs them: internal
-- (the _simhash_ prefix), each taking what the steps before worked out,
-- which none checks again. work is the name of the load's temporary work
-- table: the batch, one row each, in the load's order (simhash_n), with
-- its fingerprint (simhash_fp), its candidate keys when the target has
-- the second source (simhash_keys), and what the load decides of it
-- (simhash_skip, simhash_match, simhash_dist; simhash_first: the first
-- row of the batch with the same fingerprint, and text when verifying).

-- 1. The arguments, checked; what the target is.
CREATE FUNCTION _simhash_load_args(target regclass, source regclass, k integer, fp_col name,
                                   key_col name, text_col name, threshold double precision,
                                   OUT citus_target boolean, OUT generated "char",
                                   OUT verify_threshold double precision, OUT lsh name)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key_type oid;
BEGIN
    citus_target := false;
    IF target IS NULL OR source IS NULL OR k IS NULL OR fp_col IS NULL THEN
        RAISE EXCEPTION 'simhash_insert_new: target, source, k and fp_col must not be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF k < 0 OR k > 11 THEN
        RAISE EXCEPTION 'simhash_insert_new: k must be from 0 to 11, not %', k USING ERRCODE = '22023';
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1)'
            INTO citus_target USING target;
    END IF;
    SELECT a.attgenerated INTO generated FROM pg_attribute a
    WHERE a.attrelid = target AND a.attname = fp_col AND a.attnum > 0 AND NOT a.attisdropped
      AND a.atttypid = '@extschema@.simhash64'::regtype;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'simhash_insert_new: % has no simhash64 column "%"', target, fp_col USING ERRCODE = '42703';
    END IF;
    -- The key only names rows in the skip report (key_col NULL: none).
    IF key_col IS NOT NULL THEN
        SELECT a.atttypid INTO key_type FROM pg_attribute a
         WHERE a.attrelid = target AND a.attname = key_col AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'simhash_insert_new: % has no key column "%"', target, key_col USING ERRCODE = '42703';
        END IF;
        IF key_type NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
            RAISE EXCEPTION 'simhash_insert_new: the key "%" of % is of type %, not an integer', key_col, target, format_type(key_type, NULL)
                USING ERRCODE = '42804',
                      HINT = 'The skip report names rows by an integer key: pass key_col => NULL to name the source''s rows by their place in the load''s order instead.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM unnest(@extschema@.simhash_band_layouts(target, fp_col)) l
                   WHERE l IN ('4x16', '4x16c') OR (l = '2x32' AND k <= 7)) THEN
        RAISE EXCEPTION 'simhash_insert_new: % has no band indexes on "%" that serve k = %', target, fp_col, k
            USING ERRCODE = '55000',
                  HINT = format('Run SELECT simhash_add_bands(%L, %L) first.', target::text, fp_col);
    END IF;
    IF text_col IS NULL AND threshold IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_insert_new: a threshold needs the text column to verify on' USING ERRCODE = '22023';
    END IF;
    IF text_col IS NOT NULL THEN
        IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = target AND a.attname = text_col
                         AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype) THEN
            RAISE EXCEPTION 'simhash_insert_new: % has no text column "%"', target, text_col USING ERRCODE = '42804';
        END IF;
        verify_threshold := coalesce(threshold, @extschema@._simhash_setting_threshold());
        IF verify_threshold = 'NaN'::double precision OR verify_threshold < 0 OR verify_threshold > 1 THEN
            RAISE EXCEPTION 'simhash_insert_new: the similarity threshold must be from 0 to 1, not %', verify_threshold
                USING ERRCODE = '22023';
        END IF;
        -- The second source, when the target has it (simhash_add_lsh).
        lsh := @extschema@.simhash_lsh_column(target, text_col);
    END IF;
    IF source = target THEN
        RAISE EXCEPTION 'simhash_insert_new: the source is the target' USING ERRCODE = '22023';
    END IF;
END
$$;

-- 2. The conditions the searches share, as SQL over a target row t and a
-- batch row s2 (x and y: two batch rows). cand_ts: t is a candidate
-- within k. lsh_ts (with the second source): t shares a key with s2 and
-- is past k (within k the fingerprint has found it), with the 5-gram
-- Jaccard; searched apart (UNION ALL), so that the rows the band indexes
-- return are not tested for shared keys one by one. verify_ts and
-- verify_xy (when verifying): similar enough, or a NULL text on either
-- side, which counts by its fingerprint alone, as the verified guard
-- counts it. The threshold goes in as text with every digit.
CREATE FUNCTION _simhash_load_conditions(k integer, fp_col name, text_col name,
                                         threshold double precision, lsh name,
                                         OUT cand_ts text, OUT lsh_ts text,
                                         OUT verify_ts text, OUT verify_xy text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET extra_float_digits = 3
AS $$
BEGIN
    cand_ts := format('t.%1$I OPERATOR(@extschema@.<~>) s2.simhash_fp OPERATOR(pg_catalog.<=) %2$s', fp_col, k);
    verify_ts := '';
    verify_xy := '';
    IF text_col IS NOT NULL THEN
        verify_ts := format(' AND (t.%1$I IS NULL OR s2.%1$I IS NULL OR @extschema@.simhash_similarity(t.%1$I, s2.%1$I) OPERATOR(pg_catalog.>=) %2$L::pg_catalog.float8)',
                            text_col, threshold);
        verify_xy := format(' AND (x.%1$I IS NULL OR y.%1$I IS NULL OR @extschema@.simhash_similarity(x.%1$I, y.%1$I) OPERATOR(pg_catalog.>=) %2$L::pg_catalog.float8)',
                            text_col, threshold);
    END IF;
    IF lsh IS NOT NULL THEN
        lsh_ts := format('t.%1$I OPERATOR(pg_catalog.&&) s2.simhash_keys AND s2.simhash_fp IS NOT NULL
                          AND @extschema@.simhash_lsh_shared(t.%1$I, s2.simhash_keys) OPERATOR(pg_catalog.>=) @extschema@.simhash_lsh_min_shared()
                          AND @extschema@.hamming(t.%2$I, s2.simhash_fp) OPERATOR(pg_catalog.>) %3$s
                          AND t.%4$I IS NOT NULL AND s2.%4$I IS NOT NULL
                          AND @extschema@.simhash_lsh_match(t.%4$I, s2.%4$I)',
                         lsh, fp_col, k, text_col);
    END IF;
END
$$;

-- 3. The target locked, and the work table made from the source: each
-- row's fingerprint is the target's generation expression over the
-- source's columns, or the source's own column.
CREATE FUNCTION _simhash_load_batch(target regclass, source regclass, work text, order_by text,
                                    fp_col name, generated "char", keys_expr text)
    RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fp_expr text;
    ctas text;
    batch_rows bigint;
BEGIN
    BEGIN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', target);
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE EXCEPTION '%', SQLERRM USING ERRCODE = '42501',
            HINT = 'simhash_insert_new locks the target in SHARE ROW EXCLUSIVE mode, which needs UPDATE, DELETE or TRUNCATE on it besides INSERT and SELECT.';
    END;
    IF generated = 's' THEN
        SELECT pg_get_expr(d.adbin, d.adrelid) INTO fp_expr FROM pg_attrdef d JOIN pg_attribute a
            ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE d.adrelid = target AND a.attname = fp_col;
    ELSE
        fp_expr := format('s.%I', fp_col);
    END IF;
    IF to_regclass('pg_temp.' || quote_ident(work)) IS NOT NULL THEN
        EXECUTE format('DROP TABLE pg_temp.%I', work);  -- left by a call that failed
    END IF;
    IF to_regclass('pg_temp.' || quote_ident(work || '_m')) IS NOT NULL THEN
        EXECUTE format('DROP TABLE pg_temp.%I', work || '_m');
    END IF;
    BEGIN
        -- Stored in the batch's order (simhash_n), which the final insert
        -- keeps. simhash_first is set by the search: exact copies are
        -- settled by their first row, not paired (m copies in one batch
        -- would make m * m / 2 pairs).
        ctas := format('CREATE TEMP TABLE %I AS SELECT q.*, q.simhash_n AS simhash_first '
                       'FROM (SELECT pg_catalog.row_number() OVER (ORDER BY %s) AS simhash_n, s.*, '
                       '(%s)::@extschema@.simhash64 AS simhash_fp, false AS simhash_skip, NULL::bigint AS simhash_match, '
                       'NULL::integer AS simhash_dist, %s AS simhash_keys FROM (%s) s) q',
                       work, coalesce(order_by, '(SELECT 1)'), fp_expr, keys_expr, format('SELECT * FROM %s', source));
        -- order_by is SQL text (an expression list over the source's
        -- columns): it must not close the statement and start another,
        -- whoever chose it.
        IF NOT @extschema@._simhash_one_statement(ctas) THEN
            RAISE EXCEPTION 'simhash_insert_new: order_by must be a sort list, not statements: %', order_by
                USING ERRCODE = '42601',
                      HINT = 'Pass an expression list over the source''s columns, such as ''crawled_at DESC, id''.';
        END IF;
        EXECUTE ctas;
        GET DIAGNOSTICS batch_rows = ROW_COUNT;
    EXCEPTION WHEN undefined_column OR datatype_mismatch OR cannot_coerce THEN
        RAISE EXCEPTION 'simhash_insert_new: the source does not fit %: %', target, SQLERRM
            USING ERRCODE = '42804',
                  HINT = 'The source must return the columns the target''s fingerprint is computed from, with their names.';
    END;
    RETURN batch_rows;
END
$$;

-- 4. What the work table gives the target (cols: the columns the insert
-- fills, identity columns left to their defaults) and how rows are named
-- in the report: bkey, a batch row's key, or its place in the load's
-- order when the source has no key column (a target keyed by an identity
-- column or a sequence, whose staging table has no ids); tkey, a target
-- row's key, NULL without key_col. Then the work table's index and
-- statistics.
CREATE FUNCTION _simhash_load_shape(target regclass, work text, key_col name, text_col name,
                                    OUT cols text, OUT bkey text, OUT tkey text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src_key boolean;
BEGIN
    EXECUTE format('SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), '', '' ORDER BY a.attnum)
                      FROM pg_attribute a JOIN pg_attribute w ON w.attrelid = %L::regclass AND w.attname = a.attname
                     WHERE a.attrelid = %L::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''''
                       AND a.attidentity OPERATOR(pg_catalog.<>) ''a''
                       AND NOT a.attname IN (''simhash_n'', ''simhash_fp'', ''simhash_skip'', ''simhash_match'', ''simhash_dist'', ''simhash_first'', ''simhash_keys'')',
                   'pg_temp.' || quote_ident(work), target) INTO cols;
    IF cols IS NULL THEN
        RAISE EXCEPTION 'simhash_insert_new: the source has no column of %', target
            USING ERRCODE = '42804';
    END IF;
    src_key := key_col IS NOT NULL AND EXISTS (
        SELECT FROM pg_attribute w WHERE w.attrelid = ('pg_temp.' || quote_ident(work))::regclass
                                     AND w.attname = key_col AND w.attnum > 0 AND NOT w.attisdropped);
    bkey := CASE WHEN src_key THEN format('%I::pg_catalog.int8', key_col) ELSE 'simhash_n' END;
    tkey := CASE WHEN key_col IS NULL THEN 'NULL::pg_catalog.int8' ELSE format('t.%I::pg_catalog.int8', key_col) END;
    -- The work table's index, before any of its rows is updated: an
    -- index made after an update in the same transaction would be of no
    -- use to it (PostgreSQL's indcheckxmin).
    EXECUTE format('CREATE UNIQUE INDEX ON pg_temp.%I (simhash_n)', work);
    IF text_col IS NOT NULL AND NOT EXISTS (
            SELECT FROM pg_attribute a WHERE a.attrelid = ('pg_temp.' || quote_ident(work))::regclass
                                         AND a.attname = text_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'simhash_insert_new: the source does not fit %: column "%" does not exist', target, text_col
            USING ERRCODE = '42804',
                  HINT = 'The source must return the text column to verify on, with its name.';
    END IF;
    EXECUTE format('ANALYZE pg_temp.%I', work);
END
$$;

-- 5. Whether an unverified load reads the target once against the batch
-- held in memory (true) or probes its band indexes: as
-- simhash.load_check says, or ('auto') whichever the estimate finds
-- cheaper; a table never analyzed (reltuples -1) is probed.
CREATE FUNCTION _simhash_load_reads_target(target regclass, k integer, citus_target boolean, batch_rows bigint)
    RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    check_mode text := coalesce(lower(current_setting('simhash.load_check', true)), 'auto');
    target_rows double precision;
    shards integer := 1;
BEGIN
    IF check_mode <> 'auto' THEN
        RETURN check_mode = 'scan';
    END IF;
    IF citus_target THEN
        -- The rows of every shard, as its node's statistics have them; a
        -- shard never analyzed makes the sum unknown. Citus puts each
        -- shard's name into the command with format(), so %L makes it a
        -- quoted literal, whatever the name holds.
        EXECUTE 'SELECT pg_catalog.count(*)::integer,
                        CASE WHEN pg_catalog.bool_and(x OPERATOR(pg_catalog.>=) 0) THEN pg_catalog.sum(x) ELSE -1 END
                   FROM (SELECT CASE WHEN r.success THEN r.result::pg_catalog.float8 ELSE -1 END AS x
                           FROM pg_catalog.run_command_on_shards($1,
                                $c$SELECT reltuples FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) %L::pg_catalog.regclass$c$) r) s'
            INTO shards, target_rows USING target;
    ELSE
        SELECT c.reltuples INTO target_rows FROM pg_class c WHERE c.oid = target;
    END IF;
    RETURN target_rows OPERATOR(pg_catalog.>=) 0
           AND @extschema@._simhash_load_scans(target_rows, batch_rows, k, shards);
END
$$;

-- 6a. Read once: the whole batch settled in memory in one pass (its
-- copies, its check against the target, its pairs, their order), and only
-- the rows skipped written back.
CREATE FUNCTION _simhash_load_read_once(target regclass, work text, k integer, fp_col name,
                                        bkey text, tkey text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE format('UPDATE pg_temp.%1$I s SET simhash_skip = true, simhash_match = m.matched, simhash_dist = m.distance
                      FROM (SELECT pg_catalog.array_agg(simhash_n) AS ns, pg_catalog.array_agg(%4$s) AS keys,
                                   pg_catalog.array_agg(simhash_fp::pg_catalog.int8) AS fps
                              FROM pg_temp.%1$I WHERE simhash_fp IS NOT NULL) a,
                           LATERAL @extschema@._simhash_batch_skips(%2$L, a.ns, a.keys, a.fps, %3$s) m
                     WHERE s.simhash_n OPERATOR(pg_catalog.=) m.n',
                   work, format('SELECT %s, t.%I FROM %s t', tkey, fp_col, target), k, bkey);
END
$$;

-- 6b. Probed: the batch's exact copies found, then each first copy
-- looked up in the target's band indexes (and, with the second source,
-- its GIN index of keys), verified when asked; the smallest key matched
-- (NULL last) is the one reported, as a read-once load reports it.
CREATE FUNCTION _simhash_load_probe(target regclass, work text, fp_col name, text_col name,
                                    citus_target boolean, tkey text,
                                    cand_ts text, lsh_ts text, verify_ts text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The copies, by a sort of (simhash_n, fingerprint[, text]) only: the
    -- wide rows stay where they are, in the batch's order.
    EXECUTE format('UPDATE pg_temp.%1$I s SET simhash_first = f.first
                      FROM (SELECT simhash_n, pg_catalog.min(simhash_n) OVER (PARTITION BY simhash_fp%2$s) AS first
                              FROM pg_temp.%1$I WHERE simhash_fp IS NOT NULL) f
                     WHERE s.simhash_n OPERATOR(pg_catalog.=) f.simhash_n AND f.first OPERATOR(pg_catalog.<>) f.simhash_n',
                   work, CASE WHEN text_col IS NOT NULL THEN format(', %I', text_col) ELSE '' END);
    IF NOT citus_target THEN
        -- OFFSET 0 keeps the sort out of the search: else the planner may
        -- walk the key's index in order, filtering every row.
        EXECUTE format('UPDATE pg_temp.%1$I s SET simhash_skip = true, simhash_match = m.key, simhash_dist = m.dist
                          FROM (SELECT s2.simhash_n, t.key, (t.fp OPERATOR(@extschema@.<~>) s2.simhash_fp) AS dist
                                  FROM pg_temp.%1$I s2, LATERAL (SELECT c.key, c.fp FROM ((SELECT %2$s AS key, t.%3$I AS fp FROM %4$s t
                                       WHERE %6$s %5$s OFFSET 0) %7$s) c
                                       ORDER BY 1 NULLS LAST LIMIT 1) t
                                 WHERE s2.simhash_first OPERATOR(pg_catalog.=) s2.simhash_n) m
                         WHERE s.simhash_n = m.simhash_n',
                       work, tkey, fp_col, target, verify_ts, cand_ts,
                       CASE WHEN lsh_ts IS NULL THEN ''
                            ELSE format('UNION ALL (SELECT %s, t.%I FROM %s t WHERE %s %s)', tkey, fp_col, target, lsh_ts, verify_ts) END);
        RETURN;
    END IF;
    -- A Citus table: Citus sends the work table's fingerprints (and texts
    -- when verifying, nothing else) to every worker, each joins them with
    -- its shards through their band indexes (and verifies there), and the
    -- matches come back. They go into a table of their own first: Citus
    -- plans a join of the temporary work table with a reference table in
    -- a SELECT, not in an UPDATE ("relation ... is not distributed").
    EXECUTE format('CREATE TEMP TABLE %7$I AS SELECT DISTINCT ON (c.simhash_n) c.simhash_n, c.key, c.dist
                              FROM (SELECT s2.simhash_n, %2$s AS key, (t.%3$I OPERATOR(@extschema@.<~>) s2.simhash_fp) AS dist
                                      FROM %4$s t JOIN (SELECT simhash_n, simhash_fp, simhash_keys %6$s FROM pg_temp.%1$I
                                                         WHERE simhash_first OPERATOR(pg_catalog.=) simhash_n) s2
                                        ON %8$s %5$s) c
                             ORDER BY c.simhash_n, c.key',
                   work, tkey, fp_col, target, verify_ts,
                   CASE WHEN text_col IS NOT NULL THEN format(', %I', text_col) ELSE '' END,
                   work || '_m',
                   CASE WHEN lsh_ts IS NULL THEN cand_ts ELSE format('(%s OR (%s))', cand_ts, lsh_ts) END);
    EXECUTE format('UPDATE pg_temp.%1$I s SET simhash_skip = true, simhash_match = m.key, simhash_dist = m.dist
                      FROM pg_temp.%2$I m WHERE s.simhash_n = m.simhash_n', work, work || '_m');
    EXECUTE format('DROP TABLE pg_temp.%I', work || '_m');
END
$$;

-- 7a. The batch's pairs that share a key of the second source (same band)
-- and are past k (within k the fingerprint's pairs hold them), with the
-- 5-gram Jaccard, among the first copies the target left: SQL to add to
-- the pairs by UNION. The similarity is verified with every pair's.
CREATE FUNCTION _simhash_load_key_pairs(work text, k integer, text_col name)
    RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.format(' UNION SELECT kp.later, kp.earlier
      FROM (SELECT b.simhash_n AS later, a.simhash_n AS earlier
              FROM (SELECT w.simhash_n, u.key, u.band FROM pg_temp.%1$I w,
                           pg_catalog.unnest(w.simhash_keys) WITH ORDINALITY u(key, band)
                     WHERE w.simhash_first OPERATOR(pg_catalog.=) w.simhash_n AND NOT w.simhash_skip
                       AND w.simhash_fp IS NOT NULL) a
              JOIN (SELECT w.simhash_n, u.key, u.band FROM pg_temp.%1$I w,
                           pg_catalog.unnest(w.simhash_keys) WITH ORDINALITY u(key, band)
                     WHERE w.simhash_first OPERATOR(pg_catalog.=) w.simhash_n AND NOT w.simhash_skip
                       AND w.simhash_fp IS NOT NULL) b
                ON b.key OPERATOR(pg_catalog.=) a.key AND b.band OPERATOR(pg_catalog.=) a.band
               AND b.simhash_n OPERATOR(pg_catalog.>) a.simhash_n
             GROUP BY b.simhash_n, a.simhash_n
            HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>=) @extschema@.simhash_lsh_min_shared()) kp
      JOIN pg_temp.%1$I kx ON kx.simhash_n OPERATOR(pg_catalog.=) kp.earlier
      JOIN pg_temp.%1$I ky ON ky.simhash_n OPERATOR(pg_catalog.=) kp.later
     WHERE @extschema@.hamming(kx.simhash_fp, ky.simhash_fp) OPERATOR(pg_catalog.>) %2$s
       AND kx.%3$I IS NOT NULL AND ky.%3$I IS NOT NULL
       AND @extschema@.simhash_lsh_match(kx.%3$I, ky.%3$I)',
    work, k, text_col);

-- 7b. Within k of an earlier kept row of the batch: the pairs within k
-- among the first copies the target left, in order, each row with an
-- earlier neighbour that was kept skipped. Unverified, the order rule is
-- settled without holding the pairs (_simhash_batch_order); verified, the
-- pairs (_simhash_near_pairs, and those of the keys) are held, at most
-- simhash.load_memory, to be verified on their texts
-- (_simhash_skipped_in_order). Then each later copy: skipped for its
-- first copy when that was kept, else for what the first copy matched.
CREATE FUNCTION _simhash_load_within_batch(work text, k integer, text_col name, lsh name,
                                           bkey text, verify_xy text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    verify_pairs text := '';
    lsh_pairs text := '';
BEGIN
    IF lsh IS NOT NULL THEN
        lsh_pairs := @extschema@._simhash_load_key_pairs(work, k, text_col);
    END IF;
    IF text_col IS NOT NULL THEN
        verify_pairs := format(' JOIN pg_temp.%1$I x ON x.simhash_n OPERATOR(pg_catalog.=) p.earlier
                                 JOIN pg_temp.%1$I y ON y.simhash_n OPERATOR(pg_catalog.=) p.later
                                WHERE true %2$s', work, verify_xy);
    END IF;
    EXECUTE format(
        'UPDATE pg_temp.%1$I s SET simhash_skip = true, simhash_match = m.%2$s,
                simhash_dist = (m.simhash_fp OPERATOR(@extschema@.<~>) s.simhash_fp)
           FROM (SELECT r.skipped, r.matched
                   FROM (SELECT pg_catalog.array_agg(simhash_n) AS ns, pg_catalog.array_agg(simhash_fp::pg_catalog.int8) AS fps
                           FROM pg_temp.%1$I
                          WHERE simhash_first OPERATOR(pg_catalog.=) simhash_n AND NOT simhash_skip) a, %3$s) r,
                pg_temp.%1$I m
          WHERE s.simhash_n OPERATOR(pg_catalog.=) r.skipped AND m.simhash_n OPERATOR(pg_catalog.=) r.matched',
        work, bkey,
        CASE WHEN text_col IS NULL
             THEN format('LATERAL @extschema@._simhash_batch_order(a.ns, a.fps, %s) r', k)
             ELSE format('LATERAL (SELECT pg_catalog.array_agg(p.later) AS later, pg_catalog.array_agg(p.earlier) AS earlier
                                     FROM (SELECT np.later, np.earlier FROM @extschema@._simhash_near_pairs(a.ns, a.fps, %s) np %s) p %s) q,
                          LATERAL @extschema@._simhash_skipped_in_order(q.later, q.earlier) r', k, lsh_pairs, verify_pairs) END);
    EXECUTE format('UPDATE pg_temp.%1$I s SET simhash_skip = true,
                           simhash_match = CASE WHEN f.simhash_skip THEN f.simhash_match ELSE f.%2$s END,
                           simhash_dist = CASE WHEN f.simhash_skip THEN f.simhash_dist ELSE 0 END
                      FROM pg_temp.%1$I f
                     WHERE f.simhash_n OPERATOR(pg_catalog.=) s.simhash_first
                       AND s.simhash_first OPERATOR(pg_catalog.<>) s.simhash_n',
                   work, bkey);
END
$$;

-- 8. Under REPEATABLE READ and SERIALIZABLE the searches saw the target as
-- the transaction's snapshot shows it, which may be older than the lock: a
-- row committed since (by a load or an insert this one waited for) is not
-- in it. Such a row within k of the batch is looked for with a snapshot
-- taken now, and the load fails with 40001, as an insert into a unique
-- index fails against a row its snapshot cannot see: retry the
-- transaction. (Citus: each worker's snapshot is its own; not checked.)
CREATE FUNCTION _simhash_load_unseen(target regclass, work text, k integer,
                                     cand_ts text, lsh_ts text, verify_ts text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF @extschema@._simhash_latest_rows(format(
           'SELECT FROM pg_temp.%1$I s2, LATERAL (SELECT FROM ((SELECT FROM %2$s t
               WHERE %3$s
                 AND @extschema@._simhash_xid_unseen(t.xmin::pg_catalog.text::pg_catalog.int8) %4$s OFFSET 0) %5$s) c LIMIT 1) t
             WHERE s2.simhash_fp IS NOT NULL LIMIT 1',
           work, target, cand_ts, verify_ts,
           CASE WHEN lsh_ts IS NULL THEN ''
                ELSE format('UNION ALL (SELECT FROM %s t WHERE %s AND @extschema@._simhash_xid_unseen(t.xmin::pg_catalog.text::pg_catalog.int8) %s)',
                            target, lsh_ts, verify_ts) END)) THEN
        RAISE EXCEPTION 'could not serialize access due to concurrent update'
            USING ERRCODE = '40001',
                  DETAIL = format('simhash_insert_new: a row of %s within distance %s of the batch was committed after this transaction''s snapshot was taken.', target, k),
                  HINT = 'Retry the transaction, or load under READ COMMITTED, where the load checks what is committed when it holds the lock.';
    END IF;
END
$$;

-- 9. The rows kept, inserted in the load's order with the caller's
-- search_path, as a plain INSERT would run: the target's triggers find
-- what they name as they do there (the statement names nothing itself:
-- tables qualified, no functions or operators). A BEFORE INSERT row
-- trigger other than the guard may change a row after the check: then
-- the stored fingerprints (and texts, when verifying: a trigger could
-- rewrite the text and keep a fingerprint the application wrote) are
-- compared with the ones checked, and the load fails whole. Returns the
-- rows inserted.
CREATE FUNCTION _simhash_load_insert(target regclass, work text, cols text, fp_col name,
                                     text_col name, caller_path text)
    RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    triggered boolean;
    n_in bigint;
    n_changed bigint := 0;
BEGIN
    triggered := EXISTS (SELECT FROM pg_trigger g
               WHERE (g.tgrelid = target OR g.tgrelid IN (SELECT p.relid FROM pg_partition_tree(target) p))
                 AND NOT g.tgisinternal AND g.tgenabled <> 'D'
                 AND g.tgtype::integer & 7 = 7
                 AND g.tgfoid <> '@extschema@.simhash_near_unique()'::regprocedure);
    PERFORM set_config('search_path', caller_path, true);
    IF triggered THEN
        EXECUTE pg_catalog.format('WITH ins AS (INSERT INTO %1$s (%2$s) SELECT %2$s FROM pg_temp.%3$I WHERE NOT simhash_skip
                                     ORDER BY simhash_n RETURNING %4$I%5$s)
                        SELECT (SELECT pg_catalog.count(*) FROM ins),
                               (SELECT pg_catalog.count(*) FROM (SELECT %4$I%5$s FROM ins
                                                        EXCEPT ALL SELECT simhash_fp%5$s FROM pg_temp.%3$I WHERE NOT simhash_skip) x)',
                       target, cols, work, fp_col,
                       CASE WHEN text_col IS NULL THEN '' ELSE pg_catalog.format(', %I', text_col) END) INTO n_in, n_changed;
    ELSE
        EXECUTE pg_catalog.format('INSERT INTO %s (%s) SELECT %s FROM pg_temp.%I WHERE NOT simhash_skip ORDER BY simhash_n',
                                  target, cols, cols, work);
        GET DIAGNOSTICS n_in = ROW_COUNT;
    END IF;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF n_changed > 0 THEN
        RAISE EXCEPTION 'simhash_insert_new: a trigger on % changed the fingerprint or the text of % rows after they were checked', target, n_changed
            USING ERRCODE = '55000',
                  HINT = 'The load checks the rows as the source gives them; load through a staging step that applies the change first, or disable that trigger for the load.';
    END IF;
    RETURN n_in;
END
$$;

-- 10. The rows skipped: counted, and written to skipped_into (with the
-- caller's search_path too: its triggers find what they name as under a
-- plain INSERT); then the work table goes. Returns the rows skipped.
CREATE FUNCTION _simhash_load_report(work text, skipped_into regclass, bkey text, caller_path text)
    RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n_skip bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM pg_temp.%I WHERE simhash_skip', work) INTO n_skip;
    IF skipped_into IS NOT NULL THEN
        PERFORM set_config('search_path', caller_path, true);
        EXECUTE pg_catalog.format('INSERT INTO %s (skipped, matched, distance) SELECT %s, simhash_match, simhash_dist
                          FROM pg_temp.%I WHERE simhash_skip ORDER BY simhash_n', skipped_into, bkey, work);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;
    EXECUTE format('DROP TABLE pg_temp.%I', work);
    RETURN n_skip;
END
$$;

CREATE FUNCTION simhash_insert_new(target regclass, source regclass, k integer DEFAULT 3,
                                   order_by text DEFAULT NULL, fp_col name DEFAULT 'fp',
                                   key_col name DEFAULT 'id', skipped_into regclass DEFAULT NULL,
                                   text_col name DEFAULT NULL, threshold double precision DEFAULT NULL)
    RETURNS TABLE (inserted bigint, skipped bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    -- Its search_path is pinned by its first statement rather than by a
    -- SET clause, so that it can hand the caller's to the steps that
    -- insert (9, 10).
    -- JIT compiles each of its statements for longer than they run (0.17 s
    -- of 2.0 s in bench/insert_new.sh).
    SET jit = off
    -- The threshold goes into its statements as text: with every digit.
    SET extra_float_digits = 3
AS $$
DECLARE
    caller_path text := pg_catalog.current_setting('search_path');
    work text := 'simhash_insert_new_' OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid();
    a record;  -- the arguments, checked (1)
    c record;  -- the conditions of the searches (2)
    s record;  -- the work table's shape (4)
    batch_rows bigint;
    read_once boolean := false;
    n_in bigint;
    n_skip bigint;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    SELECT * INTO a FROM @extschema@._simhash_load_args(target, source, k, fp_col, key_col, text_col, threshold);
    SELECT * INTO c FROM @extschema@._simhash_load_conditions(k, fp_col, text_col, a.verify_threshold, a.lsh);
    batch_rows := @extschema@._simhash_load_batch(target, source, work, order_by, fp_col, a.generated,
        CASE WHEN a.lsh IS NULL THEN 'NULL::pg_catalog.int4[]'
             ELSE format('@extschema@.simhash_lsh(s.%I)', text_col) END);
    SELECT * INTO s FROM @extschema@._simhash_load_shape(target, work, key_col, text_col);
    -- Against the target (the first of each set of copies only), then
    -- within the batch; a verified load always probes.
    IF text_col IS NULL THEN
        read_once := @extschema@._simhash_load_reads_target(target, k, a.citus_target, batch_rows);
    END IF;
    IF read_once THEN
        PERFORM @extschema@._simhash_load_read_once(target, work, k, fp_col, s.bkey, s.tkey);
    ELSE
        PERFORM @extschema@._simhash_load_probe(target, work, fp_col, text_col, a.citus_target, s.tkey,
                                                c.cand_ts, c.lsh_ts, c.verify_ts);
        PERFORM @extschema@._simhash_load_within_batch(work, k, text_col, a.lsh, s.bkey, c.verify_xy);
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed'
       AND NOT a.citus_target THEN
        PERFORM @extschema@._simhash_load_unseen(target, work, k, c.cand_ts, c.lsh_ts, c.verify_ts);
    END IF;
    n_in := @extschema@._simhash_load_insert(target, work, s.cols, fp_col, text_col, caller_path);
    n_skip := @extschema@._simhash_load_report(work, skipped_into, s.bkey, caller_path);
    PERFORM pg_catalog.set_config('search_path', caller_path, true);
    RETURN QUERY SELECT n_in, n_skip;
END
$$;


---------------------------------------------------------------------------
-- Reviewing a table: simhash_review(tbl, fp_col, text_col) returns one
-- self-contained HTML page (inline CSS and SVG, no script, nothing fetched)
-- to choose k and the similarity threshold on the table's own data:
--   psql -Atc "SELECT simhash_review('docs', 'fp', 'body')" > review.html
--
-- It takes the first `sample` rows by key_col that have a key, a
-- fingerprint and a text, finds each one's neighbours within k (default
-- simhash.verify_k) through the band indexes, each pair once and at most
-- the 100 nearest per sampled row, and computes their simhash_similarity.
-- The page shows the settings in force and the rule of record, histograms
-- of the pairs' distances and similarities, a table of the pairs and of
-- those at or above the threshold per distance, and up to per_distance
-- pairs at each distance (those nearest the threshold first) side by side,
-- with the stretches each text has that the other lacks marked
-- (simhash_explain). Every text from the table is HTML-escaped; a text
-- longer than 2,000 characters is cut there, saying so.
--
-- It runs as the caller (not SECURITY DEFINER): the caller needs SELECT on
-- the three columns, and row-level security applies. The work grows with
-- the pairs found: at most sample * 100 similarities and 12 * per_distance
-- explanations.
---------------------------------------------------------------------------
--
-- simhash_review, at the end, is a sequence of the steps below, internal
-- functions (_simhash_review_*, each one screen): the arguments and the
-- table checked, the pairs sampled and summed up in one query, then the
-- page, part by part.

-- Text made safe to put in HTML: & < > " ' as entities.
CREATE FUNCTION _simhash_review_escape(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
           t, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&#39;');

-- 1. The arguments, checked; k (NULL: simhash.verify_k) returned.
CREATE FUNCTION _simhash_review_args(tbl regclass, fp_col name, text_col name, key_col name,
                                     k integer, sample integer, per_distance integer, verify_k integer)
    RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF tbl IS NULL OR fp_col IS NULL OR text_col IS NULL OR key_col IS NULL
       OR sample IS NULL OR per_distance IS NULL THEN
        RAISE EXCEPTION 'simhash_review() needs a table and its fingerprint, text and key columns, and sample and per_distance'
            USING ERRCODE = '22004',
                  HINT = 'Only k may be NULL (it then defaults to simhash.verify_k).';
    END IF;
    k := coalesce(k, verify_k);
    IF k < 0 OR k > 11 THEN
        RAISE EXCEPTION 'simhash_review() distance must be an integer from 0 to 11, not %', k
            USING ERRCODE = '22023',
                  HINT = 'The band indexes answer distances up to 11; leave k NULL for simhash.verify_k.';
    END IF;
    IF sample < 1 THEN
        RAISE EXCEPTION 'simhash_review() sample must be at least 1, not %', sample
            USING ERRCODE = '22023', HINT = 'sample is how many rows (by key) look for their neighbours.';
    END IF;
    IF per_distance < 1 THEN
        RAISE EXCEPTION 'simhash_review() per_distance must be at least 1, not %', per_distance
            USING ERRCODE = '22023', HINT = 'per_distance is how many pairs the page shows at each distance.';
    END IF;
    RETURN k;
END
$$;

-- 2. The relation, and its fingerprint and text columns, checked.
CREATE FUNCTION _simhash_review_table(tbl regclass, fp_col name, text_col name)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    distributed boolean := false;
    relkind "char";
    fp_type oid;
    text_type oid;
BEGIN
    SELECT c.relkind INTO relkind FROM pg_class c WHERE c.oid = tbl;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', tbl::oid
            USING ERRCODE = '42P01';
    END IF;
    IF relkind NOT IN ('r', 'p', 'v', 'm', 'f') THEN
        RAISE EXCEPTION '"%" is not a table, view, materialized view or foreign table', tbl
            USING ERRCODE = '42809';
    END IF;
    -- A Citus distributed table: its rows' neighbours are on other shards,
    -- a join Citus does not run as it is.
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1 AND partmethod = ''h'')'
            INTO distributed USING tbl;
        IF distributed THEN
            RAISE EXCEPTION 'simhash_review() cannot review distributed table %', tbl
                USING ERRCODE = '0A000',
                      HINT = 'Review a local copy of a sample: CREATE TABLE sample AS SELECT * FROM the table TABLESAMPLE SYSTEM (1), with its band indexes.';
        END IF;
    END IF;
    SELECT a.atttypid INTO fp_type FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = fp_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', fp_col, tbl
            USING ERRCODE = '42703', HINT = 'fp_col is the column of fingerprints (simhash64).';
    END IF;
    IF fp_type <> '@extschema@.simhash64'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is of type %, not simhash64', fp_col, tbl, format_type(fp_type, NULL)
            USING ERRCODE = '42804', HINT = 'fp_col is the column of fingerprints, simhash(text_col).';
    END IF;
    SELECT a.atttypid INTO text_type FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = text_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', text_col, tbl
            USING ERRCODE = '42703', HINT = 'text_col is the column of the texts the fingerprints were made of.';
    END IF;
    IF text_type <> 'text'::regtype THEN
        RAISE EXCEPTION 'column "%" of relation % is of type %, not text', text_col, tbl, format_type(text_type, NULL)
            USING ERRCODE = '42804', HINT = 'Review a view that casts the column to text.';
    END IF;
END
$$;

-- 3. The key column, checked. Pairs are told apart by key: a key shared
-- by two rows would count a pair twice, or not at all. A unique index on
-- the key alone says it is unique; anything else (a view, a table without
-- one) is checked.
CREATE FUNCTION _simhash_review_key(tbl regclass, key_col name)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shared_key boolean;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = key_col
                                              AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', key_col, tbl
            USING ERRCODE = '42703', HINT = 'key_col (default ''id'') names the rows on the page and orders the sample.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attname = key_col
                    WHERE i.indrelid = tbl AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1
                      AND i.indkey[0] = a.attnum AND i.indpred IS NULL AND i.indexprs IS NULL) THEN
        EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %1$s t WHERE t.%2$I IS NOT NULL
                                    GROUP BY t.%2$I HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1)', tbl, key_col)
            INTO shared_key;
        IF shared_key THEN
            RAISE EXCEPTION 'simhash_review: column "%" of relation % has a value shared by more than one row', key_col, tbl
                USING ERRCODE = '42P10',
                      HINT = 'key_col names each row on the page, so it must be unique: review a view that adds one (row_number() OVER ()).';
        END IF;
    END IF;
END
$$;

-- 4. With the second source, each sampled row's neighbours past k that
-- share a candidate key are pairs too (found through the GIN index),
-- shown apart: "found by shared keys". This arm of the query of step 5
-- ('' without the second source).
CREATE FUNCTION _simhash_review_lsh_arm(tbl regclass, key_col name, fp_col name, text_col name,
                                        lsh name, k integer, cap integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF lsh IS NULL THEN
        RETURN '';
    END IF;
    RETURN pg_catalog.format($q$
        UNION ALL
        SELECT x.rn, x.key, n.key, n.d, x.body, n.body
          FROM s x
          CROSS JOIN LATERAL (
              SELECT y.%2$I::pg_catalog.text AS key, y.%4$I AS body,
                     @extschema@.hamming(y.%3$I, x.fp) AS d
                FROM %1$s y
               WHERE y.%5$I OPERATOR(pg_catalog.&&) x.keys
                 AND @extschema@.simhash_lsh_shared(y.%5$I, x.keys) OPERATOR(pg_catalog.>=) @extschema@.simhash_lsh_min_shared()
                 AND @extschema@.simhash_lsh_match(y.%4$I, x.body)
                 AND @extschema@.hamming(y.%3$I, x.fp) OPERATOR(pg_catalog.>) %6$s
                 AND y.%2$I IS NOT NULL AND y.%4$I IS NOT NULL
                 AND y.%2$I::pg_catalog.text OPERATOR(pg_catalog.<>) x.key
               ORDER BY 3, y.%2$I
               LIMIT %7$s) n$q$, tbl, key_col, fp_col, text_col, lsh, k, cap);
END
$$;

-- 5. The sample and its pairs, as the WITH clause of the query of step 6,
-- which reads only the three columns (and the keys). s: the sample,
-- numbered by key. c: each sampled row's nearest neighbours, found by the
-- band indexes (the condition y.fp <~> x.fp <= k). p: the pairs, each once
-- (a pair of two sampled rows is kept from the side of the lower number),
-- with their similarity. ranked: numbered per distance, nearest the
-- threshold ($1) first. Keys are compared as text, so that any key type
-- works on this search_path.
CREATE FUNCTION _simhash_review_sample_sql(tbl regclass, key_col name, fp_col name, text_col name,
                                           lsh name, k integer, sample integer, cap integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.format($q$
        WITH s AS MATERIALIZED (
            SELECT q.key, q.fp, q.body, q.keys, pg_catalog.row_number() OVER (ORDER BY q.k0) AS rn
              FROM (SELECT x.%2$I AS k0, x.%2$I::pg_catalog.text AS key, x.%3$I AS fp, x.%4$I AS body, %9$s AS keys
                      FROM %1$s x
                     WHERE x.%2$I IS NOT NULL AND x.%3$I IS NOT NULL AND x.%4$I IS NOT NULL
                     ORDER BY x.%2$I LIMIT %6$s) q
        ), c AS (
            SELECT x.rn, x.key AS a_key, n.key AS b_key, n.d, x.body AS a_body, n.body AS b_body
              FROM s x
              CROSS JOIN LATERAL (
                  SELECT y.%2$I::pg_catalog.text AS key, y.%4$I AS body,
                         (y.%3$I OPERATOR(@extschema@.<~>) x.fp) AS d
                    FROM %1$s y
                   WHERE y.%3$I OPERATOR(@extschema@.<~>) x.fp OPERATOR(pg_catalog.<=) %5$s
                     AND y.%2$I IS NOT NULL AND y.%4$I IS NOT NULL
                     AND y.%2$I::pg_catalog.text OPERATOR(pg_catalog.<>) x.key
                   ORDER BY 3, y.%2$I
                   LIMIT %7$s) n
            %8$s
        ), p AS MATERIALIZED (
            SELECT c.rn, c.a_key, c.b_key, c.d, c.a_body, c.b_body,
                   @extschema@.simhash_similarity(c.a_body, c.b_body) AS sim
              FROM c LEFT JOIN s z ON z.key OPERATOR(pg_catalog.=) c.b_key
             WHERE z.rn IS NULL OR z.rn OPERATOR(pg_catalog.>) c.rn
        ), ranked AS (
            SELECT p.*, pg_catalog.row_number() OVER (
                       PARTITION BY p.d
                       ORDER BY pg_catalog.abs(p.sim OPERATOR(pg_catalog.-) $1), p.rn, p.b_key) AS r
              FROM p
        )
        $q$, tbl, key_col, fp_col, text_col, k, sample, cap,
             @extschema@._simhash_review_lsh_arm(tbl, key_col, fp_col, text_col, lsh, k, cap),
             CASE WHEN lsh IS NULL THEN 'NULL::pg_catalog.int4[]' ELSE pg_catalog.format('x.%I', lsh) END);
END
$$;

-- 6. Everything from the table in one query (the WITH clause of step 5):
-- the table's rows, the sample, the pairs and those found by shared keys,
-- per distance and per bucket of similarity, and the pairs shown, at most
-- per_distance at each distance, their texts cut and explained. A table
-- without candidate pairs has empty lists, not JSON nulls.
CREATE FUNCTION _simhash_review_pairs(tbl regclass, key_col name, fp_col name, text_col name,
                                      lsh name, k integer, sample integer, per_distance integer,
                                      cap integer, cut integer, threshold double precision)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r jsonb;
    list_name text;
BEGIN
    EXECUTE @extschema@._simhash_review_sample_sql(tbl, key_col, fp_col, text_col, lsh, k, sample, cap)
            || pg_catalog.format($q$
        SELECT pg_catalog.jsonb_build_object(
            'rows', (SELECT pg_catalog.count(*) FROM %1$s t),
            'fingerprinted', (SELECT pg_catalog.count(t.%3$I) FROM %1$s t),
            'sampled', (SELECT pg_catalog.count(*) FROM s),
            'capped', (SELECT pg_catalog.count(*) FROM (SELECT FROM c GROUP BY c.rn
                                                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>=) %7$s) c),
            'pairs', (SELECT pg_catalog.count(*) FROM p),
            'by_keys', (SELECT pg_catalog.count(*) FROM p WHERE p.d OPERATOR(pg_catalog.>) %5$s),
            'by_distance', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                       'd', g.d, 'pairs', g.n, 'pass', g.np, 'min', g.mn, 'median', g.md) ORDER BY g.d)
                              FROM (SELECT p.d, pg_catalog.count(*) AS n,
                                           pg_catalog.count(*) FILTER (WHERE p.sim OPERATOR(pg_catalog.>=) $1) AS np,
                                           pg_catalog.min(p.sim) AS mn,
                                           pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY p.sim) AS md
                                      FROM p GROUP BY p.d) g),
            'by_similarity', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                         'b', g.b, 'pairs', g.n, 'pass', g.np) ORDER BY g.b)
                                FROM (SELECT LEAST(pg_catalog.floor(p.sim OPERATOR(pg_catalog.*) 20)::integer, 19) AS b,
                                             pg_catalog.count(*) AS n,
                                             pg_catalog.count(*) FILTER (WHERE p.sim OPERATOR(pg_catalog.>=) $1) AS np
                                        FROM p GROUP BY 1) g),
            'samples', (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                   'd', q.d, 'sim', q.sim, 'a_key', q.a_key, 'b_key', q.b_key,
                                   'a', pg_catalog.left(q.a_body, $3), 'b', pg_catalog.left(q.b_body, $3),
                                   'a_len', pg_catalog.char_length(q.a_body), 'b_len', pg_catalog.char_length(q.b_body),
                                   -- simhash_explain takes texts of at most 16 MB: a longer one
                                   -- is explained on its first 4M characters (at most 16 MB),
                                   -- more than the page shows.
                                   'explain', @extschema@.simhash_explain(
                                       CASE WHEN pg_catalog.octet_length(q.a_body) OPERATOR(pg_catalog.>) 16777216
                                            THEN pg_catalog.left(q.a_body, 4194304) ELSE q.a_body END,
                                       CASE WHEN pg_catalog.octet_length(q.b_body) OPERATOR(pg_catalog.>) 16777216
                                            THEN pg_catalog.left(q.b_body, 4194304) ELSE q.b_body END, 5)) ORDER BY q.d, q.r)
                          FROM ranked q WHERE q.r OPERATOR(pg_catalog.<=) $2))
        $q$, tbl, key_col, fp_col, text_col, k, sample, cap)
        INTO r USING threshold, per_distance, cut;
    FOREACH list_name IN ARRAY ARRAY['by_distance', 'by_similarity', 'samples'] LOOP
        IF jsonb_typeof(r->list_name) IS DISTINCT FROM 'array' THEN
            r := jsonb_set(r, ARRAY[list_name], '[]'::jsonb);
        END IF;
    END LOOP;
    RETURN r;
END
$$;

-- 7. The names shown on the page, escaped once: table, columns, and the
-- rule of record as SQL.
CREATE FUNCTION _simhash_review_names(tbl regclass, fp_col name, text_col name, key_col name,
                                      lsh name, verify_k integer, threshold double precision)
    RETURNS text[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN ARRAY[
        @extschema@._simhash_review_escape(tbl::text), @extschema@._simhash_review_escape(quote_ident(fp_col)),
        @extschema@._simhash_review_escape(quote_ident(text_col)), @extschema@._simhash_review_escape(quote_ident(key_col)),
        @extschema@._simhash_review_escape(format(
            E'-- two texts\nSELECT simhash_is_near_duplicate(a, b);\n'
            '-- the same as\nSELECT simhash(a) <~> simhash(b) <= %s AND simhash_similarity(a, b) >= %s;\n'
            '-- the rows of %s near a text $1, candidates found by the band indexes%s\n'
            'SELECT %I FROM %s WHERE %s AND simhash_similarity(%I, $1) >= %s;\n'
            '-- other settings, for a session (or ALTER DATABASE ... SET, for every session)\n'
            'SET simhash.verify_k = %s;\nSET simhash.similarity_threshold = %s;',
            verify_k, threshold, tbl,
            CASE WHEN lsh IS NULL THEN '' ELSE ' and the keys'' GIN index' END,
            key_col, tbl,
            CASE WHEN lsh IS NULL THEN format('%I <~> simhash($1) <= %s', fp_col, verify_k)
                 ELSE format('(%I <~> simhash($1) <= %s OR (%I &&& simhash_lsh($1) AND simhash_lsh_match(%I, $1)))',
                             fp_col, verify_k, lsh, text_col) END,
            text_col, threshold,
            verify_k, threshold))];
END
$$;

-- 8. The page's style sheet.
CREATE FUNCTION _simhash_review_style() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
RETURN $css$body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif; color: #1d2330; background: #f6f7f9; margin: 0; }
main { max-width: 1140px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #d5d9e0; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 24px 0 8px; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }
pre { background: #fff; border: 1px solid #d5d9e0; border-radius: 6px; padding: 10px 12px; overflow-x: auto; }
.lead { color: #4a5263; margin: 0 0 16px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 12px 0; }
dl.facts dt { color: #4a5263; }
dl.facts dd { margin: 0; font-weight: 600; }
.note { background: #fff8e1; border: 1px solid #f0d98a; border-radius: 6px; padding: 8px 12px; }
figure { margin: 8px 0 0; background: #fff; border: 1px solid #d5d9e0; border-radius: 6px; padding: 8px; }
figcaption { color: #4a5263; font-size: 13px; padding: 4px 8px; }
svg { display: block; width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }
svg .pass { fill: #2e7d32; }
svg .fail { fill: #b0bac8; }
svg .axis { stroke: #1d2330; stroke-width: 1; }
svg .thr { stroke: #c62828; stroke-width: 2; stroke-dasharray: 5 3; }
svg text.thr-label { fill: #c62828; font-weight: 600; }
.legend span { display: inline-block; margin-right: 16px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
table.stats { border-collapse: collapse; background: #fff; width: 100%; }
table.stats th, table.stats td { border: 1px solid #d5d9e0; padding: 4px 10px; text-align: right; }
table.stats th { background: #eef1f5; }
table.stats tr.in-force td { background: #e8f5e9; font-weight: 600; }
table.stats tr.beyond td { color: #6b7385; }
.pair { background: #fff; border: 1px solid #d5d9e0; border-radius: 6px; margin: 12px 0; padding: 10px 12px; }
.pair.near { border-left: 5px solid #2e7d32; }
.pair.not-near { border-left: 5px solid #b0bac8; }
.pair .meta { display: flex; flex-wrap: wrap; gap: 6px 18px; margin-bottom: 8px; font-size: 14px; }
.verdict { font-weight: 700; }
.near .verdict { color: #2e7d32; }
.not-near .verdict { color: #6b7385; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.side h4 { margin: 0 0 4px; font-size: 13px; color: #4a5263; font-weight: 600; }
.text { font-family: inherit; font-size: 14px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; padding: 8px; background: #fafbfc; border: 1px solid #e3e6eb; border-radius: 4px; max-height: 420px; overflow-y: auto; }
mark.a { background: #ffcdd2; color: inherit; }
mark.b { background: #c8e6c9; color: inherit; }
.cut { color: #8a5a00; font-size: 12px; margin: 4px 0 0; }
details { margin-top: 8px; font-size: 13px; }
details table { border-collapse: collapse; margin-top: 4px; }
details td, details th { border: 1px solid #e3e6eb; padding: 2px 8px; text-align: right; }
footer { color: #6b7385; font-size: 12px; margin-top: 40px; }
$css$;

-- 9. The head of the page and its facts: the table, the columns, the
-- sample, the pairs found, the settings and the rule of record.
CREATE FUNCTION _simhash_review_head(r jsonb, names text[], lsh name, k integer,
                                     verify_k integer, threshold double precision)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    npairs bigint := (r->>'pairs')::bigint;
    nkeys bigint := coalesce((r->>'by_keys')::bigint, 0);
BEGIN
    RETURN format($h$<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>simhash review of %1$s</title>
<style>
%14$s</style>
</head>
<body>
<main>
<h1>Near-duplicate review of <code>%1$s</code></h1>
<p class="lead">Candidate pairs found by their fingerprints, checked on their texts: use it to choose the distance k and the similarity threshold for this data.</p>
<dl class="facts">
<dt>Table</dt><dd><code>%1$s</code>: %2$s rows, %3$s with a fingerprint</dd>
<dt>Columns</dt><dd>fingerprint <code>%4$s</code>, text <code>%5$s</code>, key <code>%6$s</code></dd>
<dt>Sample</dt><dd id="sample">the first %7$s rows by <code>%6$s</code> with a key, a fingerprint and a text; their neighbours within distance %8$s anywhere in the table%13$s</dd>
<dt>Pairs found</dt><dd id="pairs">%9$s</dd>
<dt>Settings in force</dt><dd id="settings">simhash.verify_k = %10$s, simhash.similarity_threshold = %11$s</dd>
</dl>
<p>The rule of record: a pair is a near-duplicate when it is a candidate (its fingerprints within <code>simhash.verify_k</code>, or, on a table with the second source, a candidate key shared) and its texts&#39; <code>simhash_similarity</code> is at least <code>simhash.similarity_threshold</code>. In SQL, with the settings in force:</p>
<pre id="rule">%12$s</pre>
$h$,
        names[1], to_char((r->>'rows')::bigint, 'FM999,999,999,990'),
        to_char((r->>'fingerprinted')::bigint, 'FM999,999,999,990'),
        names[2], names[3], names[4],
        to_char((r->>'sampled')::bigint, 'FM999,999,999,990'), k,
        CASE WHEN npairs = 1 THEN '1 pair' ELSE to_char(npairs, 'FM999,999,999,990') || ' pairs' END
            || CASE WHEN npairs > 0 THEN format(', %s of them at or above the threshold',
                   to_char((SELECT sum((e->>'pass')::bigint) FROM jsonb_array_elements(r->'by_distance') e), 'FM999,999,999,990'))
               ELSE '' END
            || CASE WHEN nkeys > 0 THEN format('; %s past distance %s, found by shared candidate keys', to_char(nkeys, 'FM999,999,999,990'), k)
               ELSE '' END,
        verify_k, threshold, names[5],
        CASE WHEN lsh IS NULL THEN ''
             ELSE format(', and those past it that share a candidate key (column <code>%s</code>)',
                         @extschema@._simhash_review_escape(quote_ident(lsh))) END,
        @extschema@._simhash_review_style());
END
$$;

-- 10. Histogram of distances 0..k: a bar per distance, the pairs at or
-- above the threshold in green at its foot. Heights on a square-root
-- scale: the few pairs at small distances stay visible beside the many
-- chance pairs near k.
CREATE FUNCTION _simhash_review_dist_hist(r jsonb, k integer, threshold double precision)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    maxn bigint := coalesce((SELECT max((e->>'pairs')::bigint) FROM jsonb_array_elements(r->'by_distance') e), 0);
    part text;
BEGIN
    SELECT string_agg(format(
               '<g><title>distance %1$s: %2$s pairs, %3$s at or above the threshold</title>'
               '<rect class="fail" x="%4$s" y="%5$s" width="%6$s" height="%7$s"/>'
               '<rect class="pass" x="%4$s" y="%8$s" width="%6$s" height="%9$s"/>'
               '<text x="%10$s" y="%11$s" text-anchor="middle">%2$s</text>'
               '<text x="%10$s" y="222" text-anchor="middle">%1$s</text></g>',
               d, n, np,
               round(50 + d * bw + 3, 1), 200 - h, round(bw - 6, 1), h - hp, 200 - hp, hp,
               round(50 + d * bw + bw / 2, 1), 200 - h - 5), E'\n' ORDER BY d)
      INTO part
      FROM (SELECT d, n, np, bw,
                   round(170 * sqrt(n::numeric / maxn))::integer AS h,
                   round(170 * sqrt(n::numeric / maxn) * np / greatest(n, 1))::integer AS hp
              FROM (SELECT d, coalesce((e->>'pairs')::bigint, 0) AS n, coalesce((e->>'pass')::bigint, 0) AS np,
                           700.0 / (k + 1) AS bw
                      FROM generate_series(0, k) AS d
                      LEFT JOIN jsonb_array_elements(r->'by_distance') e ON (e->>'d')::integer = d) z) y;
    RETURN format($h$
<h2 id="distances">Distances</h2>
<figure>
<svg id="hist-distance" viewBox="0 0 760 250" role="img" aria-label="Histogram of the pairs' Hamming distances from 0 to %1$s">
<line class="axis" x1="48" y1="200" x2="752" y2="200"/>
<text x="44" y="34" text-anchor="end">%2$s</text>
<text x="44" y="204" text-anchor="end">0</text>
%3$s
<text x="400" y="244" text-anchor="middle">Hamming distance of the fingerprints</text>
</svg>
<figcaption class="legend"><span><i style="background:#2e7d32"></i>similarity at or above the threshold (%4$s)</span><span><i style="background:#b0bac8"></i>below it</span> Bar labels: pairs; heights on a square-root scale.</figcaption>
</figure>
$h$, k, maxn, part, threshold);
END
$$;

-- 11. Histogram of similarities in 20 buckets of 0.05, with the threshold
-- as a line.
CREATE FUNCTION _simhash_review_sim_hist(r jsonb, threshold double precision)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text;
BEGIN
    SELECT string_agg(format(
               '<g><title>similarity %1$s to %2$s: %3$s pairs</title>'
               '<rect class="fail" x="%4$s" y="%5$s" width="29" height="%6$s"/>'
               '<rect class="pass" x="%4$s" y="%7$s" width="29" height="%8$s"/>'
               '%9$s</g>',
               to_char(b * 0.05, 'FM0.00'), to_char(b * 0.05 + 0.05, 'FM0.00'), n,
               50 + b * 35 + 3, 200 - h, h - hp, 200 - hp, hp,
               CASE WHEN n > 0 THEN format('<text x="%s" y="%s" text-anchor="middle">%s</text>',
                                           50 + b * 35 + 17.5, 200 - h - 5, n) ELSE '' END),
               E'\n' ORDER BY b)
      INTO part
      FROM (SELECT b, n, np,
                   round(170 * sqrt(n::numeric / m))::integer AS h,
                   round(170 * sqrt(n::numeric / m) * np / greatest(n, 1))::integer AS hp
              FROM (SELECT b, coalesce((e->>'pairs')::bigint, 0) AS n, coalesce((e->>'pass')::bigint, 0) AS np,
                           greatest(max((e->>'pairs')::bigint) OVER (), 1) AS m
                      FROM generate_series(0, 19) AS b
                      LEFT JOIN jsonb_array_elements(r->'by_similarity') e ON (e->>'b')::integer = b) z) y;
    RETURN format($h$
<h2 id="similarities">Similarities</h2>
<figure>
<svg id="hist-similarity" viewBox="0 0 760 250" role="img" aria-label="Histogram of the pairs' similarities in buckets of 0.05">
<line class="axis" x1="48" y1="200" x2="752" y2="200"/>
%1$s
<text x="50" y="222" text-anchor="middle">0</text>
<text x="225" y="222" text-anchor="middle">0.25</text>
<text x="400" y="222" text-anchor="middle">0.5</text>
<text x="575" y="222" text-anchor="middle">0.75</text>
<text x="750" y="222" text-anchor="middle">1</text>
<line class="thr" x1="%2$s" y1="18" x2="%2$s" y2="204"/>
<text class="thr-label" x="%3$s" y="14" text-anchor="middle">threshold %4$s</text>
<text x="400" y="244" text-anchor="middle">simhash_similarity of the texts (buckets of 0.05)</text>
</svg>
<figcaption>Pairs of unrelated texts gather on the left, near-copies on the right; a threshold in the valley between them separates the two. Heights on a square-root scale.</figcaption>
</figure>
$h$, part, round(50 + 700 * threshold::numeric, 1),
         least(greatest(round(50 + 700 * threshold::numeric, 1), 90), 700), threshold);
END
$$;

-- 12. The table per distance, with running totals: the row of k is what k
-- would find. The pairs past k found by shared keys have a row of their
-- own; the advice says which k finds the pairs at or above the threshold.
CREATE FUNCTION _simhash_review_per_dist(r jsonb, k integer, verify_k integer, threshold double precision)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nkeys bigint := coalesce((r->>'by_keys')::bigint, 0);
    -- Only distances k can be: the pairs past k that pass were found by
    -- the keys, which no k finds.
    last_pass integer := (SELECT max((e->>'d')::integer) FROM jsonb_array_elements(r->'by_distance') e
                          WHERE (e->>'pass')::bigint > 0 AND (e->>'d')::integer <= k);
    part text;
BEGIN
    SELECT string_agg(format(
               '<tr%s><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>',
               CASE WHEN d = verify_k THEN ' class="in-force"' WHEN d > verify_k THEN ' class="beyond"' ELSE '' END,
               d || CASE WHEN d = verify_k THEN ' (verify_k)' ELSE '' END,
               n, np,
               CASE WHEN n > 0 THEN to_char(100.0 * np / n, 'FM990.0') || '%' ELSE '' END,
               cn, cnp,
               coalesce(to_char(mn, 'FM0.000'), ''), coalesce(to_char(md, 'FM0.000'), '')),
               E'\n' ORDER BY d)
      INTO part
      FROM (SELECT z.*, sum(n) OVER (ORDER BY d) AS cn, sum(np) OVER (ORDER BY d) AS cnp
              FROM (SELECT d, coalesce((e->>'pairs')::bigint, 0) AS n, coalesce((e->>'pass')::bigint, 0) AS np,
                           (e->>'min')::double precision AS mn, (e->>'median')::double precision AS md
                      FROM generate_series(0, k) AS d
                      LEFT JOIN jsonb_array_elements(r->'by_distance') e ON (e->>'d')::integer = d) z) y;
    RETURN format($h$
<h2 id="by-distance">Pairs by distance</h2>
<table class="stats">
<thead><tr><th>distance</th><th>pairs</th><th>similarity &#8805; %1$s</th><th>share</th><th>pairs within</th><th>near-duplicates within</th><th>lowest similarity</th><th>median similarity</th></tr></thead>
<tbody>
%2$s%4$s
</tbody>
</table>
<p id="advice">%3$s</p>
$h$, threshold, part,
        CASE WHEN last_pass IS NULL
             THEN format('No pair reaches the threshold %s within distance %s.', threshold, k)
             ELSE format('In this sample the pairs at or above the threshold reach up to distance %s: k = %s finds all of them%s.',
                         last_pass, last_pass,
                         CASE WHEN last_pass > verify_k THEN format(', and simhash.verify_k = %s misses some', verify_k)
                              ELSE format(', as simhash.verify_k = %s does', verify_k) END)
        END
        || coalesce((SELECT format(' Past distance %s, shared candidate keys find %s more at or above it.', k, sum((e->>'pass')::bigint))
                       FROM jsonb_array_elements(r->'by_distance') e
                      WHERE (e->>'d')::integer > k
                     HAVING sum((e->>'pass')::bigint) > 0), ''),
        CASE WHEN nkeys = 0 THEN ''
             ELSE (SELECT format(E'\n<tr class="keys" id="by-keys"><td>past %s, shared keys</td><td>%s</td><td>%s</td><td>%s</td><td></td><td></td><td>%s</td><td>%s</td></tr>',
                                 k, sum((e->>'pairs')::bigint), sum((e->>'pass')::bigint),
                                 to_char(100.0 * sum((e->>'pass')::bigint) / greatest(sum((e->>'pairs')::bigint), 1), 'FM990.0') || '%',
                                 coalesce(to_char(min((e->>'min')::double precision), 'FM0.000'), ''), '')
                     FROM jsonb_array_elements(r->'by_distance') e WHERE (e->>'d')::integer > k) END);
END
$$;

-- 13. One side of a pair: its text, cut, with the stretches the other
-- text lacks (simhash_explain's spans) marked. The spans are wrapped in
-- two private-use characters (the text's own are replaced first, keeping
-- the offsets), the whole escaped, and the two characters made <mark>
-- tags of the side's class.
CREATE FUNCTION _simhash_review_marked(t text, spans jsonb, side text, cut integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    body text;
BEGIN
    t := translate(t, E'\uE000\uE001', E'\uFFFD\uFFFD');
    SELECT coalesce(string_agg(substr(t, w.prev + 1, w.s2 - w.prev) || E'\uE000'
                               || substr(t, w.s2 + 1, w.e - w.s2) || E'\uE001', '' ORDER BY w.s), '')
           || substr(t, coalesce(max(w.e), 0) + 1)
      INTO body
      FROM (SELECT u.s, u.e, greatest(u.s, u.prev) AS s2, u.prev
              FROM (SELECT sp.s, sp.e,
                           coalesce(max(sp.e) OVER (ORDER BY sp.s, sp.e
                                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS prev
                      FROM (SELECT (x->>'start')::integer AS s, least((x->>'end')::integer, cut) AS e
                              FROM jsonb_array_elements(coalesce(spans, '[]')) x
                             WHERE (x->>'start')::integer < cut) sp
                     WHERE sp.e > sp.s) u) w
     WHERE w.e > w.s2;
    RETURN replace(replace(@extschema@._simhash_review_escape(body),
                           E'\uE000', format('<mark class="%s">', side)), E'\uE001', '</mark>');
END
$$;

-- 14. A pair shown side by side (an <article> left open for step 15):
-- its distance, similarity and verdict, and the two texts.
CREATE FUNCTION _simhash_review_html_pair(smp jsonb, key_name text, verify_k integer,
                                          threshold double precision, cut integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sides text;
    -- The rule's verdict: a candidate by the fingerprint (within verify_k)
    -- or, past it, by the keys the pair shares and the second test
    -- (simhash_explain's lsh_match), then similar enough.
    by_fingerprint boolean := (smp->>'d')::integer <= verify_k;
    by_keys boolean := coalesce(smp->'explain'->>'candidate' IN ('lsh', 'both'), false)
                       AND coalesce((smp->'explain'->>'lsh_match')::boolean, false);
    near boolean := (by_fingerprint OR by_keys) AND (smp->>'sim')::double precision >= threshold;
BEGIN
    SELECT string_agg(format(
               E'<div class="side"><h4>%s %s</h4><pre class="text">%s</pre>%s</div>',
               key_name, @extschema@._simhash_review_escape(v.key),
               @extschema@._simhash_review_marked(v.t, v.spans, v.side, cut),
               CASE WHEN v.len > cut
                    THEN format('<p class="cut">The first %s of %s characters.</p>',
                                to_char(cut, 'FM999,999,990'), to_char(v.len, 'FM999,999,999,990'))
                    ELSE '' END),
               E'\n' ORDER BY v.side)
      INTO sides
      FROM (VALUES ('a', smp->>'a_key', smp->>'a', (smp->>'a_len')::bigint, smp->'explain'->'only_in_a'),
                   ('b', smp->>'b_key', smp->>'b', (smp->>'b_len')::bigint, smp->'explain'->'only_in_b'))
           AS v(side, key, t, len, spans);
    RETURN format(E'<article class="pair %s" id="pair-%s-%s">\n<div class="meta"><span>distance <b>%s</b></span><span>similarity <b>%s</b></span><span class="verdict">%s</span></div>\n<div class="sides">\n%s\n</div>\n',
        CASE WHEN near THEN 'near' ELSE 'not-near' END,
        (smp->>'d')::integer, md5(smp->>'a_key' || E'\n' || (smp->>'b_key')),
        smp->>'d', to_char((smp->>'sim')::double precision, 'FM0.000'),
        CASE WHEN near THEN 'near-duplicate'
             WHEN NOT by_fingerprint AND NOT by_keys
                  THEN 'not a near-duplicate: distance above simhash.verify_k and no candidate key shared'
             WHEN (smp->>'sim')::double precision < threshold
                  THEN 'not a near-duplicate: similarity below the threshold'
             ELSE 'not a near-duplicate: found by shared keys only, and its 5-gram Jaccard and containment are below the second test (simhash_lsh_match)' END,
        sides);
END
$$;

-- 15. The features that moved a pair's differing bits most ('' if none).
CREATE FUNCTION _simhash_review_features(smp jsonb)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text;
BEGIN
    IF jsonb_array_length(coalesce(smp->'explain'->'features', '[]')) > 0 THEN
        SELECT string_agg(format('<tr><td style="text-align:left"><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>',
                   @extschema@._simhash_review_escape(f->>'feature'),
                   to_char((f->>'weight_a')::double precision, 'FM9999990.00'),
                   to_char((f->>'weight_b')::double precision, 'FM9999990.00'),
                   f->>'bits', to_char((f->>'pull')::double precision, 'FM9999990.00')), '' ORDER BY o)
          INTO part
          FROM jsonb_array_elements(smp->'explain'->'features') WITH ORDINALITY AS x(f, o);
        RETURN format(E'<details><summary>Features that moved %s most</summary><table><tr><th>feature</th><th>weight left</th><th>weight right</th><th>bits</th><th>pull</th></tr>%s</table></details>\n',
            CASE smp->>'d' WHEN '1' THEN 'the differing bit' ELSE 'the ' || (smp->>'d') || ' differing bits' END, part);
    END IF;
    RETURN '';
END
$$;

-- 16. The sample pairs, under a heading per distance: up to per_distance
-- at each, those whose similarity is nearest the threshold first.
CREATE FUNCTION _simhash_review_samples(r jsonb, key_name text, k integer, verify_k integer,
                                        threshold double precision, per_distance integer, cut integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    page text;
    smp jsonb;
    cur integer := -1;
BEGIN
    page := format(E'\n<h2 id="samples">Sample pairs</h2>\n<p>Up to %s pairs at each distance, those whose similarity is nearest the threshold first. Marked: what <mark class="a">only the left text</mark> has, and what <mark class="b">only the right text</mark> has.</p>\n', per_distance);
    FOR smp IN SELECT e FROM jsonb_array_elements(r->'samples') e LOOP
        IF (smp->>'d')::integer <> cur THEN
            cur := (smp->>'d')::integer;
            page := page || format(E'<h3 id="distance-%s">Distance %s%s</h3>\n', cur, cur,
                                   CASE WHEN cur > k THEN ': found by shared candidate keys' ELSE '' END);
        END IF;
        page := page || @extschema@._simhash_review_html_pair(smp, key_name, verify_k, threshold, cut)
                     || @extschema@._simhash_review_features(smp) || E'</article>\n';
    END LOOP;
    RETURN page;
END
$$;

-- The page: the steps above in turn.
CREATE FUNCTION simhash_review(tbl regclass, fp_col name, text_col name, key_col name DEFAULT 'id',
                               k integer DEFAULT NULL, sample integer DEFAULT 2000,
                               per_distance integer DEFAULT 3)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The nearest neighbours counted per sampled row, and where a text
    -- shown on the page is cut.
    cap CONSTANT integer := 100;
    cut CONSTANT integer := 2000;
    verify_k integer := coalesce(nullif(current_setting('simhash.verify_k', true), '')::integer, 11);
    threshold double precision := @extschema@._simhash_setting_threshold();
    -- The table's second source of candidates (simhash_add_lsh), if any.
    lsh name;
    r jsonb;
    names text[];
    page text;
BEGIN
    k := @extschema@._simhash_review_args(tbl, fp_col, text_col, key_col, k, sample, per_distance, verify_k);
    PERFORM @extschema@._simhash_review_table(tbl, fp_col, text_col);
    PERFORM @extschema@._simhash_review_key(tbl, key_col);
    lsh := @extschema@.simhash_lsh_column(tbl, text_col);
    r := @extschema@._simhash_review_pairs(tbl, key_col, fp_col, text_col, lsh, k, sample, per_distance,
                                           cap, cut, threshold);
    names := @extschema@._simhash_review_names(tbl, fp_col, text_col, key_col, lsh, verify_k, threshold);
    page := @extschema@._simhash_review_head(r, names, lsh, k, verify_k, threshold);
    IF (r->>'capped')::bigint > 0 THEN
        page := page || format(E'<p class="note">%s sampled rows have %s or more neighbours within distance %s: only their %s nearest are counted.</p>\n',
                               r->>'capped', cap, k, cap);
    END IF;
    IF (r->>'pairs')::bigint = 0 THEN
        page := page || format(E'<p class="note" id="no-pairs">No pair of rows within distance %s among the sampled rows: nothing to review. Try a larger k or sample.</p>\n', k);
    ELSE
        page := page || @extschema@._simhash_review_dist_hist(r, k, threshold)
                     || @extschema@._simhash_review_sim_hist(r, threshold)
                     || @extschema@._simhash_review_per_dist(r, k, verify_k, threshold)
                     || @extschema@._simhash_review_samples(r, names[4], k, verify_k, threshold, per_distance, cut);
    END IF;
    RETURN page || format(E'<footer>Made by simhash_review() of the simhash extension %s in database %s at %s.</footer>\n</main>\n</body>\n</html>\n',
        (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'simhash'),
        @extschema@._simhash_review_escape(current_database()),
        to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'));
END
$$;
