#!/usr/bin/env bash
# The near-unique guard on a large table, by band layout, side by side in
# one run: ROWS (default 10,000,000) uniformly random fingerprints, then
# INSERTS (default 2,000) new random rows through the guard in 'skip'
# mode (so that the rare random row within k of one already there, about
# one in 2,300 at k = 7 and 10M rows, is skipped instead of ending the
# run; every row is checked), on the same table
# indexed with each layout in turn (LAYOUTS, default "4x16 4x16c 2x32"),
# for each k in KS (default "3 7"), and without the guard (the band
# indexes alone) as the baseline. Rows per second, one statement of
# single-row INSERTs (a DO loop), the guard's per-row probe included.
#
# Run: bench/guard_layouts.sh
#      ROWS=1000000 LAYOUTS="4x16 4x16c" KS=3 bench/guard_layouts.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROWS=${ROWS:-10000000}
INSERTS=${INSERTS:-2000}
layouts=${LAYOUTS:-4x16 4x16c 2x32}
ks=${KS:-3 7}
bench_db

log "loading $ROWS rows"
psql_db >/dev/null <<SQL
DROP TABLE IF EXISTS g;
CREATE UNLOGGED TABLE g (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO g SELECT i, hashint8extended(i, 77)::simhash64 FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE g;
SQL

# Inserts INSERTS rows one by one (ids above the table's), then removes
# them; prints rows/s.
insert_rate() {
    local t0 t1
    t0=$(date +%s.%N)
    psql_db -c "DO \$\$ BEGIN FOR i IN 1..$INSERTS LOOP
                  INSERT INTO g VALUES ($ROWS + i, hashint8extended($ROWS + i, 78)::simhash64);
                END LOOP; END \$\$" >/dev/null
    t1=$(date +%s.%N)
    psql_db -c "DELETE FROM g WHERE id > $ROWS" -c "VACUUM g" >/dev/null
    python3 -c "print(round($INSERTS / ($t1 - $t0)))"
}

results=()
for layout in $layouts; do
    log "layout $layout: building"
    psql_db -c "DROP TRIGGER IF EXISTS fp_near_unique ON g" -c "DROP TRIGGER IF EXISTS fp_near_unique_report ON g" \
            -c "SELECT count(*) FROM simhash_add_bands('g', 'fp', '$layout')" -c "VACUUM ANALYZE g" >/dev/null
    base=$(insert_rate)
    log "layout $layout, no guard: $base rows/s"
    for k in $ks; do
        psql_db -c "SELECT simhash_add_guard('g', 'fp', $k, 'skip')" >/dev/null
        # The guard must not have built another layout for this k.
        have=$(psql_db -c "SELECT simhash_band_layouts('g', 'fp')")
        rate=$(insert_rate)
        psql_db -c "DROP TRIGGER fp_near_unique ON g" -c "DROP TRIGGER IF EXISTS fp_near_unique_report ON g" >/dev/null
        log "layout $layout ($have), guard k = $k: $rate rows/s"
        results+=("$layout $k $rate $base $have")
    done
done
psql_db -c "DROP TABLE g" >/dev/null

echo
echo "== near-unique guard on $ROWS rows, $INSERTS single-row inserts (rows/s) =="
printf '%-6s %-3s %12s %12s %7s  %s\n' layout k with_guard bands_only ratio "layouts present"
for r in "${results[@]}"; do
    read -r layout k rate base have <<< "$r"
    printf '%-6s %-3s %12s %12s %7s  %s\n' "$layout" "$k" "$rate" "$base" \
        "$(python3 -c "print(round($rate / $base, 3))")" "$have"
done
