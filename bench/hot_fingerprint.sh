#!/usr/bin/env bash
# A hot fingerprint on a covering table: ROWS rows, HOT of them with one
# fingerprint, the rest random. The distance query for the hot value against
# a scan of the same rows (hamming(...) + 0, which the rewrite leaves
# alone), in one run, ROUNDS times each, and the peak resident memory of a
# backend that only plans the query (EXPLAIN) and of one that runs it (the
# backend's VmHWM, which also counts the shared buffers it touched).
#
#   bench/hot_fingerprint.sh          ROWS=3600000 HOT=2700000 ROUNDS=5
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-3600000}
HOT=${HOT:-2700000}
ROUNDS=${ROUNDS:-5}
bench_db
log "this processor: $(instruction_set)"
log "making $ROWS rows, $HOT of them with one fingerprint, and the covering bands"
psql_db <<SQL
DROP TABLE IF EXISTS hot_fp;
CREATE TABLE hot_fp (id int, fp simhash64);
INSERT INTO hot_fp
SELECT g, CASE WHEN g <= $HOT THEN '0123456789abcdef'::simhash64
               ELSE hashint8extended(g, 8)::simhash64 END
FROM generate_series(1, $ROWS) g;
SELECT count(*) FROM simhash_add_bands('hot_fp', 'fp', '4x16c');
VACUUM ANALYZE hot_fp;
SQL

hwm() { grep VmHWM "/proc/$1/status" | awk '{ printf "%.0f MB", $2 / 1024 }'; }
query="SELECT count(*) FROM hot_fp WHERE fp <~> '0123456789abcdef' <= 3"
scan="SELECT count(*) FROM hot_fp WHERE hamming(fp, '0123456789abcdef') + 0 <= 3"
plan=$(psql_db -c "EXPLAIN (COSTS OFF) $query" | head -1)
log "plan of the query: $plan"
# One backend per side: its pid, then each round's time, then its peak.
run_side() {
    local sql=$1 fifo pid times
    fifo=$(mktemp -u)
    mkfifo "$fifo"
    psql -X -q -At -d "$BENCH_DB" <"$fifo" >"$fifo.out" 2>&1 &
    exec 4>"$fifo"
    echo "SELECT pg_backend_pid();" >&4
    echo '\timing on' >&4
    for _ in $(seq "$ROUNDS"); do echo "$sql;" >&4; done
    echo "SELECT pg_sleep(0.2);" >&4
    sleep 0.1
    pid=$(head -1 "$fifo.out")
    while [ "$(grep -c '^Time:' "$fifo.out")" -lt $((ROUNDS + 1)) ]; do sleep 0.2; done
    times=$(grep '^Time:' "$fifo.out" | head -"$ROUNDS" | awk '{ print $2 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "$times $(hwm "$pid") $(sed -n 2p "$fifo.out")"
    exec 4>&-
    wait
    rm -f "$fifo" "$fifo.out"
}
read -r q_ms q_mb q_unit q_rows < <(run_side "$query")
read -r s_ms s_mb s_unit s_rows < <(run_side "$scan")
read -r e_ms e_mb e_unit _ < <(ROUNDS=1 run_side "EXPLAIN $query")
log "rows within 3 of the hot fingerprint: query $q_rows, scan $s_rows"
[ "$q_rows" = "$s_rows" ] || die "the query and the scan disagree"
printf '%-32s %10s %12s\n' "" "median ms" "peak RSS"
printf '%-32s %10s %12s\n' "the query (fp <~> hot <= 3)" "$q_ms" "$q_mb $q_unit"
printf '%-32s %10s %12s\n' "a scan" "$s_ms" "$s_mb $s_unit"
printf '%-32s %10s %12s\n' "EXPLAIN of the query" "$e_ms" "$e_mb $e_unit"
awk -v q="$q_ms" -v s="$s_ms" 'BEGIN { printf "query / scan: %.2fx the time\n", q / s }'
psql_db -c "DROP TABLE hot_fp"
