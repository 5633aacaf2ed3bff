#!/usr/bin/env bash
# A band index that older snapshots must not use. A plain CREATE INDEX
# (what simhash_add_bands runs) over a HOT chain whose versions differ in
# the indexed expression indexes the chain's newest version only and sets
# pg_index.indcheckxmin: the planner does not use the index in a
# transaction whose xmin precedes the index's creation. Every reader of the
# band indexes must do the same. Two real sessions: a REPEATABLE READ
# transaction takes its snapshot, another session HOT-updates a row's
# fingerprint and adds the band indexes, and the first then asks for the
# row's old fingerprint through the probe (covering layout), through
# simhash_probe on a plain layout, and by a scan; all must agree.
# Needs the throwaway cluster running with the extension installed
# (scripts/test.sh does both).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
eval "$("$ROOT/scripts/cluster.sh" env)"
export PGHOST PGPORT PGUSER

DB=simhash_old_snapshots
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
q -c "CREATE EXTENSION simhash"
work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; rm -rf "$work"' EXIT

failures=0
for layout in 4x16c 4x16; do
    q >/dev/null <<SQL
DROP TABLE IF EXISTS hot;
CREATE TABLE hot (id int PRIMARY KEY, fp simhash64, note text) WITH (fillfactor = 50);
INSERT INTO hot SELECT g, hashint8extended(g, 7)::simhash64, 'x' FROM generate_series(1, 200) g;
SQL
    old=$(q -c "SELECT fp FROM hot WHERE id = 1")
    # The old session: its snapshot is taken now, before the update.
    rm -f "$work/in" "$work/out"
    mkfifo "$work/in"
    psql -X -q -At -d "$DB" <"$work/in" >"$work/out" 2>&1 &
    reader=$!
    exec 3>"$work/in"
    echo "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 'snapshot', count(*) FROM hot;" >&3
    for _ in $(seq 1 100); do
        grep -q '^snapshot|200$' "$work/out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q '^snapshot|200$' "$work/out" || { cat "$work/out"; die "the old session did not start"; }
    # The update (HOT: no index on fp yet) and the band indexes after it.
    q >/dev/null <<SQL
UPDATE hot SET fp = (~fp::bigint)::simhash64 WHERE id = 1;
SELECT count(*) FROM simhash_add_bands('hot', 'fp', '$layout');
SQL
    checkxmin=$(q -c "SELECT bool_or(indcheckxmin) FROM pg_index WHERE indrelid = 'hot'::regclass AND indexrelid <> 'hot_pkey'::regclass")
    [ "$checkxmin" = t ] || die "$layout: the band indexes were expected to have indcheckxmin set (got $checkxmin)"
    cat >&3 <<SQL
SELECT 'scan', count(*) FROM hot WHERE hamming(fp, '$old'::simhash64) <= 3;
SELECT 'query', count(*) FROM hot WHERE fp <~> '$old'::simhash64 <= 3;
SELECT 'probe', coalesce(array_length(simhash_probe('hot', 'fp', '$old'::simhash64, 3), 1), 0);
COMMIT;
\\q
SQL
    exec 3>&-
    wait $reader || true
    scan=$(sed -n 's/^scan|//p' "$work/out")
    query=$(sed -n 's/^query|//p' "$work/out")
    probe=$(sed -n 's/^probe|//p' "$work/out")
    log "$layout, a snapshot older than the band indexes: scan $scan, query $query, simhash_probe $probe"
    if [ "$scan" != 1 ] || [ "$query" != "$scan" ] || [ "$probe" != "$scan" ]; then
        cat "$work/out"
        failures=$((failures + 1))
    fi
    # A transaction that starts after the index: it is used (and exact).
    new=$(q -c "SELECT count(*) FROM hot WHERE fp <~> (~'$old'::simhash64::bigint)::simhash64 <= 3")
    [ "$new" = 1 ] || { echo "$layout: a new snapshot found $new rows, not 1"; failures=$((failures + 1)); }
done
psql -X -q -d postgres -c "DROP DATABASE $DB"
[ $failures = 0 ] || die "old snapshots: $failures disagreement(s) with a scan"
log "old snapshots: every reader agrees with a scan"
