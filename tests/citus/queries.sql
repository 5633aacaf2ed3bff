-- Distance queries on a Citus distributed table against the local oracle
-- (tests/citus/setup.sql). Every check prints "ok: ..." or stops the test.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;
\pset tuples_only on
\pset format unaligned

-- EXPLAIN output as text.
CREATE FUNCTION plan_of(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    plan text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || query LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN plan;
END $$;

-- Plain queries with the fingerprint and k as literals, every k 0..11, in
-- each form the rewrite knows (form: the condition, %1$s the fingerprint
-- literal, %2$s k): rows missing plus rows too many.
CREATE FUNCTION literal_mismatches(form text, op text DEFAULT '<=') RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    q record;
    got bigint[];
    want bigint[];
    bad bigint := 0;
BEGIN
    FOR q IN SELECT * FROM queries LOOP
        FOR k IN 0..11 LOOP
            EXECUTE 'SELECT array_agg(id ORDER BY id) FROM docs WHERE '
                || format(form, quote_literal(q.fp::text), k) INTO got;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = $1 AND dist %s $2', op)
                INTO want USING q.qid, k;
            IF got IS DISTINCT FROM want THEN
                RAISE WARNING 'query % k %: got % want %', q.qid, k, got, want;
                bad := bad + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN bad;
END $$;
SELECT expect('literal fp <~> q <= k, k = 0..11', literal_mismatches('fp <~> %1$s::simhash64 <= %2$s') = 0);
SELECT expect('literal hamming(fp, q) < k + 1', literal_mismatches('hamming(fp, %1$s::simhash64) < %2$s + 1') = 0);
SELECT expect('literal k >= q <~> fp (bigint bound)', literal_mismatches('%2$s::bigint >= %1$s::simhash64 <~> fp') = 0);

-- Equality: exactly the rows at distance k.
SELECT expect('fp <~> q = k on every k', literal_mismatches('fp <~> %1$s::simhash64 = %2$s', '=') = 0);

-- PL/pgSQL keeps plans with the fingerprint and k as parameters: custom
-- plans in the default mode, generic plans when forced.
CREATE FUNCTION near_ids(q simhash64, k int) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT id FROM docs WHERE fp <~> q <= k;
END $$;
CREATE FUNCTION plpgsql_mismatches() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    bad bigint := 0;
    q record;
BEGIN
    FOR q IN SELECT * FROM queries LOOP
        FOR k IN 0..11 LOOP
            IF (SELECT array_agg(id ORDER BY id) FROM near_ids(q.fp, k) id)
               IS DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM oracle WHERE qid = q.qid AND dist <= k) THEN
                bad := bad + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN bad;
END $$;
SELECT expect('PL/pgSQL parameters, custom plans', plpgsql_mismatches() = 0);
SET plan_cache_mode = force_generic_plan;
SELECT expect('PL/pgSQL parameters, generic plans', plpgsql_mismatches() = 0);

-- A SQL function's body is planned without its arguments' values: a
-- generic plan on every call.
CREATE FUNCTION near_count(q simhash64, k int) RETURNS bigint LANGUAGE sql
AS $$ SELECT count(*) FROM docs WHERE fp <~> q <= k $$;
SELECT expect('SQL function (generic plan)',
    (SELECT count(*) FROM queries q, generate_series(0, 11) k
     WHERE near_count(q.fp, k) <> (SELECT count(*) FROM oracle o WHERE o.qid = q.qid AND o.dist <= k)) = 0);

-- PREPARE / EXECUTE with a forced generic plan: the deferred plan.
PREPARE near(simhash64, int) AS SELECT id FROM docs WHERE fp <~> $1 <= $2;
CREATE TEMP TABLE got AS EXECUTE near('0000000000000000', 0);
SELECT expect('EXECUTE, generic plan, no rows', (SELECT count(*) FROM got) = 0);
SELECT 'CREATE TEMP TABLE got_' || qid || ' AS EXECUTE near(' || quote_literal(fp::text) || ', 7)'
FROM queries WHERE qid IN (1, 7, 101, 201) \gexec
SELECT expect('EXECUTE, generic plan, k = 7',
    (SELECT count(*) FROM (SELECT 1 AS qid, id FROM got_1 UNION ALL SELECT 7, id FROM got_7
                           UNION ALL SELECT 101, id FROM got_101 UNION ALL SELECT 201, id FROM got_201) g
     FULL JOIN (SELECT qid, id FROM oracle WHERE qid IN (1, 7, 101, 201) AND dist <= 7) o USING (qid, id)
     WHERE g.id IS NULL OR o.id IS NULL) = 0);
SELECT expect('EXPLAIN EXECUTE of the generic plan shows the deferred plan',
    plan_of($$EXECUTE near('0123456789abcdef', 3)$$) ~ 'Custom Scan \(Simhash Deferred Plan\)');
RESET plan_cache_mode;

-- LATERAL batches: the queries from a local table, a reference table and a
-- table co-located with docs. Citus joins a distributed table to another
-- one only on their distribution columns, so the batch from a distributed
-- table reads it through a materialized CTE first (the documented recipe).
CREATE FUNCTION batch_mismatches(source text, k int, prefix text DEFAULT '') RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    got bigint[];
    want bigint[];
BEGIN
    EXECUTE format(
        '%s SELECT array_agg(q.qid * 1000000 + d.id ORDER BY q.qid, d.id) FROM %s q
             CROSS JOIN LATERAL (SELECT id FROM docs WHERE fp <~> q.fp <= %s) d', prefix, source, k) INTO got;
    SELECT array_agg(qid * 1000000 + id ORDER BY qid, id) INTO want FROM oracle WHERE dist <= k;
    RETURN coalesce(cardinality(ARRAY(SELECT unnest(got) EXCEPT SELECT unnest(want))), 0)
         + coalesce(cardinality(ARRAY(SELECT unnest(want) EXCEPT SELECT unnest(got))), 0)
         + abs(coalesce(cardinality(got), 0) - coalesce(cardinality(want), 0));
END $$;
SELECT expect('LATERAL batch from a local table, k = 3', batch_mismatches('queries', 3) = 0);
SELECT expect('LATERAL batch from a local table, k = 11', batch_mismatches('queries', 11) = 0);
SELECT expect('LATERAL batch from a reference table, k = 3', batch_mismatches('queries_ref', 3) = 0);
SELECT expect('LATERAL batch from a reference table, k = 7', batch_mismatches('queries_ref', 7) = 0);
SELECT expect('LATERAL batch from a co-located table (materialized CTE), k = 3',
    batch_mismatches('m', 3, 'WITH m AS MATERIALIZED (SELECT * FROM queries_co)') = 0);
SELECT expect('LATERAL batch from a co-located table (materialized CTE), k = 7',
    batch_mismatches('m', 7, 'WITH m AS MATERIALIZED (SELECT * FROM queries_co)') = 0);

-- EXPLAIN: band index scans on every shard, no scan of a whole shard.
SET citus.explain_all_tasks = on;
SELECT plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3$$) AS plan3 \gset
SELECT plan_of($$SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 7$$) AS plan7 \gset
SELECT expect('k = 3: four band index scans on each of the 8 shards',
    (SELECT count(*) FROM regexp_matches(:'plan3', 'Index Scan on docs_fp_band[0-3]_[0-9]+', 'g')) = 32, :'plan3');
SELECT expect('k = 7: four band index scans on each of the 8 shards',
    (SELECT count(*) FROM regexp_matches(:'plan7', 'Index Scan on docs_fp_band[0-3]_[0-9]+', 'g')) = 32, :'plan7');
SELECT expect('no shard is scanned whole', :'plan3' !~ 'Seq Scan' AND :'plan7' !~ 'Seq Scan');
-- Citus sends each shard the planned condition: the band equalities and
-- the distance comparison. The worker's parse-time rewrite turns that
-- comparison into simhash_within again, whose band conditions are the ones
-- already there: still exactly four index scans per shard (counted above).
SELECT expect('each shard query keeps the exact distance condition',
    (SELECT count(*) FROM regexp_matches(:'plan3', '\n *Query: SELECT [^\n]*hamming\(fp, ''0123456789abcdef''::public.simhash64\) OPERATOR\(pg_catalog.<=\) 3\)', 'g')) = 8, :'plan3');
RESET citus.explain_all_tasks;
