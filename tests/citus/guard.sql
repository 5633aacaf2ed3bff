-- The near-unique guard on Citus: on a distributed table with more than
-- one shard it would see one shard at a time, so it refuses to run there
-- with 0A000 and a HINT, instead of letting near-duplicates in. On a
-- reference table every node's copy holds every row: the guard runs on
-- each copy, and every copy keeps the rows a local guarded table keeps.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = citus_test, public;
SET citus.enable_unsafe_triggers = on;

CREATE TABLE guarded (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('guarded', 'id') \gset
CREATE TABLE guarded_ref (id bigint PRIMARY KEY, fp simhash64);
SELECT create_reference_table('guarded_ref') \gset
CREATE TRIGGER near_unique BEFORE INSERT OR UPDATE ON guarded
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
CREATE TRIGGER near_unique BEFORE INSERT OR UPDATE ON guarded_ref
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');

DO $$
DECLARE
    t text;
    state text;
    msg text;
BEGIN
    FOREACH t IN ARRAY ARRAY['guarded'] LOOP
        BEGIN
            EXECUTE format('INSERT INTO %I VALUES (1, %L)', t, '0123456789abcdef');
            RAISE EXCEPTION 'the guard ran on Citus table %', t;
        EXCEPTION WHEN feature_not_supported THEN
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
            IF msg NOT LIKE 'simhash_near_unique() cannot guard Citus shard%' THEN
                RAISE EXCEPTION 'table %: unexpected 0A000: %', t, msg;
            END IF;
        END;
    END LOOP;
    IF (SELECT count(*) FROM guarded) <> 0 THEN
        RAISE EXCEPTION 'rows went in';
    END IF;
END
$$;
-- The one-call set-up refuses a distributed table at once.
DO $$
BEGIN
    PERFORM simhash_add_guard('guarded'::regclass);
    RAISE EXCEPTION 'simhash_add_guard accepted a distributed table';
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
DROP TABLE guarded, guarded_ref;

-- A reference table, guarded with the one call, beside a local table with
-- the same guard: the same rows in, the same refused, the same skipped.
RESET citus.enable_unsafe_triggers;
CREATE TABLE ref_docs (id bigint PRIMARY KEY, fp simhash64);
SELECT create_reference_table('ref_docs') \gset
CREATE TABLE ref_local (id bigint PRIMARY KEY, fp simhash64);
SELECT simhash_add_guard('ref_docs', 'fp', 3) AS guard \gset
SELECT simhash_add_guard('ref_local', 'fp', 3) AS guard \gset
-- The set-up left citus.enable_unsafe_triggers as it was.
DO $$
BEGIN
    IF current_setting('citus.enable_unsafe_triggers') <> 'off' THEN
        RAISE EXCEPTION 'simhash_add_guard left citus.enable_unsafe_triggers %', current_setting('citus.enable_unsafe_triggers');
    END IF;
END
$$;
-- A series: 60 base fingerprints and near-copies of them at distances 1
-- to 6, in an order that mixes them.
CREATE TABLE ref_series AS
SELECT row_number() OVER (ORDER BY hashint8(b * 10 + d)) AS id,
       (hashint8extended(b, 5) # ((1::bigint << d) - 1))::simhash64 AS fp
FROM generate_series(1, 60) b, generate_series(0, 6) d;

-- Error mode, row by row: each insert alone, a refusal is 23505.
DO $$
DECLARE
    r record;
    t text;
    refused_ref bigint := 0;
    refused_local bigint := 0;
BEGIN
    FOR r IN SELECT * FROM ref_series ORDER BY id LOOP
        FOREACH t IN ARRAY ARRAY['ref_docs', 'ref_local'] LOOP
            BEGIN
                EXECUTE format('INSERT INTO %I VALUES ($1, $2)', t) USING r.id, r.fp;
            EXCEPTION WHEN unique_violation THEN
                IF t = 'ref_docs' THEN refused_ref := refused_ref + 1; ELSE refused_local := refused_local + 1; END IF;
            END;
        END LOOP;
    END LOOP;
    IF refused_ref = 0 OR refused_ref <> refused_local THEN
        RAISE EXCEPTION 'reference table refused % rows, the local table %', refused_ref, refused_local;
    END IF;
    IF EXISTS (SELECT id FROM ref_docs EXCEPT SELECT id FROM ref_local)
       OR EXISTS (SELECT id FROM ref_local EXCEPT SELECT id FROM ref_docs) THEN
        RAISE EXCEPTION 'the reference table kept other rows than the local table';
    END IF;
    IF EXISTS (SELECT FROM ref_docs a JOIN ref_docs b ON a.id < b.id AND a.fp <~> b.fp <= 3) THEN
        RAISE EXCEPTION 'a pair within 3 in the reference table';
    END IF;
END
$$;
-- The refusal comes through the coordinator named as the table has the
-- guard (Citus names each copy's trigger with the shard id after it), and
-- with its DETAIL. Citus passes on no table, schema or constraint field
-- of a worker's error (its own unique violations neither).
DO $$
DECLARE
    m text;
    d text;
BEGIN
    INSERT INTO ref_docs SELECT 3000001, fp FROM ref_docs ORDER BY id LIMIT 1;
    RAISE EXCEPTION 'a copy went into the reference table';
EXCEPTION WHEN unique_violation THEN
    GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
    IF m <> 'duplicate key value violates near-unique constraint "fp_near_unique"'
       OR d NOT LIKE 'Key (fp)=(%) is within distance 0 of (fp)=(%)%' THEN
        RAISE EXCEPTION 'the refusal came as: % / %', m, d;
    END IF;
END
$$;
-- Every node's copy holds the same rows.
DO $$
BEGIN
    IF (SELECT count(DISTINCT result) FROM run_command_on_placements('ref_docs',
            'SELECT string_agg(id::text, '','' ORDER BY id) FROM %s')) <> 1
       OR (SELECT count(*) FROM run_command_on_placements('ref_docs', 'SELECT 1')) < 2 THEN
        RAISE EXCEPTION 'the copies of the reference table differ';
    END IF;
END
$$;
-- A role that may only insert: the guard still sees every row (23505 on
-- a near-copy), and its own row goes in.
DROP ROLE IF EXISTS citus_guard_writer;
CREATE ROLE citus_guard_writer LOGIN;
GRANT USAGE ON SCHEMA citus_test TO citus_guard_writer;
GRANT INSERT ON ref_docs TO citus_guard_writer;
SET ROLE citus_guard_writer;
DO $$
BEGIN
    INSERT INTO ref_docs VALUES (2000001, 'c3c3c3c3c3c3c3c3');
    BEGIN
        INSERT INTO ref_docs VALUES (2000002, 'c3c3c3c3c3c3c3c2');
        RAISE EXCEPTION 'a near-copy went in for an insert-only role';
    EXCEPTION WHEN unique_violation THEN
        NULL;
    END;
END
$$;
RESET ROLE;
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM ref_docs WHERE id = 2000001) OR EXISTS (SELECT FROM ref_docs WHERE id = 2000002) THEN
        RAISE EXCEPTION 'the insert-only role''s rows are not as they should be';
    END IF;
END
$$;
DELETE FROM ref_docs WHERE id = 2000001;
REVOKE ALL ON ref_docs FROM citus_guard_writer;
REVOKE ALL ON SCHEMA citus_test FROM citus_guard_writer;
DROP ROLE citus_guard_writer;
-- A rolled-back row leaves nothing behind: its near-copy goes in after.
BEGIN;
INSERT INTO ref_docs VALUES (1000001, 'f0f0f0f0f0f0f0f0');
ROLLBACK;
INSERT INTO ref_docs VALUES (1000002, 'f0f0f0f0f0f0f0f1');

-- Skip mode, one statement of many rows and COPY: the same rows kept as
-- on the local table, the rest skipped without an error.
TRUNCATE ref_docs, ref_local;
SELECT simhash_add_guard('ref_docs', 'fp', 3, 'skip') AS guard \gset
SELECT simhash_add_guard('ref_local', 'fp', 3, 'skip') AS guard \gset
INSERT INTO ref_docs SELECT * FROM ref_series WHERE id <= 200 ORDER BY id;
INSERT INTO ref_local SELECT * FROM ref_series WHERE id <= 200 ORDER BY id;
COPY ref_docs FROM STDIN;
900001	0123456789abcdef
900002	0123456789abcdee
900003	fedcba9876543210
\.
COPY ref_local FROM STDIN;
900001	0123456789abcdef
900002	0123456789abcdee
900003	fedcba9876543210
\.
DO $$
BEGIN
    IF (SELECT count(*) FROM ref_docs) >= 203 OR NOT EXISTS (SELECT FROM ref_docs WHERE id = 900003)
       OR EXISTS (SELECT FROM ref_docs WHERE id = 900002) THEN
        RAISE EXCEPTION 'skip mode on the reference table: % rows', (SELECT count(*) FROM ref_docs);
    END IF;
    IF EXISTS (SELECT id FROM ref_docs EXCEPT SELECT id FROM ref_local)
       OR EXISTS (SELECT id FROM ref_local EXCEPT SELECT id FROM ref_docs) THEN
        RAISE EXCEPTION 'skip mode: the reference table kept other rows than the local table';
    END IF;
    IF (SELECT count(DISTINCT result) FROM run_command_on_placements('ref_docs',
            'SELECT string_agg(id::text, '','' ORDER BY id) FROM %s')) <> 1 THEN
        RAISE EXCEPTION 'skip mode: the copies of the reference table differ';
    END IF;
END
$$;
DROP TABLE ref_docs, ref_local, ref_series;
