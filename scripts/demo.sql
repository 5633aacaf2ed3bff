-- The SQL half of scripts/demo.sh, run by it in one psql session (temp
-- tables and psql variables carry from one step to the next). On entry
-- demo_docs(id, body, copy_of, edit) holds the corpus; this file plants the
-- edited copies, fingerprints everything and reports what simhash finds.

\pset footer off
SET client_min_messages = warning;

---------------------------------------------------------------------------
-- 3. Plant lightly edited copies of 240 documents of at least 200
-- characters, each edit in the script of its document. The seed makes the
-- choice, and so the report, the same on every run over the same corpus.
---------------------------------------------------------------------------
SELECT setseed(0.1998) AS seeded \gset

-- The scripts the demo knows how to edit. `letters`: the characters that
-- say a document is written in the script (a document is in the script
-- whose characters are more than half of its letters and ideographs, and
-- at least half of all its characters); `targets`: the characters that
-- are replaced, inserted or drawn as replacements (lower-case letters for
-- an alphabet, so that a replacement is never just a change of case,
-- which the fingerprint and the similarity both ignore). The footer is in
-- the language of the script's text: Chinese for Han ideographs, English
-- for Latin letters (and, lacking better, for Greek and Cyrillic too: the
-- report names the footer's language).
CREATE TEMP TABLE demo_script (script, letters, targets, unit, units, footer, footer_lang, planted) AS
VALUES ('Han', '㐀-䶿一-鿿', '㐀-䶿一-鿿', 'ideograph', 'ideographs',
        '（本报记者）', 'Chinese',
        'ideographs replaced, inserted and deleted, a Chinese footer'),
       ('Latin', 'A-Za-zÀ-ÖØ-öø-ɏ', 'a-zß-öø-ÿ', 'Latin letter', 'Latin letters',
        E'\nReporting by our staff; all rights reserved.', 'English',
        'lower-case Latin letters replaced, words inserted and deleted, an English footer'),
       ('Greek', 'Ͱ-Ͽ', 'α-ω', 'Greek letter', 'Greek letters',
        E'\nReporting by our staff; all rights reserved.', 'English',
        'lower-case Greek letters replaced, words inserted and deleted, an English footer'),
       ('Cyrillic', 'Ѐ-ӿ', 'а-яё', 'Cyrillic letter', 'Cyrillic letters',
        E'\nReporting by our staff; all rights reserved.', 'English',
        'lower-case Cyrillic letters replaced, words inserted and deleted, an English footer');

-- Each copy gets one of six edits, taking turns:
--   0. one character replaced (an ideograph, or a lower-case letter) from
--      the middle on, by another drawn from the same document: a slip of
--      the keyboard or of the input method, not random noise;
--   1. two replaced, the second from three quarters in;
--   2. inserted: 6 ideographs copied from elsewhere in the document (Han),
--      or one of its words, 3 letters or more, before a word (alphabets);
--   3. deleted: a run of 6 ideographs (Han), or a word and the space after
--      it (alphabets);
--   4. a footer appended;
--   5. edit 0 and the footer.
-- pos/len/ins describe the edit in the text (replace `len` characters at
-- `pos` with `ins`); pos2/ins2 the second replacement of edit 1.
CREATE TEMP TABLE demo_plan AS
WITH sample AS (
    SELECT id, body, char_length(body) AS len, r
    FROM (SELECT id, body, random() AS r FROM demo_docs
          WHERE char_length(body) >= 200) AS s
    ORDER BY r LIMIT 1000
),
counted0 AS (
    SELECT sample.*, sc.script, regexp_count(body, '[' || sc.letters || ']') AS n
    FROM sample CROSS JOIN demo_script AS sc
),
counted AS (
    SELECT counted0.*, sum(n) OVER (PARTITION BY id) AS all_letters FROM counted0
),
typed AS (
    SELECT DISTINCT ON (c.id) c.id, c.body, c.len, c.r, sc.*,
           '[' || sc.targets || ']' AS t_re, '[' || sc.letters || ']' AS l_re,
           '[^' || sc.letters || ']' AS nl_re,
           regexp_replace(c.body, '[^' || sc.targets || ']', '', 'g') AS pool
    FROM counted AS c JOIN demo_script AS sc USING (script)
    WHERE 2 * c.n > c.all_letters AND 2 * c.n >= c.len
    ORDER BY c.id, c.n DESC
),
placed AS (
    -- p1: the first target from the middle on (or the first at all);
    -- p2: the first from three quarters in and after p1.
    SELECT typed.*,
           coalesce(nullif(regexp_instr(body, t_re, len / 2), 0), regexp_instr(body, t_re)) AS p1
    FROM typed
    WHERE char_length(pool) >= 20
),
placed2 AS (
    SELECT placed.*,
           coalesce(nullif(regexp_instr(body, t_re, greatest(len * 3 / 4, p1 + 1)), 0),
                    regexp_instr(body, t_re, p1 + 1)) AS p2,
           replace(pool, substr(body, p1, 1), '') AS pool1,
           CASE WHEN script = 'Han'
                THEN regexp_instr(body, t_re || '{6}', len / 2)
                -- the word after a non-letter, with its space
                ELSE regexp_instr(body, nl_re || '(' || l_re || '+ )', len / 2, 1, 0, '', 1)
           END AS del_pos,
           CASE WHEN script = 'Han' THEN 6
                ELSE char_length(regexp_substr(body, nl_re || '(' || l_re || '+ )', len / 2, 1, '', 1))
           END AS del_len,
           CASE WHEN script = 'Han' THEN p1
                ELSE regexp_instr(body, nl_re || l_re, len / 2) + 1
           END AS ins_pos,
           -- whole lower-case words of 3 letters or more
           nl_re || '(' || t_re || '{3,})(?=' || nl_re || '|$)' AS word_re
    FROM placed
),
drawn AS (
    SELECT placed2.*,
           replace(pool, substr(body, p2, 1), '') AS pool2,
           substr(pool1, 1 + floor(random() * char_length(pool1))::int, 1) AS c1,
           CASE WHEN script = 'Han'
                THEN substr(pool, 1 + floor(random() * (char_length(pool) - 5))::int, 6)
                ELSE regexp_substr(body, word_re, 1,
                                   1 + floor(random() * greatest(regexp_count(body, word_re), 1))::int,
                                   '', 1) || ' '
           END AS ins_text
    FROM placed2
    WHERE p2 > 0 AND del_pos > 0 AND ins_pos > 1 AND pool1 <> ''
),
chosen AS (
    SELECT drawn.*,
           substr(pool2, 1 + floor(random() * greatest(char_length(pool2), 1))::int, 1) AS c2,
           row_number() OVER (ORDER BY r) AS k
    FROM drawn
    WHERE pool2 <> '' AND ins_text IS NOT NULL
    ORDER BY r LIMIT 240
),
edits AS (
    SELECT chosen.*, (k - 1) % 6 AS kind,
           CASE (k - 1) % 6 WHEN 2 THEN ins_pos WHEN 3 THEN del_pos
                            WHEN 4 THEN NULL ELSE p1 END AS pos,
           CASE (k - 1) % 6 WHEN 2 THEN 0 WHEN 3 THEN del_len
                            WHEN 4 THEN 0 ELSE 1 END AS n_del,
           CASE (k - 1) % 6 WHEN 2 THEN ins_text WHEN 3 THEN ''
                            WHEN 4 THEN '' ELSE c1 END AS ins,
           CASE WHEN (k - 1) % 6 = 1 THEN p2 END AS pos2,
           CASE WHEN (k - 1) % 6 IN (4, 5) THEN footer ELSE '' END AS tail,
           -- characters of context either side in the examples
           CASE WHEN script = 'Han' THEN 5 ELSE 16 END AS w
    FROM chosen
)
SELECT id, k, kind, script,
       CASE kind
           WHEN 0 THEN format('1 %s replaced', unit)
           WHEN 1 THEN format('2 %s replaced', units)
           WHEN 2 THEN CASE WHEN script = 'Han' THEN '6 ideographs inserted'
                            ELSE format('1 word inserted (%s)', units) END
           WHEN 3 THEN CASE WHEN script = 'Han' THEN '6 ideographs deleted'
                            ELSE format('1 word deleted (%s)', units) END
           WHEN 4 THEN format('%s footer appended', footer_lang)
           ELSE        format('1 %s replaced + %s footer', unit, footer_lang)
       END AS edit,
       -- the second replacement first: it lies after pos and leaves it be
       CASE WHEN pos IS NULL THEN body
            ELSE overlay(CASE WHEN pos2 IS NULL THEN body ELSE overlay(body PLACING c2 FROM pos2 FOR 1) END
                         PLACING ins FROM pos FOR n_del)
       END || tail AS new_body,
       -- the text around the edit, before and after
       concat_ws(' … ',
                 CASE WHEN pos IS NOT NULL THEN substr(body, greatest(pos - w, 1), least(w, pos - 1) + n_del + w) END,
                 CASE WHEN pos2 IS NOT NULL THEN substr(body, pos2 - w, 2 * w + 1) END,
                 CASE WHEN tail <> '' THEN right(body, w) END) AS before,
       concat_ws(' … ',
                 CASE WHEN pos IS NOT NULL THEN substr(body, greatest(pos - w, 1), least(w, pos - 1))
                                                || ins || substr(body, pos + n_del, w) END,
                 CASE WHEN pos2 IS NOT NULL THEN substr(body, pos2 - w, w) || c2 || substr(body, pos2 + 1, w) END,
                 CASE WHEN tail <> '' THEN right(body, w) || tail END) AS after
FROM edits;

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

-- The second source of candidates (simhash_add_lsh: a stored generated
-- column body_lsh of simhash_lsh(body) and its GIN index), unless the
-- demo was run with SIMHASH_DEMO_LSH=0.
\if :lsh
SELECT clock_timestamp() AS t0 \gset
SELECT simhash_add_lsh('demo_docs', 'body') AS lsh_col \gset
SELECT format('candidate keys of the second source (simhash_add_lsh, column %s and its GIN index) in %s s',
              :'lsh_col',
              to_char(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), 'FM999,990.00')) AS line1 \gset
\echo :line1
\endif
ANALYZE demo_docs;

---------------------------------------------------------------------------
-- 5a. The planted copies: how close is each to its original, and which
-- does the rule of record find? The rule (README, *Verified
-- near-duplicates*): a candidate, fingerprints within simhash.verify_k
-- (default 11), verified on the two texts, simhash_similarity at least
-- simhash.similarity_threshold (default 0.71): simhash_is_near_duplicate.
-- On a table with the second source (simhash_add_lsh), a row that shares
-- a candidate key (simhash_lsh_shared at least simhash_lsh_min_shared())
-- and whose 5-gram Jaccard reaches simhash_lsh_min_jaccard() is a
-- candidate too, verified the same way. The band and GIN indexes find
-- exactly these candidates, so the pair's own values say whether a query
-- for the copy finds its original.
---------------------------------------------------------------------------
\echo
\echo '== Planted copies: found by the fingerprint alone, and by the rule of record'
\if :has_copies
SELECT current_setting('simhash.verify_k')::int AS verify_k,
       current_setting('simhash.similarity_threshold')::float8 AS threshold,
       simhash_lsh_min_shared() AS min_shared,
       simhash_lsh_min_jaccard() AS min_jaccard,
       format('fp <= %s', current_setting('simhash.verify_k')) AS col_k \gset
SELECT EXISTS (SELECT FROM pg_attribute
               WHERE attrelid = 'demo_docs'::regclass AND attname = 'body_lsh'
                 AND NOT attisdropped) AS has_lsh \gset

CREATE TEMP TABLE demo_copy_dist AS
SELECT c.id AS copy_id, o.id AS orig_id, c.edit, p.kind, p.script,
       o.fp <~> c.fp AS distance,
       simhash_similarity(o.body, c.body) AS similarity,
       simhash_is_near_duplicate(o.body, c.body) AS rule_fp
FROM demo_docs AS c
JOIN demo_docs AS o ON o.id = c.copy_of
JOIN demo_plan AS p ON p.id = o.id;
ALTER TABLE demo_copy_dist ADD COLUMN rule_both boolean;
\if :has_lsh
-- The second source's candidates, verified as the first's.
UPDATE demo_copy_dist AS d
SET rule_both = d.rule_fp
    OR (simhash_lsh_shared(o.body_lsh, c.body_lsh) >= :min_shared
        AND simhash_jaccard(o.body, c.body) >= :min_jaccard
        AND d.similarity >= :threshold)
FROM demo_docs AS c, demo_docs AS o
WHERE c.id = d.copy_id AND o.id = d.orig_id;
\endif

-- Which edits were planted, in which script.
SELECT string_agg(format('%s copies of documents mostly in the %s script: %s',
                         n, script, planted), '; ' ORDER BY n DESC) AS line1
FROM (SELECT p.script, s.planted, count(*) AS n
      FROM demo_plan AS p JOIN demo_script AS s USING (script)
      GROUP BY p.script, s.planted) AS g \gset
\echo :line1
SELECT format('rule of record: fingerprint within %s (simhash.verify_k) and simhash_similarity >= %s (simhash.similarity_threshold)',
              :verify_k, :threshold) AS line1,
       CASE WHEN :'has_lsh'::boolean
            THEN format('with the second source (simhash_add_lsh): also a shared candidate key (>= %s band) with simhash_jaccard >= %s, verified the same way',
                        :min_shared, :min_jaccard)
            ELSE 'the table has no second source (SIMHASH_DEMO_LSH=0): the last column is empty'
       END AS line2 \gset
\echo :line1
\echo :line2
-- Shares as "found of copies (percent)".
SELECT coalesce(edit, 'all edits') AS "planted edit",
       count(*) AS copies,
       format('%s (%s%%)', count(*) FILTER (WHERE distance <= 3),
              round(100.0 * count(*) FILTER (WHERE distance <= 3) / count(*))) AS "fp <= 3",
       format('%s (%s%%)', count(*) FILTER (WHERE distance <= 7),
              round(100.0 * count(*) FILTER (WHERE distance <= 7) / count(*))) AS "fp <= 7",
       format('%s (%s%%)', count(*) FILTER (WHERE distance <= :verify_k),
              round(100.0 * count(*) FILTER (WHERE distance <= :verify_k) / count(*))) AS :"col_k",
       format('%s (%s%%)', count(*) FILTER (WHERE rule_fp),
              round(100.0 * count(*) FILTER (WHERE rule_fp) / count(*))) AS "rule of record",
       CASE WHEN :'has_lsh'::boolean THEN
       format('%s (%s%%)', count(*) FILTER (WHERE rule_both),
              round(100.0 * count(*) FILTER (WHERE rule_both) / count(*))) END AS "rule, both sources",
       percentile_disc(0.5) WITHIN GROUP (ORDER BY distance) AS "median distance",
       round(percentile_disc(0.5) WITHIN GROUP (ORDER BY similarity)::numeric, 2) AS "median similarity"
FROM demo_copy_dist
GROUP BY ROLLUP (edit)
ORDER BY edit IS NULL, min(script), min(kind), edit;

SELECT format('found: %s of %s copies by the fingerprint within 3 (%s%%), %s within 7 (%s%%); %s by the rule of record (%s%%)%s',
              count(*) FILTER (WHERE distance <= 3), count(*),
              round(100.0 * count(*) FILTER (WHERE distance <= 3) / count(*), 1),
              count(*) FILTER (WHERE distance <= 7),
              round(100.0 * count(*) FILTER (WHERE distance <= 7) / count(*), 1),
              count(*) FILTER (WHERE rule_fp),
              round(100.0 * count(*) FILTER (WHERE rule_fp) / count(*), 1),
              CASE WHEN :'has_lsh'::boolean
                   THEN format(', %s with both sources (%s%%)', count(*) FILTER (WHERE rule_both),
                               round(100.0 * count(*) FILTER (WHERE rule_both) / count(*), 1))
                   ELSE '' END) AS line1
FROM demo_copy_dist \gset
\echo :line1
-- For scale: unrelated documents sit far apart, around 32 bits, and the
-- rule of record calls almost none of them near-duplicates.
\if :has_pairs
WITH span AS (
    SELECT min(id) AS lo, max(id) AS hi FROM demo_docs WHERE copy_of IS NULL
), drawn AS (
    -- b is a plus 1 to n - 1, wrapping around: never a itself.
    SELECT lo + o AS a, lo + (o + 1 + floor(random() * (hi - lo))::bigint) % (hi - lo + 1) AS b
    FROM span, generate_series(1, 10000),
         LATERAL (SELECT floor(random() * (hi - lo + 1))::bigint AS o) AS r
), dist AS (
    SELECT x.fp <~> y.fp AS distance,
           -- the texts are compared only for the candidates, as the rule does
           CASE WHEN x.fp <~> y.fp <= :verify_k THEN simhash_similarity(x.body, y.body) >= :threshold END AS rule_fp
    FROM drawn JOIN demo_docs AS x ON x.id = a JOIN demo_docs AS y ON y.id = b
)
SELECT format('for scale, %s random pairs of documents: median distance %s, 1 in 100 at %s or less, closest %s; the rule of record calls %s of them near-duplicates',
              to_char(count(distance), 'FM999,999'),
              percentile_disc(0.5) WITHIN GROUP (ORDER BY distance),
              percentile_disc(0.01) WITHIN GROUP (ORDER BY distance),
              min(distance), count(*) FILTER (WHERE rule_fp)) AS line1
FROM dist \gset
\echo :line1
\endif
\echo
\echo 'Examples, one of each edit (the text around the edit):'
SELECT DISTINCT ON (p.script, p.kind)
       d.orig_id AS original, d.copy_id AS copy, d.distance,
       round(d.similarity::numeric, 2) AS similarity, d.edit,
       translate(p.before, E'\n\r\t', '   ') AS "original text",
       translate(p.after, E'\n\r\t', '   ') AS "copy's text"
FROM demo_copy_dist AS d JOIN demo_plan AS p ON p.id = d.orig_id
ORDER BY p.script, p.kind, p.k;
\else
\echo 'none: no document of 200 characters or more is mostly Han ideographs or letters of an alphabet'
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
