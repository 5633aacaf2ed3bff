-- Helpers of bench/band_index_full.sh, loaded into its database on every run.
-- Dropped and made again, so reloading is harmless.

DROP ROUTINE IF EXISTS band_bench_elapsed, band_bench_run, band_bench_check, band_bench_exact;

-- Where the measurements go: one row per timed execution, and one row per
-- single figure (build time, sizes, insert rates) of a table size n.
CREATE TABLE IF NOT EXISTS band_bench_samples (
    n bigint, variant text, k int, qid int, pass int, ms double precision, nrows bigint
);
CREATE TABLE IF NOT EXISTS band_bench_results (
    n bigint, metric text, value double precision
);

-- Seconds a statement takes, timed inside the server.
CREATE FUNCTION band_bench_elapsed(stmt text) RETURNS double precision
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE stmt;
    RETURN extract(epoch FROM clock_timestamp() - t0);
END
$$;

-- Runs the session's prepared statement `stmt` once per query of qids
-- (in qid order), `warmup` passes untimed and then `passes` passes timed,
-- each execution on its own: clock_timestamp() right before and after
-- `EXECUTE stmt(q)`. The query goes in as a literal simhash64, cast on with
-- `arg_cast` (e.g. '::bigint' for a statement taking a bigint). The
-- overhead of the dynamic EXECUTE itself is a few microseconds.
CREATE PROCEDURE band_bench_run(
    n bigint, variant text, k int, stmt text, qids int[],
    passes int, warmup int, arg_cast text DEFAULT ''
)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    t0 timestamptz;
    t1 timestamptz;
    cnt bigint;
    sql text;
BEGIN
    FOR pass IN 1 - warmup .. passes LOOP
        FOR r IN SELECT b.qid, b.q FROM band_bench_queries b
                 WHERE b.qid = ANY (qids) ORDER BY b.qid LOOP
            sql := format('EXECUTE %I(%L::simhash64%s)', stmt, r.q, arg_cast);
            t0 := clock_timestamp();
            EXECUTE sql;
            t1 := clock_timestamp();
            GET DIAGNOSTICS cnt = ROW_COUNT;
            IF pass >= 1 THEN
                INSERT INTO band_bench_samples
                VALUES (n, variant, k, r.qid, pass,
                        extract(epoch FROM t1 - t0) * 1000, cnt);
            END IF;
        END LOOP;
    END LOOP;
END
$$;

-- Fails unless `variant` returned as many rows as `reference` for every
-- (k, query) both ran; returns how many pairs were compared.
CREATE FUNCTION band_bench_check(size bigint, tested text, reference text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    pairs bigint;
    bad bigint;
BEGIN
    SELECT count(*), count(*) FILTER (WHERE a.nrows <> b.nrows) INTO pairs, bad
    FROM (SELECT s.k, s.qid, min(s.nrows) AS nrows FROM band_bench_samples s
          WHERE s.n = size AND s.variant = tested GROUP BY s.k, s.qid) a
    JOIN (SELECT s.k, s.qid, min(s.nrows) AS nrows FROM band_bench_samples s
          WHERE s.n = size AND s.variant = reference GROUP BY s.k, s.qid) b USING (k, qid);
    IF pairs = 0 OR bad > 0 THEN
        RAISE EXCEPTION '% and % disagree on % of % (k, query) pairs', tested, reference, bad, pairs;
    END IF;
    RETURN pairs;
END
$$;

-- The layout each variant had and its index bytes per row.
CREATE TABLE IF NOT EXISTS band_bench_layouts (
    n bigint, variant text, layout text, index_bytes_per_row double precision
);

-- Fails unless the index answers every query of band_bench_queries at
-- each k of ks (default 3, 7 and 11) with exactly the ids of band_bench_truth (the scan's:
-- every row within 11 of each query, with its distance); returns how many
-- (k, query) pairs were compared. Each query is planned with its k known,
-- so it probes the table's layout wherever that serves k.
CREATE FUNCTION band_bench_exact(ks int[] DEFAULT '{3,7,11}') RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    got bigint[];
    want bigint[];
    pairs bigint := 0;
    bad bigint := 0;
BEGIN
    FOR r IN SELECT b.qid, b.q, k FROM band_bench_queries b, unnest(ks) k ORDER BY 1, 3 LOOP
        EXECUTE 'SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM docs WHERE fp <~> $1 <= $2'
            INTO got USING r.q, r.k;
        SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') INTO want
        FROM band_bench_truth t WHERE t.qid = r.qid AND t.dist <= r.k;
        pairs := pairs + 1;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
            RAISE WARNING 'query % at k = %: % rows, the scan %', r.qid, r.k, cardinality(got), cardinality(want);
        END IF;
    END LOOP;
    IF bad > 0 THEN
        RAISE EXCEPTION 'the index and the scan disagree on % of % (k, query) pairs', bad, pairs;
    END IF;
    RETURN pairs;
END
$$;
