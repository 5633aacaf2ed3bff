#!/usr/bin/env bash
# `make check`: the fast tier of `make test`, for one PostgreSQL version
# ($SIMHASH_PG, default 15). The same commands as scripts/test.sh's steps
# 1, 2 and 5 (docs/testing.md), in the same order:
#
#   lint   cargo fmt --check, cargo clippy -D warnings (all targets, with
#          the pg_test feature)
#   core   cargo test -p simhash-core -p simhash-bench: the core's unit and
#          golden tests, and the bench crate's
#   sql    scripts/install.sh (the release build, installed), then
#          scripts/cluster.sh start ((re)starts this version's throwaway
#          cluster, so that the new library is loaded), then
#          scripts/regress.sh (tests/sql against tests/expected)
#
#   scripts/check.sh             set-up for this version, then all three
#   scripts/check.sh sql         one step (or several: check.sh lint core)
#
# Left to `make test`: fuzzing, `cargo pgrx test`, the concurrency,
# upgrade, dump/restore, review-page, replication, Citus and postgres_fdw
# tests, the other PostgreSQL versions and the package.
#
# Environment:
#   SIMHASH_PG=16                 the version to install and test on
#   SIMHASH_CHECK_SKIP_INSTALL=1  skip scripts/install.sh: run the regression
#                                 files against the extension as installed
#   SIMHASH_PGPORT, SIMHASH_PGDATA  passed on to cluster.sh and regress.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
started=$SECONDS

lint() {
    log "cargo fmt --check"
    cargo fmt --all --check
    log "cargo clippy (warnings are errors)"
    cargo clippy --workspace --all-targets --features pg_test -- -D warnings
}

core() {
    log "core unit and golden tests"
    cargo test -p simhash-core -p simhash-bench
}

sql() {
    require_pg
    if [ "${SIMHASH_CHECK_SKIP_INSTALL:-}" = 1 ]; then
        log "PostgreSQL $PG_MAJOR: skipping the install (SIMHASH_CHECK_SKIP_INSTALL=1)"
    else
        "$ROOT/scripts/install.sh"
    fi
    log "PostgreSQL $PG_MAJOR: SQL regression tests"
    "$ROOT/scripts/cluster.sh" start
    "$ROOT/scripts/regress.sh"
}

if [ $# -eq 0 ]; then
    # Only this version's server: the others are make test's.
    SIMHASH_PG_VERSIONS=$PG_MAJOR "$ROOT/scripts/setup.sh"
    set -- lint core sql
fi
for step in "$@"; do
    case $step in
        lint | core | sql) "$step" ;;
        *) die "usage: $0 [lint|core|sql]..." ;;
    esac
done
log "check passed ($*) on PostgreSQL $PG_MAJOR in $((SECONDS - started)) s"
