#!/usr/bin/env bash
# simhash_clusters() through SQL at scale: time and the calling backend's
# memory, with a plain scan of the same rows as the reference.
#
# Rows: ROWS fingerprints, of which 150,000 are planted copies (50,000
# groups: a base and 3 copies, each 1 to 3 bits from the base, so every
# copy is within k = 3 of its base); the rest uniformly random 64-bit
# values (hashint8extended fills all 64 bits). Each k in KS is timed inside
# the server (clock_timestamp around `SELECT count(*), count(DISTINCT
# cluster) FROM simhash_clusters(...)`), and the planted copies are checked:
# every copy must be in its base's cluster.
#
#   scan    `SELECT count(*), sum(fp::bigint) FROM rows`: reading the rows,
#           the floor under any clustering of them;
#   memory  the backend's peak resident memory (VmHWM from its own
#           /proc/<pid>/status) after the clustering, minus the peak after
#           the scan (which already holds the table's pages): what the
#           clustering itself added, in MB.
#
# simhash.cluster_memory decides the path: in memory when about 75 bytes a
# row fit (default 1GB), else by buckets. MEMORY= lists the settings to run
# side by side ("default" leaves it unset; 1kB takes the buckets at any
# size). CHECK=0 skips the second run that checks the
# planted copies.
#
# Run: bench/clusters.sh [ROWS ...]       default 1000000 10000000
#      KS="3 7" bench/clusters.sh 1000000
#      MEMORY="default 1kB" KS=3 bench/clusters.sh 10000000
#      KS=3 CHECK=0 bench/clusters.sh 100000000
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || set -- 1000000 10000000
KS=${KS:-3 7 11}
MEMORY=${MEMORY:-default}
CHECK=${CHECK:-1}
bench_db

hwm_sql="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint / 1024 AS hwm"

printf '\n| rows | k | cluster_memory | scan s | clustering s | ratio to scan | clusters | copies not with their base | memory MB | bytes per row |\n'
printf '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for rows in "$@"; do
    log "loading $rows rows"
    psql_db >/dev/null <<SQL
DROP TABLE IF EXISTS cl_rows;
CREATE UNLOGGED TABLE cl_rows (id bigint, base bigint, fp simhash64);
-- 50,000 bases (ids 1..50000), each with 3 copies 1 to 3 bits away.
INSERT INTO cl_rows
SELECT g, NULL, hashint8extended(g, 11)::simhash64 FROM generate_series(1, $rows - 150000) g;
INSERT INTO cl_rows
SELECT $rows - 150000 + 3 * (g - 1) + c, g,
       (hashint8extended(g, 11)
        # (1::bigint << (abs(hashint8extended(g * 4 + c, 12)) % 64)::int)
        # (CASE WHEN c > 1 THEN 1::bigint << (abs(hashint8extended(g * 4 + c, 13)) % 64)::int ELSE 0 END)
        # (CASE WHEN c > 2 THEN 1::bigint << (abs(hashint8extended(g * 4 + c, 14)) % 64)::int ELSE 0 END))::simhash64
FROM generate_series(1, 50000) g, generate_series(1, 3) c;
VACUUM ANALYZE cl_rows;
SQL
    for k in $KS; do
    for memory in $MEMORY; do
        setting=""
        [ "$memory" = default ] || setting="SET simhash.cluster_memory = '$memory';"
        log "$rows rows, k = $k, simhash.cluster_memory $memory"
        # One session: scan, read the peak, cluster, read the peak again.
        out=$(psql_db -F' ' <<SQL
SET client_min_messages = warning;
$setting
SELECT clock_timestamp() AS t0 \gset
SELECT count(*), sum(fp::bigint) FROM cl_rows \gset
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS scan_s \gset
$hwm_sql \gset before_
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM simhash_clusters('cl_rows', 'fp', $k) \gset
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS cluster_s \gset
$hwm_sql \gset after_
-- Again, kept, to check the planted copies (an empty table with CHECK=0).
CREATE TEMP TABLE got AS SELECT * FROM simhash_clusters('cl_rows', 'fp', $k) WHERE $CHECK = 1;
SELECT :scan_s, :cluster_s,
       CASE WHEN $CHECK = 1 THEN (SELECT count(DISTINCT cluster) FROM got) ELSE -1 END,
       CASE WHEN $CHECK = 1 THEN
       (SELECT count(*) FROM cl_rows r JOIN got c ON c.id = r.id
                         JOIN got b ON b.id = r.base
        WHERE c.cluster <> b.cluster)
       + (SELECT 150000 - count(*) FROM cl_rows r JOIN got c ON c.id = r.id WHERE r.base IS NOT NULL)
       ELSE -1 END,
       :after_hwm - :before_hwm;
SQL
)
        read -r scan_s cluster_s clusters missed mem <<<"$out"
        awk -v r="$rows" -v k="$k" -v cm="$memory" -v s="$scan_s" -v c="$cluster_s" -v n="$clusters" \
            -v m="$missed" -v mem="$mem" 'BEGIN {
                printf "| %d | %d | %s | %.2f | %.2f | %.1f | %d | %d | %d | %.0f |\n",
                    r, k, cm, s, c, c / s, n, m, mem, mem * 1048576 / r }'
    done
    done
done
psql_db -c "DROP TABLE cl_rows"
