-- Every function that takes a name, on a schema, table, columns and key
-- whose names hold $q$, $$, quotes, ;, --, spaces, non-ASCII and 63
-- bytes: each name is quoted where a statement is built from it, so none
-- of it runs and every function finds what it names.
CREATE SCHEMA "s$q$ '""; --é";
CREATE TABLE "s$q$ '""; --é"."t$$ x'; DROP TABLE nw_canary; --ü_padded_out_to_sixty_three_by"
    ("k$q$ ';--" bigint PRIMARY KEY,
     "b $$'""; --ß" text,
     "f$q$'; DROP TABLE nw_canary;--ç" simhash64 GENERATED ALWAYS AS (simhash("b $$'""; --ß")) STORED);
SELECT octet_length(relname) AS table_name_bytes FROM pg_class
 WHERE relnamespace = '"s$q$ ''""; --é"'::regnamespace;
CREATE TABLE nw_canary (x int);
CREATE TEMP VIEW nw AS SELECT '"s$q$ ''""; --é"."t$$ x''; DROP TABLE nw_canary; --ü_padded_out_to_sixty_three_by"'::regclass AS t;
SELECT count(*) AS band_indexes FROM nw, simhash_add_bands(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', '4x16');
SELECT count(*) > 0 AS commands FROM nw, simhash_band_commands(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', '2x32');
SELECT simhash_add_guard(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', 3, 'skip', 'k$q$ '';--', 'b $$''"; --ß', 0.8) IS NOT NULL AS guarded FROM nw;
INSERT INTO "s$q$ '""; --é"."t$$ x'; DROP TABLE nw_canary; --ü_padded_out_to_sixty_three_by" ("k$q$ ';--", "b $$'""; --ß")
SELECT i, format('Story %s: %s %s %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text)) FROM generate_series(1, 50) i;
CREATE TABLE "src $q$ ';--" ("k$q$ ';--" bigint, "b $$'""; --ß" text);
INSERT INTO "src $q$ ';--" SELECT 100 + i, format('Story %s: %s %s %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text)) || '!!' FROM generate_series(1, 5) i;
INSERT INTO "src $q$ ';--" VALUES (200, 'A story of its own, about nothing that came before it at all.');
SELECT * FROM nw, simhash_insert_new(nw.t, '"src $q$ '';--"', 3, '"k$q$ '';--"', 'f$q$''; DROP TABLE nw_canary;--ç', 'k$q$ '';--');
SET simhash.load_check = scan;
DELETE FROM "s$q$ '""; --é"."t$$ x'; DROP TABLE nw_canary; --ü_padded_out_to_sixty_three_by" WHERE "k$q$ ';--" > 50;
SELECT * FROM nw, simhash_insert_new(nw.t, '"src $q$ '';--"', 3, NULL, 'f$q$''; DROP TABLE nw_canary;--ç', 'k$q$ '';--');
RESET simhash.load_check;
DELETE FROM "s$q$ '""; --é"."t$$ x'; DROP TABLE nw_canary; --ü_padded_out_to_sixty_three_by" WHERE "k$q$ ';--" > 50;
SELECT * FROM nw, simhash_insert_new(nw.t, '"src $q$ '';--"', 3, NULL, 'f$q$''; DROP TABLE nw_canary;--ç', 'k$q$ '';--',
                                     text_col => 'b $$''"; --ß', threshold => 0.5);
SELECT count(*) AS rows, count(DISTINCT c.cluster) AS clusters
  FROM nw, simhash_clusters(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', 11, 'k$q$ '';--') c;
SELECT length(simhash_review(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', 'b $$''"; --ß', 'k$q$ '';--')) > 1000 AS reviewed FROM nw;
SELECT count(*) AS dropped FROM nw, simhash_drop_bands(nw.t, 'f$q$''; DROP TABLE nw_canary;--ç', '2x32');
SELECT to_regclass('nw_canary') IS NOT NULL AS canary_alive;
DROP SCHEMA "s$q$ '""; --é" CASCADE;
DROP TABLE "src $q$ ';--", nw_canary;
