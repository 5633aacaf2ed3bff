-- Memory per call is bounded, whatever the text (README, Limits).
-- 1,200,000 random Hangul syllables: about as many distinct features.
CREATE TABLE hostile AS
SELECT string_agg(chr(44032 + (hashint4(g) & 8191)), '' ORDER BY g) AS s FROM generate_series(1, 1200000) g;
-- simhash() counts them a part of the hash space at a time, in bounded
-- memory, and the bits do not depend on how many parts it took (the core
-- tests compare with an unbounded count); so do simhash_v2 and v1.
SELECT simhash(s) IS NOT NULL AS v3, simhash_v2(s) IS NOT NULL AS v2, simhash_v1(s) IS NOT NULL AS v1 FROM hostile;
-- simhash_features() lists every distinct feature, so it has a limit:
-- past it, 54000 rather than rows without end.
SELECT count(*) FROM simhash_features((SELECT s FROM hostile));
SELECT outcome('SELECT count(*) FROM simhash_features((SELECT s FROM hostile))') AS v3,
       outcome('SELECT count(*) FROM simhash_features_v2((SELECT s FROM hostile))') AS v2;
-- Just under the limit is fine.
SELECT count(*) > 900000 AS listed FROM simhash_features((SELECT left(s, 950000) FROM hostile));
DROP TABLE hostile;
-- The call sites of a backend keep at most 64 MB of texts together: twenty
-- PL/pgSQL call sites over one 15 MB text held twenty copies (302 MB)
-- until the end of the transaction.
CREATE FUNCTION memo_growth() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v text := repeat('the quick brown fox jumps over the lazy dog ', 360000);
    before bigint;
    f simhash64;
BEGIN
    SELECT sum(total_bytes) INTO before FROM pg_backend_memory_contexts;
    f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v);
    f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v);
    f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v);
    f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v); f := simhash(v);
    RETURN (SELECT sum(total_bytes) FROM pg_backend_memory_contexts) - before;
END $$;
SELECT memo_growth() < 100 * 1048576 AS call_sites_within_budget;
DROP FUNCTION memo_growth();
