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
