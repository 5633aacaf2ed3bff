#!/usr/bin/env bash
# The near-unique guard and logical replication: what a subscriber's guard
# does. A cluster of its own (wal_level = logical), a publisher and a
# subscriber database in it. PostgreSQL's apply worker runs with
# session_replication_role = replica, so an ordinary trigger, the guard
# too, does not fire for replicated rows: the subscriber takes every row
# the publisher has. ENABLE ALWAYS makes the guard check them too; a row it
# refuses ('error') stops the subscription until the row is dealt with,
# a row it skips ('skip') is missing on the subscriber. The README's
# Security and Limits sections say what to do.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
require_pg

work=$(mktemp -d /tmp/simhash-replication.XXXXXX)
chmod 755 "$work"
[ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$work"
port=${SIMHASH_REPLICATION_PORT:-$((54400 + PG_MAJOR))}
cleanup() {
    as_server "$PG_BIN/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { die "replication test: $*"; }
q() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U "$SERVER_USER" -d "$db" "$@"; }

init_cluster "$work/data" "$PG_BIN" "$port" "$work" <<CONF
shared_preload_libraries = 'simhash'
wal_level = logical
max_replication_slots = 4
max_wal_senders = 4
CONF
start_cluster "$work/data" "$PG_BIN"

q postgres -c "CREATE DATABASE pub" -c "CREATE DATABASE sub"
schema="CREATE EXTENSION simhash;
        CREATE TABLE docs (id int PRIMARY KEY, body text,
                           fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);"
q pub -c "$schema" -c "CREATE PUBLICATION docs_pub FOR TABLE docs" \
    -c "SELECT pg_create_logical_replication_slot('docs_slot', 'pgoutput')" >/dev/null
q sub -c "$schema" -c "SELECT simhash_add_guard('docs', 'fp', 3, 'skip')" >/dev/null
q sub -c "CREATE SUBSCRIPTION docs_sub CONNECTION 'host=$work port=$port dbname=pub user=$SERVER_USER'
          PUBLICATION docs_pub WITH (create_slot = false, slot_name = 'docs_slot')"

text='The quick brown fox jumps over the lazy dog near the river bank today'
# wait_for N: until the subscriber has N rows (at most 30 s).
wait_for() {
    for _ in $(seq 300); do
        [ "$(q sub -c "SELECT count(*) FROM docs")" = "$1" ] && return 0
        sleep 0.1
    done
    fail "the subscriber has $(q sub -c "SELECT count(*) FROM docs") rows, not $1"
}

# A near-copy on the publisher (no guard there) reaches the subscriber:
# its guard does not fire on the apply worker.
q pub -c "INSERT INTO docs (id, body) VALUES (1, '$text.'), (2, '$text!')"
wait_for 2
# ... while a local insert on the subscriber is checked.
[ "$(q sub -c "INSERT INTO docs (id, body) VALUES (100, '$text?')" -c "SELECT count(*) FROM docs WHERE id = 100")" = 0 ] ||
    fail "the subscriber's guard let a local near-copy in"
log "replication: the subscriber's guard does not check replicated rows (2 near-copies in), and checks local ones"

# ENABLE ALWAYS: the guard checks replicated rows too, and 'skip' drops a
# near-copy on the subscriber only.
q sub -c "ALTER TABLE docs ENABLE ALWAYS TRIGGER fp_near_unique"
q pub -c "INSERT INTO docs (id, body) VALUES (3, '$text?'), (4, 'A completely different text about the weather in Beijing tomorrow')"
wait_for 3
[ "$(q sub -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs")" = "1,2,4" ] ||
    fail "ENABLE ALWAYS: the subscriber has $(q sub -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs")"
[ "$(q pub -c "SELECT count(*) FROM docs")" = 4 ] || fail "the publisher lost a row"
log "replication: with ENABLE ALWAYS the subscriber's guard skips a replicated near-copy (publisher 4 rows, subscriber 3)"

# 'error' with ENABLE ALWAYS: the apply worker stops at the refused row
# and retries; the rows after it wait. Dropping the guard lets it go on.
q sub -c "SELECT simhash_add_guard('docs', 'fp', 3, 'error')" -c "ALTER TABLE docs ENABLE ALWAYS TRIGGER fp_near_unique" >/dev/null
q pub -c "INSERT INTO docs (id, body) VALUES (5, '$text;')" -c "INSERT INTO docs (id, body) VALUES (6, 'Another different text, about trains and stations in Shanghai')"
sleep 2
[ "$(q sub -c "SELECT count(*) FROM docs WHERE id IN (5, 6)")" = 0 ] ||
    fail "ENABLE ALWAYS 'error': rows got past a refused near-copy"
grep -q "near-unique constraint" "$work/data/server.log" || fail "the apply worker's error is not in the log"
q sub -c "DROP TRIGGER fp_near_unique ON docs"
wait_for 5
log "replication: with ENABLE ALWAYS and 'error' the subscription stops at the near-copy (23505 in the log) until the guard goes"
