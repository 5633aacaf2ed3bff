#!/usr/bin/env bash
# Every test, from a fresh machine: set-up, lint, core unit and golden
# tests once; then, for each PostgreSQL version of $SIMHASH_PG_VERSIONS
# (default "15 16 18"; SIMHASH_PG_VERSIONS=16 make test for a fast loop on
# one), the in-server #[pg_test]s, the SQL regression files, the
# concurrency, upgrade and dump/restore tests against a throwaway cluster of
# that version with the release build installed, the Citus tests
# (tests/citus.sh: skipped, saying so, without the Citus source tarball)
# and the postgres_fdw tests (tests/fdw.sh: skipped, saying so, where the
# server has no postgres_fdw).
# Then, where the versions
# are there: the major-version upgrade 16 -> 18 (pg_upgrade and
# dump/restore), and the .deb installed with apt into Debian's or PGDG's
# server and smoke-tested.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
started=$SECONDS

# Free space where the build and the throwaway clusters go: a full disk
# fails a test far from its cause ("could not append to file"), so say
# what there was at the start. A run from a fresh clone takes about 8 GB.
for dir in "$ROOT" "${TMPDIR:-/tmp}"; do
    free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
    log "free disk space under $dir: $((free_kb / 1024 / 1024)) GB"
    [ "$free_kb" -ge $((8 * 1024 * 1024)) ] \
        || printf 'warning: less than 8 GB free under %s; the build and the clusters may fail with "No space left on device"\n' "$dir" >&2
done

"$ROOT/scripts/setup.sh"

log "cargo fmt --check"
cargo fmt --all --check

log "the manual: README.md's length, commit hashes, links, Reference (scripts/lint_docs.py)"
python3 "$ROOT/scripts/lint_docs.py"

log "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --features pg_test -- -D warnings

log "core unit and golden tests"
cargo test -p simhash-core -p simhash-bench
# The SIMD kernels run only where the processor has them; the core's tests
# compare every level it has with the scalar reference (fuzz_props, the
# golden and same-bits tests). Say which ones that was here.
# The kernels of each level: AVX2's runs of ideographs eight at a time,
# weights four at a time and counters; AVX-512's weights eight at a time
# and counters, and its runs of ideographs sixteen at a time, with VBMI's
# byte permutes where the processor has them and without them in any case
# (the level avx512-novbmi, which the tests run on a processor with VBMI
# too). SIMHASH_SIMD, when set, caps them (crates/simhash-core/src/cpu.rs).
cap=${SIMHASH_SIMD:-avx512}
levels="scalar"
[ "$cap" != baseline ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null \
    && levels="$levels, AVX2 (runs of ideographs 8 at a time, weights 4 at a time, counters)"
for f in avx512f avx512dq avx512bw avx512vl; do grep -qw $f /proc/cpuinfo 2>/dev/null || f=; [ -n "$f" ] || break; done
[ "$cap" = avx512 ] || [ "$cap" = avx512-novbmi ] || f=
if [ -n "${f:-}" ]; then
    levels="$levels, AVX-512 without VBMI (runs of ideographs 16 at a time, weights 8 at a time, counters)"
    [ "$cap" = avx512 ] && grep -qw avx512vbmi /proc/cpuinfo 2>/dev/null \
        && levels="$levels, AVX-512 with VBMI (runs of ideographs 16 at a time by vpermb)"
fi
[ -z "${SIMHASH_SIMD:-}" ] || levels="$levels; SIMHASH_SIMD=$SIMHASH_SIMD"
log "SIMD kernels compared with the scalar reference on this processor: $levels"

log "fuzzing the readers of untrusted bytes (bounded: ${SIMHASH_FUZZ_SECONDS:-30} s a target)"
"$ROOT/scripts/fuzz.sh" "${SIMHASH_FUZZ_SECONDS:-30}"

# The installed library of the current version.
library_path() {
    printf '%s/simhash.so' "$("$PG_CONFIG" --pkglibdir)"
}

# not_in_place FILE COMMAND...: runs COMMAND after moving FILE aside (a
# rename: whoever has it open or mapped keeps the old one), and fails if
# the old file's contents changed under an open descriptor meanwhile,
# which is what a server that has it mapped would see.
not_in_place() {
    local file=$1
    shift
    if [ ! -f "$file" ]; then
        "$@"
        return
    fi
    local before aside
    exec {held}<"$file"
    before=$(sha256sum </proc/self/fd/$held)
    aside="$file.old.$$"
    $SUDO mv -f "$file" "$aside"
    local status=0
    "$@" || status=$?
    # Nothing installed (a failed build): the old file goes back.
    if [ -f "$file" ]; then $SUDO rm -f "$aside"; else $SUDO mv -f "$aside" "$file"; fi
    [ $status = 0 ] || return $status
    [ "$(sha256sum </proc/self/fd/$held)" = "$before" ] ||
        die "$file was rewritten in place by: $*"
    exec {held}<&-
}

pgrx_data=$(mktemp -d /tmp/simhash-pgrx-test.XXXXXX)
trap 'rm -rf "$pgrx_data" 2>/dev/null || $SUDO rm -rf "$pgrx_data"' EXIT
[ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$pgrx_data"

for v in $PG_VERSIONS; do
    export SIMHASH_PG=$v
    # Re-read the settings of this version (PG_CONFIG, PG_BIN, ...).
    . "$ROOT/scripts/common.sh"
    require_pg
    log "PostgreSQL $v: in-server tests (cargo pgrx test)"
    # The test cluster's directory must belong to the server's user.
    rm -rf "${pgrx_data:?}/data"
    # `cargo pgrx test` installs its test build by copying over the
    # installed library, which rewrites the file in place: a running server
    # that has it mapped (any server with it preloaded) would crash. Move
    # the old file out of the way first, so the copy makes a new one.
    not_in_place "$(library_path)" cargo pgrx test "pg$v" --runas "$SERVER_USER" --pgdata "$pgrx_data/data"

    log "PostgreSQL $v: SQL regression tests"
    # `cargo pgrx test` installed its test build; put the release build back.
    "$ROOT/scripts/install.sh"
    "$ROOT/scripts/cluster.sh" start
    "$ROOT/scripts/regress.sh"
    log "PostgreSQL $v: the README's examples (tests/readme.sh)"
    "$ROOT/tests/readme.sh"
    log "PostgreSQL $v: concurrent ingest through the near-unique trigger"
    "$ROOT/tests/concurrency.sh"
    log "PostgreSQL $v: band indexes that older snapshots must not use"
    "$ROOT/tests/old_snapshots.sh"
    log "PostgreSQL $v: concurrent loads at every isolation level"
    "$ROOT/tests/load_isolation.sh"
    log "PostgreSQL $v: upgrades from every earlier release"
    "$ROOT/tests/upgrade.sh"
    log "PostgreSQL $v: dump and restore"
    "$ROOT/tests/dump_restore.sh"
    log "PostgreSQL $v: the review page in a browser"
    "$ROOT/tests/review.sh"
    log "PostgreSQL $v: the guard under logical replication"
    "$ROOT/tests/replication.sh"
    "$ROOT/scripts/cluster.sh" stop
    log "PostgreSQL $v: Citus (a coordinator and two workers)"
    "$ROOT/tests/citus.sh"
    log "PostgreSQL $v: postgres_fdw (a front and two remotes)"
    "$ROOT/tests/fdw.sh"
done

if [[ " $PG_VERSIONS " == *" 16 "* && " $PG_VERSIONS " == *" 18 "* ]]; then
    log "major-version upgrade 16 -> 18"
    "$ROOT/tests/major_upgrade.sh"
fi

# The package of the first version with a Debian/PGDG server.
for v in $PG_VERSIONS; do
    export SIMHASH_PG=$v
    . "$ROOT/scripts/common.sh"
    [ "$PG_CONFIG" = "/usr/lib/postgresql/$v/bin/pg_config" ] || continue
    log "PostgreSQL $v: the .deb"
    rm -f "$ROOT"/dist/postgresql-"$v"-simhash_*.deb "$ROOT"/dist/simhash-*-pg"$v"-linux-*.tar.gz
    "$ROOT/scripts/package.sh"
    "$ROOT/tests/package.sh" "$(ls "$ROOT"/dist/postgresql-"$v"-simhash_*.deb)"
    # Removing the package removed the library: put the build back.
    "$ROOT/scripts/install.sh"
    break
done
log "all tests passed on PostgreSQL $(echo $PG_VERSIONS) in $(( (SECONDS - started) / 60 )) min"
