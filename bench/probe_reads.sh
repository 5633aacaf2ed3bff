#!/usr/bin/env bash
# How often one distance query on a covering table reads its band indexes:
# in a transaction that has written nothing (the planner's probe is reused
# by the estimate and the execution) and in one that has written a row
# (no answer is reused: the planner's probe, the estimate and the
# execution each read them). Counted as band-value scans in the
# transaction's index statistics, and timed, ROUNDS times each side, in
# one run.
#
#   bench/probe_reads.sh              ROWS=1000000 K=11 ROUNDS=20
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-1000000}
K=${K:-11}
ROUNDS=${ROUNDS:-20}
bench_db
log "making $ROWS rows with the covering bands"
psql_db <<SQL
DROP TABLE IF EXISTS probe_reads;
CREATE TABLE probe_reads (id int, fp simhash64);
INSERT INTO probe_reads SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series(1, $ROWS) g;
SELECT count(*) FROM simhash_add_bands('probe_reads', 'fp', '4x16c');
VACUUM ANALYZE probe_reads;
SQL

# One transaction per round: the band-value scans of the query and its
# time, after a write or not.
side() {
    local write=$1 i
    for i in $(seq "$ROUNDS"); do
        psql -X -q -At -d "$BENCH_DB" <<SQL
BEGIN;
$(if [ "$write" = yes ]; then echo "INSERT INTO probe_reads VALUES (0, NULL);"; fi)
SELECT sum(pg_stat_get_xact_numscans(indexrelid)) AS b FROM pg_index WHERE indrelid = 'probe_reads'::regclass \\gset
SELECT clock_timestamp() AS t0 \\gset
SELECT count(*) FROM probe_reads WHERE fp <~> hashint8extended($i, 99)::simhash64 <= $K \\g /dev/null
SELECT sum(pg_stat_get_xact_numscans(indexrelid)) - :b,
       round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 3)
  FROM pg_index WHERE indrelid = 'probe_reads'::regclass;
ROLLBACK;
SQL
    done
}
summary() { sort -t'|' -k2 -n | awk -F'|' '{ s += $1; t[NR] = $2 } END { printf "%.0f %.3f\n", s / NR, t[int((NR + 1) / 2)] }'; }
read -r ro_scans ro_ms < <(side no | summary)
read -r w_scans w_ms < <(side yes | summary)
printf '%-40s %18s %10s\n' "k = $K, $ROWS rows" "band-value scans" "median ms"
printf '%-40s %18s %10s\n' "a transaction that has written nothing" "$ro_scans" "$ro_ms"
printf '%-40s %18s %10s\n' "a transaction that has written a row" "$w_scans" "$w_ms"
awk -v a="$w_scans" -v b="$ro_scans" -v c="$w_ms" -v d="$ro_ms" \
    'BEGIN { printf "after a write: %.2fx the scans, %.2fx the time\n", a / b, c / d }'
psql_db -c "DROP TABLE probe_reads"
