-- The near-unique guard is a constraint: it sees every row, whoever
-- inserts, and says what PostgreSQL's own unique violations say.
CREATE FUNCTION diag(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text; msg text; detail text; tbl text; sch text; con text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
                            tbl = TABLE_NAME, sch = SCHEMA_NAME, con = CONSTRAINT_NAME;
    RETURN concat_ws(E'\n', state || ' ' || msg, nullif('DETAIL: ' || detail, 'DETAIL: '),
                     format('table=%s schema=%s constraint=%s', tbl, sch, con));
END $$;

CREATE ROLE simhash_writer;
CREATE ROLE simhash_inserter;
CREATE TABLE feed (id int PRIMARY KEY, owner name NOT NULL DEFAULT current_user, fp simhash64);
SELECT count(*) FROM simhash_add_bands('feed', 'fp');
CREATE TRIGGER feed_near_unique BEFORE INSERT OR UPDATE ON feed
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');

-- Row-level security: each writer sees only its own rows. A row it cannot
-- see still counts, and the error does not show it (no DETAIL, as for a
-- unique violation on a table with row-level security).
ALTER TABLE feed ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON feed USING (owner = current_user);
GRANT SELECT, INSERT, UPDATE ON feed TO simhash_writer;
INSERT INTO feed (id, owner, fp) VALUES (1, 'someone_else', '00000000ffffffff');
SET ROLE simhash_writer;
SELECT count(*) AS visible FROM feed;
SELECT diag($$INSERT INTO feed (id, fp) VALUES (2, '00000000ffffffff')$$);
SELECT diag($$INSERT INTO feed (id, fp) VALUES (3, '00000000fffffff0')$$);
INSERT INTO feed (id, fp) VALUES (4, '0f0f0f0f0f0f0f0f');
-- Its own row is visible, yet the table has row-level security: still no DETAIL.
SELECT diag($$INSERT INTO feed (id, fp) VALUES (5, '0f0f0f0f0f0f0f0e')$$);
RESET ROLE;
-- The owner is not subject to the policy and sees the DETAIL.
SELECT diag($$INSERT INTO feed (id, fp) VALUES (6, '0f0f0f0f0f0f0f0e')$$);
-- FORCE ROW LEVEL SECURITY hides rows from the owner too: the guard still sees them.
ALTER TABLE feed FORCE ROW LEVEL SECURITY;
SELECT diag($$INSERT INTO feed (id, owner, fp) VALUES (7, 'nobody', '00000000ffffffff')$$);
ALTER TABLE feed NO FORCE ROW LEVEL SECURITY;
ALTER TABLE feed DISABLE ROW LEVEL SECURITY;

-- A role with INSERT only: the guard needs no SELECT. New rows go in;
-- near-duplicates get 23505, without the row it cannot read.
GRANT INSERT ON feed TO simhash_inserter;
SET ROLE simhash_inserter;
INSERT INTO feed (id, fp) VALUES (10, 'a5a5a5a5a5a5a5a5');
SELECT diag($$INSERT INTO feed (id, fp) VALUES (11, 'a5a5a5a5a5a5a5a4')$$);
SELECT diag($$SELECT * FROM feed$$);
RESET ROLE;
-- With SELECT on the two columns the error names (and no row-level
-- security), the DETAIL is shown, as PostgreSQL does for unique keys.
GRANT SELECT (id, fp) ON feed TO simhash_inserter;
SET ROLE simhash_inserter;
SELECT diag($$INSERT INTO feed (id, fp) VALUES (11, 'a5a5a5a5a5a5a5a4')$$);
RESET ROLE;
SELECT id, owner, fp FROM feed ORDER BY id;

-- REPEATABLE READ and SERIALIZABLE: the check sees rows committed after
-- the snapshot too (like a unique index), so the guard works there.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM feed;
SELECT diag($$INSERT INTO feed (id, fp) VALUES (20, 'a5a5a5a5a5a5a5a5')$$);
INSERT INTO feed (id, fp) VALUES (21, '1234123412341234');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT diag($$INSERT INTO feed (id, fp) VALUES (22, '1234123412341235')$$);
INSERT INTO feed (id, fp) VALUES (23, '4321432143214321');
COMMIT;

-- Several rows of one statement or transaction see each other.
SELECT diag($$INSERT INTO feed (id, fp) VALUES (30, '7777777777777777'), (31, '7777777777777776')$$);
BEGIN;
INSERT INTO feed (id, fp) VALUES (32, '7777777777777777');
SELECT diag($$INSERT INTO feed (id, fp) VALUES (33, '7777777777777773')$$);
ROLLBACK;
-- A rolled-back row is no longer a duplicate.
INSERT INTO feed (id, fp) VALUES (34, '7777777777777777');
-- A savepoint rolled back takes its row with it.
BEGIN;
SAVEPOINT s;
INSERT INTO feed (id, fp) VALUES (35, '5555555555555555');
ROLLBACK TO s;
INSERT INTO feed (id, fp) VALUES (36, '5555555555555555');
COMMIT;
-- Deleted rows do not count.
DELETE FROM feed WHERE id = 36;
INSERT INTO feed (id, fp) VALUES (37, '5555555555555554');

-- No application advisory lock is taken or needed: the guard's locks are
-- its own (advisory locks of field 4 = 21320) and are gone once the row
-- is in.
BEGIN;
INSERT INTO feed (id, fp) VALUES (40, '3c3c3c3c3c3c3c3c');
SELECT count(*) AS guard_locks_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;

-- Partitioned tables: one guard over every partition.
CREATE TABLE posts (id int, region text, fp simhash64) PARTITION BY LIST (region);
CREATE TABLE posts_cn PARTITION OF posts FOR VALUES IN ('cn');
CREATE TABLE posts_us PARTITION OF posts FOR VALUES IN ('us');
CREATE TABLE posts_other PARTITION OF posts DEFAULT;
SELECT count(*) FROM simhash_add_bands('posts', 'fp');
CREATE TRIGGER posts_near_unique BEFORE INSERT OR UPDATE ON posts
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
INSERT INTO posts VALUES (1, 'cn', '00000000ffffffff');
SELECT diag($$INSERT INTO posts VALUES (2, 'us', '00000000fffffffe')$$);
SELECT diag($$INSERT INTO posts VALUES (3, 'eu', '00000000fffffff0')$$);
INSERT INTO posts VALUES (4, 'us', 'ffffffff00000000');
-- Moving a row to another partition does not conflict with itself.
UPDATE posts SET region = 'eu' WHERE id = 4;
-- Changing a fingerprint onto another partition's row does.
SELECT diag($$UPDATE posts SET fp = '00000000fffffffc' WHERE id = 4$$);
SELECT tableoid::regclass, id, fp FROM posts ORDER BY id;
-- A partition attached later is covered.
CREATE TABLE posts_jp (LIKE posts);
ALTER TABLE posts ATTACH PARTITION posts_jp FOR VALUES IN ('jp');
SELECT diag($$INSERT INTO posts VALUES (5, 'jp', '00000000ffffffff')$$);
-- A guard made on one partition alone guards that partition.
DROP TRIGGER posts_near_unique ON posts;
CREATE TRIGGER us_near_unique BEFORE INSERT ON posts_us
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '0', 'skip');
INSERT INTO posts VALUES (6, 'us', '0101010101010101'), (7, 'us', '0101010101010101'), (8, 'cn', '0101010101010101');
SELECT tableoid::regclass, id FROM posts WHERE id >= 6 ORDER BY id;

-- k above 3 probes neighbouring band values; rows without band indexes
-- are checked by a scan. Both are exact.
CREATE TABLE plain (id int, fp simhash64);
CREATE TRIGGER plain_near_unique BEFORE INSERT ON plain
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '11');
INSERT INTO plain VALUES (1, '0000000000000000');
SELECT diag($$INSERT INTO plain VALUES (2, '0000000000000fff')$$);
INSERT INTO plain VALUES (3, 'fff0000000000000');
SELECT count(*) FROM simhash_add_bands('plain', 'fp');
SELECT diag($$INSERT INTO plain VALUES (4, '8000000000000ffe')$$);
-- Exactly 11 bits away, spread over the four bands: refused; 12: accepted.
INSERT INTO plain VALUES (5, 'aaaaaaaaaaaaaaaa');
SELECT diag($$INSERT INTO plain VALUES (6, 'aaadaaadaaadaaa9')$$);
INSERT INTO plain VALUES (7, 'aaadaaadaaadaaad');
SELECT count(*) FROM plain;

-- The column must be a simhash64.
CREATE TABLE wrong (id int, fp bigint);
CREATE TRIGGER wrong_near_unique BEFORE INSERT ON wrong
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
SELECT diag($$INSERT INTO wrong VALUES (1, 1)$$);
-- A key column that does not exist is an error; the default 'id' may be missing.
CREATE TABLE nokey (n int, fp simhash64);
CREATE TRIGGER nokey_near_unique BEFORE INSERT ON nokey
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error', 'key');
SELECT diag($$INSERT INTO nokey VALUES (1, '0000000000000000')$$);
DROP TRIGGER nokey_near_unique ON nokey;
CREATE TRIGGER nokey_near_unique BEFORE INSERT ON nokey
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
INSERT INTO nokey VALUES (1, '0000000000000000');
SELECT diag($$INSERT INTO nokey VALUES (2, '0000000000000001')$$);
-- A trigger function cannot be called directly.
SELECT diag($$SELECT simhash_near_unique()$$);

-- One call: band indexes and the trigger; again to change k or the action.
CREATE TABLE easy (id int, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT simhash_add_guard('easy');
SELECT count(*) AS band_indexes FROM pg_index WHERE indrelid = 'easy'::regclass;
INSERT INTO easy (id, body) VALUES (1, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人。');
SELECT diag($$INSERT INTO easy (id, body) VALUES (2, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人！')$$);
SELECT simhash_add_guard('easy', 'fp', 5, 'SKIP');
SELECT simhash_skipped(true) >= 0 AS counter_reset;
INSERT INTO easy (id, body) VALUES (3, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人！');
SELECT tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE tgrelid = 'easy'::regclass ORDER BY 1;
SELECT simhash_add_guard('easy', k => 3);
SELECT tgname FROM pg_trigger WHERE tgrelid = 'easy'::regclass ORDER BY 1;
SELECT count(*) AS band_indexes FROM pg_index WHERE indrelid = 'easy'::regclass;
SELECT diag($$SELECT simhash_add_guard('easy', k => 12)$$);
SELECT diag($$SELECT simhash_add_guard('easy', on_conflict => 'ignore')$$);
SELECT diag($$SELECT simhash_add_guard('easy', 'nope')$$);
SELECT diag($$SELECT simhash_add_guard('easy', key_col => 'nope')$$);
SELECT diag($$SELECT simhash_add_guard('wrong')$$);
SET ROLE simhash_inserter;
SELECT diag($$SELECT simhash_add_guard('easy')$$);
RESET ROLE;
SELECT id FROM easy ORDER BY id;

DROP TABLE feed, posts, plain, wrong, nokey, easy;
DROP FUNCTION diag(text);
DROP ROLE simhash_writer, simhash_inserter;
