-- Verified near-duplicates: simhash_similarity, the rule of record, the
-- verified guard and clustering, simhash_explain.

-- The similarity: normalized as the fingerprint is, symmetric, in [0, 1].
SELECT simhash_similarity('The quick brown fox jumps over the lazy dog', 'the QUICK brown fox, jumps over the lazy dog!!') AS case_and_punctuation,
       simhash_similarity('國務院總理李鵬今天會見了日本客人', '国务院总理李鹏今天会见了日本客人') AS traditional,
       simhash_similarity('ＦＵＬＬ－ＷＩＤＴＨ ｔｅｘｔ', 'full-width text') AS width,
       simhash_similarity('abc def ghi', 'xyz uvw rst') AS disjoint;
SELECT a, b, round(simhash_similarity(a, b)::numeric, 4) AS ab, simhash_similarity(a, b) = simhash_similarity(b, a) AS symmetric
FROM (VALUES ('The quick brown fox jumps over the lazy dog near the river bank today.',
              'The quick brown fox jumps over the lazy dog near the river bank today. Sent from my phone. Unsubscribe here.'),
             ('银行今天宣布下调存款利率，市场反应平稳。', '银行今天宣布上调贷款利率，市场反应剧烈。'),
             ('', ''), ('', 'words'), ('，。！', '?!'), ('a', 'a'), ('ab', 'abc')) v(a, b);
SELECT simhash_similarity(NULL, 'x') IS NULL AS strict_null;
-- Huge and mixed: a correct result, bounded memory.
SELECT simhash_similarity(repeat('alpha bravo 中文 charlie ', 200000), repeat('alpha bravo 中文 charlie ', 200001)) AS huge;

-- The rule of record with its settings.
SHOW simhash.verify_k;
SHOW simhash.similarity_threshold;
SELECT simhash_is_near_duplicate('The quick brown fox jumps over the lazy dog near the river bank today.',
                                 'The quick brown fox jumps over the lazy dog near the river bank today!') AS copy,
       simhash_is_near_duplicate('The quick brown fox jumps over the lazy dog near the river bank today.',
                                 'A completely different sentence about the weather in Beijing tomorrow.') AS other,
       simhash_is_near_duplicate('，。！', '，。！') AS featureless;
SET simhash.similarity_threshold = 1;
SELECT simhash_is_near_duplicate('The quick brown fox jumps over the lazy dog near the river bank today.',
                                 'The quick brown fox jumps over the lazy dog near the river bank today!') AS at_one;
RESET simhash.similarity_threshold;
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SET simhash.verify_k = 12$$,
    $$SET simhash.verify_k = -1$$,
    $$SET simhash.similarity_threshold = 1.5$$,
    $$SET simhash.similarity_threshold = 'NaN'$$,
    $$SELECT simhash_explain('a b c', 'a b d', -1)$$]) q;

-- The rule in SQL over a table: the band indexes find the candidates.
CREATE TABLE vdocs (id bigint PRIMARY KEY, body text,
                    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO vdocs (id, body)
SELECT i, format('Report %s: %s %s, %s and %s.', i, md5(i::text), md5((i * 7)::text), md5((i * 13)::text), md5((i * 29)::text))
FROM generate_series(1, 2000) i;
-- Row 17's text, and copies of it edited by a character or two.
CREATE FUNCTION r17(tail text DEFAULT '.') RETURNS text LANGUAGE sql IMMUTABLE
    RETURN format('Report 17: %s %s, %s and %s', md5('17'), md5('119'), md5('221'), md5('493')) || tail;
SELECT count(*) FROM simhash_add_bands('vdocs', 'fp', '4x16');
ANALYZE vdocs;
PREPARE rule(text) AS
    SELECT id FROM vdocs
    WHERE fp <~> simhash($1) <= 11 AND simhash_similarity(body, $1) >= 0.71 ORDER BY id;
SELECT body = r17() AS r17_is_row_17 FROM vdocs WHERE id = 17;
EXECUTE rule(r17());
EXECUTE rule(r17('!!'));
EXECUTE rule(replace(r17(), 'Report', 'Rapport'));
EXECUTE rule('Report 17: something else entirely, written anew for this test.');
SELECT plan_has($$SELECT id FROM vdocs WHERE fp <~> simhash('Report 17: x') <= 11
                  AND simhash_similarity(body, 'Report 17: x') >= 0.71$$, 'Bitmap Index Scan on vdocs_fp_band') AS uses_bands;

-- The verified guard: a near-copy (similar text) is refused; a candidate
-- within k whose text is not similar enough is let in.
SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'body', 1.0);
SELECT outcome($$INSERT INTO vdocs (id, body) VALUES (9001,
    ' ' || r17())$$) AS exact_copy,
       outcome($$INSERT INTO vdocs (id, body) VALUES (9002,
    replace(r17(), 'Report', 'Rapport'))$$) AS edited_at_one;
SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'body');
SELECT outcome($$INSERT INTO vdocs (id, body) VALUES (9003,
    replace(r17(), 'Report', 'Reports'))$$) AS edited_at_default;
SELECT encode(tgargs, 'escape') AS trigger_arguments FROM pg_trigger WHERE tgrelid = 'vdocs'::regclass AND tgname = 'fp_near_unique';
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'nope')$$,
    $$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'fp')$$,
    $$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'body', 1.5)$$,
    $$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', 'body', 'NaN')$$,
    $$SELECT simhash_add_guard('vdocs', 'fp', 11, 'error', 'id', NULL, 0.9)$$]) q;
-- ON CONFLICT with the verified guard: as with a unique constraint (row
-- 9002 went in above and would be a near-duplicate of the new body).
DELETE FROM vdocs WHERE id = 9002;
SELECT outcome($$INSERT INTO vdocs (id, body) VALUES (17,
    r17('!')) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body$$) AS upsert;
SELECT body = r17('!') AS upserted FROM vdocs WHERE id = 17;
DROP TRIGGER fp_near_unique ON vdocs;

-- Verified clustering: the components of the verified pairs, the same as
-- a plain join computes them.
INSERT INTO vdocs (id, body) SELECT 10000 + id, body || ' Copy.' FROM vdocs WHERE id <= 30;
CREATE TEMP TABLE want AS
    SELECT x.id AS a, y.id AS b FROM vdocs x, vdocs y
    WHERE x.id < y.id AND (x.fp <~> y.fp) + 0 <= 11 AND simhash_similarity(x.body, y.body) >= 0.71;
SELECT count(*) AS verified_pairs, count(*) FILTER (WHERE b - a = 10000) AS planted FROM want;
WITH got AS (SELECT * FROM simhash_clusters('vdocs', 'fp', 11, 'id', false, 'body'))
SELECT (SELECT count(*) FROM want w JOIN got g1 ON g1.id = w.a JOIN got g2 ON g2.id = w.b
        WHERE g1.cluster = g2.cluster) = (SELECT count(*) FROM want) AS every_pair_together,
       (SELECT count(DISTINCT id) FROM got) = (SELECT count(DISTINCT x) FROM want, LATERAL (VALUES (a), (b)) v(x)) AS same_rows;
SELECT count(*) AS unverified_rows FROM simhash_clusters('vdocs', 'fp', 11, 'id', false);
SELECT q, outcome(q) FROM unnest(ARRAY[
    $$SELECT * FROM simhash_clusters('vdocs', 'fp', 11, 'id', false, 'fp')$$,
    $$SELECT * FROM simhash_clusters('vdocs', 'fp', 11, 'id', false, 'body', 2)$$,
    $$SELECT * FROM simhash_clusters('vdocs', 'fp', 11, 'id', false, NULL, 0.5)$$,
    $$SELECT count(*) FROM simhash_clusters(NULL, 'fp', 11)$$]) q;

-- simhash_explain: why a pair is (not) a near-duplicate.
SELECT e->'distance' AS distance, round((e->>'similarity')::numeric, 3) AS similarity, e->'near_duplicate' AS near,
       e->'only_in_a' AS only_in_a, e->'only_in_b' AS only_in_b,
       jsonb_array_length(e->'features') AS features, e->'features'->0->>'feature' AS top_feature
FROM (SELECT simhash_explain('The quick brown fox jumps over the lazy dog near the river bank.',
                             'The quick brown fox jumps over the sleepy lazy dog near the river bank.', 3) e) x;
SELECT simhash_explain('同一段文字', '同一段文字')->'only_in_a' AS nothing_differs,
       simhash_explain('，。', 'words here')->'distance' AS no_distance;

DROP TABLE vdocs;
DROP FUNCTION r17(text);

-- Huge texts: the similarity and the rule take them; the explanation,
-- which keeps both texts' streams to find the differences, refuses (54000).
SELECT simhash_is_near_duplicate(repeat('新华社北京电 记者报道 ', 2000000), repeat('新华社北京电 记者报道 ', 2000001)) AS huge_rule;
SELECT outcome($$SELECT simhash_explain(repeat('a', 17000000), 'a')$$) AS huge_explain;

-- On a partitioned table: the verified guard checks every partition, and
-- verified clustering reads them all.
CREATE TABLE vparts (id bigint, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)
    PARTITION BY RANGE (id);
CREATE TABLE vparts_1 PARTITION OF vparts FOR VALUES FROM (0) TO (1000);
CREATE TABLE vparts_2 PARTITION OF vparts FOR VALUES FROM (1000) TO (2000);
SELECT simhash_add_guard('vparts', 'fp', 11, 'error', 'id', 'body');
INSERT INTO vparts (id, body) VALUES (1, format('Part one: %s %s.', md5('a'), md5('b')));
SELECT outcome($$INSERT INTO vparts (id, body) VALUES (1500, format('Part one: %s %s!', md5('a'), md5('b')))$$) AS copy_in_other_partition,
       outcome($$INSERT INTO vparts (id, body) VALUES (1501, format('Part two: %s %s.', md5('c'), md5('d')))$$) AS new_text;
DROP TRIGGER fp_near_unique ON vparts;
INSERT INTO vparts (id, body) VALUES (1502, format('Part one: %s %s?', md5('a'), md5('b')));
SELECT array_agg(id ORDER BY id) AS verified_cluster FROM simhash_clusters('vparts', 'fp', 11, 'id', false, 'body');
DROP TABLE vparts;

-- The review page of a table without rows, and of one without pairs.
CREATE TABLE vempty (id bigint, body text, fp simhash64);
SELECT left(simhash_review('vempty', 'fp', 'body'), 15) AS empty_page;
INSERT INTO vempty VALUES (1, 'one row alone', simhash('one row alone'));
SELECT left(simhash_review('vempty', 'fp', 'body'), 15) AS page_without_pairs;
DROP TABLE vempty;
-- A NULL text is decided by the fingerprints, in verified clustering as
-- in the verified guard and load (clustering kept such a row apart while
-- the guard refused it).
CREATE TABLE vnull (id int PRIMARY KEY, body text, fp simhash64);
INSERT INTO vnull VALUES (1, 'the harbour master closed the port before the storm came in from the west', '0123456789abcdef'),
                         (2, NULL, '0123456789abcdef'),
                         (3, 'an unrelated text about gardens', 'fedcba9876543210');
SELECT count(*) FROM simhash_add_bands('vnull', 'fp', '4x16');
SELECT id, cluster FROM simhash_clusters('vnull', 'fp', 3, singletons => false, text_col => 'body') ORDER BY id;
SELECT simhash_add_guard('vnull', 'fp', 3, 'skip', 'id', 'body');
INSERT INTO vnull VALUES (4, NULL, '0123456789abcdef');
SELECT count(*) AS guard_let_in FROM vnull WHERE id = 4;
DROP TABLE vnull;
