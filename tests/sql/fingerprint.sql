-- simhash(text) and simhash_features(text).

-- The golden vectors of crates/simhash-core/tests/golden.rs, through SQL:
-- simhash() is definition version 3, simhash_v2() version 2, simhash_v1()
-- version 1.
SELECT n, simhash(t) AS v3, simhash_v2(t) AS v2, simhash_v1(t) AS v1 FROM (VALUES
    (1, '中华人民共和国成立于1949年，首都是北京。'),
    (2, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。'),
    (3, 'The quick brown fox jumps over the lazy dog.'),
    (4, 'SimHash was described by Moses Charikar in 2002; Google used it to find near-duplicate web pages.'),
    (5, '苹果公司发布了新款iPhone 15 Pro，售价7999元起。Apple says it ships in September.'),
    (6, 'ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：１２３４５'),
    (7, 'Привет, мир! Ελληνικά. café naïve'),
    (8, '我'),
    (9, 'a'),
    (10, '國務院總理李鵬今天在人民大會堂會見了來訪的日本客人，雙方就進一步發展中日兩國的經貿合作交換了意見。')) AS g(n, t)
ORDER BY n;
SELECT simhash(repeat('北京天气晴朗', 200)) AS han_run,
       simhash(repeat('abc', 300) || ' tail') AS latin_run;
SELECT simhash_v2(repeat('北京天气晴朗', 200)) AS han_run_v2,
       simhash_v1(repeat('abc', 300) || ' tail') AS latin_run_v1;
-- Version 3 on a long text, whose common characters are expected by chance.
SELECT simhash(repeat('国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。', 30)
               || repeat('The quick brown fox jumps over the lazy dog. ', 20)) AS long_v3;

-- NULL in, NULL out; no features, no fingerprint.
SELECT simhash(NULL) IS NULL AS null_in,
       simhash('') IS NULL AS empty,
       simhash('   ') IS NULL AS spaces,
       simhash(E'\t\n\r') IS NULL AS control,
       simhash('，。！？、；：“”') IS NULL AS cjk_punctuation,
       simhash('!@#$%^&*()[]{}') IS NULL AS ascii_punctuation,
       simhash('😀🎉★') IS NULL AS symbols;

-- What does not count: case, width, punctuation, spacing.
SELECT simhash('今天，北京市政府发布了新的交通管理规定。Beijing Traffic Rules 2024')
     = simhash('今天 北京市政府发布了新的交通管理规定！！ＢＥＩＪＩＮＧ  traffic  rules  ２０２４') AS same;

-- Close texts are close, different texts are not.
SELECT simhash(a) <~> simhash(b) <= 6 AS edited_is_close,
       simhash(a) <~> simhash(c) > 12 AS other_is_far
FROM (VALUES (
    '国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。李鹏说，中国政府高度重视同日本的关系，愿同日方一道努力，推动两国关系健康稳定地向前发展。日本客人表示，日本经济界愿意积极参与中国的经济建设，为两国的友好合作作出贡献。',
    '国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了看法。李鹏说，中国政府高度重视同日本的关系，愿同日方一道努力，推动两国关系健康稳定地向前发展。日本客人表示，日本经济界愿意积极参与中国的经济建设，为两国的友好合作作出贡献。',
    '昨天下午，北京市民在天安门广场参加了迎新年长跑活动，数千名运动员和群众冒着严寒跑完全程。活动由北京市体育局主办，旨在推动全民健身运动的开展，增强人民体质。'
)) AS v(a, b, c);

-- Why: each distinct feature with tf, idf (its self-information), weight
-- and hash: Han characters, and the trigrams of other words.
SELECT * FROM simhash_features('今天北京天气很好，我们去公园散步。今天 Beijing！');
-- Version 2's tokens, for comparison.
SELECT * FROM simhash_features_v2('今天北京天气很好，我们去公园散步。今天 Beijing！');
SELECT count(*) FROM simhash_features('');
SELECT count(*) FROM simhash_features(NULL);
-- A one-feature text's fingerprint is that feature's hash.
SELECT (SELECT hash FROM simhash_features('新')) = simhash('新') AS one_feature,
       (SELECT hash FROM simhash_features_v2('新闻')) = simhash_v2('新闻') AS one_token_v2;
-- Version 2 against version 1: unknown tokens weigh 4 instead of the
-- median, tf counts at most 3 times, traditional characters fold.
SELECT v.token, v.tf, v.idf, v.weight, o.idf AS v1_idf, o.weight AS v1_weight
FROM simhash_features_v2('銀行 银行 银行 银行 银行 zyxwvq') v
JOIN simhash_features_v1('銀行 银行 银行 银行 银行 zyxwvq') o USING (hash);
-- Version 3: the common 的 of a long text weighs nothing once chance gives
-- it six times; the rare 鹏 keeps its six.
SELECT token, tf, round(idf::numeric, 2) AS idf, round(weight::numeric, 2) AS weight
FROM simhash_features(repeat('国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。', 200))
WHERE token IN ('的', '鹏') ORDER BY token;
SELECT count(*) FROM simhash_features_v1('銀行 银行');

-- Properties a generated column and parallel queries rely on.
SELECT proname, provolatile, proisstrict, proparallel FROM pg_proc
WHERE proname IN ('simhash', 'simhash_v2', 'simhash_v1') ORDER BY proname;
CREATE TABLE docs (id int PRIMARY KEY, body text,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body) VALUES (1, '北京天气晴朗'), (2, ''), (3, NULL), (4, 'Beijing');
SELECT id, fp FROM docs ORDER BY id;
DROP TABLE docs;

-- Parallel workers give the same fingerprints as the leader.
CREATE TABLE many AS
SELECT g AS id, '第' || g || '条新闻：北京天气晴朗，气温' || (g % 40) || '度。' AS body
FROM generate_series(1, 20000) g;
ANALYZE many;
SET max_parallel_workers_per_gather = 0;
SELECT sum(hamming(simhash(body), '0000000000000000')) AS serial_sum FROM many \gset
SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT sum(hamming(simhash(body), '0000000000000000')) FROM many;
SELECT sum(hamming(simhash(body), '0000000000000000')) = :serial_sum AS parallel_agrees FROM many;
RESET ALL;
DROP TABLE many;

-- Huge input: 100 MB fingerprints without trouble (nothing in it is
-- above chance, so it is weighed regardless of chance: not the 0 that every
-- such text would share)...
SELECT simhash(repeat('北京天气晴朗，', 5000000)) <> '0000000000000000' AS hundred_mb,
       simhash_v2(repeat('北京天气晴朗，', 5000000)) = simhash_v2('北京天气晴朗') AS hundred_mb_v2;
-- ...and a statement timeout cancels it promptly: 150 MB of characters
-- that go through NFKC (CJK Extension B) take about 2 s to fingerprint,
-- but stop within a second of the 300 ms timeout. (Common Chinese text
-- takes the fast path, which checks as often, as the core's tests count,
-- but fingerprints 210 MB of it in less than the timeout.)
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '300ms';
SELECT simhash(repeat('𠀀𠀁𠂉，', 10000000));
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1.3 seconds' AS cancelled_promptly;
-- The same for simhash_features() and for version 2.
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '300ms';
SELECT count(*) FROM simhash_features(repeat('北京天气晴朗，', 10000000));
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1.3 seconds' AS features_cancelled_promptly;
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '300ms';
SELECT simhash_v2(repeat('北京天气晴朗，', 10000000));
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '1.3 seconds' AS v2_cancelled_promptly;

-- Every fingerprint function: NULL in, NULL out; no features, no
-- fingerprint and no rows.
SELECT simhash_v2(NULL) IS NULL AS v2_null, simhash_v2('，。') IS NULL AS v2_featureless,
       simhash_v1(NULL) IS NULL AS v1_null, simhash_v1('') IS NULL AS v1_empty;
SELECT (SELECT count(*) FROM simhash_features_v2(NULL)) AS v2_null_rows,
       (SELECT count(*) FROM simhash_features_v2('')) AS v2_empty_rows,
       (SELECT count(*) FROM simhash_features('！？')) AS v3_featureless_rows;

-- Texts as PostgreSQL stores them: compressed inline, compressed in the
-- TOAST table, with pglz (which simhash decodes itself), and not
-- compressed. Each fingerprint is the one of the same text decompressed by
-- PostgreSQL (body || '' is a fresh, plain copy). (lz4, which not every
-- server is built with, goes through PostgreSQL's own decoder.)
CREATE TABLE stored_texts (how text, body text COMPRESSION pglz);
-- Repetitive: compressed to a few bytes, inline.
INSERT INTO stored_texts SELECT 'pglz inline', repeat('中华人民共和国成立于1949年，首都是北京。', n)
FROM generate_series(60, 400, 17) n;
-- Characters drawn from 47: compressed by about a third, too long to
-- stay in the row.
INSERT INTO stored_texts
SELECT 'pglz toast', string_agg(substr('的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能，。',
                                   get_byte(decode(md5(n::text || ':' || i::text), 'hex'), 0) % 47 + 1, 1), '')
FROM generate_series(1, 12) n, generate_series(1, 800 * n) i GROUP BY n;
ALTER TABLE stored_texts ALTER body SET STORAGE EXTERNAL;
INSERT INTO stored_texts SELECT 'plain', body || '' FROM stored_texts WHERE how LIKE 'pglz%';
SELECT how, pg_column_compression(body) AS compression,
       count(*) FILTER (WHERE pg_column_size(body) < octet_length(body)) AS smaller,
       count(*) FILTER (WHERE pg_column_size(body) > 2100) AS beyond_the_row,
       count(*) FILTER (WHERE simhash(body) = simhash(body || '')
                          AND simhash_v2(body) = simhash_v2(body || '')
                          AND simhash_v1(body) = simhash_v1(body || '')) AS same_fingerprint,
       count(*)
FROM stored_texts GROUP BY 1, 2 ORDER BY 1, 2;
-- The same texts with lz4, where the server has it (PostgreSQL decodes
-- them); on a server built without lz4 this is pglz again.
DO $$
BEGIN
    EXECUTE 'CREATE TABLE lz4_texts (body text COMPRESSION lz4)';
EXCEPTION WHEN feature_not_supported THEN
    CREATE TABLE lz4_texts (body text);
END
$$;
INSERT INTO lz4_texts SELECT body || '' FROM stored_texts WHERE how LIKE 'pglz%';
SELECT count(*) FILTER (WHERE pg_column_compression(body) IS NOT NULL) AS compressed,
       count(*) FILTER (WHERE simhash(body) = simhash(body || '')) AS same_fingerprint
FROM lz4_texts;
DROP TABLE stored_texts, lz4_texts;

-- A database that is not UTF-8 gets a clear error, not wrong bits.
\set regress_db :DBNAME
CREATE DATABASE simhash_regress_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_regress_latin1
CREATE EXTENSION simhash;
SELECT simhash('abc');
SELECT simhash_v2('abc');
SELECT * FROM simhash_features('abc');
SELECT simhash_jaccard('abc', 'abd');
SELECT hamming('0123456789abcdef', 'ffffffffffffffff') AS other_functions_work;
\c :regress_db
DROP DATABASE simhash_regress_latin1;
