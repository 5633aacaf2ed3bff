-- The near-unique guard on Citus: on a distributed (or reference) table
-- it would see one shard (or one node's copy) at a time, so it refuses to
-- run there with 0A000 and a HINT, instead of letting near-duplicates in.
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
    FOREACH t IN ARRAY ARRAY['guarded', 'guarded_ref'] LOOP
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
    IF (SELECT count(*) FROM guarded) + (SELECT count(*) FROM guarded_ref) <> 0 THEN
        RAISE EXCEPTION 'rows went in';
    END IF;
END
$$;
-- The one-call set-up refuses a distributed or reference table at once.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['guarded', 'guarded_ref'] LOOP
        BEGIN
            PERFORM simhash_add_guard(t::regclass);
            RAISE EXCEPTION 'simhash_add_guard accepted Citus table %', t;
        EXCEPTION WHEN feature_not_supported THEN
            NULL;
        END;
    END LOOP;
END
$$;
DROP TABLE guarded, guarded_ref;
