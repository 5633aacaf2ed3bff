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
DROP TABLE lsh_docs;
