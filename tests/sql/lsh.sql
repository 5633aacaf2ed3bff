-- simhash_lsh: candidate keys beside the fingerprint (MinHash-LSH of the
-- character 5-grams of the text as simhash_similarity normalizes it),
-- for the copies a 64-bit SimHash moves past distance 11.
SELECT array_length(simhash_lsh('The quick brown fox jumps over the lazy dog.'), 1) AS keys,
       simhash_lsh('!!') IS NULL AS no_word_no_keys,
       simhash_lsh('') IS NULL AS empty_no_keys,
       simhash_lsh('Hello, World!') = simhash_lsh('hello   ＷＯＲＬＤ') AS normalized_as_the_verifier,
       simhash_lsh('Hello, World!') = simhash_lsh('Hello, Word!') AS one_edit_changes_some;
-- 5% of an English paragraph's letters changed at scattered places: the
-- fingerprint moves past 11, the 5-grams still overlap, the texts are
-- similar enough for the rule of record.
CREATE TABLE lsh_docs (id int PRIMARY KEY, body text,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED,
                       lsh integer[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED);
SELECT count(*) FROM simhash_add_bands('lsh_docs', 'fp', '4x16');
CREATE INDEX lsh_docs_lsh ON lsh_docs USING gin (lsh);
INSERT INTO lsh_docs (id, body)
SELECT i, format('Report %s on %s and %s, with notes on %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text))
  FROM generate_series(2, 400) i;
INSERT INTO lsh_docs (id, body) VALUES (1, 'The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.');
ANALYZE lsh_docs;
CREATE TEMP TABLE lsh_query AS SELECT 'The committee met on Tursday uo revbrw the ersposal fer d nsw library in the north of the city. Mdmbers heard from residents who asked bor longer openirg hours, a reading room for children and a small cafs near the entrance. The arcsitect showed drahings of a two snorjy buijding with large windows facing the park, and hhe treasurer saib the cost sould be shared by tme council and a private foundation. A finau vote is expected next month after a public consultation.'::text AS q;
SELECT (SELECT fp FROM lsh_docs WHERE id = 1) <~> simhash(q) AS distance,
       simhash_similarity((SELECT body FROM lsh_docs WHERE id = 1), q) >= 0.82 AS similar
  FROM lsh_query;
SELECT array_agg(d.id) AS within_11 FROM lsh_docs d, lsh_query WHERE d.fp <~> simhash(q) <= 11;
SELECT array_agg(d.id) AS lsh_candidates_verified
  FROM lsh_docs d, lsh_query
 WHERE d.lsh && simhash_lsh(q) AND simhash_similarity(d.body, q) >= 0.82;
-- Through the GIN index, not a scan.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM lsh_docs WHERE lsh && simhash_lsh('a text to look for among the documents');
RESET enable_seqscan;
-- A GIN index of the arrays' own class answers && alone: simhash_add_lsh
-- adds one of simhash_lsh_ops beside it, which answers &&& and &&.
SELECT simhash_add_lsh('lsh_docs', 'body') AS column_found;
SELECT array_agg(o.opcname ORDER BY o.opcname) AS gin_classes
  FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0]
 WHERE i.indrelid = 'lsh_docs'::regclass AND o.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gin');
DROP TABLE lsh_docs;

-- The second source in one call, and the rule of record with it.
CREATE TABLE news (id int PRIMARY KEY, body text,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('news', 'fp', '4x16');
INSERT INTO news (id, body)
SELECT i, format('Report %s on %s and %s, with notes on %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text))
  FROM generate_series(2, 400) i;
INSERT INTO news (id, body) SELECT 1, body FROM (VALUES ('The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.')) v(body);
SELECT simhash_lsh_column('news', 'body') IS NULL AS none_yet;
SELECT simhash_add_lsh('news', 'body');
SELECT simhash_add_lsh('news', 'body') AS again_nothing_new,
       simhash_lsh_column('news', 'body') AS found;
SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) AS generated_as
  FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = 'news'::regclass AND a.attname = 'body_lsh';
SELECT count(*) AS gin_indexes, min(o.opcname) AS its_class
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_opclass o ON o.oid = i.indclass[0]
 WHERE i.indrelid = 'news'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'gin');
ANALYZE news;
-- The rule in plain SQL: a candidate of either source, verified. The
-- planner answers it with both kinds of index (a BitmapOr), not a scan.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM news
 WHERE (fp <~> simhash('a text to look for') <= 11
        OR (body_lsh &&& simhash_lsh('a text to look for')
            AND simhash_lsh_match(body, 'a text to look for')))
   AND simhash_similarity(body, 'a text to look for') >= 0.82;
-- The arrays' && through the same index.
EXPLAIN (COSTS OFF) SELECT id FROM news WHERE body_lsh && simhash_lsh('a text to look for');
RESET enable_seqscan;
-- &&& is estimated as band keys are: about unique to a row, so a text
-- shares keys with a handful of rows. The arrays' && estimates a share
-- of the table; at a million rows that starts parallel workers and JIT
-- for a query that reads a few dozen rows.
CREATE FUNCTION pg_temp.plan_rows(query text) RETURNS double precision LANGUAGE plpgsql AS $f$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
END
$f$;
SELECT pg_temp.plan_rows(format('SELECT id FROM news WHERE body_lsh &&& simhash_lsh(%L)', q)) <= 2 AS keys_estimated_as_keys,
       pg_temp.plan_rows(format('SELECT id FROM news WHERE body_lsh && simhash_lsh(%L)', q))
       > pg_temp.plan_rows(format('SELECT id FROM news WHERE body_lsh &&& simhash_lsh(%L)', q)) AS arrays_estimated_higher,
       (SELECT count(*) FROM news WHERE body_lsh &&& simhash_lsh(q)) AS rows_sharing_a_key,
       (SELECT count(*) FROM news WHERE body_lsh &&& simhash_lsh(q))
       = (SELECT count(*) FROM news WHERE body_lsh OPERATOR(pg_catalog.&&) simhash_lsh(q)) AS same_rows_as_arrays
  FROM lsh_query;
SELECT array_agg(n.id) AS rule_of_record
  FROM news n, lsh_query
 WHERE (n.fp <~> simhash(q) <= 11
        OR (n.body_lsh &&& simhash_lsh(q) AND simhash_lsh_match(n.body, q)))
   AND simhash_similarity(n.body, q) >= 0.82;
-- A candidate only the keys found must also reach the 5-gram Jaccard
-- simhash_lsh_min_jaccard(): two long texts on one subject share a key
-- now and then and contain each other's trigrams, not their 5-grams.
SELECT simhash_lsh_min_shared() AS min_shared, simhash_lsh_min_jaccard() AS min_jaccard,
       simhash_jaccard(n.body, q) >= simhash_lsh_min_jaccard() AS copy_reaches_it,
       round(simhash_jaccard('The harbour master counted the boats.', 'The harbour master counted the boats. And more words after it, many more.')::numeric, 3) AS contained_is_not_jaccard,
       simhash_lsh_shared(simhash_lsh(n.body), simhash_lsh(q)) >= simhash_lsh_min_shared() AS copy_shares_enough,
       simhash_lsh_shared('{1,2,3}', '{1,5,3}') AS place_by_place,
       simhash_lsh_shared('{1,2,3}', '{3,1,2}') AS moved_keys_do_not_count
  FROM news n, lsh_query WHERE n.id = 1;
-- The pair functions keep the fingerprint's candidates (the second source
-- is a table's choice): the copy at distance 13 is not a near-duplicate
-- of its original for them, and simhash_explain says the keys would make
-- it a candidate.
SET simhash.similarity_threshold = 0.82;
SELECT simhash_is_near_duplicate(n.body, q) AS near,
       simhash_explain(n.body, q)->>'candidate' AS candidate,
       (simhash_explain(n.body, q)->>'lsh_bands_shared')::int > 0 AS bands_shared,
       simhash_explain(n.body, q)->>'near_duplicate' AS verdict
  FROM news n, lsh_query WHERE n.id = 1;
SELECT simhash_is_near_duplicate(n.body, m.body) AS different_reports,
       simhash_explain(n.body, m.body)->>'candidate' AS candidate
  FROM news n, news m WHERE n.id = 2 AND m.id = 3;
-- The verified guard uses both sources: the copy at distance 13 is
-- refused; on a table without the keys it goes in.
CREATE TABLE news_plain (LIKE news INCLUDING GENERATED);
ALTER TABLE news_plain DROP COLUMN body_lsh;
ALTER TABLE news_plain ADD PRIMARY KEY (id);
SELECT count(*) FROM simhash_add_bands('news_plain', 'fp', '4x16');
INSERT INTO news_plain (id, body) SELECT id, body FROM news;
SELECT simhash_add_guard('news', 'fp', 11, 'error', 'id', 'body');
SELECT simhash_add_guard('news_plain', 'fp', 11, 'error', 'id', 'body');
INSERT INTO news (id, body) SELECT 1000, q FROM lsh_query;
INSERT INTO news_plain (id, body) SELECT 1000, q FROM lsh_query;
SELECT (SELECT count(*) FROM news WHERE id = 1000) AS with_keys,
       (SELECT count(*) FROM news_plain WHERE id = 1000) AS fingerprint_alone;
-- The keys decide whether indexed or not: a copy of the table made with
-- LIKE ... INCLUDING GENERATED (the keys column, not its index), then with
-- a partial index, then an invalid one: the guard refuses the copy as the
-- load, clustering and the query would (it let it in before).
CREATE TABLE news_noidx (LIKE news INCLUDING GENERATED);
ALTER TABLE news_noidx ADD PRIMARY KEY (id);
SELECT count(*) FROM simhash_add_bands('news_noidx', 'fp', '4x16');
INSERT INTO news_noidx (id, body) SELECT id, body FROM news;
SELECT simhash_add_guard('news_noidx', 'fp', 11, 'skip', 'id', 'body');
INSERT INTO news_noidx (id, body) SELECT 1000, q FROM lsh_query;
CREATE INDEX news_noidx_partial ON news_noidx USING gin (body_lsh) WHERE id > 1;
INSERT INTO news_noidx (id, body) SELECT 1001, q FROM lsh_query;
DROP INDEX news_noidx_partial;
CREATE INDEX news_noidx_keys ON news_noidx USING gin (body_lsh);
UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'news_noidx_keys'::regclass;
INSERT INTO news_noidx (id, body) SELECT 1002, q FROM lsh_query;
SELECT count(*) AS unindexed_copies_let_in FROM news_noidx WHERE id >= 1000;
DROP TABLE news_noidx;
-- A text that shares no key and is far: in, both ways; the same copy
-- through an UPDATE of another row: refused.
INSERT INTO news (id, body) VALUES (1001, 'An entirely different story about a harbour, some boats and a storm that came early this year.');
\set VERBOSITY terse
UPDATE news SET body = (SELECT q FROM lsh_query) WHERE id = 1001;
\set VERBOSITY default
-- 'skip' guard, with ON CONFLICT and in a prepared statement: the copy is
-- skipped, the upsert of the row itself still updates it.
SELECT simhash_add_guard('news', 'fp', 11, 'skip', 'id', 'body');
PREPARE ins(int, text) AS INSERT INTO news (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body;
SELECT q AS copy FROM lsh_query \gset
EXECUTE ins(1002, :'copy');
EXECUTE ins(1002, :'copy');
EXECUTE ins(1001, 'An entirely different story about a harbour, some boats and a storm that came early this year!');
SELECT (SELECT count(*) FROM news WHERE id = 1002) AS copy_rows,
       (SELECT body FROM news WHERE id = 1001) LIKE '%year!' AS upsert_updated;
DEALLOCATE ins;
-- Verified clustering: the copy past distance 11 joins its original's
-- cluster through the keys; on the table without them it stays apart.
CREATE TABLE news_c (id int PRIMARY KEY, body text,
                     fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO news_c (id, body) SELECT id, body FROM news_plain;
CREATE TABLE news_c2 AS SELECT id, body, fp FROM news_c;
SELECT count(*) FROM simhash_add_bands('news_c', 'fp', '4x16');
SELECT simhash_add_lsh('news_c', 'body');
SELECT count(*) FROM simhash_add_bands('news_c2', 'fp', '4x16');
SELECT c.id, c.cluster FROM simhash_clusters('news_c', 'fp', 11, singletons => false, text_col => 'body', threshold => 0.82) c ORDER BY 1;
SELECT count(*) AS clustered_without_keys
  FROM simhash_clusters('news_c2', 'fp', 11, singletons => false, text_col => 'body', threshold => 0.82);
-- The review page's verdicts are the rule's: a pair past verify_k that
-- the keys find and the second test passes is a near-duplicate there (it
-- was "distance above simhash.verify_k"), and its advice names no k that
-- the bands cannot answer (it advised k = 13).
SELECT simhash_review('news_c', 'fp', 'body') AS page \gset
SELECT v AS verdict, count(*)
  FROM (SELECT (regexp_matches(:'page', '<span class="verdict">([^<]*)</span>', 'g'))[1] AS v) x
 GROUP BY v ORDER BY v;
SELECT substring(:'page' from '<p id="advice">([^<]*)</p>') AS advice;
-- Bad input.
\set VERBOSITY sqlstate
SELECT simhash_add_lsh('news_c', 'nope');
SELECT simhash_add_lsh('news_c', 'fp');
SELECT simhash_add_lsh('news_c', NULL);
ALTER TABLE news_c2 ADD COLUMN body_lsh integer[];
SELECT simhash_add_lsh('news_c2', 'body');
\set VERBOSITY default
-- A partitioned table: one call adds the column and the index to every
-- partition, and the guard checks every partition through them.
CREATE TABLE news_p (id int, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED) PARTITION BY RANGE (id);
CREATE TABLE news_p1 PARTITION OF news_p FOR VALUES FROM (0) TO (500);
CREATE TABLE news_p2 PARTITION OF news_p FOR VALUES FROM (500) TO (2000);
SELECT count(*) FROM simhash_add_bands('news_p', 'fp', '4x16');
SELECT simhash_add_lsh('news_p', 'body');
SELECT simhash_lsh_column('news_p2', 'body') AS partition_column;
INSERT INTO news_p (id, body) SELECT id, body FROM news_plain;
SELECT simhash_add_guard('news_p', 'fp', 11, 'error', 'id', 'body');
\set VERBOSITY terse
INSERT INTO news_p (id, body) SELECT 1500, q FROM lsh_query;
\set VERBOSITY default
SELECT count(*) AS copies_in FROM news_p WHERE id = 1500;
-- &&& on the partitioned table: through each partition's index.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM news_p WHERE body_lsh &&& simhash_lsh('a text to look for');
RESET enable_seqscan;
SELECT array_agg(id ORDER BY id) AS sharing_a_key FROM news_p, lsh_query WHERE body_lsh &&& simhash_lsh(q);
-- The verified load uses both sources: against the target through its
-- GIN index, and among the batch's own rows. The copy at distance 13 is
-- skipped for the target's row 1; of two copies of a new text that share
-- keys, the first goes in.
CREATE TABLE news_l (id int PRIMARY KEY, body text,
                     fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('news_l', 'fp', '4x16');
SELECT simhash_add_lsh('news_l', 'body');
INSERT INTO news_l (id, body) SELECT id, body FROM news_plain WHERE id < 1000;
CREATE TABLE batch (id int, body text);
INSERT INTO batch VALUES
  (2001, :'copy'),
  (2002, 'The harbour master counted the boats that came back before the storm, and wrote each name in the ledger kept by the door of the office on the quay.'),
  (2003, 'The harbour master cointed the boats that came back before the storm, and wrote each nime in the ledger kept by the door of the offica on the quay.'),
  (2004, 'Nothing like the others: a recipe for bread with seeds, water, flour and salt.');
SELECT simhash('The harbour master counted the boats that came back before the storm, and wrote each name in the ledger kept by the door of the office on the quay.')
   <~> simhash('The harbour master cointed the boats that came back before the storm, and wrote each nime in the ledger kept by the door of the offica on the quay.') > 11 AS batch_pair_past_11;
CREATE TABLE batch_skips (skipped bigint, matched bigint, distance integer);
SELECT * FROM simhash_insert_new('news_l', 'batch', 11, 'id', skipped_into => 'batch_skips', text_col => 'body', threshold => 0.82);
SELECT skipped, matched, distance > 11 AS past_11 FROM batch_skips ORDER BY 1;
SELECT array_agg(id ORDER BY id) AS loaded FROM news_l WHERE id > 2000;
-- The same under the read-once setting (a verified load always probes),
-- and into the table without keys: the copies past 11 go in.
CREATE TABLE news_l2 (LIKE news_l INCLUDING GENERATED);
ALTER TABLE news_l2 DROP COLUMN body_lsh;
SELECT count(*) FROM simhash_add_bands('news_l2', 'fp', '4x16');
INSERT INTO news_l2 (id, body) SELECT id, body FROM news_plain WHERE id < 1000;
SELECT * FROM simhash_insert_new('news_l2', 'batch', 11, 'id', text_col => 'body', threshold => 0.82);
DROP TABLE news, news_plain, news_c, news_c2, news_p, news_l, news_l2, batch, batch_skips;

-- A short text that a footer doubles: past distance 11 from its original,
-- sharing keys, every 5-gram of the original kept but a Jaccard under
-- 0.5. The second test takes the containment in place of the Jaccard, so
-- the query, the guard, the load, clustering and the review page take it
-- for the copy it is.
CREATE TABLE short (id int PRIMARY KEY, body text,
                    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('short', 'fp', '4x16');
SELECT simhash_add_lsh('short', 'body');
INSERT INTO short (id, body) VALUES
  (1, 'Rain fell on the old mill all night; by morning the river had risen over the lower road.'),
  (2, 'The council met on Tuesday and agreed the budget for the coming year without a vote.');
SELECT body || E'\nThis article first appeared in the Valley Gazette. All rights reserved; reproduced with permission.' AS footer_copy
  FROM short WHERE id = 1 \gset
SELECT fp <~> simhash(:'footer_copy') > 11 AS past_11,
       simhash_lsh_shared(body_lsh, simhash_lsh(:'footer_copy')) >= simhash_lsh_min_shared() AS shares_a_key,
       simhash_jaccard(body, :'footer_copy') < simhash_lsh_min_jaccard() AS jaccard_short_of_it,
       simhash_containment(body, :'footer_copy') AS containment,
       simhash_containment(:'footer_copy', body) AS either_way,
       simhash_lsh_min_containment() AS min_containment,
       simhash_lsh_match(body, :'footer_copy') AS second_test
  FROM short WHERE id = 1;
-- The query.
SELECT array_agg(id) AS rule_of_record FROM short
 WHERE (fp <~> simhash(:'footer_copy') <= 11
        OR (body_lsh &&& simhash_lsh(:'footer_copy') AND simhash_lsh_match(body, :'footer_copy')))
   AND simhash_similarity(body, :'footer_copy') >= 0.82;
-- simhash_explain gives both measures and the test.
SELECT e->>'candidate' AS candidate, (e->>'containment')::float8 AS containment, e->>'lsh_match' AS lsh_match
  FROM short, LATERAL simhash_explain(body, :'footer_copy') e WHERE id = 1;
-- The guard.
SELECT simhash_add_guard('short', 'fp', 11, 'skip', 'id', 'body', 0.82);
INSERT INTO short (id, body) VALUES (3, :'footer_copy');
SELECT count(*) AS footer_copy_rows FROM short WHERE id = 3;
ALTER TABLE short DISABLE TRIGGER USER;
-- The load: against the table, and among the batch's rows.
CREATE TABLE short_batch (id int, body text);
INSERT INTO short_batch VALUES
  (10, :'footer_copy'),
  (11, 'She kept the letters in a tin box under the stairs and read one every winter evening.'),
  (12, E'She kept the letters in a tin box under the stairs and read one every winter evening.\nThis article first appeared in the Valley Gazette. All rights reserved; reproduced with permission.');
SELECT simhash(a) <~> simhash(b) > 11 AS batch_pair_past_11, simhash_lsh_shared(simhash_lsh(a), simhash_lsh(b)) > 0 AS batch_pair_shares_a_key,
       simhash_jaccard(a, b) < simhash_lsh_min_jaccard() AS batch_pair_jaccard_short_of_it
  FROM (SELECT x.body, y.body FROM short_batch x, short_batch y WHERE x.id = 11 AND y.id = 12) p(a, b);
SELECT * FROM simhash_insert_new('short', 'short_batch', 11, 'id', text_col => 'body', threshold => 0.82);
SELECT array_agg(id ORDER BY id) AS loaded FROM short WHERE id >= 10;
-- Clustering.
INSERT INTO short (id, body) VALUES (3, :'footer_copy');
SELECT c.id, c.cluster FROM simhash_clusters('short', 'fp', 11, singletons => false, text_col => 'body', threshold => 0.82) c ORDER BY 1;
DROP TABLE short, short_batch;

-- Bad input: NULL, empty, featureless, shorter than a 5-gram, mixed
-- scripts, not UTF-8 in the database's sense (a NUL cannot be text); and
-- 50 MB texts, cancelled within 1.5 s of a 300 ms timeout.
SELECT simhash_jaccard(NULL, 'a') IS NULL AS strict,
       simhash_jaccard('', '') AS both_empty, simhash_jaccard('!!', 'x') AS one_empty,
       simhash_jaccard('ab', 'AB.') AS short_equal, simhash_jaccard('ab', 'abc') AS short_different,
       round(simhash_jaccard('mixed 北京 text', 'mixed 北京 texts')::numeric, 3) AS mixed_scripts,
       simhash_lsh_shared(NULL, '{1}') IS NULL AS shared_strict,
       simhash_lsh_shared('{1,NULL,3}', '{1,NULL,3}') AS nulls_do_not_count,
       simhash_lsh_shared('{1,2}', '{1,2,3}') AS shorter_array;
-- The containment: a stream shorter than a 5-gram is one gram of its
-- own (as the Jaccard takes it), so it is not inside a longer text's
-- 5-grams.
SELECT simhash_containment(NULL, 'a') IS NULL AND simhash_lsh_match('a', NULL) IS NULL AS strict,
       simhash_containment('', '') AS both_empty, simhash_containment('!!', 'x') AS one_empty,
       simhash_lsh_match('', '!!') AS match_both_empty, simhash_lsh_match('', 'some words') AS match_one_empty,
       simhash_containment('ab', 'AB.') AS short_equal, simhash_containment('abcd', 'abcdefgh') AS shorter_than_a_gram,
       round(simhash_containment('mixed 北京 text', 'mixed 北京 texts and more')::numeric, 3) AS mixed_scripts;
CREATE FUNCTION pg_temp.late(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE q;
    RETURN 'finished';
EXCEPTION WHEN query_canceled THEN
    RETURN CASE WHEN clock_timestamp() - t0 < interval '1.5 s' THEN 'cancelled in time'
                ELSE 'cancelled late: ' || (clock_timestamp() - t0)::text END;
END $f$;
CREATE TEMP TABLE big AS SELECT repeat('abcdefghij klmnop ', 3000000) AS a, repeat('abcdefghij klmnoq ', 3000000) AS b;
SET statement_timeout = '300ms';
SELECT pg_temp.late('SELECT simhash_jaccard(a, b) FROM big') AS jaccard_50mb;
SELECT pg_temp.late('SELECT simhash_lsh(a) FROM big') AS lsh_50mb;
SELECT pg_temp.late('SELECT simhash_lsh_match(a, b) FROM big') AS lsh_match_50mb;
SELECT pg_temp.late('SELECT simhash_containment(a, b) FROM big') AS containment_50mb;
RESET statement_timeout;
DROP TABLE big;
-- &&& compares keys band by band, as every other path of the rule does: a
-- key at another band's place is no candidate, through the index too
-- (&& still finds it).
SELECT '{1,2,3}'::int[] &&& '{9,2,9}'::int[] AS same_place,
       '{1,2,3}'::int[] &&& '{2,3,1}'::int[] AS other_places,
       '{1,2,3}'::int[] && '{2,3,1}'::int[] AS overlap;
CREATE TABLE keys_places (id int, keys int[]);
INSERT INTO keys_places SELECT g, ARRAY[g, g + 1, g + 2] FROM generate_series(1, 2000) g;
CREATE INDEX ON keys_places USING gin (keys simhash_lsh_ops);
SET enable_seqscan = off;
SELECT array_agg(id ORDER BY id) AS by_place FROM keys_places WHERE keys &&& '{0,11,0}';
SELECT array_agg(id ORDER BY id) AS anywhere FROM keys_places WHERE keys && '{0,11,0}';
RESET enable_seqscan;
DROP TABLE keys_places;
