-- hamming(), the <~> operator and simhash_band().

SELECT hamming('0000000000000000', '0000000000000000') AS zero,
       hamming('0000000000000000', 'ffffffffffffffff') AS all_bits,
       hamming('0123456789abcdef', '0123456789abcdee') AS one_bit,
       hamming('8000000000000000', '0000000000000000') AS top_bit,
       '0f0f0f0f0f0f0f0f'::simhash64 <~> 'f0f0f0f0f0f0f0f0' AS operator;
-- Commutative, and declared so.
SELECT a <~> b = b <~> a AS symmetric
FROM (VALUES ('0123456789abcdef'::simhash64, 'fedcba9876543210'::simhash64)) v(a, b);
SELECT oprname, oprcom::regoperator FROM pg_operator WHERE oprname = '<~>';
-- NULL never matches anything.
SELECT hamming(NULL, '0000000000000000') IS NULL AS null_left,
       ('0000000000000000'::simhash64 <~> NULL) IS NULL AS null_right;
-- Agrees with the plain-SQL definition on many values.
SELECT count(*) AS agree FROM (
    SELECT (random_hi << 32 | random_lo)::simhash64 AS a,
           (random_lo << 32 | random_hi)::simhash64 AS b
    FROM (SELECT (g * 2654435761) % 4294967296 AS random_hi,
                 (g * 40503 + 12345) % 4294967296 AS random_lo
          FROM generate_series(1, 1000) g) r) p
WHERE a <~> b = bit_count((a::bigint # b::bigint)::bit(64));

-- Bands: 16 bits each, band 0 the most significant.
SELECT simhash_band('0123456789abcdef', 0) = x'0123'::int AS b0,
       simhash_band('0123456789abcdef', 1) = x'4567'::int AS b1,
       simhash_band('0123456789abcdef', 2) = x'89ab'::int AS b2,
       simhash_band('0123456789abcdef', 3) = x'cdef'::int AS b3,
       simhash_band('ffffffffffffffff', 0) AS max_band;
-- Any other band is NULL, never an error: simhash_band is LEAKPROOF.
SELECT n, simhash_band('0123456789abcdef', n) IS NULL AS is_null
FROM (VALUES (-1), (4), (2147483647), (-2147483648)) v(n);
SELECT simhash_band(NULL, 0) IS NULL AS null_fp, simhash_band('0123456789abcdef', NULL) IS NULL AS null_n;
-- Three differing bits leave at least one band equal (the pigeonhole rule).
SELECT bool_and(EXISTS (SELECT 1 FROM generate_series(0, 3) n
                        WHERE simhash_band(a, n) = simhash_band(b, n))) AS pigeonhole
FROM (SELECT 'a5a55a5a0f0ff0f0'::simhash64 AS a,
             ('a5a55a5a0f0ff0f0'::simhash64::bigint # (1::bigint << i) # (1::bigint << j) # (1::bigint << k))::simhash64 AS b
      FROM generate_series(0, 63, 3) i, generate_series(1, 63, 5) j, generate_series(2, 63, 7) k) s;
