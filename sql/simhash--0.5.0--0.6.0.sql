-- simhash 0.5.0 -> 0.6.0: the near-unique guard rebuilt in the library.
-- No stored value changes.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.6.0'" to load this file. \quit

-- simhash_near_unique() was PL/pgSQL: a query run as the inserting role
-- (row-level security hid rows from it, an INSERT-only role got 42501),
-- one partition at a time, under advisory locks shared with the
-- application's and held to the end of the transaction. It is now a C
-- trigger function that checks like a unique index (src/guard.rs).
-- Existing triggers point at this function's OID, which CREATE OR
-- REPLACE keeps: they use the new guard from the next statement on, with
-- the same arguments.
CREATE OR REPLACE FUNCTION simhash_near_unique() RETURNS trigger
    AS 'MODULE_PATHNAME', 'simhash_near_unique_wrapper'
    LANGUAGE C;
