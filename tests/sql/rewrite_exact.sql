-- The rewrite never changes an answer: whatever the type of the bound,
-- literal or parameter, custom or generic plan, and whatever the operand,
-- a distance condition returns what the plain integer comparison returns.

-- Row g (0..64) is the query value with its g lowest bits flipped, so it
-- is exactly at distance g; 3000 hashed rows are far from it.
CREATE TABLE bnd (id int PRIMARY KEY, fp simhash64);
INSERT INTO bnd SELECT g, ('0123456789abcdef'::simhash64::bigint
                           # CASE WHEN g = 64 THEN -1 ELSE ~((-1)::bigint << g) END)::simhash64
FROM generate_series(0, 64) g;
INSERT INTO bnd SELECT 1000 + g, hashint8extended(g, 99)::simhash64 FROM generate_series(1, 3000) g;
SELECT count(*) FROM simhash_add_bands('bnd', 'fp');
ANALYZE bnd;

-- How a condition ends: its row count, or its SQLSTATE.
CREATE FUNCTION answer(cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM bnd WHERE ' || cond INTO n;
    RETURN n::text;
EXCEPTION WHEN others THEN
    RETURN SQLSTATE;
END $$;

-- Every comparison, bound on either side, against the same comparison of
-- `(fp <~> q) + 0`, which the rewrite does not touch.
CREATE TABLE forms AS
SELECT op, bound, side,
       answer(CASE side WHEN 'left' THEN format('fp <~> %L %s %s', '0123456789abcdef', op, bound)
                        ELSE format('%s %s fp <~> %L', bound, op, '0123456789abcdef') END) AS rewritten,
       answer(CASE side WHEN 'left' THEN format('(fp <~> %L) + 0 %s %s', '0123456789abcdef', op, bound)
                        ELSE format('%s %s (fp <~> %L) + 0', bound, op, '0123456789abcdef') END) AS plain
FROM (VALUES ('<'), ('<='), ('='), ('>='), ('>')) o(op),
     (VALUES ('(-2147483648)'), ('(-1)'), ('0'), ('1'), ('3'), ('4'), ('11'), ('12'), ('63'), ('64'),
             ('65'), ('2147483647'), ('NULL::int'),
             ('3::smallint'), ('(-1)::smallint'), ('0::smallint'), ('32767::smallint'),
             ('3::bigint'), ('0::bigint'), ('(-9223372036854775808)::bigint'), ('9223372036854775807::bigint'),
             ('3.5'), ('3.0'), ('(-0.5)'), ('0.5'), ('11.999'), ('''NaN''::numeric'), ('''Infinity''::numeric'),
             ('''-Infinity''::numeric'), ('3.5::float8'), ('''NaN''::float8'), ('''Infinity''::float8'),
             ('1e300::float8'), ('(-1e300)::float8'), ('3.5::real'), ('2::real')) b(bound),
     (VALUES ('left'), ('right')) s(side);
SELECT count(*) AS forms, count(*) FILTER (WHERE rewritten = plain) AS agreeing,
       count(*) FILTER (WHERE rewritten !~ '^\d+$') AS errors
FROM forms;
SELECT * FROM forms WHERE rewritten IS DISTINCT FROM plain ORDER BY 1, 2, 3;
-- A sample, to read: below zero nothing, 64 and beyond everything.
SELECT bound, rewritten AS "fp <~> q < bound" FROM forms
WHERE op = '<' AND side = 'left' AND bound IN ('(-2147483648)', '0', '4', '3.5', '65', '''NaN''::numeric')
ORDER BY rewritten::int, bound;

-- Parameters: the same answers as the literals, under custom and generic
-- plans (a negative bound is not an error, INT_MIN does not overflow).
PREPARE below(int) AS SELECT count(*) FROM bnd WHERE fp <~> '0123456789abcdef' < $1;
PREPARE at_most(int) AS SELECT count(*) FROM bnd WHERE fp <~> '0123456789abcdef' <= $1;
PREPARE below_small(smallint) AS SELECT count(*) FROM bnd WHERE fp <~> '0123456789abcdef' < $1;
PREPARE at_most_big(bigint) AS SELECT count(*) FROM bnd WHERE fp <~> '0123456789abcdef' <= $1;
PREPARE below_num(numeric) AS SELECT count(*) FROM bnd WHERE fp <~> '0123456789abcdef' < $1;
CREATE TABLE params (mode text, stmt text, arg text, n bigint);
CREATE FUNCTION run_params(mode text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n bigint;
BEGIN
    PERFORM set_config('plan_cache_mode', mode, true);
    FOR s IN SELECT * FROM (VALUES
        ('below', '0'), ('below', '-1'), ('below', '-2147483648'), ('below', '4'), ('below', '2147483647'),
        ('at_most', '-1'), ('at_most', '-2147483648'), ('at_most', '3'), ('at_most', '11'), ('at_most', '64'),
        ('below_small', '0'), ('below_small', '-32768'), ('below_small', '5'),
        ('at_most_big', '-9223372036854775808'), ('at_most_big', '7'), ('at_most_big', '9223372036854775807'),
        ('below_num', '0'), ('below_num', '3.5'), ('below_num', 'NaN')) v(stmt, arg)
    LOOP
        EXECUTE format('EXECUTE %I(%L)', s.stmt, s.arg) INTO n;
        INSERT INTO params VALUES (mode, s.stmt, s.arg, n);
    END LOOP;
END $$;
SELECT run_params('force_custom_plan');
SELECT run_params('force_generic_plan');
SELECT c.stmt, c.arg, c.n AS custom, g.n AS generic
FROM params c JOIN params g USING (stmt, arg)
WHERE c.mode = 'force_custom_plan' AND g.mode = 'force_generic_plan'
ORDER BY c.stmt, c.arg::numeric;
DEALLOCATE ALL;

-- A volatile operand is evaluated once per row, as without the rewrite:
-- a random row's own fingerprint is always at distance 0 of exactly one
-- row (every fingerprint here is distinct).
CREATE FUNCTION random_row_matches() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n FROM bnd WHERE fp <~> (SELECT fp FROM bnd ORDER BY random() LIMIT 1) <= 0;
    RETURN n;
END $$;
SELECT count(*) FILTER (WHERE n <> 1) AS wrong_answers
FROM (SELECT random_row_matches() AS n FROM generate_series(1, 25)) s;
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE n <> 1) AS wrong_answers_indexes_preferred
FROM (SELECT random_row_matches() AS n FROM generate_series(1, 25)) s;
RESET enable_seqscan;
SELECT count(*) FILTER (WHERE (SELECT count(*) FROM bnd b
                               WHERE b.fp <~> (SELECT fp FROM bnd ORDER BY random() LIMIT 1) = 0) <> 1)
       AS wrong_answers_equality
FROM generate_series(1, 25);
-- A stable operand keeps the indexes.
EXPLAIN (COSTS OFF) SELECT id FROM bnd WHERE fp <~> (SELECT fp FROM bnd WHERE id = 7) <= 3;
SELECT id FROM bnd WHERE fp <~> (SELECT fp FROM bnd WHERE id = 7) <= 0;

DROP TABLE bnd, forms, params;
DROP FUNCTION answer(text), run_params(text), random_row_matches();
