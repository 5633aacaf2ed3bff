-- The near-unique trigger: refuses or skips rows within k of an existing one.
CREATE TABLE articles (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body text,
    fp   simhash64 GENERATED ALWAYS AS (simhash(body)) STORED
);
SELECT count(*) FROM simhash_add_bands('articles', 'fp');
CREATE TRIGGER articles_near_unique BEFORE INSERT OR UPDATE ON articles
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
INSERT INTO articles (body) VALUES
    ('国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。'),
    ('The quick brown fox jumps over the lazy dog.');
-- A copy whose punctuation changed: refused like a UNIQUE violation, naming the row.
INSERT INTO articles (body) VALUES
    ('国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见！');
SELECT outcome($$INSERT INTO articles (body) VALUES ('the quick brown fox jumps over the lazy dog')$$);
-- Featureless text has no fingerprint and is never a duplicate.
INSERT INTO articles (body) VALUES ('，。'), ('！！');
-- Updating a row to itself or to new text is fine; onto another row's text is not.
UPDATE articles SET body = body || '。' WHERE id = 1;
UPDATE articles SET body = '一篇完全不同的新闻，讲的是北京的天气和交通。' WHERE id = 2;
SELECT outcome($$UPDATE articles SET body = '一篇完全不同的新闻，讲的是北京的天气和交通！' WHERE id = 1$$);
SELECT id, fp, left(body, 12) FROM articles ORDER BY id;

-- Skip mode drops the row and counts it; the statement trigger reports it.
DROP TRIGGER articles_near_unique ON articles;
CREATE TRIGGER articles_near_unique BEFORE INSERT OR UPDATE ON articles
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');
CREATE TRIGGER articles_near_unique_report AFTER INSERT OR UPDATE ON articles
    FOR EACH STATEMENT EXECUTE FUNCTION simhash_near_unique_report();
INSERT INTO articles (body) VALUES
    ('一篇完全不同的新闻，讲的是北京的天气和交通。。'),      -- copy of row 2
    ('另一篇新闻：上海的股市今天大幅上涨，成交量创下新高。'), -- new
    ('另一篇新闻：上海的股市今天大幅上涨，成交量创下新高！');  -- copy of the row before it
SELECT count(*) AS rows FROM articles;
-- Without the report trigger the count is kept for the session.
DROP TRIGGER articles_near_unique_report ON articles;
INSERT INTO articles (body) VALUES ('另一篇新闻：上海的股市今天大幅上涨，成交量创下新高。。');
SELECT simhash_skipped(true) AS skipped, simhash_skipped() AS after_reset;

-- Bad set-ups are clear errors (arguments are checked when a row arrives).
CREATE TABLE bad (id int, fp simhash64);
CREATE TRIGGER t1 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '12');
SELECT outcome($$INSERT INTO bad VALUES (1, '0000000000000000')$$);
DROP TRIGGER t1 ON bad;
CREATE TRIGGER t2 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'ignore');
SELECT outcome($$INSERT INTO bad VALUES (1, '0000000000000000')$$);
DROP TRIGGER t2 ON bad;
CREATE TRIGGER t3 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('nope', '3');
SELECT outcome($$INSERT INTO bad VALUES (1, '0000000000000000')$$);
DROP TRIGGER t3 ON bad;
CREATE TRIGGER t4 AFTER INSERT ON bad FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
SELECT outcome($$INSERT INTO bad VALUES (1, '0000000000000000')$$);
DROP TRIGGER t4 ON bad;
CREATE TRIGGER t5 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '7');
INSERT INTO bad VALUES (1, '0000000000000000');
SELECT outcome($$INSERT INTO bad VALUES (2, '000000000000007f')$$);
INSERT INTO bad VALUES (3, '00000000000000ff');
-- REPEATABLE READ works (the check sees rows committed after the snapshot).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT outcome($$INSERT INTO bad VALUES (4, 'ffffffffffffffff')$$);
ROLLBACK;
DROP TABLE articles, bad;
