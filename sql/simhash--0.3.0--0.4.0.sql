-- simhash 0.3.0 -> 0.4.0: what an audit of 0.3.0 found. No stored value
-- changes; see the README's "Security" and "Upgrading".
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.4.0'" to load this file. \quit

-- SQL and PL/pgSQL objects no longer depend on the caller's search_path:
-- SQL bodies name everything with its schema (simhash_clusters is parsed
-- here, BEGIN ATOMIC), PL/pgSQL functions pin their path. The bit cast now also survives a dump
-- and restore, and an extension created in another schema.
CREATE OR REPLACE FUNCTION simhash64_to_bit(simhash64) RETURNS bit
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT $1::bigint::bit(64) $$;

CREATE OR REPLACE FUNCTION simhash64_from_bit(bit) RETURNS simhash64
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.length($1) OPERATOR(pg_catalog.=) 64
                THEN $1::bigint::@extschema@.simhash64
                ELSE @extschema@.simhash64_bit_length_error(pg_catalog.length($1)) END
$$;

CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, fp_col name, k integer,
                                 key_col name DEFAULT 'id', singletons boolean DEFAULT true)
    RETURNS TABLE (id bigint, cluster bigint)
    LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
BEGIN ATOMIC
    SELECT c.id, c.cluster FROM @extschema@.simhash_clusters_query(
        pg_catalog.format('SELECT %I::bigint, %I::bigint FROM %s WHERE %I IS NOT NULL', key_col, fp_col, tbl, fp_col),
        k, singletons) c;
END;

CREATE OR REPLACE FUNCTION simhash_skipped(reset boolean DEFAULT false) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint := coalesce(nullif(current_setting('simhash.skipped', true), ''), '0')::bigint;
BEGIN
    IF reset THEN
        PERFORM set_config('simhash.skipped', '0', false);
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION simhash_near_unique_report() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint := @extschema@.simhash_skipped(true);
BEGIN
    IF n > 0 THEN
        RAISE NOTICE 'simhash_near_unique skipped % near-duplicate row(s) of %', n, TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END
$$;

-- Band indexes get unique names within 63 bytes; existing valid band
-- indexes of the documented form are kept; nothing is silently skipped.
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
BEGIN
    SELECT cl.relowner, cl.relnamespace, cl.relname INTO owner, nsp, rel
    FROM pg_class cl WHERE cl.oid = tbl;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
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

-- The functions of the band conditions raise no error and are LEAKPROOF,
-- so that the band indexes serve roles under row-level security.
ALTER FUNCTION simhash_band(simhash64, integer) LEAKPROOF;
ALTER FUNCTION simhash_band_neighbors(simhash64, integer, integer) LEAKPROOF;
ALTER FUNCTION simhash_within(simhash64, simhash64, integer) LEAKPROOF;

-- The whole-number bound equal to a comparison of a distance with a bound
-- of another type: the largest d with d <= bound (or, when below is true,
-- d < bound), from -1 (nothing qualifies) to 64 (every fingerprint does).
-- The parse-time rewrite wraps a bound of any numeric type in this, so
-- `fp <~> q < 3.5`, `<= 3::smallint` and `< $1` with $1 a bigint reach
-- the band indexes and mean exactly what the comparison means.
CREATE FUNCTION simhash_bound(smallint, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_int2_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_bound(integer, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_int4_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_bound(bigint, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_int8_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_bound(real, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_float4_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_bound(double precision, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_float8_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash_bound(numeric, boolean) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_bound_numeric_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
