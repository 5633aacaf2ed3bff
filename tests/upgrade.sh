#!/usr/bin/env bash
# The upgrades from every earlier release (0.1.0 to 0.6.0) to the current
# version, each installed from the first base script and the update chain, on
# stored data: a table with a generated fingerprint column and band indexes made
# under the old version keeps its values (definition version 1 or 2)
# through the library upgrade and through ALTER EXTENSION ... UPDATE, the
# update names the column and indexes in a WARNING, simhash_v1() or
# simhash_v2() reproduces the stored values, a recompute brings them to the
# current definition, and the upgraded extension has exactly the objects of
# a fresh install. Needs the throwaway cluster running with the extension
# installed (scripts/test.sh does both).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

fail() { die "upgrade test: $*"; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" "${@:2}"; }
# upgrade_from VERSION STORED: install VERSION, store fingerprints, update,
# and check; STORED is the function that computes the old definition.
upgrade_from() {
    local from=$1 stored=$2
    for db in simhash_upgrade simhash_fresh; do
        psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    done

    q simhash_upgrade >/dev/null <<SQL
    CREATE EXTENSION simhash VERSION '$from';
    CREATE TABLE docs (id int PRIMARY KEY, body text,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
    SELECT count(*) FROM simhash_add_bands('docs', 'fp');
    CREATE INDEX docs_body_fp ON docs (simhash(body));
    CREATE TRIGGER docs_near_unique BEFORE INSERT OR UPDATE ON docs
        FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'error', 'id');
    INSERT INTO docs (id, body) VALUES
        (1, '國務院總理李鵬今天在人民大會堂會見了來訪的日本客人'),
        (2, '苹果公司发布了新款iPhone 15 Pro，售价7999元起。'),
        (3, '银行 银行 银行 银行 银行 利率 下调'),
        (4, 'The quick brown fox jumps over the lazy dog.'),
        (5, '');
SQL
    [ "$(q simhash_upgrade -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")" = "$from" ] ||
        fail "$from did not install"

    # The update itself, with its WARNING.
    warning=$(q simhash_upgrade -c "ALTER EXTENSION simhash UPDATE" 2>&1)
    version=$(q simhash_upgrade -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")
    want=$(q simhash_fresh -c "CREATE EXTENSION simhash" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")
    [ "$version" = "$want" ] || fail "updated to $version, the default version is $want"
    if [ "$stored" = simhash ]; then
        # Same definition: nothing to warn about.
        [ -z "$warning" ] || fail "the update from $from warned: $warning"
    else
        for name in "column docs.fp" "index docs_body_fp"; do
            grep -q "$name" <<<"$warning" || fail "the update's warning does not name $name: $warning"
        done
    fi

    q simhash_upgrade >/dev/null <<SQL
    DO \$\$
    BEGIN
        -- Stored values are untouched and are the old definition's.
        IF EXISTS (SELECT FROM docs WHERE fp IS DISTINCT FROM $stored(body)) THEN
            RAISE EXCEPTION 'stored fingerprints changed or are not $stored()';
        END IF;
        IF '$stored' <> 'simhash' AND NOT EXISTS (SELECT FROM docs WHERE fp IS DISTINCT FROM simhash(body)) THEN
            RAISE EXCEPTION 'simhash() still computes $stored()';
        END IF;
        -- The README's recompute.
        UPDATE docs SET body = body;
        REINDEX TABLE docs;
        IF EXISTS (SELECT FROM docs WHERE fp IS DISTINCT FROM simhash(body)) THEN
            RAISE EXCEPTION 'recomputed fingerprints are not the current definition';
        END IF;
        SET LOCAL enable_seqscan = off;
        IF (SELECT count(*) FROM docs WHERE simhash(body) = simhash('國務院總理李鵬今天在人民大會堂會見了來訪的日本客人')) <> 1 THEN
            RAISE EXCEPTION 'the expression index was not rebuilt';
        END IF;
        -- The band index answers with the new values.
        IF (SELECT count(*) FROM docs d, docs q WHERE q.id = 1 AND d.fp <~> q.fp <= 3) <> 1 THEN
            RAISE EXCEPTION 'the band index lost rows after the recompute';
        END IF;
    END
    \$\$;
SQL

    # The guard trigger made under $from is the library's guard now, and
    # refuses a near-duplicate like a unique index.
    [ "$(q simhash_upgrade -c "SELECT l.lanname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_language l ON l.oid = p.prolang WHERE t.tgname = 'docs_near_unique'")" = c ] ||
        fail "the guard trigger made under $from does not call the C guard"
    refused=$(q simhash_upgrade -v VERBOSITY=verbose -c "INSERT INTO docs (id, body) VALUES (6, 'The quick brown fox jumps over the lazy dog!')" 2>&1 || true)
    grep -q "23505" <<<"$refused" && grep -q "docs_near_unique" <<<"$refused" ||
        fail "the guard trigger made under $from let a near-duplicate in: $refused"
    q simhash_upgrade -c "INSERT INTO docs (id, body) VALUES (7, '一篇完全不同的新闻，讲的是北京的天气和交通。')" >/dev/null ||
        fail "the guard trigger made under $from refused a new text"

    # Same objects as a fresh install: every function (name, arguments, C
    # symbol, LEAKPROOF, pinned settings, SQL body), operator, cast, operator
    # class and type of the extension.
    surface() {
        q "$1" <<'SQL'
    SELECT pg_describe_object(classid, objid, objsubid)
           || coalesce(' -> ' || (SELECT prosrc || ' ' || provolatile::text || proparallel::text || proisstrict::text
                                         || ' leakproof=' || proleakproof::text
                                         || ' config=' || coalesce(array_to_string(proconfig, ','), '')
                                         || ' body=' || coalesce(pg_get_function_sqlbody(oid), '')
                                 FROM pg_proc WHERE oid = objid AND classid = 'pg_proc'::regclass), '')
    FROM pg_depend
    WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
      AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'simhash')
    ORDER BY 1;
SQL
    }
    fresh=$(surface simhash_fresh)
    upgraded=$(surface simhash_upgrade)
    [ "$(wc -l <<<"$fresh")" -gt 50 ] || fail "could not list the extension's objects"
    if ! diff <(printf '%s\n' "$fresh") <(printf '%s\n' "$upgraded"); then
        fail "the upgraded extension differs from a fresh install (above: < fresh, > upgraded)"
    fi
    for db in simhash_upgrade simhash_fresh; do
        psql -X -q -d postgres -c "DROP DATABASE $db"
    done
    log "upgrade from $from: stored values kept, $([ "$stored" = simhash ] && echo "no warning needed" || echo "warning given"), recompute works, same objects as a fresh install"
}

upgrade_from 0.1.0 simhash_v1
upgrade_from 0.2.0 simhash_v2
upgrade_from 0.3.0 simhash
upgrade_from 0.4.0 simhash
upgrade_from 0.5.0 simhash
upgrade_from 0.6.0 simhash
