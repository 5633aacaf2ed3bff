#!/usr/bin/env bash
# Every test, from a fresh machine: set-up, lint, core unit and golden
# tests, in-server #[pg_test]s, then the SQL regression files against a
# throwaway cluster with the release build installed.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"

"$ROOT/scripts/setup.sh"

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --features pg_test -- -D warnings

log "core unit and golden tests"
cargo test -p simhash-core -p simhash-bench

log "in-server tests (cargo pgrx test)"
# The test cluster's directory must belong to the server's user.
pgrx_data=$(mktemp -d /tmp/simhash-pgrx-test.XXXXXX)
trap 'rm -rf "$pgrx_data" 2>/dev/null || $SUDO rm -rf "$pgrx_data"' EXIT
[ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$pgrx_data"
cargo pgrx test pg$PG_MAJOR --runas "$SERVER_USER" --pgdata "$pgrx_data/data"

log "SQL regression tests"
# `cargo pgrx test` installed its test build; put the release build back.
"$ROOT/scripts/install.sh"
"$ROOT/scripts/cluster.sh" start
"$ROOT/scripts/regress.sh"
log "concurrent ingest through the near-unique trigger"
"$ROOT/test/concurrency.sh"
log "upgrades from 0.1.0, 0.2.0 and 0.3.0"
"$ROOT/test/upgrade.sh"
log "dump and restore"
"$ROOT/test/dump_restore.sh"
"$ROOT/scripts/cluster.sh" stop
log "all tests passed"
