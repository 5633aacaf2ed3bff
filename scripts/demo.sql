-- The SQL half of scripts/demo.sh, run by it in one psql session (temp
-- tables and psql variables carry from one step to the next). On entry
-- demo_docs(id, body, copy_of, edit) holds the corpus; this file plants the
-- edited copies, fingerprints everything and reports what simhash finds.

\pset footer off
SET client_min_messages = warning;

---------------------------------------------------------------------------
-- 3. Plant lightly edited copies of 200 documents of at least 200
-- characters. The seed makes the choice, and so the report, the same on
-- every run over the same corpus.
---------------------------------------------------------------------------
SELECT setseed(0.1998) AS seeded \gset

-- Each copy gets one of five edits, taking turns. A replacement character
-- comes from a few common ones: a slip of the keyboard or of the input
-- method, not random noise. `before` and `after` hold the text around the
-- edit, for the examples below.
CREATE TEMP TABLE demo_plan AS
WITH pick AS (
    SELECT id, body, char_length(body) AS len,
           row_number() OVER (ORDER BY r) AS k
    FROM (SELECT id, body, random() AS r FROM demo_docs
          WHERE char_length(body) >= 200 ORDER BY r LIMIT 200) AS s
),
mid AS (
    -- p1: the first Chinese character from the middle on (a replaced comma
    -- would change no token at all), or the middle itself in text without.
    SELECT pick.*,
           coalesce(nullif(regexp_instr(body, '[一-龥]', len / 2), 0), len / 2) AS p1
    FROM pick
),
chars AS (
    -- p2 likewise from three quarters in, and always after p1.
    SELECT mid.*,
           coalesce(nullif(regexp_instr(body, '[一-龥]', greatest(len * 3 / 4, p1 + 1)), 0),
                    greatest(len * 3 / 4, p1 + 1)) AS p2,
           '国民经济社会发展建设工作政府企业改革开放' AS pool,
           1 + floor(random() * 20)::int AS i1,
           1 + floor(random() * 20)::int AS i2
    FROM mid
),
repl AS (
    -- The replacement for the characters at p1 and p2; the next one in the
    -- pool when the draw equals the character already there.
    SELECT chars.*,
           CASE WHEN substr(pool, i1, 1) = substr(body, p1, 1)
                THEN substr(pool, i1 % 20 + 1, 1) ELSE substr(pool, i1, 1) END AS c1,
           CASE WHEN substr(pool, i2, 1) = substr(body, p2, 1)
                THEN substr(pool, i2 % 20 + 1, 1) ELSE substr(pool, i2, 1) END AS c2,
           '（本报记者）' AS footer
    FROM chars
)
SELECT id, k,
       CASE (k - 1) % 5
           WHEN 0 THEN 'replaced 1 character'
           WHEN 1 THEN 'replaced 2 characters'
           WHEN 2 THEN 'appended a footer'
           WHEN 3 THEN 'deleted 6 characters'
           ELSE        'replaced 1 + footer'
       END AS edit,
       CASE (k - 1) % 5
           WHEN 0 THEN overlay(body PLACING c1 FROM p1 FOR 1)
           WHEN 1 THEN overlay(overlay(body PLACING c1 FROM p1 FOR 1) PLACING c2 FROM p2 FOR 1)
           WHEN 2 THEN body || footer
           WHEN 3 THEN overlay(body PLACING '' FROM p1 FOR 6)
           ELSE        overlay(body PLACING c1 FROM p1 FOR 1) || footer
       END AS new_body,
       CASE (k - 1) % 5
           WHEN 0 THEN substr(body, p1 - 5, 11)
           WHEN 1 THEN substr(body, p1 - 3, 7) || '…' || substr(body, p2 - 3, 7)
           WHEN 2 THEN '…' || right(body, 8)
           WHEN 3 THEN substr(body, p1 - 4, 14)
           ELSE        substr(body, p1 - 3, 7) || '…' || right(body, 4)
       END AS before,
       CASE (k - 1) % 5
           WHEN 0 THEN substr(body, p1 - 5, 5) || c1 || substr(body, p1 + 1, 5)
           WHEN 1 THEN substr(body, p1 - 3, 3) || c1 || substr(body, p1 + 1, 3) || '…'
                       || substr(body, p2 - 3, 3) || c2 || substr(body, p2 + 1, 3)
           WHEN 2 THEN '…' || right(body, 8) || footer
           WHEN 3 THEN substr(body, p1 - 4, 4) || substr(body, p1 + 6, 4)
           ELSE        substr(body, p1 - 3, 3) || c1 || substr(body, p1 + 1, 3) || '…'
                       || right(body, 4) || footer
       END AS after
FROM repl;

INSERT INTO demo_docs (body, copy_of, edit)
SELECT new_body, id, edit FROM demo_plan ORDER BY k;

---------------------------------------------------------------------------
-- 4. Fingerprint every document, timed on the server's clock.
---------------------------------------------------------------------------
\echo
\echo '== Fingerprinting'
ALTER TABLE demo_docs ADD COLUMN fp simhash64;
SELECT clock_timestamp() AS t0 \gset
UPDATE demo_docs SET fp = simhash(body);
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset

-- psql's \echo puts a space between its arguments, so each line of text
-- is made whole by format() and printed as one variable.
SELECT format('%s documents (%s of them planted copies), %s MB of UTF-8 text, %s characters',
              to_char(count(*), 'FM999,999,999'),
              count(*) FILTER (WHERE copy_of IS NOT NULL),
              to_char(sum(octet_length(body)) / 1e6, 'FM999,990.0'),
              to_char(sum(char_length(body)), 'FM999,999,999')) AS line1,
       format('fingerprinted in %s s by one backend: %s MB/s',
              to_char(:secs, 'FM999,990.00'),
              to_char(sum(octet_length(body)) / 1e6 / greatest(:secs, 1e-6), 'FM999,990.0')) AS line2,
       count(*) FILTER (WHERE fp IS NULL) AS n_null,
       count(*) FILTER (WHERE copy_of IS NOT NULL) > 0 AS has_copies,
       count(*) FILTER (WHERE copy_of IS NULL AND fp IS NOT NULL) > 1 AS has_pairs
FROM demo_docs \gset
\echo :line1
\echo :line2
SELECT :n_null > 0 AS has_null \gset
\if :has_null
SELECT format('%s documents have no features (only punctuation, symbols or spaces): their fingerprint is NULL',
              :n_null) AS line1 \gset
\echo :line1
\endif
ANALYZE demo_docs;

---------------------------------------------------------------------------
-- 5a. The planted copies: how close is each to its original?
---------------------------------------------------------------------------
\echo
\echo '== Planted copies: Hamming distance to the original'
\if :has_copies
CREATE TEMP TABLE demo_copy_dist AS
SELECT c.id AS copy_id, o.id AS orig_id, c.edit, o.fp <~> c.fp AS distance
FROM demo_docs AS c JOIN demo_docs AS o ON o.id = c.copy_of;

SELECT coalesce(edit, 'all edits') AS edit,
       count(*) AS copies,
       count(*) FILTER (WHERE distance = 0) AS "distance 0",
       count(*) FILTER (WHERE distance <= 3) AS "<= 3",
       count(*) FILTER (WHERE distance <= 7) AS "<= 7",
       round(avg(distance), 1) AS "mean",
       max(distance) AS "max"
FROM demo_copy_dist
GROUP BY ROLLUP (edit)
ORDER BY edit IS NULL, min(copy_id);

SELECT format('recall: %s of %s copies within distance 3 (%s%%), %s within distance 7 (%s%%)',
              count(*) FILTER (WHERE distance <= 3), count(*),
              round(100.0 * count(*) FILTER (WHERE distance <= 3) / nullif(count(*), 0), 1),
              count(*) FILTER (WHERE distance <= 7),
              round(100.0 * count(*) FILTER (WHERE distance <= 7) / nullif(count(*), 0), 1)) AS line1
FROM demo_copy_dist \gset
\echo :line1
-- For scale: unrelated documents sit far apart, around 32 bits.
\if :has_pairs
WITH span AS (
    SELECT min(id) AS lo, max(id) AS hi FROM demo_docs WHERE copy_of IS NULL
), drawn AS (
    -- b is a plus 1 to n - 1, wrapping around: never a itself.
    SELECT lo + o AS a, lo + (o + 1 + floor(random() * (hi - lo))::bigint) % (hi - lo + 1) AS b
    FROM span, generate_series(1, 10000),
         LATERAL (SELECT floor(random() * (hi - lo + 1))::bigint AS o) AS r
), dist AS (
    SELECT x.fp <~> y.fp AS distance
    FROM drawn JOIN demo_docs AS x ON x.id = a JOIN demo_docs AS y ON y.id = b
)
SELECT format('for scale, %s random pairs of documents: median distance %s, 1 in 100 at %s or less, closest %s',
              to_char(count(distance), 'FM999,999'),
              percentile_disc(0.5) WITHIN GROUP (ORDER BY distance),
              percentile_disc(0.01) WITHIN GROUP (ORDER BY distance),
              min(distance)) AS line1
FROM dist \gset
\echo :line1
\endif
\echo
\echo 'Examples, one of each edit (the text around the edit):'
SELECT DISTINCT ON ((p.k - 1) % 5)
       d.orig_id AS original, d.copy_id AS copy, d.distance, d.edit,
       translate(p.before, E'\n\r\t', '   ') AS "original text",
       translate(p.after, E'\n\r\t', '   ') AS "copy's text"
FROM demo_copy_dist AS d JOIN demo_plan AS p ON p.id = d.orig_id
ORDER BY (p.k - 1) % 5, p.k;
\else
\echo 'none: no document has 200 characters or more'
\endif

---------------------------------------------------------------------------
-- 5b. Near-duplicates the corpus itself holds, within distance 3, without
-- comparing every pair. Pigeonhole: split the 64 bits into four 16-bit
-- bands; 3 differing bits can touch at most 3 bands, so two fingerprints
-- within distance 3 agree exactly on at least one band. Four equi-joins on
-- band equality (hash joins) give a short list of candidates; only those
-- get their distance computed.
---------------------------------------------------------------------------
\echo
\echo '== Natural near-duplicates within distance 3 (planted copies left out)'
CREATE TEMP TABLE demo_bands AS
SELECT id, fp,
       simhash_band(fp, 0) AS b0, simhash_band(fp, 1) AS b1,
       simhash_band(fp, 2) AS b2, simhash_band(fp, 3) AS b3
FROM demo_docs
WHERE copy_of IS NULL AND fp IS NOT NULL;
ANALYZE demo_bands;

SELECT clock_timestamp() AS t0 \gset
-- UNION, not UNION ALL: a pair that agrees on several bands is found by
-- several joins.
CREATE TEMP TABLE demo_candidates AS
          SELECT a.id AS a_id, b.id AS b_id, a.fp <~> b.fp AS distance
          FROM demo_bands a JOIN demo_bands b ON a.b0 = b.b0 AND a.id < b.id
    UNION SELECT a.id, b.id, a.fp <~> b.fp
          FROM demo_bands a JOIN demo_bands b ON a.b1 = b.b1 AND a.id < b.id
    UNION SELECT a.id, b.id, a.fp <~> b.fp
          FROM demo_bands a JOIN demo_bands b ON a.b2 = b.b2 AND a.id < b.id
    UNION SELECT a.id, b.id, a.fp <~> b.fp
          FROM demo_bands a JOIN demo_bands b ON a.b3 = b.b3 AND a.id < b.id;
CREATE TEMP TABLE demo_pairs AS
SELECT c.a_id, c.b_id, c.distance, a.body = b.body AS same_text
FROM demo_candidates AS c
JOIN demo_docs AS a ON a.id = c.a_id
JOIN demo_docs AS b ON b.id = c.b_id
WHERE c.distance <= 3;
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs \gset

SELECT format('%s fingerprints make %s pairs; the band joins compared only %s of them',
              to_char(count(*), 'FM999,999,999'),
              to_char(count(*) * (count(*) - 1) / 2, 'FM999,999,999,999'),
              (SELECT to_char(count(*), 'FM999,999,999') FROM demo_candidates)) AS line1,
       format('and found %s within distance 3, in %s s',
              (SELECT CASE count(*) WHEN 1 THEN '1 pair' ELSE count(*) || ' pairs' END
               FROM demo_pairs),
              to_char(:secs, 'FM999,990.00')) AS line2,
       (SELECT count(*) FILTER (WHERE NOT same_text) > 0 FROM demo_pairs) AS any_near,
       (SELECT count(*) FILTER (WHERE same_text) > 0 FROM demo_pairs) AS any_same
FROM demo_bands \gset
\echo :line1
\echo :line2

\if :any_near
\else
\if :any_same
\else
\quit
\endif
\endif

SELECT distance,
       count(*) FILTER (WHERE same_text) AS "pairs with identical text",
       count(*) FILTER (WHERE NOT same_text) AS "pairs with different text"
FROM demo_pairs GROUP BY distance ORDER BY distance;

-- Texts are shown on one line: line breaks and tabs become spaces.
\if :any_near
\echo 'The closest pairs whose texts differ (first 40 characters of each):'
-- A pair takes two lines, one per document.
WITH top AS (
    SELECT row_number() OVER (ORDER BY distance, a_id, b_id) AS pair, *
    FROM demo_pairs WHERE NOT same_text
    ORDER BY distance, a_id, b_id LIMIT 10
)
SELECT CASE WHEN side = 1 THEN top.pair END AS pair,
       CASE WHEN side = 1 THEN top.distance END AS distance,
       d.id, char_length(d.body) AS chars,
       left(translate(d.body, E'\n\r\t', '   '), 40) AS "text"
FROM top
CROSS JOIN LATERAL (VALUES (1, top.a_id), (2, top.b_id)) AS s(side, doc_id)
JOIN demo_docs AS d ON d.id = s.doc_id
ORDER BY top.pair, side;
\endif

\if :any_same
\echo 'Exact duplicates (identical text, so distance 0):'
SELECT a_id AS id, b_id AS "same as id", char_length(d.body) AS chars,
       left(translate(d.body, E'\n\r\t', '   '), 40) AS "text"
FROM demo_pairs JOIN demo_docs AS d ON d.id = a_id
WHERE same_text
ORDER BY a_id, b_id LIMIT 10;
\endif
