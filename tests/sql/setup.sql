-- Runs first: the extension, and a helper the other files use.
CREATE EXTENSION simhash;

-- Runs a statement and says how it ended: 'ok' or 'SQLSTATE message', so
-- that a table of bad inputs shows each one's error code on one line.
CREATE FUNCTION outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN others THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- Whether the plan of a query has a node whose line contains `node`.
CREATE FUNCTION plan_has(query text, node text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF strpos(line, node) > 0 THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END $$;
GRANT EXECUTE ON FUNCTION plan_has(text, text) TO PUBLIC;
