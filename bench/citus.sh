#!/usr/bin/env bash
# One PostgreSQL node against Citus (a coordinator and two workers) on this
# machine, in one run, on the same rows:
#
#   single  the throwaway cluster of scripts/cluster.sh (as bench/lib.sh's
#           bench_db), database simhash_bench: UNLOGGED docs(id bigint,
#           fp simhash64), primary key on id, simhash_add_bands('docs','fp')
#   citus   a Citus cluster of scripts/citus.sh in its own directory and
#           ports (CITUS_BENCH_DIR, default /tmp/simhash-citus-bench-pgNN;
#           CITUS_BENCH_PORT, default 55450, and the next two), made anew
#           for every run: the same table, create_distributed_table('docs',
#           'id') (citus.shard_count's default, 32 shards), then the primary
#           key and simhash_add_bands('docs','fp') (the band indexes on
#           every shard). Each worker gets half the single node's
#           shared_buffers (256 MB each, 512 MB for the single node), so
#           both hold the same share of their rows in the buffer cache; the
#           other settings are the single node's (work_mem 64MB,
#           maintenance_work_mem 512MB, max_wal_size 4GB).
#
# Rows (as bench/band_index.sh): the fingerprints of the real texts of
# ../shared/data/zh_short.jsonl.gz beside the checkout (62k texts) when the
# file is there, uniformly random 64-bit values (hashint8extended fills all
# 64 bits) up to ROWS - 500, and 500 planted neighbours, 5 for each of the
# first 100 query fingerprints, at distances 1..11. They are made once on
# the single node, written to a file, and loaded into both with the same
# client-side COPY (psql \copy): "load" is that COPY's time.
#
# Queries: 200 fingerprints (1..100 have planted neighbours, 101..200 are
# random), `SELECT id FROM docs WHERE fp <~> '<fingerprint>'::simhash64 <= k`
# for k = 3 and 7, the fingerprint as a literal, as an application sends it.
# Latency is measured at the client: one long-lived psql session per system,
# fed through a pipe, and psql's own \timing (send the query, receive every
# row): it includes the round trip over the Unix socket, parse, plan,
# execution and the rows' transfer, for both systems alike. The two are
# interleaved query by query (the order alternating), after one unmeasured
# pass, so a noisy machine hurts both alike. Every query must return the
# same ids on both ("exact" counts the queries that do). p50 and p99 in ms.
#
# Where the time goes on Citus, with the same 200 queries:
#   router        `... WHERE id = <const> AND fp <~> q <= 3`: one shard
#   1-row table   the same query on a distributed table of one row, 32 and
#                 2 shards: the fixed cost of fanning out to every shard
#   pool=1        citus.max_adaptive_executor_pool_size = 1: one connection
#                 per worker, its shards one after the other
#   cached=16     citus.max_cached_conns_per_worker = 16: the extra
#                 connections the executor opens are kept for the next query
#   conn/q        worker connections the coordinator opened per query
#                 (citus_stat_counters, citus.enable_stat_counters = on in
#                 the measuring session)
#   EXPLAIN       EXPLAIN ANALYZE with citus.explain_all_tasks: planning and
#                 execution time of the shard queries, summed over the tasks,
#                 against the coordinator's total
#
# Clustering: simhash_clusters on the single node, gathered through the
# Citus coordinator, and on the Citus workers (cluster_compare below).
#
# Run: bench/citus.sh [ROWS]        default 10000000; e.g. bench/citus.sh 1000000
#      KEEP=1 bench/citus.sh ...    keep the tables and the stopped Citus cluster
#      The results table is also written to target/bench-citus-ROWS.txt.
#      nice -n 10 bench/citus.sh    on a shared machine (the servers it starts
#                                   inherit the niceness)
#      SIMHASH_PGDATA=/tmp/simhash-bench-single SIMHASH_PGPORT=55460 bench/citus.sh
#                                   a single node of its own, out of the way of
#                                   tests that restart the checkout's throwaway
#                                   cluster (scripts/cluster.sh destroy, with the
#                                   same variables, removes it)
# A server restarted under the benchmark, an index build that fails, or a plan
# without the band indexes stops it with an error.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ROWS=${1:-10000000}
if ! [[ $ROWS =~ ^[0-9]+$ ]] || [ "$ROWS" -lt 10000 ]; then
    die "usage: $0 [ROWS] (at least 10000)"
fi
CITUS_BENCH_DIR=${CITUS_BENCH_DIR:-/tmp/simhash-citus-bench-pg$PG_MAJOR}
CITUS_BENCH_PORT=${CITUS_BENCH_PORT:-55450}
KEEP=${KEEP:-0}
NQ=200
started=$SECONDS
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
corpus="$ROOT/../shared/data/zh_short.jsonl.gz"

[ "$CITUS_BENCH_DIR" != "/tmp/simhash-citus-pg$PG_MAJOR" ] \
    || die "CITUS_BENCH_DIR is the test cluster's directory; pick another"

citus_sh() {
    SIMHASH_CITUS_DIR=$CITUS_BENCH_DIR SIMHASH_CITUS_PORT=$CITUS_BENCH_PORT "$ROOT/scripts/citus.sh" "$@"
}

TMP=$(mktemp -d /tmp/simhash-citus-bench.XXXXXX)
declare -A CW=() CR=() CPID=()

cleanup() {
    local rc=$? name fd
    set +e
    for name in "${!CPID[@]}"; do
        fd=${CW[$name]}
        exec {fd}>&-
        fd=${CR[$name]}
        exec {fd}<&-
        kill "${CPID[$name]}" 2>/dev/null
        wait "${CPID[$name]}" 2>/dev/null
    done
    if [ "$KEEP" = 1 ]; then
        log "KEEP=1: the tables stay; the Citus cluster is stopped, its data kept in $CITUS_BENCH_DIR (restart: SIMHASH_CITUS_DIR=$CITUS_BENCH_DIR SIMHASH_CITUS_PORT=$CITUS_BENCH_PORT scripts/citus.sh start)"
        citus_sh stop
    else
        [ -z "${S_PORT:-}" ] || psql_single -c "DROP TABLE IF EXISTS docs, one, queries, real_fps, src" >/dev/null 2>&1
        citus_sh destroy
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------- servers

bench_db   # the single node; exports PGHOST, PGPORT, PGUSER
S_HOST=$PGHOST S_PORT=$PGPORT S_DB=$BENCH_DB
psql_single() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$S_HOST" -p "$S_PORT" -d "$S_DB" "$@"; }

log "a fresh Citus cluster in $CITUS_BENCH_DIR (ports $CITUS_BENCH_PORT-$((CITUS_BENCH_PORT + 2)))"
citus_sh destroy
citus_sh start
C_HOST=$CITUS_BENCH_DIR/run C_PORT=$CITUS_BENCH_PORT C_DB=simhash_citus
psql_node() { # psql_node INDEX [psql arguments...]: node 0 is the coordinator
    local i=$1
    shift
    PGOPTIONS="-c client_min_messages=warning" \
        psql -X -q -At -v ON_ERROR_STOP=1 -h "$C_HOST" -p $((C_PORT + i)) -d "$C_DB" "$@"
}
psql_citus() { psql_node 0 "$@"; }
for i in 0 1 2; do
    buffers=256MB
    [ "$i" != 0 ] || buffers=128MB
    psql_node "$i" -c "ALTER SYSTEM SET shared_buffers = '$buffers'" \
        -c "ALTER SYSTEM SET work_mem = '64MB'" -c "ALTER SYSTEM SET maintenance_work_mem = '512MB'" \
        -c "ALTER SYSTEM SET max_wal_size = '4GB'"
done
citus_sh start   # restarts the nodes with those settings
CITUS_VERSION=$(psql_citus -c "SELECT split_part(citus_version(), ' ', 2)")
PG_VERSION_FULL=$(psql_single -c "SHOW server_version" | cut -d' ' -f1)
EXT_S=$(psql_single -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")
EXT_C=$(psql_citus -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")

# ---------------------------------------------------------------- rows

log "making $ROWS rows on the single node"
psql_single -c "SET client_min_messages = warning" \
    -c "DROP TABLE IF EXISTS docs, one, queries, real_fps, src" -c "CREATE TABLE real_fps (fp simhash64)"
if [ -f "$corpus" ]; then
    zcat "$corpus" | psql_single -c "CREATE TEMP TABLE raw (doc jsonb)" \
        -c "\\copy raw FROM pstdin WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')" \
        -c "INSERT INTO real_fps SELECT simhash(doc->>'text') FROM raw WHERE simhash(doc->>'text') IS NOT NULL"
else
    log "no $corpus: random fingerprints only"
fi
psql_single <<SQL
CREATE TABLE queries AS
SELECT g AS qid, hashint8extended(g, 99)::simhash64 AS q FROM generate_series(1, $NQ) g;
CREATE UNLOGGED TABLE src (id bigint, fp simhash64);
INSERT INTO src SELECT row_number() OVER (), fp FROM real_fps LIMIT $ROWS - 500;
INSERT INTO src SELECT g, hashint8extended(g, 42)::simhash64
FROM generate_series((SELECT count(*) FROM src) + 1, $ROWS - 500) g;
-- 5 neighbours of each of the first 100 queries, 1..11 bits away.
INSERT INTO src SELECT $ROWS - 500 + (qid - 1) * 5 + c,
       (q::bigint # (SELECT bit_or(1::bigint << ((qid * 7 + c * 13 + i * 29) % 64))
                     FROM generate_series(1, 1 + (qid + c) % 11) i))::simhash64
FROM queries, generate_series(1, 5) c WHERE qid <= 100;
\copy src TO '$TMP/rows.tsv'
DROP TABLE src;
SQL
REAL_ROWS=$(psql_single -c "SELECT least(count(*), $ROWS - 500) FROM real_fps")

log "the tables"
psql_single <<SQL
CREATE UNLOGGED TABLE docs (id bigint, fp simhash64);
CREATE TABLE one (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO one SELECT 1, q FROM queries WHERE qid = 1;
SELECT count(*) FROM simhash_add_bands('one', 'fp') \\g /dev/null
SQL
psql_citus <<SQL
CREATE UNLOGGED TABLE docs (id bigint, fp simhash64);
SELECT create_distributed_table('docs', 'id') \\g /dev/null
CREATE TABLE one32 (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('one32', 'id') \\g /dev/null
CREATE TABLE one2 (id bigint PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('one2', 'id', shard_count := 2) \\g /dev/null
INSERT INTO one32 VALUES (1, '$(psql_single -c "SELECT q FROM queries WHERE qid = 1")');
INSERT INTO one2 SELECT * FROM one32;
SELECT count(*) FROM simhash_add_bands('one32', 'fp') \\g /dev/null
SELECT count(*) FROM simhash_add_bands('one2', 'fp') \\g /dev/null
VACUUM ANALYZE one32; VACUUM ANALYZE one2;
SQL
psql_single -c "VACUUM ANALYZE one"
SHARDS=$(psql_citus -c "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'docs'::regclass")

# timed SYSTEM SQL...: runs the statements, prints the seconds they took
timed() {
    local who=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    "psql_$who" "$@" >/dev/null || die "failed on the $who side: $*"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
declare -A T=()
log "load (COPY of $ROWS rows): single"
T[load_s]=$(timed single -c "\\copy docs FROM '$TMP/rows.tsv'")
log "load: citus"
T[load_c]=$(timed citus -c "\\copy docs FROM '$TMP/rows.tsv'")
rm -f "$TMP/rows.tsv"
log "primary key"
T[pk_s]=$(timed single -c "ALTER TABLE docs ADD PRIMARY KEY (id)")
T[pk_c]=$(timed citus -c "ALTER TABLE docs ADD PRIMARY KEY (id)")
log "simhash_add_bands"
T[bands_s]=$(timed single -c "SELECT count(*) FROM simhash_add_bands('docs', 'fp')")
T[bands_c]=$(timed citus -c "SELECT count(*) FROM simhash_add_bands('docs', 'fp')")
log "VACUUM ANALYZE"
T[vac_s]=$(timed single -c "VACUUM ANALYZE docs")
T[vac_c]=$(timed citus -c "VACUUM ANALYZE docs")
# The four band indexes, valid, on the single node and on every shard.
bands_sql="SELECT count(*) FROM pg_index WHERE indrelid = '%s'::regclass AND indisvalid AND indexprs IS NOT NULL"
# shellcheck disable=SC2059 # the format is ours
b_s=$(psql_single -c "$(printf "$bands_sql" docs)")
b_c=$(psql_citus -c "SELECT string_agg(DISTINCT result, ',') FROM run_command_on_shards('docs', \$\$$bands_sql\$\$)")
if [ "$b_s" != 4 ] || [ "$b_c" != 4 ]; then
    die "band indexes: $b_s on the single node, $b_c per shard; expected 4"
fi
n_s=$(psql_single -c "SELECT count(*) FROM docs")
n_c=$(psql_citus -c "SELECT count(*) FROM docs")
if [ "$n_s" != "$ROWS" ] || [ "$n_c" != "$ROWS" ]; then
    die "rows: single $n_s, citus $n_c, expected $ROWS"
fi
read -r heap_s idx_s <<<"$(psql_single -F ' ' -c "SELECT round(pg_table_size('docs') / 1e6), round(pg_indexes_size('docs') / 1e6)")"
read -r heap_c idx_c <<<"$(psql_citus -F ' ' -c "SELECT round(citus_table_size('docs') / 1e6), round((citus_total_relation_size('docs') - citus_table_size('docs')) / 1e6)")"

# ---------------------------------------------------------------- clients

# One psql session per system, fed through a pipe, \timing on.
open_client() { # open_client NAME HOST PORT DB
    local name=$1 w r
    mkfifo "$TMP/$name.in" "$TMP/$name.out"
    PGOPTIONS="-c client_min_messages=warning" \
        psql -X -q -At -v ON_ERROR_STOP=1 -h "$2" -p "$3" -d "$4" \
        <"$TMP/$name.in" >"$TMP/$name.out" 2>&1 &
    CPID[$name]=$!
    exec {w}>"$TMP/$name.in"
    exec {r}<"$TMP/$name.out"
    CW[$name]=$w CR[$name]=$r
    ask "$name" '\timing on'
}

# ask NAME SQL: sends SQL, sets ROWS_OUT (its output lines) and MS (psql's
# \timing of the last statement)
ask() {
    local name=$1 sql=$2 line
    # psql sends a statement at its semicolon
    case $sql in \\* | *\;) ;; *) sql+=";" ;; esac
    printf '%s\n\\echo __end__\n' "$sql" >&"${CW[$name]}"
    ROWS_OUT=() MS=
    while IFS= read -r -u "${CR[$name]}" line; do
        case $line in
            __end__) return 0 ;;
            'Time: '*) MS=${line#Time: } MS=${MS%% ms*} ;;
            *) ROWS_OUT+=("$line") ;;
        esac
    done
    die "the $name session ended on: $2
$(printf '%s\n' "${ROWS_OUT[@]}")"
}

# pct P VALUES...: percentile_cont(P) of the values
pct() {
    local p=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v p="$p" '{ v[NR] = $1 }
        END { pos = 1 + p * (NR - 1); lo = int(pos); x = v[lo]
              if (lo < NR) x += (pos - lo) * (v[lo + 1] - v[lo]); printf "%.3f", x }'
}

open_client single "$S_HOST" "$S_PORT" "$S_DB"
open_client citus "$C_HOST" "$C_PORT" "$C_DB"
ask citus "SET citus.enable_stat_counters = on"

mapfile -t QS < <(psql_single -c "SELECT q FROM queries ORDER BY qid")
# For the router case: an id per query, the first planted neighbour for the
# queries that have some.
IDS=()
for i in $(seq 0 $((NQ - 1))); do
    if [ "$i" -lt 100 ]; then
        IDS+=($((ROWS - 500 + i * 5 + 1)))
    else
        IDS+=($(((i * 7919) % (ROWS - 500) + 1)))
    fi
done

citus_conns() {
    ask citus "SELECT connection_establishment_succeeded FROM citus_stat_counters WHERE name = current_database()"
    printf '%s' "${ROWS_OUT[0]}"
}

declare -A REF=()      # the single node's ids per "label:query", sorted
declare -A P50P99=()   # the single node's "p50 p99" per label
RESULTS=()
# measure LABEL K TEMPLATE [SINGLE_TEMPLATE|-] [REF_KEY]: the NQ queries,
# interleaved; TEMPLATE is the Citus query (@Q@ the fingerprint, @K@ k,
# @ID@ the router id), SINGLE_TEMPLATE the single node's (default the same,
# '-' for none: then the answers are checked against REF_KEY's).
measure() {
    local label=$1 k=$2 tc=$3 ts=${4:-$3} refkey=${5:-} i sq cq s_ids c_ids order
    local -a s_ms=() c_ms=()
    local same=0 s_found=0 c_found=0 conn0 conn1
    log "measuring: $label"
    conn0=$(citus_conns)
    for i in "${!QS[@]}"; do
        cq=${tc//@Q@/${QS[$i]}} cq=${cq//@K@/$k} cq=${cq//@ID@/${IDS[$i]}}
        sq=${ts//@Q@/${QS[$i]}} sq=${sq//@K@/$k} sq=${sq//@ID@/${IDS[$i]}}
        order="single citus"
        [ $((i % 2)) = 0 ] || order="citus single"
        for who in $order; do
            if [ "$who" = single ]; then
                [ "$ts" != - ] || continue
                ask single "$sq"
                s_ms+=("$MS") s_found=$((s_found + ${#ROWS_OUT[@]}))
                s_ids=$(printf '%s\n' "${ROWS_OUT[@]}" | sort -n | tr '\n' ' ')
                [ -n "$refkey" ] || REF["$label:$i"]=$s_ids
            else
                ask citus "$cq"
                c_ms+=("$MS") c_found=$((c_found + ${#ROWS_OUT[@]}))
                c_ids=$(printf '%s\n' "${ROWS_OUT[@]}" | sort -n | tr '\n' ' ')
            fi
        done
        [ "$ts" != - ] || s_ids=${REF["$refkey:$i"]}
        [ "$s_ids" != "$c_ids" ] || same=$((same + 1))
    done
    conn1=$(citus_conns)
    local sp50=- sp99=- cp50 cp99 found=$c_found
    if [ "$ts" != - ]; then
        sp50=$(pct 0.5 "${s_ms[@]}") sp99=$(pct 0.99 "${s_ms[@]}")
        found="$s_found/$c_found"
    else
        # the reference's p50/p99, for the ratio
        read -r sp50 sp99 <<<"${P50P99[$refkey]}"
    fi
    cp50=$(pct 0.5 "${c_ms[@]}") cp99=$(pct 0.99 "${c_ms[@]}")
    P50P99[$label]="$sp50 $sp99"
    RESULTS+=("$(printf '%-30s %9s %9s %9s %9s %8s %8s %13s %7s %7s' "$label" \
        "$sp50" "$sp99" "$cp50" "$cp99" \
        "$(awk -v a="$cp50" -v b="$sp50" 'BEGIN { printf "%.1fx", a / (b > 0 ? b : 0.001) }')" \
        "$(awk -v a="$cp99" -v b="$sp99" 'BEGIN { printf "%.1fx", a / (b > 0 ? b : 0.001) }')" \
        "$found" "$same/$NQ" \
        "$(awk -v a="$conn0" -v b="$conn1" -v n="$NQ" 'BEGIN { printf "%.1f", (b - a) / n }')")")
    [ "$same" = "$NQ" ] || log "NOT EXACT: $label: $((NQ - same)) of $NQ queries differ between single and citus"
}

# ---------------------------------------------------------------- plans

q1=${QS[0]}
log "plans (k = 3, query 1)"
ask single "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '$q1'::simhash64 <= 3"
PLAN_S=$(printf '%s\n' "${ROWS_OUT[@]}" | head -n 8)
ask citus "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '$q1'::simhash64 <= 3"
PLAN_C=$(printf '%s\n' "${ROWS_OUT[@]}" | head -n 12)
printf '%s\n\n%s\n' "$PLAN_S" "$PLAN_C" >&2
uses_bands() { if grep -q 'Bitmap Index Scan on .*_band' <<<"$1"; then echo "band indexes (BitmapOr)"; else echo "NOT the band indexes"; fi; }
case "$PLAN_S$PLAN_C" in
    *"Bitmap Index Scan on docs_fp_band"*"Bitmap Index Scan on docs_fp_band"*) ;;
    *) die "a plan of k = 3 does not use the band indexes" ;;
esac
PLANS="plans of k = 3: single $(uses_bands "$PLAN_S"); citus: $(grep -m1 -o 'Task Count: [0-9]*' <<<"$PLAN_C"), the task shown $(uses_bands "$PLAN_C")"

# ---------------------------------------------------------------- queries

log "warm-up: the $NQ queries at k = 7 on both, unmeasured"
for q in "${QS[@]}"; do
    ask single "SELECT id FROM docs WHERE fp <~> '$q'::simhash64 <= 7"
    ask citus "SELECT id FROM docs WHERE fp <~> '$q'::simhash64 <= 7"
done

POINT="SELECT id FROM docs WHERE fp <~> '@Q@'::simhash64 <= @K@"
measure "k=3" 3 "$POINT"
measure "k=7" 7 "$POINT"
measure "router id=const, k=3" 3 "SELECT id FROM docs WHERE id = @ID@ AND fp <~> '@Q@'::simhash64 <= @K@"
measure "1-row table k=3, 32 shards" 3 "SELECT id FROM one32 WHERE fp <~> '@Q@'::simhash64 <= @K@" \
    "SELECT id FROM one WHERE fp <~> '@Q@'::simhash64 <= @K@"
measure "1-row table k=7, 32 shards" 7 "SELECT id FROM one32 WHERE fp <~> '@Q@'::simhash64 <= @K@" \
    "SELECT id FROM one WHERE fp <~> '@Q@'::simhash64 <= @K@"
measure "1-row table k=3, 2 shards" 3 "SELECT id FROM one2 WHERE fp <~> '@Q@'::simhash64 <= @K@" - "1-row table k=3, 32 shards"
measure "1-row table k=7, 2 shards" 7 "SELECT id FROM one2 WHERE fp <~> '@Q@'::simhash64 <= @K@" - "1-row table k=7, 32 shards"
measure "round trip: SELECT 1" 0 "SELECT 1"

ask citus "SET citus.max_adaptive_executor_pool_size = 1"
measure "k=3, pool=1" 3 "$POINT" - "k=3"
measure "k=7, pool=1" 7 "$POINT" - "k=7"
ask citus "RESET citus.max_adaptive_executor_pool_size"

# EXPLAIN ANALYZE of query 1 (planted neighbours) with every task shown:
# the shard queries' planning and execution summed over the tasks.
explain_tasks() { # explain_tasks K
    local i
    ask single "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id FROM docs WHERE fp <~> '$q1'::simhash64 <= $1"
    EX_S=$(printf '%s\n' "${ROWS_OUT[@]}" | awk '/^Planning Time:/ { p = $3 } /^Execution Time:/ { e = $3 }
        END { printf "planning %.2f ms, execution %.2f ms", p, e }')
    for i in 1 2 3; do   # the last of three
        ask citus "SET citus.explain_all_tasks = on; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id FROM docs WHERE fp <~> '$q1'::simhash64 <= $1; RESET citus.explain_all_tasks"
    done
    EX_C=$(printf '%s\n' "${ROWS_OUT[@]}" | awk '
        /^ +Planning Time:/ { tp += $3; if ($3 > tpm) tpm = $3 }
        /^ +Execution Time:/ { te += $3; n++; if ($3 > tem) tem = $3 }
        /^Planning Time:/ { cp = $3 } /^Execution Time:/ { ce = $3 }
        END { printf "coordinator planning %.2f ms, execution %.2f ms; %d tasks: planning %.2f ms in all (max %.2f), execution %.2f ms in all (max %.2f)", cp, ce, n, tp, tpm, te, tem }')
}
log "EXPLAIN ANALYZE, every task"
explain_tasks 3
EXPLAIN3="k=3  single: $EX_S
     citus:  $EX_C"
explain_tasks 7
EXPLAIN7="k=7  single: $EX_S
     citus:  $EX_C"

ask citus "SET citus.max_cached_conns_per_worker = 16"
measure "k=3, cached=16" 3 "$POINT" - "k=3"
measure "k=7, cached=16" 7 "$POINT" - "k=7"
ask citus "RESET citus.max_cached_conns_per_worker"

# ---------------------------------------------------------------- clustering

# simhash_clusters(docs, fp, K, 'id', false) for K in $CLUSTER_KS (default
# "3 7"), three ways on the same rows:
#   single       on the single node
#   gather       on the Citus coordinator, today's single-node path forced:
#                simhash_clusters_query('SELECT id, fp FROM docs', ...) reads
#                every row of every shard through the coordinator
#   distributed  simhash_clusters on the distributed table (0.5.0): the rows
#                go worker to worker into k + 1 buckets each, each worker
#                clusters its buckets, only links come back
# Each result is summed up as "rows clusters checksum" (the checksum: the
# sum of id * cluster over the rows), which must be the same three times.
# Seconds at the client, including that small aggregate.
CLUSTER_ROWS=()
cluster_run() { # cluster_run SYSTEM SQL: prints "seconds|summary"
    local who=$1 sql=$2 t0 t1 out
    t0=$(date +%s.%N)
    out=$("psql_$who" -c "SELECT count(*) || ' ' || count(DISTINCT cluster) || ' ' || sum(id::numeric * cluster) FROM ($sql) c") \
        || die "clustering failed on the $who side: $sql"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v o="$out" 'BEGIN { printf "%.2f|%s", b - a, o }'
}
cluster_compare() {
    local k single gather dist
    CLUSTER_ROWS+=("clustering, simhash_clusters(docs, fp, k, 'id', false), s at the client; summary = rows, clusters, checksum")
    CLUSTER_ROWS+=("$(printf '%-6s %10s %10s %12s %14s %16s  %s' k single gather distributed "dist/gather" "dist/single" "same answer")")
    for k in ${CLUSTER_KS:-3 7}; do
        log "clustering, k = $k: single node"
        single=$(cluster_run single "SELECT * FROM simhash_clusters('docs', 'fp', $k, 'id', false)")
        log "clustering, k = $k: Citus, gathered through the coordinator"
        gather=$(cluster_run citus "SELECT * FROM simhash_clusters_query('SELECT id, fp FROM docs', $k, false)")
        log "clustering, k = $k: Citus, on the workers"
        dist=$(cluster_run citus "SELECT * FROM simhash_clusters('docs', 'fp', $k, 'id', false)")
        local same="yes (${single#*|})"
        if [ "${single#*|}" != "${gather#*|}" ] || [ "${single#*|}" != "${dist#*|}" ]; then
            same="NO: single ${single#*|}, gather ${gather#*|}, distributed ${dist#*|}"
        fi
        CLUSTER_ROWS+=("$(printf '%-6s %10s %10s %12s %14s %16s  %s' "$k" "${single%%|*}" "${gather%%|*}" "${dist%%|*}" \
            "$(ratio "${gather%%|*}" "${dist%%|*}")" "$(ratio "${single%%|*}" "${dist%%|*}")" "$same")")
        [[ $same == yes* ]] || die "the three clusterings differ at k = $k: $same"
    done
}
# ---------------------------------------------------------------- summary

ratio() { awk -v a="$2" -v b="$1" 'BEGIN { printf "%.1fx", a / (b > 0 ? b : 0.001) }'; }
cluster_compare
wall=$((SECONDS - started))
mkdir -p "$ROOT/target"
{
    echo
    echo "== simhash: one node vs Citus $CITUS_VERSION (coordinator + 2 workers, $SHARDS shards), $ROWS rows ($REAL_ROWS of real text), PostgreSQL $PG_VERSION_FULL, simhash $EXT_S (single) / $EXT_C (citus), $(nproc) cores =="
    printf '%-30s %9s %9s %9s\n' "build (s)" single citus citus/single
    printf '%-30s %9s %9s %9s\n' "load: \\copy of the rows" "${T[load_s]}" "${T[load_c]}" "$(ratio "${T[load_s]}" "${T[load_c]}")"
    printf '%-30s %9s %9s %9s\n' "primary key" "${T[pk_s]}" "${T[pk_c]}" "$(ratio "${T[pk_s]}" "${T[pk_c]}")"
    printf '%-30s %9s %9s %9s\n' "simhash_add_bands" "${T[bands_s]}" "${T[bands_c]}" "$(ratio "${T[bands_s]}" "${T[bands_c]}")"
    printf '%-30s %9s %9s %9s\n' "VACUUM ANALYZE" "${T[vac_s]}" "${T[vac_c]}" "$(ratio "${T[vac_s]}" "${T[vac_c]}")"
    printf '%-30s %9s %9s\n' "heap MB" "$heap_s" "$heap_c"
    printf '%-30s %9s %9s\n' "indexes MB (pkey + 4 bands)" "$idx_s" "$idx_c"
    echo
    echo "latency at the client, ms, $NQ queries each (1..100 with planted neighbours); ratio = citus/single"
    printf '%-30s %9s %9s %9s %9s %8s %8s %13s %7s %7s\n' query single50 single99 citus50 citus99 "ratio50" "ratio99" "rows s/c" exact conn/q
    printf '%s\n' "${RESULTS[@]}"
    echo "(single columns of the 2-shard, pool=1 and cached=16 rows: the reference run above them; their exact column is against that run's answers)"
    echo "(conn/q: connections to the workers the coordinator opened per query, from citus_stat_counters)"
    echo
    echo "EXPLAIN ANALYZE of query 1 (the third run; citus.explain_all_tasks = on):"
    echo "$EXPLAIN3"
    echo "$EXPLAIN7"
    echo
    echo "$PLANS"
    printf '%s\n' "${CLUSTER_ROWS[@]}"
    echo "wall time: ${wall} s; load average before the run (other work on the machine): $LOAD_BEFORE"
} | tee "$ROOT/target/bench-citus-$ROWS.txt"
