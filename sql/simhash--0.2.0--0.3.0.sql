-- simhash 0.2.0 -> 0.3.0: fingerprint definition version 3 becomes the
-- default. See the README's "Upgrading" for what to do with stored
-- fingerprints.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.3.0'" to load this file. \quit

-- Version 2 stays available under its own name, on the same C symbols that
-- computed simhash() and simhash_features() in 0.2.0.
CREATE FUNCTION simhash_v2(text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_v2_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION simhash_v2(text) IS
    'SimHash fingerprint, definition version 2 (extension 0.2): traditional-to-simplified folding, NFKC, lower case, jieba tokens, IDF weights (4 for unknown tokens), tf capped at 3, xxh3-64 features';

CREATE FUNCTION simhash_features_v2(text)
    RETURNS TABLE (token text, tf bigint, idf double precision,
                   weight double precision, hash simhash64)
    AS 'MODULE_PATHNAME', 'simhash_features_v2_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 100;

-- simhash() and simhash_features() move to version 3. Replacing (not
-- dropping) keeps every generated column, index and view that uses them.
CREATE OR REPLACE FUNCTION simhash(text) RETURNS simhash64
    AS 'MODULE_PATHNAME', 'simhash_v3_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;

COMMENT ON FUNCTION simhash(text) IS
    'SimHash fingerprint, definition version 3: NFKC, lower case, traditional-to-simplified folding; Han characters and the character trigrams of other words, each weighed by its count above chance; xxh3-64 features';

CREATE OR REPLACE FUNCTION simhash_features(text)
    RETURNS TABLE (token text, tf bigint, idf double precision,
                   weight double precision, hash simhash64)
    AS 'MODULE_PATHNAME', 'simhash_features_v3_text_wrapper'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000 ROWS 100;

-- Values stored by simhash() under 0.2.0 are version 2 and stay so until
-- recomputed: name every column, index and constraint that uses it.
DO $$
DECLARE
    users text;
BEGIN
    SELECT string_agg(what, ', ' ORDER BY what) INTO users
    FROM (
        SELECT DISTINCT CASE d.classid
            WHEN 'pg_attrdef'::regclass THEN
                (SELECT format('column %s.%I', ad.adrelid::regclass, a.attname)
                 FROM pg_attrdef ad
                 JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
                 WHERE ad.oid = d.objid)
            WHEN 'pg_class'::regclass THEN format('index %s', d.objid::regclass)
            WHEN 'pg_constraint'::regclass THEN
                (SELECT format('constraint %I on %s', c.conname, c.conrelid::regclass)
                 FROM pg_constraint c WHERE c.oid = d.objid)
            WHEN 'pg_rewrite'::regclass THEN
                (SELECT format('view %s', r.ev_class::regclass)
                 FROM pg_rewrite r WHERE r.oid = d.objid)
            ELSE pg_describe_object(d.classid, d.objid, d.objsubid)
        END AS what
        FROM pg_depend d
        WHERE d.refclassid = 'pg_proc'::regclass
          AND d.refobjid = '@extschema@.simhash(text)'::regprocedure
          AND d.deptype = 'n'
    ) s;
    IF users IS NOT NULL THEN
        RAISE WARNING 'simhash(text) now computes fingerprint definition version 3; values stored before hold version 2: %', users
            USING HINT = 'Recompute them: a generated column by an UPDATE of every row that sets its source column to itself (UPDATE docs SET body = body; band indexes follow), an index on an expression with simhash() by REINDEX INDEX. Until then compare stored values with simhash_v2(text).';
    END IF;
END
$$;
