-- The public SQL surface of the simhash extension, in one place.
--
-- Every Rust entry point is declared here by hand (the Rust side exports
-- `<name>_wrapper` symbols and generates no SQL of its own), so this file
-- is the whole contract: read it top to bottom.
--
-- Stable: every function whose name starts with `simhash` or `hamming`,
-- the type, the operators and the casts (the README's Reference). A name
-- that starts with `_simhash_` is an internal step of another function
-- (the load's, clustering's): callable, so that the SQL bodies here can
-- call it with the caller's rights, but not part of the interface, and
-- it may change or go in any release.

---------------------------------------------------------------------------
-- The simhash64 type: 8 bytes, passed by value, the bits of a bigint.
---------------------------------------------------------------------------

CREATE TYPE simhash64;

CREATE FUNCTION simhash64_in(cstring) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash64_in_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash64_out(simhash64) RETURNS cstring
    AS 'MODULE_PATHNAME', 'simhash64_out_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The binary form is bigint's: 8 bytes, big-endian. Drivers and
-- COPY ... (FORMAT binary) can treat a simhash64 as an int8.
CREATE FUNCTION simhash64_recv(internal) RETURNS simhash64
    AS 'int8recv' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash64_send(simhash64) RETURNS bytea
    AS 'int8send' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE simhash64 (
    INPUT = simhash64_in,
    OUTPUT = simhash64_out,
    RECEIVE = simhash64_recv,
    SEND = simhash64_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);

COMMENT ON TYPE simhash64 IS
    'a 64-bit SimHash fingerprint; text form: 16 hexadecimal digits';

---------------------------------------------------------------------------
-- Comparison. Equality and hashing are bigint's (same bits); ordering is
-- unsigned, the order of the hex text.
---------------------------------------------------------------------------

CREATE FUNCTION simhash64_eq(simhash64, simhash64) RETURNS boolean
    AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_ne(simhash64, simhash64) RETURNS boolean
    AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_lt(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash64_lt_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_le(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash64_le_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_gt(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash64_gt_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_ge(simhash64, simhash64) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash64_ge_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_cmp(simhash64, simhash64) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash64_cmp_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_hash(simhash64) RETURNS integer
    AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION simhash64_hash_extended(simhash64, bigint) RETURNS bigint
    AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR = (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_eq,
    COMMUTATOR = =, NEGATOR = <>,
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ne,
    COMMUTATOR = <>, NEGATOR = =,
    RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_lt,
    COMMUTATOR = >, NEGATOR = >=,
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_le,
    COMMUTATOR = >=, NEGATOR = >,
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_gt,
    COMMUTATOR = <, NEGATOR = <=,
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = simhash64_ge,
    COMMUTATOR = <=, NEGATOR = <,
    RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS simhash64_btree_ops
    DEFAULT FOR TYPE simhash64 USING btree AS
        OPERATOR 1 <,
        OPERATOR 2 <=,
        OPERATOR 3 =,
        OPERATOR 4 >=,
        OPERATOR 5 >,
        FUNCTION 1 simhash64_cmp(simhash64, simhash64);

CREATE OPERATOR CLASS simhash64_hash_ops
    DEFAULT FOR TYPE simhash64 USING hash AS
        OPERATOR 1 =,
        FUNCTION 1 simhash64_hash(simhash64),
        FUNCTION 2 simhash64_hash_extended(simhash64, bigint);

---------------------------------------------------------------------------
-- Casts: bigint bit for bit (no overflow: '8000000000000000' is
-- -9223372036854775808), and bit(64), most significant bit first.
---------------------------------------------------------------------------

CREATE CAST (simhash64 AS bigint) WITHOUT FUNCTION;
CREATE CAST (bigint AS simhash64) WITHOUT FUNCTION;

-- SQL bodies in this file name every function, operator and type with its
-- schema (`bigint` and `bit` are keywords, always pg_catalog's): they run
-- the same on any search_path, including pg_dump's empty one, and nothing
-- a user puts on the path can stand in for what they call. These two keep
-- a text body rather than BEGIN ATOMIC: a parsed body does not record its
-- dependency on the WITHOUT FUNCTION casts, so pg_upgrade (which restores
-- an extension's objects one by one) would create it before the cast and
-- fail; a text body is only parsed when called, and stays inlinable.
CREATE FUNCTION simhash64_to_bit(simhash64) RETURNS bit
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT $1::bigint::bit(64) $$;

CREATE FUNCTION simhash64_bit_length_error(integer) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash64_bit_length_error_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION simhash64_from_bit(bit) RETURNS simhash64
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.length($1) OPERATOR(pg_catalog.=) 64
                THEN $1::bigint::@extschema@.simhash64
                ELSE @extschema@.simhash64_bit_length_error(pg_catalog.length($1)) END
$$;

CREATE CAST (simhash64 AS bit) WITH FUNCTION simhash64_to_bit(simhash64);
CREATE CAST (bit AS simhash64) WITH FUNCTION simhash64_from_bit(bit);

---------------------------------------------------------------------------
-- Fingerprints.
---------------------------------------------------------------------------

-- The fingerprint of a text; NULL when it has no features (empty, or only
-- white space, punctuation and symbols). Definition version 3, in the
-- README. The C symbol names the version: a symbol never changes what it
-- computes, so an older install keeps its fingerprints under a newer
-- library.
CREATE FUNCTION simhash(text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_v3_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION simhash(text) IS
    'SimHash fingerprint, definition version 3: NFKC, lower case, traditional-to-simplified folding; Han characters and the character trigrams of other words, each weighed by its count above chance; xxh3-64 features';

-- Definition version 2 (extension 0.2's simhash) and version 1 (0.1's),
-- for fingerprints stored before an upgrade and for comparing with them.
CREATE FUNCTION simhash_v2(text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_v2_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION simhash_v2(text) IS
    'SimHash fingerprint, definition version 2 (extension 0.2): traditional-to-simplified folding, NFKC, lower case, jieba tokens, IDF weights (4 for unknown tokens), tf capped at 3, xxh3-64 features';

CREATE FUNCTION simhash_v1(text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION simhash_v1(text) IS
    'SimHash fingerprint, definition version 1 (extension 0.1): NFKC, lower case, jieba tokens, IDF weights, xxh3-64 features';

-- Why two texts are close: each distinct feature with what it adds. Under
-- version 3 a token is a Han character or a trigram such as ^th or ion,
-- idf is its self-information, and weight can be negative (a feature the
-- text holds less often than chance would give it).
CREATE FUNCTION simhash_features(text)
    RETURNS TABLE (token text, tf bigint, idf double precision,
                   weight double precision, hash simhash64)
    AS 'MODULE_PATHNAME', 'simhash_features_v3_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 100;

CREATE FUNCTION simhash_features_v2(text)
    RETURNS TABLE (token text, tf bigint, idf double precision,
                   weight double precision, hash simhash64)
    AS 'MODULE_PATHNAME', 'simhash_features_v2_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 100;

CREATE FUNCTION simhash_features_v1(text)
    RETURNS TABLE (token text, tf bigint, idf double precision,
                   weight double precision, hash simhash64)
    AS 'MODULE_PATHNAME', 'simhash_features_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 100;

---------------------------------------------------------------------------
-- Distance and bands.
---------------------------------------------------------------------------

CREATE FUNCTION hamming(simhash64, simhash64) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_hamming_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR <~> (
    LEFTARG = simhash64, RIGHTARG = simhash64, FUNCTION = hamming,
    COMMUTATOR = <~>
);

COMMENT ON OPERATOR <~> (simhash64, simhash64) IS
    'Hamming distance: the number of differing bits';

-- Band n (0 to 3) of a fingerprint, 0 to 65535; band 0 is the most
-- significant 16 bits (the first four hex digits); NULL for any other n.
-- LEAKPROOF, like every function the band conditions call: it raises no
-- error and tells nothing but its result, so the planner may use the band
-- indexes under row-level security too.
CREATE FUNCTION simhash_band(simhash64, integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_band_n_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

---------------------------------------------------------------------------
-- Near-duplicate search through band indexes.
--
-- Two fingerprints within distance k share a band that differs in at most
-- floor(k/4) bits (for k <= 3: a band that is equal). With a B-tree index on
-- each band, simhash_within(fp, q, k) is answered by four index probes and
-- an exact recheck. Plain conditions such as `fp <~> q <= k` are turned
-- into simhash_within at parse time (see the README).
---------------------------------------------------------------------------

-- The values band n is probed with for distance k: every value within the
-- band's radius of fp's band (floor(k/4) for the first k mod 4 + 1 bands,
-- one less for the others, as the pigeonhole rule allows); empty for a
-- negative k or a band the probe skips, NULL for a band that does not
-- exist.
CREATE FUNCTION simhash_band_neighbors(simhash64, integer, integer) RETURNS integer[]
    AS 'MODULE_PATHNAME', 'simhash_band_neighbors_fn_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE FUNCTION simhash_within_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_within_support'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- hamming(a, b) <= k, in a form the planner answers with band indexes
-- (false for a negative k, as the comparison is).
CREATE FUNCTION simhash_within(simhash64, simhash64, integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_within_fn_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT simhash_within_support;

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

---------------------------------------------------------------------------
-- Band layouts (the README's "Band layouts"): how the fingerprint is cut
-- into index keys. '4x16': four 16-bit bands, simhash_band(fp, 0..3),
-- probed for k up to 11. '2x32': two 32-bit halves, simhash_band32(fp,
-- 0..1), probed for k up to 7 with 33 keys per half for k <= 3 and almost
-- no rows to recheck: the layout for large tables. The planner and the
-- guard read the layout from the index definitions, so indexes of these
-- forms made by hand count too. '4x16c': the 16-bit bands, covering (each
-- B-tree index INCLUDEs the fingerprint), probed without visiting the
-- table for the rows the bands rule out (simhash_probe).
---------------------------------------------------------------------------

-- Half n (0 or 1) of a fingerprint: the 32 bits from the left as a bigint
-- from 0 to 4294967295; NULL for any other n. LEAKPROOF, as simhash_band.
CREATE FUNCTION simhash_band32(simhash64, integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_band32_n_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

-- The values half n is probed with for distance k: every value within the
-- half's radius of fp's half (floor(k/2); one less for half 1 when k is
-- even); empty for a negative k or a half the probe skips; NULL for a half
-- that does not exist or a k above 7 (the halves are not probed for it).
CREATE FUNCTION simhash_band32_neighbors(simhash64, integer, integer) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_band32_neighbors_fn_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

-- The row ids of the rows of tbl whose column col is within distance k of
-- fp, as the query's snapshot sees them. With the covering layout it reads
-- the fingerprints from the band indexes and visits the table only for
-- the rows within k; the planner puts it in a TID scan for
--   WHERE col <~> fp <= k   (k a constant up to 11, fp known at the start)
-- on a table with that layout (not one with inheritance children or
-- row-level security, nor under Citus). Exact without it too: another
-- layout that serves k, or a scan. Needs SELECT on the table or the column,
-- and refuses a table with row-level security (42501). Parallel
-- restricted: a worker cannot read the leader's temporary tables.
CREATE FUNCTION simhash_probe(tbl regclass, col text, fp simhash64, k integer) RETURNS tid[]
    AS 'MODULE_PATHNAME', 'simhash_probe_fn_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- The layout 'auto' chooses (docs/layouts.md) for a table of about rows
-- rows of row_bytes heap bytes each, queried within distance k: of the
-- layouts that answer k by probing, the one with the least estimated
-- query time times the bytes a row takes with its indexes. k NULL: the
-- session's simhash.verify_k (the rule of record's, 11 by default); above
-- 11 as 11. row_bytes NULL: 0 (the indexes alone weighed). NULL for NULL
-- rows.
CREATE FUNCTION simhash_layout_for(rows double precision, k integer DEFAULT NULL,
                                   row_bytes double precision DEFAULT NULL) RETURNS text
    AS 'MODULE_PATHNAME', 'simhash_layout_for_k_fn_wrapper'
    LANGUAGE C STABLE PARALLEL SAFE;

-- What simhash_layout_for weighs, a row per layout: whether it answers k
-- by probing, its estimated time per query, its index bytes per row, the
-- time times the bytes a row takes with it (heap and index), and which
-- one is chosen (the least; the leanest on a tie). No rows for NULL rows.
CREATE FUNCTION simhash_layout_estimates(rows double precision, k integer DEFAULT NULL,
                                         row_bytes double precision DEFAULT NULL)
    RETURNS TABLE (layout text, serves boolean, probe_ms double precision,
                   index_bytes double precision, cost double precision, chosen boolean)
    AS 'MODULE_PATHNAME', 'simhash_layout_estimates_fn_wrapper'
    LANGUAGE C STABLE PARALLEL SAFE;

-- About how many rows a table has: its statistics (reltuples, summed over
-- the leaf partitions), or a count(*) where it was never analyzed.
CREATE FUNCTION _simhash_table_rows(tbl regclass) RETURNS double precision
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n_rows double precision;
    unanalyzed boolean;
BEGIN
    SELECT sum(greatest(cl.reltuples, 0)), bool_or(cl.reltuples < 0) INTO n_rows, unanalyzed
    FROM pg_class cl
    WHERE (cl.oid = tbl AND cl.relkind <> 'p')
       OR cl.oid IN (SELECT pt.relid FROM pg_partition_tree(tbl) pt WHERE pt.isleaf);
    IF unanalyzed THEN
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO n_rows;
    END IF;
    RETURN coalesce(n_rows, 0);
END
$$;

-- Why 'auto' gives a table the layout it does, for queries within k (NULL:
-- simhash.verify_k): simhash_layout_estimates for the table's rows (its
-- statistics, or a count where it was never analyzed; on Citus a count
-- divided by the shards, each shard indexed and probed on its own) and
-- its bytes a row (pg_table_size, TOAST included, summed over the leaf
-- partitions; unknown on Citus, where the indexes alone are weighed).
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

-- Every index of the table whose one key is a band of the column: its
-- layout and part ('4x16c' for a 16-bit band's index that INCLUDEs the
-- column), whether it is valid (a failed concurrent build leaves an
-- invalid one), and whether the planner and the guard use it (valid, a
-- B-tree or hash index, no predicate).
CREATE FUNCTION simhash_band_indexes(tbl regclass, col name DEFAULT 'fp')
    RETURNS TABLE (layout text, part integer, index regclass, valid boolean, usable boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN i.indnatts = 2 AND l.layout = '4x16' THEN '4x16c' ELSE l.layout END,
           p.part, i.indexrelid::regclass, i.indisvalid AND i.indisready,
           i.indisvalid AND i.indisready AND i.indpred IS NULL
           AND am.amname IN ('btree', 'hash')
    FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_am am ON am.oid = ic.relam
    CROSS JOIN (VALUES ('4x16', 'simhash_band', 4), ('2x32', 'simhash_band32', 2)) l (layout, fn, parts)
    CROSS JOIN LATERAL generate_series(0, l.parts - 1) p (part)
    WHERE i.indrelid = tbl AND i.indnkeyatts = 1 AND i.indkey[0] = 0
      AND (i.indnatts = 1
           OR (i.indnatts = 2 AND i.indkey[1] = (SELECT a.attnum FROM pg_attribute a
                                                 WHERE a.attrelid = tbl AND a.attname = col
                                                   AND NOT a.attisdropped)))
      AND pg_get_expr(i.indexprs, i.indrelid)
          = format('%s.%s(%s, %s)', '@extschema@', l.fn, quote_ident(col), p.part)
    ORDER BY l.parts DESC, p.part, i.indexrelid
$$;

-- The layouts every part of which has a usable index, in the order
-- '4x16', '4x16c', '2x32' (a covering index serves '4x16' too).
CREATE FUNCTION simhash_band_layouts(tbl regclass, col name DEFAULT 'fp')
    RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(l.layout ORDER BY l.ord), '{}')
    FROM (VALUES ('4x16', ARRAY['4x16', '4x16c'], 4, 1), ('4x16c', ARRAY['4x16c'], 4, 2),
                 ('2x32', ARRAY['2x32'], 2, 3)) l (layout, members, parts, ord)
    WHERE (SELECT count(DISTINCT b.part) FROM @extschema@.simhash_band_indexes(tbl, col) b
           WHERE b.layout = ANY (l.members) AND b.usable) = l.parts
$$;

-- The DDL that gives a column the band indexes of a layout: CREATE INDEX
-- for each part that has no usable index, then DROP INDEX for the band
-- indexes of other layouts and for invalid ones (a failed concurrent
-- build leaves one). layout: 'auto' (the layout for the table's rows,
-- their width and the k it is queried with: simhash_layout_choice(tbl, k),
-- k NULL meaning simhash.verify_k), '4x16', '4x16c' (covering: each index
-- INCLUDEs the column, about four times the space, for k up to 11
-- without visiting the table for the rows ruled out), '2x32',
-- or several joined by '+'. The 16-bit bands are kept, with a NOTICE, while a
-- near-unique guard of the column needs them (k above 7). With
-- concurrently (the default) the statements are CREATE INDEX CONCURRENTLY
-- and DROP INDEX CONCURRENTLY, to run one by one outside a transaction,
-- as psql's \gexec does, so a busy table is not locked:
--   SELECT simhash_band_commands('docs', 'fp') \gexec
-- New indexes are built before old ones go: no moment without a layout.
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

-- The band indexes of a table's fingerprint column, in one transaction:
-- runs simhash_band_commands(tbl, col, layout, false, k), so CREATE INDEX
-- holds off writes while it builds (use simhash_band_commands with \gexec
-- on a busy table). Plain DDL, the same a DBA can run by hand:
--   CREATE INDEX docs_fp_band0 ON docs (simhash_band(fp, 0));  -- ... to 3
-- Returns the usable band indexes of the column afterwards, layout by
-- layout ('4x16' first), in part order; anything it cannot do is an error.
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

-- Drops the band indexes of a column (found by what they index, not by
-- name, so hand-made ones of the same form go too): those of one layout,
-- or of every layout when layout is NULL.
CREATE FUNCTION simhash_drop_bands(tbl regclass, col name DEFAULT 'fp', layout text DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    idx regclass;
BEGIN
    SELECT c.relowner INTO owner FROM pg_class c WHERE c.oid = tbl;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
    END IF;
    IF layout IS NOT NULL AND layout NOT IN ('4x16', '4x16c', '2x32') THEN
        RAISE EXCEPTION 'unknown band layout "%"', layout
            USING ERRCODE = '22023', HINT = 'The layouts are ''4x16'', ''4x16c'' and ''2x32''.';
    END IF;
    FOR idx IN
        SELECT b.index FROM @extschema@.simhash_band_indexes(tbl, col) b
        WHERE simhash_drop_bands.layout IS NULL OR b.layout = simhash_drop_bands.layout
        ORDER BY b.layout DESC, b.part, b.index::oid
    LOOP
        RETURN NEXT idx::text;
        EXECUTE format('DROP INDEX %s', idx);
    END LOOP;
END
$$;

---------------------------------------------------------------------------
-- Ingesting without near-duplicates: a near-unique constraint as a trigger.
--
--   CREATE TRIGGER docs_near_unique BEFORE INSERT OR UPDATE ON docs
--       FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error', 'id');
--
-- Arguments: the fingerprint column, k (0..11), 'error' (the default:
-- SQLSTATE 23505 like a unique violation, naming the existing row when the
-- inserting role could read it) or 'skip' (the row is silently dropped and
-- counted), and the key column named in errors (default 'id').
--
-- Like a unique index, it sees every row whoever inserts (row-level
-- security and privileges do not hide rows from it), rows of transactions
-- in progress (it waits for them to end) and rows committed after the
-- transaction's snapshot, so it works at every isolation level. On a
-- partitioned table it checks every partition. It probes the band indexes
-- (simhash_add_bands) directly, or scans a table that has none. Short
-- locks of its own, held from the check until the row is in, serialize
-- concurrent near-duplicates (src/guard.rs explains why they cannot cause
-- a deadlock by themselves).
---------------------------------------------------------------------------

CREATE FUNCTION simhash_near_unique() RETURNS trigger
    AS 'MODULE_PATHNAME', 'simhash_near_unique_wrapper'
    LANGUAGE C;

-- How many rows 'skip' triggers have dropped in this session; resets it.
CREATE FUNCTION simhash_skipped(reset boolean DEFAULT false) RETURNS bigint
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

-- An optional AFTER ... FOR EACH STATEMENT trigger that reports what a
-- statement skipped, as a NOTICE:
--   CREATE TRIGGER docs_near_unique_report AFTER INSERT OR UPDATE ON docs
--       FOR EACH STATEMENT EXECUTE FUNCTION simhash_near_unique_report();
CREATE FUNCTION simhash_near_unique_report() RETURNS trigger
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

-- One call for the guard: the band indexes (made if missing, as
-- simhash_add_bands does) and the near-unique trigger, named
-- <column>_near_unique; with 'skip', also the statement trigger that
-- reports what was skipped, <column>_near_unique_report. Run again to
-- change k or the action: the triggers are replaced. Returns the guard
-- trigger's name. On a Citus distributed table with more than one shard
-- it refuses (0A000): the guard would check one shard at a time. On a
-- reference table (or any Citus table with one shard) it guards each
-- node's copy, which holds every row.
--
-- Verified: with text_col, a candidate within k is a near-duplicate only
-- when simhash_similarity of the two rows' text_col is at least threshold
-- (default: simhash.similarity_threshold when the guard is made, kept in
-- the trigger's arguments). A row whose text is NULL is checked by its
-- fingerprint alone.
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

-- The rows of a batch that one-at-a-time guarded inserts in the batch's
-- order would skip for an earlier row of the batch: from the pairs
-- (later[i], earlier[i]) of neighbours, each skipped row with the first
-- kept earlier row it matched. For simhash_insert_new.
CREATE FUNCTION _simhash_skipped_in_order(later bigint[], earlier bigint[])
    RETURNS TABLE (skipped bigint, matched bigint)
    AS 'MODULE_PATHNAME', 'simhash_skipped_in_order_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The pairs within k of a batch (n[i], fp[i]): (later, earlier) by n,
-- with their distance, found in memory. For simhash_insert_new.
CREATE FUNCTION _simhash_near_pairs(n bigint[], fp bigint[], k integer)
    RETURNS TABLE (later bigint, earlier bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_near_pairs_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The rows of a batch (n[i], key[i], fp[i]) that one-at-a-time guarded
-- inserts in the order of n would skip, each with the key it matched (of
-- a row of query (key, fingerprint), the smallest, or of an earlier kept
-- batch row) and the distance: query is read once against the batch's
-- first copies held in memory. For simhash_insert_new.
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

-- Whether simhash_insert_new reads the target once rather than probe its
-- band indexes per batch row: the cheaper by estimate. A target in
-- several shards (Citus) is probed in each of them, and read through the
-- node that runs the load.
CREATE FUNCTION _simhash_load_scans(target_rows double precision, batch_rows double precision, k integer,
                                   shards integer DEFAULT 1)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_load_scans_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Set-based load without near-duplicates: inserts the rows of source (a
-- table or a view: for a query, make it a temporary view) into target, skipping each row within k of a row of
-- target or of an earlier kept row of source, in the order order_by names
-- (an expression over the source's columns; default: as the source
-- returns them). Exactly the rows that guarded inserts one at a time in
-- that order would keep. The source's columns that target has are
-- inserted; target's fingerprint column, when generated, is computed by
-- its own expression on the source's columns. With text_col, a candidate
-- counts only when the texts' simhash_similarity is at least threshold
-- (default simhash.similarity_threshold), as the verified guard does.
-- skipped_into, a table with columns (skipped bigint, matched bigint,
-- distance integer) or wider, gets the key of each skipped row with the
-- key it matched (of target, or of source). Target must have band indexes
-- that serve k (simhash_add_bands). The check against the target either
-- reads the target once against the batch held in memory or probes the
-- band indexes once per batch row: the cheaper by estimate, or as
-- simhash.load_check (auto, scan, probe) says; a verified load always
-- probes. On Citus the scan reads (key, fingerprint) of every shard
-- through the node that runs the load; the probe runs on the workers.
-- Exact copies within the batch (same
-- fingerprint, and same text when verifying) are settled by their first
-- row. Takes a SHARE ROW EXCLUSIVE lock on
-- target, so concurrent loads and inserts wait: no pair within k gets in
-- between the check and the insert. On a Citus table the check against
-- the target runs on the workers; the source's rows are fingerprinted and
-- deduplicated on the node that runs the call, which then inserts the rows
-- kept through Citus.
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
-- Verified near-duplicates: the texts decide what the fingerprint finds.
-- simhash_similarity: weighted containment of the character trigrams of
-- the two texts, normalized as the fingerprint normalizes them (NFKC,
-- lower case, traditional to simplified; each run of other characters one
-- space): the shared trigrams (each counted as often as the text with
-- fewer of it has it) over the trigrams of the text with fewer. Symmetric,
-- in [0, 1]; 1 for two texts without a word character, 0 for one such
-- and one other. Memory: at most about 26 MB whatever the texts.
--
-- Its COST is above that of hamming(fp, simhash($1)) (simhash's is 1000),
-- so that in a generic plan, where simhash($1) is evaluated per row, the
-- distance condition still runs first and the texts are compared only
-- for the rows within k (bench/verified.sh: with COST 1000 the verified
-- k = 11 query took 2.2x the unverified one; with 5000, 0.93x).
CREATE FUNCTION simhash_similarity(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_similarity_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 5000;

-- The rule of record: fingerprints within simhash.verify_k (default 11)
-- and simhash_similarity at least simhash.similarity_threshold (default
-- 0.71). A text without features is no one's near-duplicate. In a query
-- over a table, write the rule so that the band indexes find the
-- candidates:
--   WHERE fp <~> simhash($1) <= 11 AND simhash_similarity(body, $1) >= 0.71
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

-- Why a pair is or is not a near-duplicate, as a JSON document: the
-- distance, the similarity, the rule's settings and verdict, the
-- fingerprints, the stretches of each text the other lacks (characters,
-- 0-based, end excluded, with their text) and the top features that
-- moved the differing bits (the weight each text gives them, how many
-- differing bits each moved and how far).
CREATE FUNCTION simhash_explain(a text, b text, top integer DEFAULT 10) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'simhash_explain_text_wrapper'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 5000;

-- The session's simhash.similarity_threshold (0.71 where the library has
-- not defined it yet), for the defaults of the functions above.
CREATE FUNCTION _simhash_setting_threshold() RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN coalesce(nullif(current_setting('simhash.similarity_threshold', true), '')::double precision, 0.71);

---------------------------------------------------------------------------
-- Whole-table clustering: the connected components of "distance <= k".
-- Every row's key with its cluster's smallest key; rows with a NULL key
-- or fingerprint are left out, and so are rows alone in their cluster when
-- singletons is false. Progress is reported as a NOTICE every 5 seconds; a
-- cancel stops it at once and leaves nothing behind. Memory: see
-- simhash_clusters below.
---------------------------------------------------------------------------

CREATE FUNCTION simhash_clusters_query(query text, k integer, singletons boolean)
    RETURNS TABLE (id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'simhash_clusters_query_wrapper'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- Clustering a Citus distributed table on its workers
-- (simhash_core::scatter): each row goes to the k + 1 buckets of its
-- fingerprint's blocks (two fingerprints within k share one), each bucket
-- is clustered where it lands, and only the links of rows that have a
-- neighbour come back to be joined.
CREATE FUNCTION _simhash_bucket_keys(fp simhash64, k integer) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_bucket_keys_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION _simhash_bucket_links(keys bigint[], fps bigint[], k integer)
    RETURNS TABLE (id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'simhash_bucket_links_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION _simhash_join_links(query text)
    RETURNS TABLE (id bigint, cluster bigint)
    AS 'MODULE_PATHNAME', 'simhash_join_links_wrapper'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- On a hash-distributed Citus table the work runs on the workers through
-- an unlogged distributed work table, simhash_buckets_<pid>_<n>, made in
-- the table's schema (so the caller needs CREATE there) and dropped at the
-- end. Every other table is read by one backend: in memory, as
-- simhash_clusters_query does, when about 75 bytes a row fit in the
-- setting simhash.cluster_memory (default 1GB); else by the same buckets
-- grouped in one query, which PostgreSQL sorts or hashes within work_mem,
-- spilling to disk, and which holds in memory only one bucket at a time
-- and the links of rows that have a neighbour. The same clusters every way.
--
-- Verified: with text_col, the components of the graph whose edges are
-- the pairs within k whose texts have simhash_similarity at least
-- threshold (default simhash.similarity_threshold), found by a join that
-- the band indexes answer; one node only (0A000 on a distributed table).
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
