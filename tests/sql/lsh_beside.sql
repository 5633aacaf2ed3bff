-- The rule of record with the second source, beside the rest of
-- PostgreSQL: a hostile search_path, a view owned by another role,
-- row-level security, column privileges, another BEFORE trigger, prepared
-- statements.

-- An English paragraph and a copy with 5% of its letters changed at
-- scattered places: past distance 11, found by the keys, similar enough.
CREATE TEMP TABLE lb_text AS SELECT
  'The committee met on Tuesday to review the proposal for a new library in the north of the city. Members heard from residents who asked for longer opening hours, a reading room for children and a small cafe near the entrance. The architect showed drawings of a two storey building with large windows facing the park, and the treasurer said the cost would be shared by the council and a private foundation. A final vote is expected next month after a public consultation.'::text AS original,
  'The committee met on Tursday uo revbrw the ersposal fer d nsw library in the north of the city. Mdmbers heard from residents who asked bor longer openirg hours, a reading room for children and a small cafs near the entrance. The arcsitect showed drahings of a two snorjy buijding with large windows facing the park, and hhe treasurer saib the cost sould be shared by tme council and a private foundation. A finau vote is expected next month after a public consultation.'::text AS copy;
GRANT SELECT ON lb_text TO PUBLIC;
SELECT simhash(original) <~> simhash(copy) AS distance FROM lb_text;

-- 1. A hostile search_path: look-alikes of what the rule's SQL calls
-- (exact signatures beat pg_catalog's polymorphic ones), in a schema
-- listed ahead of pg_catalog; every entry point of the rule and the
-- second source runs; nothing planted may run.
CREATE ROLE lb_hostile;
CREATE SCHEMA lb_hostile AUTHORIZATION lb_hostile;
CREATE TABLE lb_hostile.calls (what text);
GRANT INSERT ON lb_hostile.calls TO PUBLIC;
SET ROLE lb_hostile;
CREATE FUNCTION lb_hostile.overlap(integer[], integer[]) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO lb_hostile.calls VALUES ('integer[] && integer[]');
    RETURN $1 OPERATOR(pg_catalog.&&) $2;
END $$;
CREATE OPERATOR lb_hostile.&& (LEFTARG = integer[], RIGHTARG = integer[], FUNCTION = lb_hostile.overlap);
CREATE FUNCTION lb_hostile.float8_ge(double precision, double precision) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO lb_hostile.calls VALUES ('float8 >= float8');
    RETURN $1 OPERATOR(pg_catalog.>=) $2;
END $$;
CREATE OPERATOR lb_hostile.>= (LEFTARG = double precision, RIGHTARG = double precision, FUNCTION = lb_hostile.float8_ge);
CREATE FUNCTION lb_hostile.int4_gt(integer, integer) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO lb_hostile.calls VALUES ('integer > integer');
    RETURN $1 OPERATOR(pg_catalog.>) $2;
END $$;
CREATE OPERATOR lb_hostile.> (LEFTARG = integer, RIGHTARG = integer, FUNCTION = lb_hostile.int4_gt);
CREATE FUNCTION lb_hostile.format(text, name, name) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO lb_hostile.calls VALUES ('format(text, name, name)');
    RETURN pg_catalog.format($1, $2, $3);
END $$;
CREATE FUNCTION lb_hostile.quote_ident(name) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO lb_hostile.calls VALUES ('quote_ident(name)');
    RETURN pg_catalog.quote_ident($1);
END $$;
RESET ROLE;
CREATE TABLE lb_docs (id bigint PRIMARY KEY, body text,
                      fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO lb_docs (id, body)
SELECT i, format('Report %s on %s and %s, with notes on %s.', i, md5(i::text), md5((i * 3)::text), md5((i * 5)::text))
  FROM generate_series(2, 200) i;
INSERT INTO lb_docs (id, body) SELECT 1, original FROM lb_text;
CREATE TABLE lb_batch (id bigint, body text);
INSERT INTO lb_batch SELECT 1001, copy FROM lb_text;
INSERT INTO lb_batch VALUES (1002, 'A text of its own, about the weather in the mountains this week.');

INSERT INTO lb_docs (id, body) SELECT 2000, copy FROM lb_text;
SELECT copy AS lb_copy FROM lb_text \gset
-- The test's own comparisons name pg_catalog's operators: what a user's
-- query calls on such a path is the user's; what the extension calls
-- must never be the planted ones.
SET search_path = lb_hostile, public, pg_catalog;
SELECT round(simhash_similarity(original, copy)::numeric, 2) AS similarity,
       simhash_is_near_duplicate(original, copy) AS rule_by_fingerprint,
       (simhash_explain(original, copy) ->> 'candidate') AS explained_candidate,
       simhash_jaccard(original, copy) OPERATOR(pg_catalog.>=) simhash_lsh_min_jaccard() AS jaccard_reached,
       simhash_lsh_match(original, copy) AS second_test_passed,
       simhash_lsh_shared(simhash_lsh(original), simhash_lsh(copy)) OPERATOR(pg_catalog.>=) simhash_lsh_min_shared() AS keys_shared
  FROM lb_text;
SELECT count(*) AS band_indexes FROM simhash_add_bands('lb_docs', 'fp', '4x16');
SELECT simhash_add_lsh('lb_docs', 'body') AS keys_column,
       simhash_lsh_column('lb_docs', 'body') AS found;
ANALYZE lb_docs;
-- The query of the rule with both sources (the README's UNION form).
PREPARE lb_rule(text) AS
SELECT id FROM lb_docs WHERE fp <~> simhash($1) OPERATOR(pg_catalog.<=) 11
   AND simhash_similarity(body, $1) OPERATOR(pg_catalog.>=) 0.71::float8
UNION
SELECT id FROM lb_docs
 WHERE body_lsh OPERATOR(pg_catalog.&&) simhash_lsh($1)
   AND simhash_lsh_shared(body_lsh, simhash_lsh($1)) OPERATOR(pg_catalog.>=) simhash_lsh_min_shared()
   AND simhash_similarity(body, $1) OPERATOR(pg_catalog.>=) 0.71::float8
   AND simhash_lsh_match(body, $1)
 ORDER BY 1;
EXECUTE lb_rule(:'lb_copy');
-- The keys' condition with the second source's own operator, named by
-- its schema, in a generic plan (estimated without the text).
SET plan_cache_mode = force_generic_plan;
PREPARE lb_rule_keys(text) AS
SELECT id FROM lb_docs
 WHERE body_lsh OPERATOR(public.&&&) simhash_lsh($1)
   AND simhash_similarity(body, $1) OPERATOR(pg_catalog.>=) 0.71::float8
   AND simhash_lsh_match(body, $1)
 ORDER BY 1;
EXECUTE lb_rule_keys(:'lb_copy');
EXECUTE lb_rule_keys('A text that shares no key with any row of the table at all.');
RESET plan_cache_mode;
-- The load, verified, with both sources; then verified clustering.
SELECT * FROM simhash_insert_new('lb_docs', 'lb_batch', 11, 'id', text_col => 'body');
SELECT count(*) AS in_clusters FROM simhash_clusters('lb_docs', 'fp', 11, text_col => 'body', singletons => false);
-- The guard, verified, with both sources.
SELECT simhash_add_guard('lb_docs', 'fp', 11, 'error', 'id', 'body', 0.71);
SELECT outcome($$INSERT INTO lb_docs (id, body) SELECT 3000, copy FROM lb_text$$) AS guarded_copy;
SELECT length(simhash_review('lb_docs', 'fp', 'body', sample => 5)) OPERATOR(pg_catalog.>) 0 AS review_page;
RESET search_path;
SELECT what, count(*) FROM lb_hostile.calls GROUP BY what ORDER BY what;
SELECT count(*) AS hijacked_calls FROM lb_hostile.calls;
DROP SCHEMA lb_hostile CASCADE;

-- 2. A view owned by another role, row-level security, column privileges:
-- the query of the rule sees what its reader may see; the guard, like a
-- unique index, checks every row whoever inserts.
CREATE ROLE lb_owner;
CREATE ROLE lb_reader;
GRANT USAGE ON SCHEMA public TO lb_owner, lb_reader;
GRANT SELECT ON lb_docs TO lb_owner;
CREATE VIEW lb_view AS SELECT id, body, fp, body_lsh FROM lb_docs WHERE id < 100;
ALTER VIEW lb_view OWNER TO lb_owner;
GRANT SELECT ON lb_view TO lb_reader;
SET ROLE lb_reader;
SELECT array_agg(id ORDER BY id) AS through_the_view FROM lb_view, lb_text
 WHERE body_lsh && simhash_lsh(copy) AND simhash_similarity(body, copy) >= 0.71;
SELECT array_agg(id ORDER BY id) AS through_the_view_keys_operator FROM lb_view, lb_text
 WHERE body_lsh &&& simhash_lsh(copy) AND simhash_similarity(body, copy) >= 0.71;
SELECT outcome($$SELECT id FROM lb_docs LIMIT 1$$) AS the_table_itself;
RESET ROLE;
-- Row-level security: the reader sees only the rows it owns.
ALTER TABLE lb_docs ADD COLUMN owner name DEFAULT 'lb_owner';
UPDATE lb_docs SET owner = 'lb_reader' WHERE id NOT IN (1, 2000);
ALTER TABLE lb_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY lb_own ON lb_docs USING (owner = current_user);
GRANT SELECT, INSERT ON lb_docs TO lb_reader;
SET ROLE lb_reader;
SELECT count(*) AS rule_under_rls FROM lb_docs, lb_text
 WHERE body_lsh && simhash_lsh(copy) AND simhash_similarity(body, copy) >= 0.71;
SELECT outcome($$INSERT INTO lb_docs (id, body, owner) SELECT 3001, copy, 'lb_reader' FROM lb_text$$) AS guard_checks_hidden_rows;
RESET ROLE;
-- Column privileges: a role that may insert the id and the text, and
-- read nothing: the guard still checks (it reads as a unique index
-- does); the keys column is computed, never written by it.
CREATE ROLE lb_writer;
GRANT USAGE ON SCHEMA public TO lb_writer;
GRANT INSERT (id, body) ON lb_docs TO lb_writer;
ALTER TABLE lb_docs DISABLE ROW LEVEL SECURITY;
SET ROLE lb_writer;
SELECT outcome($$INSERT INTO lb_docs (id, body) SELECT 3002, copy FROM lb_text$$) AS column_privileges_copy;
SELECT outcome($$INSERT INTO lb_docs (id, body) VALUES (3003, 'Something else entirely: a recipe for bread with rye and caraway.')$$) AS column_privileges_new;
SELECT outcome($$INSERT INTO lb_docs (id, body, body_lsh) VALUES (3004, 'x', '{1}')$$) AS keys_not_writable;
RESET ROLE;
-- 3. Another BEFORE trigger that rewrites the text before the guard
-- (triggers fire by name): the guard checks the text as it will be
-- stored, not as it was inserted.
CREATE FUNCTION lb_expand() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'the copy, please' THEN
        NEW.body := (SELECT copy FROM lb_text);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER a_lb_expand BEFORE INSERT ON lb_docs FOR EACH ROW EXECUTE FUNCTION lb_expand();
SELECT outcome($$INSERT INTO lb_docs (id, body) VALUES (3005, 'the copy, please')$$) AS rewritten_to_the_copy;
SELECT count(*) AS rows_kept FROM lb_docs WHERE id >= 3000;
DROP TABLE lb_docs CASCADE;
DROP TABLE lb_batch;
DROP FUNCTION lb_expand();
DROP OWNED BY lb_owner, lb_reader, lb_writer, lb_hostile;
DROP ROLE lb_owner;
DROP ROLE lb_reader;
DROP ROLE lb_writer;
DROP ROLE lb_hostile;
