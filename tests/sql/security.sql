-- search_path safety: no object of the extension runs a function or an
-- operator it finds on the caller's search_path. A hostile role plants
-- look-alikes of what the extension's SQL and PL/pgSQL call (exact
-- signatures, which beat pg_catalog's variadic and polymorphic ones) in a
-- schema that a superuser's search_path lists ahead of pg_catalog; then
-- the superuser runs every entry point. Every plant logs its call: the log
-- must stay empty.
CREATE ROLE simhash_hostile;
CREATE SCHEMA hostile AUTHORIZATION simhash_hostile;
CREATE TABLE hostile.calls (what text);
GRANT INSERT ON hostile.calls TO PUBLIC;
SET ROLE simhash_hostile;
CREATE FUNCTION hostile.format(text, name, name, regclass, name) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('format(text, name, name, regclass, name)');
    RETURN pg_catalog.format($1, $2, $3, $4, $5);
END $$;
CREATE FUNCTION hostile.format(text, name, regclass, name) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('format(text, name, regclass, name)');
    RETURN pg_catalog.format($1, $2, $3, $4);
END $$;
CREATE FUNCTION hostile.length(bit) RETURNS integer
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('length(bit)');
    RETURN pg_catalog.length($1);
END $$;
CREATE FUNCTION hostile.current_setting(text, boolean) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('current_setting(text, boolean)');
    RETURN pg_catalog.current_setting($1, $2);
END $$;
CREATE FUNCTION hostile.set_config(text, text, boolean) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('set_config(text, text, boolean)');
    RETURN pg_catalog.set_config($1, $2, $3);
END $$;
CREATE FUNCTION hostile.nullif(text, text) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('nullif(text, text)');
    RETURN pg_catalog.nullif($1, $2);
END $$;
CREATE FUNCTION hostile.int4_eq(integer, integer) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('integer = integer');
    RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR hostile.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = hostile.int4_eq);
CREATE FUNCTION hostile.int4_le(integer, integer) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('integer <= integer');
    RETURN $1 OPERATOR(pg_catalog.<=) $2;
END $$;
CREATE OPERATOR hostile.<= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = hostile.int4_le);
CREATE FUNCTION hostile.text_eq(text, text) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('text = text');
    RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.text_eq);
CREATE FUNCTION hostile.int8_pl(bigint, bigint) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO hostile.calls VALUES ('bigint + bigint');
    RETURN $1 OPERATOR(pg_catalog.+) $2;
END $$;
CREATE OPERATOR hostile.+ (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.int8_pl);
RESET ROLE;

-- The superuser's objects, made with an ordinary path.
CREATE TABLE sec_docs (id bigint PRIMARY KEY, body text,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE TABLE sec_bits (id int, bits bit(64), short bit(3));
INSERT INTO sec_bits VALUES (1, x'0123456789abcdef', b'101');
CREATE TABLE sec_batch (id bigint, body text);
INSERT INTO sec_batch VALUES (3, '国务院总理今天会见了来访的日本客人，双方交换了意见。'),
                             (4, '上海明天有小雨，气温比今天低五度左右。');

-- Every entry point, with the hostile schema first and pg_catalog after it.
SET search_path = hostile, public, pg_catalog;
SELECT bits::simhash64 AS from_bit, bits::simhash64::bit(64) = bits AS round_trip FROM sec_bits;
SELECT outcome('SELECT short::simhash64 FROM sec_bits');
SELECT '0123456789abcdef'::simhash64::bigint::simhash64 AS via_bigint;
SELECT simhash('北京今天天气很好') IS NOT NULL AS v3,
       simhash_v2('北京今天天气很好') IS NOT NULL AS v2,
       simhash_v1('北京今天天气很好') IS NOT NULL AS v1;
SELECT count(*) > 0 AS features FROM simhash_features('北京今天天气很好');
SELECT count(*) > 0 AS features_v2 FROM simhash_features_v2('北京今天天气很好');
SELECT count(*) > 0 AS features_v1 FROM simhash_features_v1('北京今天天气很好');
SELECT hamming('0123456789abcdef', '0123456789abcdee') AS hamming,
       '0123456789abcdef'::simhash64 <~> '0123456789abcdee' AS operator,
       simhash_band('0123456789abcdef', 1) AS band,
       cardinality(simhash_band_neighbors('0123456789abcdef', 1, 5)) AS neighbors,
       simhash_within('0123456789abcdef', '0123456789abcdee', 1) AS within;
SELECT count(*) AS band_indexes FROM simhash_add_bands('sec_docs', 'fp');
CREATE TRIGGER sec_near_unique BEFORE INSERT OR UPDATE ON sec_docs
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');
CREATE TRIGGER sec_near_unique_report AFTER INSERT OR UPDATE ON sec_docs
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_near_unique_report();
INSERT INTO sec_docs (id, body) VALUES (1, '国务院总理今天会见了来访的日本客人，双方交换了意见。'),
                                      (2, '国务院总理今天会见了来访的日本客人，双方交换了意见！');
SELECT simhash_skipped() AS skipped_after_report, simhash_skipped(true) AS reset;
SELECT count(*) AS clustered FROM simhash_clusters('sec_docs', 'fp', 3);
SELECT count(*) AS clustered_query FROM simhash_clusters_query('SELECT id, fp FROM sec_docs', 3, true);
-- The load: its insert runs with the caller's path (the hostile one), as
-- a plain INSERT would; nothing it runs may come from there.
SET simhash.load_check = probe;
SELECT * FROM simhash_insert_new('sec_docs', 'sec_batch', 3, 'id');
DELETE FROM sec_docs WHERE id > 2;
SET simhash.load_check = scan;
SELECT * FROM simhash_insert_new('sec_docs', 'sec_batch', 3, 'id');
RESET simhash.load_check;
SELECT current_setting('search_path') AS path_after_the_load;
DELETE FROM sec_docs WHERE id > 2;
SELECT simhash_band_layouts('sec_docs', 'fp') AS layouts,
       (SELECT count(*) FROM simhash_band_indexes('sec_docs', 'fp')) AS listed,
       _simhash_table_rows('sec_docs') >= 0 AS rows_known,
       simhash_layout_for(1e9, 3) AS layout_for_1e9,
       (SELECT layout FROM simhash_layout_choice('sec_docs', 7) WHERE chosen) AS auto_layout,
       cardinality(simhash_band32_neighbors('0123456789abcdef', 1, 3)) AS half_neighbors;
SELECT count(*) AS commands FROM simhash_band_commands('sec_docs', 'fp', '2x32', false);
SELECT count(*) AS covering_indexes FROM simhash_add_bands('sec_docs', 'fp', '4x16c');
SELECT (SELECT count(*) FROM sec_docs WHERE fp <~> (SELECT fp FROM sec_docs WHERE id = 1) <= 3) AS within_by_probe,
       cardinality(simhash_probe('sec_docs', 'fp', (SELECT fp FROM sec_docs WHERE id = 1), 3)) AS probed;
SET simhash.cluster_memory = '1kB';
SELECT count(*) AS clustered_by_buckets FROM simhash_clusters('sec_docs', 'fp', 3);
RESET simhash.cluster_memory;
SELECT count(*) AS dropped FROM simhash_drop_bands('sec_docs', 'fp');
RESET search_path;

-- Nothing planted ran.
SELECT what, count(*) FROM hostile.calls GROUP BY what ORDER BY what;
SELECT count(*) AS hijacked_calls FROM hostile.calls;

-- The PL/pgSQL functions pin their path (simhash_insert_new in its first
-- statement, so that its insert runs with the caller's, above); the SQL
-- functions name every object with its schema (simhash_clusters is also
-- parsed at creation).
SELECT p.proname, l.lanname AS language,
       coalesce(array_to_string(p.proconfig, ', '), '') AS config,
       p.prosqlbody IS NOT NULL AS atomic_body
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
JOIN pg_language l ON l.oid = p.prolang
WHERE l.lanname IN ('sql', 'plpgsql')
ORDER BY p.proname;

DROP TABLE sec_docs, sec_bits;
DROP SCHEMA hostile CASCADE;
DROP ROLE simhash_hostile;
