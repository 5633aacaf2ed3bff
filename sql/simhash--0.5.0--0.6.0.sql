-- simhash 0.5.0 -> 0.6.0: the near-unique guard rebuilt in the library.
-- No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.6.0'" to load this file. \quit

-- simhash_near_unique() was PL/pgSQL: a query run as the inserting role
-- (row-level security hid rows from it, an INSERT-only role got 42501),
-- one partition at a time, under advisory locks shared with the
-- application's and held to the end of the transaction. It is now a C
-- trigger function that checks like a unique index (src/guard.rs).
-- Existing triggers point at this function's OID, which CREATE OR
-- REPLACE keeps: they use the new guard from the next statement on, with
-- the same arguments.
CREATE OR REPLACE FUNCTION simhash_near_unique() RETURNS trigger
    AS 'MODULE_PATHNAME', 'simhash_near_unique_wrapper'
    LANGUAGE C;

-- One call for the guard: the band indexes (made if missing, as
-- simhash_add_bands does) and the near-unique trigger, named
-- <column>_near_unique; with 'skip', also the statement trigger that
-- reports what was skipped, <column>_near_unique_report. Run again to
-- change k or the action: the triggers are replaced. Returns the guard
-- trigger's name. On a Citus distributed or reference table it refuses
-- (0A000): the guard would check one shard at a time.
CREATE FUNCTION simhash_add_guard(tbl regclass, col name DEFAULT 'fp', k integer DEFAULT 3,
                                  on_conflict text DEFAULT 'error', key_col name DEFAULT 'id')
    RETURNS name
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner oid;
    distributed boolean := false;
    guard name := left(col, 40) || '_near_unique';
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
    -- Checks the column and makes the indexes that are missing.
    PERFORM @extschema@.simhash_add_bands(tbl, col);
    EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION @extschema@.simhash_near_unique(%L, %L, %L, %L)',
                   guard, tbl, col, k, lower(on_conflict), key_col);
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
