-- simhash_add_bands names its indexes uniquely, within 63 bytes, without
-- cutting a character in two, never skips one, and returns what it made.
CREATE FUNCTION band_report(tbl regclass) RETURNS TABLE (index_name text, bytes int, expression text)
LANGUAGE sql AS $$
    SELECT c.relname::text, octet_length(c.relname), pg_get_expr(i.indexprs, i.indrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = tbl ORDER BY c.relname
$$;

-- Two tables whose names share their first 40 characters.
CREATE TABLE a_table_with_a_rather_long_name_for_news_2024 (id int, fp simhash64);
CREATE TABLE a_table_with_a_rather_long_name_for_news_2025 (id int, fp simhash64);
SELECT simhash_add_bands('a_table_with_a_rather_long_name_for_news_2024', 'fp');
SELECT simhash_add_bands('a_table_with_a_rather_long_name_for_news_2025', 'fp');
SELECT * FROM band_report('a_table_with_a_rather_long_name_for_news_2024');
SELECT * FROM band_report('a_table_with_a_rather_long_name_for_news_2025');

-- Two names that must be shortened to the same 63 bytes.
CREATE TABLE news_articles_fingerprints_for_the_near_duplicate_check_one (fp simhash64);
CREATE TABLE news_articles_fingerprints_for_the_near_duplicate_check_two (fp simhash64);
SELECT simhash_add_bands('news_articles_fingerprints_for_the_near_duplicate_check_one', 'fp');
SELECT simhash_add_bands('news_articles_fingerprints_for_the_near_duplicate_check_two', 'fp');
SELECT * FROM band_report('news_articles_fingerprints_for_the_near_duplicate_check_two');

-- A 21-character Chinese name (63 bytes) and a long Chinese column.
CREATE TABLE 新闻稿件近似重复检测用的文章指纹数据表 (id int, 文章内容的六十四位指纹值 simhash64);
SELECT count(*) FROM simhash_add_bands('新闻稿件近似重复检测用的文章指纹数据表', '文章内容的六十四位指纹值');
SELECT * FROM band_report('新闻稿件近似重复检测用的文章指纹数据表');

-- An unrelated relation already holds the name the first band would get.
CREATE TABLE taken (id int, fp simhash64, other int);
CREATE INDEX taken_fp_band0 ON taken (other);
CREATE SEQUENCE taken_fp_band1;
SELECT simhash_add_bands('taken', 'fp');
SELECT * FROM band_report('taken');

-- Idempotent: a second call returns the same indexes and makes none;
-- hand-made indexes of the documented form count as present.
SELECT simhash_add_bands('taken', 'fp');
CREATE TABLE handmade (id int, fp simhash64);
CREATE INDEX my_band_0 ON handmade (simhash_band(fp, 0));
CREATE INDEX my_partial_band_1 ON handmade (simhash_band(fp, 1)) WHERE id > 0;
SELECT simhash_add_bands('handmade', 'fp');
SELECT * FROM band_report('handmade');
-- What it cannot make is an error, not a notice.
CREATE VIEW handmade_view AS SELECT * FROM handmade;
SELECT outcome($$SELECT simhash_add_bands('handmade_view', 'fp')$$);
DROP VIEW handmade_view;
-- Quoted names need quoting in the result, and work.
CREATE TABLE "Mixed Case" ("My FP" simhash64);
SELECT simhash_add_bands('"Mixed Case"', 'My FP');
SELECT count(*) FROM simhash_drop_bands('"Mixed Case"', 'My FP');
-- A schema-qualified table on any search_path.
CREATE SCHEMA other_place;
CREATE TABLE other_place.docs (fp simhash64);
SELECT simhash_add_bands('other_place.docs', 'fp');
SET search_path = pg_catalog;
SELECT public.simhash_add_bands('other_place.docs', 'fp');
RESET search_path;

DROP TABLE a_table_with_a_rather_long_name_for_news_2024, a_table_with_a_rather_long_name_for_news_2025,
           news_articles_fingerprints_for_the_near_duplicate_check_one,
           news_articles_fingerprints_for_the_near_duplicate_check_two,
           新闻稿件近似重复检测用的文章指纹数据表, taken, handmade, "Mixed Case";
DROP SEQUENCE taken_fp_band1;
DROP SCHEMA other_place CASCADE;
DROP FUNCTION band_report(regclass);
