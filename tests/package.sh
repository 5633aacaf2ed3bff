#!/usr/bin/env bash
# The .deb as a DBA uses it: `apt install ./postgresql-NN-simhash_*.deb`
# next to Debian's or PGDG's server, then a brand-new cluster (not the
# throwaway one of the other tests) that preloads the library and runs the
# smoke tests: the type, a fingerprint, the band indexes, clustering and
# the guard. Then the package is removed again, and installing the tarball
# into a server of another major version must fail with a clear message.
#   tests/package.sh dist/postgresql-15-simhash_0.4.0_amd64.deb
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

deb=${1:?usage: tests/package.sh FILE.deb}
[ -f "$deb" ] || die "no such package: $deb"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
package=$(dpkg-deb --field "$deb" Package)
major=$(sed -E 's/^postgresql-([0-9]+)-simhash$/\1/' <<<"$package")
bin=/usr/lib/postgresql/$major/bin
fail() { die "package test ($package): $*"; }

log "apt install $deb"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$deb" >/dev/null
grep -q "Status: install ok installed" <<<"$(dpkg -s "$package")" || fail "not installed"
[ -f "/usr/lib/postgresql/$major/lib/simhash.so" ] || fail "no simhash.so in /usr/lib/postgresql/$major/lib"

work=$(mktemp -d /tmp/simhash-package.XXXXXX)
chmod 755 "$work"
[ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$work"
cleanup() {
    as_server "$bin/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$work" 2>/dev/null || $SUDO rm -rf "$work"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get remove -y -qq "$package" >/dev/null 2>&1 || true
}
trap cleanup EXIT

as_server "$bin/initdb" -D "$work/data" -E UTF8 --locale=C -U "$SERVER_USER" --auth=trust >/dev/null
as_server tee -a "$work/data/postgresql.conf" >/dev/null <<CONF
port = 545$major
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'simhash'
CONF
as_server "$bin/pg_ctl" -D "$work/data" -l "$work/data/server.log" -w start >/dev/null \
    || { tail -20 "$work/data/server.log" >&2; fail "a cluster preloading the packaged library did not start"; }
got=$("$bin/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "545$major" -U "$SERVER_USER" -d postgres <<'SQL'
CREATE EXTENSION simhash;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
CREATE TABLE docs (id bigint PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('docs', 'fp');
CREATE TRIGGER docs_near_unique BEFORE INSERT ON docs
    FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');
INSERT INTO docs SELECT g, '第' || g || '条新闻：今天北京天气晴朗，气温二十五度，适合出行。' FROM generate_series(1, 200) g;
INSERT INTO docs VALUES (1000, '國務院總理李鵬今天在人民大會堂會見了來訪的日本客人'),
                        (1001, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人');
SET enable_seqscan = off;
SELECT count(*) FROM docs WHERE fp <~> simhash('国务院总理李鹏今天在人民大会堂会见了来访的日本客人。') <= 3;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> simhash('abc') <= 3;
SELECT count(DISTINCT cluster) > 0 FROM simhash_clusters('docs', 'fp', 7);
SQL
) || fail "the smoke test failed: $got"
want_version=$(dpkg-deb --field "$deb" Version)
[ "$(sed -n 1p <<<"$got")" = "$want_version" ] || fail "extension version $(sed -n 1p <<<"$got"), package $want_version"
[ "$(sed -n 3p <<<"$got")" = 1 ] || fail "the guard or the band query is wrong: $got"
grep -q "Bitmap Index Scan on docs_fp_band0" <<<"$got" || fail "the band indexes are not used: $got"
[ "$(tail -n 1 <<<"$got")" = t ] || fail "clustering gave nothing"
log "package $package: installs with apt, loads, and passes the smoke tests"

# The tarball of the same build refuses a server of another major version.
tarball=$(ls "$(dirname "$deb")"/simhash-*-pg"$major"-linux-*.tar.gz 2>/dev/null | head -1)
other=""
for v in 15 16 17 18; do
    [ "$v" != "$major" ] && [ -x "$(pg_config_of "$v")" ] && other=$v && break
done
if [ -n "$tarball" ] && [ -n "$other" ]; then
    tar -C "$work" -xzf "$tarball"
    if out=$(PG_CONFIG="$(pg_config_of "$other")" sh "$work"/simhash-*/install.sh 2>&1); then
        fail "the PostgreSQL $major tarball installed into PostgreSQL $other"
    fi
    grep -q "built for PostgreSQL $major, but .* is PostgreSQL $other" <<<"$out" || fail "unclear refusal: $out"
    log "the PostgreSQL $major tarball refuses PostgreSQL $other: $(head -1 <<<"$out")"
fi
