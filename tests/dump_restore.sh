#!/usr/bin/env bash
# pg_dump and restore of a database that uses every kind of object the
# extension offers, in custom and plain format, with the extension in
# `public` and in a schema of its own: the restore must succeed without a
# single error and give back the same rows, columns, indexes, constraints,
# triggers and views, and the restored band indexes must answer queries.
# pg_dump restores with an empty search_path, which is what catches an
# object that names another without its schema. Needs the throwaway
# cluster running with the extension installed (scripts/test.sh does both).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

fail() { die "dump/restore test: $*"; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" "${@:2}"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# The database's objects: S is the extension's schema.
populate() {
    local db=$1 s=$2
    q "$db" >/dev/null <<SQL
    CREATE SCHEMA IF NOT EXISTS $s;
    CREATE EXTENSION simhash SCHEMA $s;
    SET search_path = public, $s;
    CREATE DOMAIN fp_nonzero AS simhash64 CHECK (VALUE <> '0000000000000000'::simhash64);
    CREATE TABLE docs (
        id bigint PRIMARY KEY,
        body text NOT NULL,
        fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED,
        fp_v2 simhash64 GENERATED ALWAYS AS (simhash_v2(body)) STORED,
        bits bit(64) NOT NULL DEFAULT (x'0123456789abcdef'::simhash64::bit(64)),
        from_bits simhash64 DEFAULT (x'fedcba9876543210'::bit(64)::simhash64),
        checked fp_nonzero,
        CONSTRAINT bits_make_a_fingerprint CHECK ((bits::simhash64) IS NOT NULL),
        CONSTRAINT close_to_itself CHECK (simhash_within(from_bits, from_bits, 0))
    );
    CREATE INDEX docs_bits_fp ON docs ((bits::simhash64));
    CREATE INDEX docs_body_fp ON docs (simhash(body));
    CREATE INDEX docs_near ON docs (id) WHERE hamming(from_bits, 'fedcba9876543210') <= 3;
    SELECT count(*) FROM simhash_add_bands('docs', 'fp');
    CREATE TRIGGER docs_near_unique BEFORE INSERT OR UPDATE ON docs
        FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip', 'id');
    CREATE TRIGGER docs_near_unique_report AFTER INSERT OR UPDATE ON docs
        FOR EACH STATEMENT EXECUTE FUNCTION simhash_near_unique_report();
    INSERT INTO docs (id, body, checked, bits) VALUES
        (1, '國務院總理李鵬今天在人民大會堂會見了來訪的日本客人', '0000000000000001', x'00000000ffffffff'),
        (2, '苹果公司发布了新款iPhone 15 Pro，售价7999元起。', '0000000000000002', DEFAULT),
        (3, 'The quick brown fox jumps over the lazy dog.', NULL, DEFAULT),
        (4, '苹果公司发布了新款iPhone 15 Pro，售价7999元起！', NULL, DEFAULT);
    CREATE VIEW near_first AS SELECT id FROM docs WHERE fp <~> (SELECT fp FROM docs WHERE id = 1) <= 3;
    CREATE VIEW distances AS SELECT a.id AS a, b.id AS b, a.fp <~> b.fp AS d FROM docs a, docs b WHERE a.fp <~> b.fp < 20;
    CREATE MATERIALIZED VIEW clusters AS SELECT * FROM simhash_clusters('docs', 'fp', 3);
    CREATE FUNCTION nearest(q simhash64) RETURNS SETOF bigint LANGUAGE sql STABLE
        BEGIN ATOMIC SELECT id FROM docs WHERE fp <~> q <= 3 ORDER BY id; END;
SQL
}

# What must come back: rows, and every definition, as text.
describe() {
    q "$1" <<'SQL'
    SELECT 'row ' || d::text FROM public.docs d ORDER BY id;
    SELECT 'view ' || v::text FROM public.near_first v ORDER BY 1;
    SELECT 'distances ' || v::text FROM public.distances v ORDER BY 1;
    SELECT 'clusters ' || c::text FROM public.clusters c ORDER BY 1;
    SELECT 'nearest ' || n FROM public.nearest((SELECT fp FROM public.docs WHERE id = 2)) n;
    SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1;
    SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace ORDER BY 1;
    SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1;
    SELECT 'column ' || attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod)
           || coalesce(' ' || pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE attrelid = 'public.docs'::regclass AND attnum > 0 ORDER BY 1;
    SELECT 'extension ' || extname || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'simhash';
SQL
}

roundtrip() {
    local schema=$1 format=$2
    local src=simhash_dump_src dst=simhash_dump_dst
    for db in $src $dst; do
        psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    done
    populate $src "$schema"
    local file="$work/dump.$format"
    "$PG_BIN/pg_dump" --format="$format" --file="$file" $src
    local log="$work/restore.log"
    if [ "$format" = custom ]; then
        "$PG_BIN/pg_restore" --exit-on-error --dbname=$dst "$file" >"$log" 2>&1 ||
            { cat "$log" >&2; fail "pg_restore ($schema, $format) failed"; }
    else
        psql -X -q -v ON_ERROR_STOP=1 -d $dst -f "$file" >"$log" 2>&1 ||
            { cat "$log" >&2; fail "plain restore ($schema, $format) failed"; }
    fi
    if grep -E "ERROR|WARNING" "$log" >&2; then
        fail "the restore ($schema, $format) reported the above"
    fi
    local want got
    want=$(describe $src)
    got=$(describe $dst)
    [ "$(grep -c '^row ' <<<"$want")" = 3 ] || fail "the source database is not as expected: $want"
    if ! diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2; then
        fail "the restored database differs (< source, > restored; $schema, $format)"
    fi
    # The restored band indexes answer the distance query.
    plan=$(q $dst -c "SET enable_seqscan = off" -c "SET search_path = public, $schema" \
             -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> simhash('abc') <= 3")
    grep -q "docs_fp_band3" <<<"$plan" || fail "the restored band indexes are not used ($schema, $format): $plan"
    # The near-unique trigger still holds after the restore.
    n=$(q $dst -c "SET search_path = public, $schema" \
          -c "INSERT INTO docs (id, body) VALUES (9, '國務院總理李鵬今天在人民大會堂會見了來訪的日本客人！')" \
          -c "SELECT count(*) FROM docs")
    [ "$n" = 3 ] || fail "the restored near-unique trigger let a near-duplicate in ($schema, $format)"
    for db in $src $dst; do
        psql -X -q -d postgres -c "DROP DATABASE $db"
    done
    log "dump and restore, extension in $schema, $format format: same database"
}

for schema in public simhash_ext; do
    for format in custom plain; do
        roundtrip $schema $format
    done
done
