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
