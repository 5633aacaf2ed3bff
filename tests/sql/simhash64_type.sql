-- The simhash64 type: literals, errors, casts, comparison, indexes, binary I/O.

-- Storage: 8 bytes, by value, aligned like bigint.
SELECT pg_column_size('0123456789abcdef'::simhash64) AS bytes;
SELECT typlen, typbyval, typalign, typstorage FROM pg_type WHERE typname = 'simhash64';

-- Text form: 16 hex digits in, lower case out.
SELECT '0123456789abcdef'::simhash64;
SELECT '0123456789ABCDEF'::simhash64;
SELECT 'FfFfFfFfFfFfFfFf'::simhash64;
SELECT '0000000000000000'::simhash64;
SELECT NULL::simhash64 IS NULL AS null_in_null_out;

-- Malformed literals: 22P02, quoting the literal.
SELECT '0123'::simhash64;
SELECT format('%L', left(lit, 20)) AS literal, left(outcome(format('SELECT %L::simhash64', lit)), 70) AS outcome
FROM (VALUES (''), (' '), ('0'), ('0123456789abcde'), ('0123456789abcdef0'),
             ('0123456789abcdeg'), ('01234567 9abcdef'), (' 0123456789abcdef'),
             ('0123456789abcdef '), ('0x0123456789abcd'), ('-123456789abcdef'),
             ('+123456789abcdef'), ('０１２３４５６７８９ａｂｃｄｅｆ'), ('中文中文中文中文中文中文中文中文'),
             (repeat('f', 1000))) AS v(lit);

-- bigint: bit for bit, both ways, no overflow.
SELECT '8000000000000000'::simhash64::bigint AS min_bigint,
       '7fffffffffffffff'::simhash64::bigint AS max_bigint,
       'ffffffffffffffff'::simhash64::bigint AS minus_one;
SELECT (-9223372036854775808)::bigint::simhash64, 1::bigint::simhash64, (-1)::bigint::simhash64;
SELECT count(*) AS round_trips
FROM generate_series(-5, 5) g, LATERAL (SELECT (g * 1844674407370955161)::bigint AS b) x
WHERE b::simhash64::bigint = b;

-- bit(64): most significant bit first, the hex digits' order.
SELECT '0123456789abcdef'::simhash64::bit(64);
SELECT B'0000000100100011010001010110011110001001101010111100110111101111'::simhash64;
SELECT 'ffffffffffffffff'::simhash64::bit(64)::simhash64;
SELECT B'101'::simhash64;
SELECT outcome('SELECT B''101''::simhash64'),
       outcome(format('SELECT %L::bit(65)::simhash64', repeat('1', 65)));

-- Ordering is unsigned: the order of the hex text.
SELECT v FROM (VALUES ('8000000000000000'::simhash64), ('0000000000000001'),
                      ('ffffffffffffffff'), ('7fffffffffffffff'), ('0000000000000000')) t(v)
ORDER BY v;
SELECT '8000000000000000'::simhash64 > '7fffffffffffffff' AS gt,
       'ffffffffffffffff'::simhash64 >= 'ffffffffffffffff' AS ge,
       '0000000000000000'::simhash64 < '0000000000000001' AS lt,
       '0000000000000001'::simhash64 <= '8000000000000000' AS le,
       '0123456789abcdef'::simhash64 = '0123456789ABCDEF' AS eq,
       '0123456789abcdef'::simhash64 <> '0123456789abcdee' AS ne;

-- B-tree and hash operator classes: UNIQUE, GROUP BY, DISTINCT, joins.
CREATE TABLE fps (id int PRIMARY KEY, fp simhash64);
INSERT INTO fps
SELECT g, (((g % 7) - 3) * 2635249153387078802)::bigint::simhash64 FROM generate_series(1, 70) g;
INSERT INTO fps VALUES (71, NULL);
SELECT fp, count(*) FROM fps GROUP BY fp ORDER BY fp;
SELECT count(DISTINCT fp) FROM fps;
CREATE INDEX fps_btree ON fps USING btree (fp);
CREATE INDEX fps_hash ON fps USING hash (fp);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE fp = '2492492492492492';
SELECT count(*) FROM fps WHERE fp = '2492492492492492';
SELECT count(*) FROM fps WHERE fp > '8000000000000000';
RESET enable_seqscan;
CREATE TABLE uniq (fp simhash64 UNIQUE);
INSERT INTO uniq VALUES ('0123456789abcdef');
INSERT INTO uniq VALUES ('0123456789ABCDEF');
SET enable_mergejoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fps a JOIN fps b USING (fp);
SELECT count(*) FROM fps a JOIN fps b USING (fp);
RESET enable_mergejoin; SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fps a JOIN fps b USING (fp);
SELECT count(*) FROM fps a JOIN fps b USING (fp);
RESET enable_hashjoin; RESET enable_nestloop;

-- Binary I/O: COPY ... (FORMAT binary) round-trips every value, NULL too.
SELECT current_setting('data_directory') || '/simhash_regress_fps.bin' AS copy_file \gset
COPY fps TO :'copy_file' (FORMAT binary);
CREATE TABLE fps_copy (LIKE fps);
COPY fps_copy FROM :'copy_file' (FORMAT binary);
SELECT count(*) AS rows, count(*) FILTER (WHERE a.fp IS NOT DISTINCT FROM b.fp) AS equal
FROM fps a JOIN fps_copy b USING (id);
SELECT simhash64_send('0123456789abcdef');

DROP TABLE fps, fps_copy, uniq;
