#!/usr/bin/env bash
# A PostgreSQL major-version upgrade of a database that uses the extension,
# from $OLD (default 16) to $NEW (default 18), both ways a DBA does it:
# pg_upgrade of the whole cluster, and pg_dump / pg_restore into a new
# cluster. The database has simhash64 columns, a generated fingerprint
# column, band indexes and the near-unique guard. Afterwards the rows and
# fingerprints are identical, distance queries give the same answers
# through the band indexes, the indexes check clean (amcheck, where the
# server has it), and the guard still refuses a near-duplicate.
#
# Needs the extension installed into both servers (scripts/install.sh
# with SIMHASH_PG=16 and 18; scripts/test.sh does it). Its clusters are
# its own: temporary directories, ports 54416 and 54418.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

OLD=${OLD:-16}
NEW=${NEW:-18}
old_config=$(pg_config_of "$OLD")
new_config=$(pg_config_of "$NEW")
for c in "$old_config" "$new_config"; do
    [ -x "$c" ] || die "major-version upgrade test: no $c. To get it: $(how_to_get "$(basename "$(dirname "$(dirname "$c")")")")"
done
old_bin=$(dirname "$old_config")
new_bin=$(dirname "$new_config")
old_port=544$OLD
new_port=544$NEW

fail() { die "major-version upgrade test ($OLD -> $NEW): $*"; }
work=$(mktemp -d /tmp/simhash-major-upgrade.XXXXXX)
chmod 755 "$work"
[ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$work"
stop_all() {
    for d in "$work/old" "$work/new" "$work/restored"; do
        [ -f "$d/postmaster.pid" ] && as_server "$new_bin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
        [ -f "$d/postmaster.pid" ] && as_server "$old_bin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
    done
    rm -rf "$work" 2>/dev/null || $SUDO rm -rf "$work"
}
trap stop_all EXIT

# new_cluster DIR BIN PORT: a cluster like scripts/cluster.sh's (without
# data checksums, which pg_upgrade needs alike on both sides).
new_cluster() {
    init_cluster "$1" "$2" "$3" "$work" <<<"shared_preload_libraries = 'simhash'"
}
start() { as_server "$2/pg_ctl" -D "$1" -l "$1/server.log" -w -t 60 start >/dev/null || { tail -20 "$1/server.log" >&2; fail "server in $1 did not start"; }; }
stop() { as_server "$2/pg_ctl" -D "$1" -m fast -w stop >/dev/null; }
q() { local port=$1; shift; "$new_bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U "$SERVER_USER" "$@"; }

# What must survive, as text: rows with their fingerprints, and the answers
# of distance queries with only the band indexes allowed.
describe() {
    q "$1" -d docs <<'SQL'
SET enable_seqscan = off;
SELECT 'row ' || id || ' ' || fp || ' ' || coalesce(fp_bits::text, '-') FROM articles ORDER BY id;
SELECT 'near ' || a.id || ' ' || string_agg(b.id::text, ',' ORDER BY b.id)
FROM articles a JOIN articles b ON b.fp <~> a.fp <= 7
GROUP BY a.id ORDER BY a.id;
SELECT 'index ' || indexdef FROM pg_indexes WHERE tablename = 'articles' ORDER BY 1;
SELECT 'keys ' || a.id || ' ' || string_agg(b.id::text, ',' ORDER BY b.id)
FROM articles a JOIN articles b ON b.body_lsh &&& a.body_lsh AND b.id <> a.id
WHERE a.id <= 20
GROUP BY a.id ORDER BY a.id;
SQL
}

check() {
    local port=$1 how=$2 got plan n
    got=$(describe "$port")
    if ! diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2; then
        fail "after $how the data or the answers differ (< before, > after)"
    fi
    plan=$(q "$port" -d docs -c "SET enable_seqscan = off" \
             -c "EXPLAIN (COSTS OFF) SELECT id FROM articles WHERE fp <~> '0123456789abcdef' <= 3")
    grep -q "Bitmap Index Scan on articles_fp_band0" <<<"$plan" || fail "after $how the band indexes are not used: $plan"
    # The second source's operator class, whose family holds the arrays'
    # && beside &&&: both through the keys' index.
    for op in '&&&' '&&'; do
        plan=$(q "$port" -d docs -c "SET enable_seqscan = off" \
                 -c "EXPLAIN (COSTS OFF) SELECT id FROM articles WHERE body_lsh $op simhash_lsh('第1篇报道')")
        grep -q "Bitmap Index Scan on articles_body_lsh_idx" <<<"$plan" || fail "after $how $op does not use the keys' index: $plan"
    done
    if [ -n "$(q "$port" -d docs -c "SELECT 1 FROM pg_available_extensions WHERE name = 'amcheck'")" ]; then
        q "$port" -d docs -c "CREATE EXTENSION IF NOT EXISTS amcheck" \
            -c "SELECT bt_index_check(indexrelid, true) FROM pg_index WHERE indrelid = 'articles'::regclass" >/dev/null \
            || fail "after $how amcheck finds the indexes corrupt"
        log "after $how: indexes check clean (amcheck)"
    else
        log "after $how: no amcheck on this server, indexes not checked by it"
    fi
    n=$(q "$port" -d docs -c "INSERT INTO articles (body) SELECT body || '！' FROM articles WHERE id = 1" \
           -c "SELECT count(*) FROM articles" 2>&1 || true)
    grep -q "duplicate key value violates near-unique constraint" <<<"$n" \
        || fail "after $how the near-unique guard let a near-duplicate in: $n"
}

log "PostgreSQL $OLD: a database that uses the extension"
new_cluster "$work/old" "$old_bin" "$old_port"
start "$work/old" "$old_bin"
"$old_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "$old_port" -U "$SERVER_USER" -d postgres -c "CREATE DATABASE docs"
"$old_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "$old_port" -U "$SERVER_USER" -d docs >/dev/null <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE articles (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body text NOT NULL,
    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED,
    fp_bits simhash64,
    CONSTRAINT bits_round_trip CHECK (fp_bits::bit(64)::simhash64 = fp_bits)
);
SELECT count(*) FROM simhash_add_bands('articles', 'fp');
SELECT simhash_add_lsh('articles', 'body');
-- Texts with near copies (other numbers in the same sentence).
INSERT INTO articles (body, fp_bits)
SELECT format('第%s篇报道：国务院总理今天在人民大会堂会见了来访的第%s个代表团，双方就经贸合作交换了意见。', g, g % 7),
       hashint8extended(g, 5)::simhash64
FROM generate_series(1, 300) g;
CREATE TRIGGER articles_near_unique BEFORE INSERT OR UPDATE ON articles
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3');
SQL
want=$(describe "$old_port")
[ "$(grep -c '^row ' <<<"$want")" -ge 100 ] || fail "the source database is not as expected"
[ "$(grep -c '^keys ' <<<"$want")" -ge 5 ] || fail "the source database's rows share no candidate keys"
as_server "$old_bin/pg_dump" -h "$work" -p "$old_port" -U "$SERVER_USER" --format=custom --file="$work/docs.dump" docs
stop "$work/old" "$old_bin"

log "pg_upgrade from PostgreSQL $OLD to $NEW"
new_cluster "$work/new" "$new_bin" "$new_port"
(cd "$work" && as_server "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$work/old" -D "$work/new" \
    -p "$old_port" -P "$new_port" -U "$SERVER_USER" --socketdir="$work" >"$work/pg_upgrade.out" 2>&1) \
    || { tail -30 "$work/pg_upgrade.out" >&2; fail "pg_upgrade failed"; }
start "$work/new" "$new_bin"
check "$new_port" "pg_upgrade"
stop "$work/new" "$new_bin"
log "pg_upgrade $OLD -> $NEW: same rows and fingerprints, same answers through the band indexes, guard holds"

log "pg_dump from PostgreSQL $OLD, pg_restore into $NEW"
new_cluster "$work/restored" "$new_bin" "$new_port"
start "$work/restored" "$new_bin"
q "$new_port" -d postgres -c "CREATE DATABASE docs"
as_server "$new_bin/pg_restore" -h "$work" -p "$new_port" -U "$SERVER_USER" --exit-on-error -d docs "$work/docs.dump" \
    || fail "pg_restore failed"
check "$new_port" "pg_dump/pg_restore"
stop "$work/restored" "$new_bin"
log "dump $OLD, restore $NEW: same rows and fingerprints, same answers through the band indexes, guard holds"
