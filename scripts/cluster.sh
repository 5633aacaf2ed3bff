#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the demo, the tests and the
# benchmarks, with the simhash library preloaded: version 15 unless
# SIMHASH_PG says otherwise (each version has its own cluster and port).
#
#   scripts/cluster.sh start     initdb if needed, then (re)start
#   scripts/cluster.sh stop
#   scripts/cluster.sh env       print PGHOST/PGPORT/PGUSER exports
#   scripts/cluster.sh destroy   stop and delete the data directory
#
# The data directory is `.pgdata-pg<version>` in the checkout, or, when
# the server's user cannot reach the checkout (a root-owned clone in a
# private directory), a directory under /tmp named after the checkout. The
# server listens only on a Unix socket inside the data directory, on port
# $SIMHASH_PGPORT (default 543<version>: 54315, 54316, 54318), so it never
# meets another server. SIMHASH_PGDATA overrides the data directory.
set -euo pipefail
. "$(dirname "$0")/common.sh"

PORT=${SIMHASH_PGPORT:-543$PG_MAJOR}

data_dir() {
    if [ -n "${SIMHASH_PGDATA:-}" ]; then
        printf '%s' "$SIMHASH_PGDATA"
        return
    fi
    local d="$ROOT/.pgdata-pg$PG_MAJOR"
    if [ "$SERVER_USER" != "$(id -un)" ]; then
        # Can the server's user reach the checkout?
        if ! sudo -u "$SERVER_USER" test -x "$ROOT" 2>/dev/null; then
            d="/tmp/simhash-pgdata-pg$PG_MAJOR-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)"
        fi
    fi
    printf '%s' "$d"
}

PGDATA_DIR=$(data_dir)

start() {
    require_pg
    if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
        log "creating a throwaway cluster in $PGDATA_DIR"
        init_cluster "$PGDATA_DIR" "$PG_BIN" "$PORT" "$PGDATA_DIR" <<CONF
shared_preload_libraries = 'simhash'
shared_buffers = 512MB
work_mem = 64MB
maintenance_work_mem = 512MB
max_wal_size = 4GB
CONF
    fi
    start_cluster "$PGDATA_DIR" "$PG_BIN"
}

stop() {
    if [ -f "$PGDATA_DIR/PG_VERSION" ] && as_server "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; then
        as_server "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) printf 'export PGHOST=%q PGPORT=%q PGUSER=%q PGDATA_DIR=%q PATH=%q\n' \
             "$PGDATA_DIR" "$PORT" "$SERVER_USER" "$PGDATA_DIR" "$PG_BIN:$PATH" ;;
    destroy) stop; rm -rf "$PGDATA_DIR" ;;
    *) die "usage: $0 start|stop|env|destroy" ;;
esac
