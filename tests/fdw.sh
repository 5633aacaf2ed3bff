#!/usr/bin/env bash
# Scale-out with postgres_fdw. A "front" server holds `docs`, a table
# partitioned by hash whose two partitions are foreign tables on two
# "remote" servers; each remote holds its share in `docs_part` with the
# band indexes. Checks that
#   - a distance condition is shipped to the remotes (EXPLAIN VERBOSE's
#     Remote SQL, no local Filter), for literals, custom and generic plans
#     and LATERAL batches;
#   - the remotes answer it with their band indexes (EXPLAIN DECLARE of the
#     Remote SQL on the remote, and the remotes' idx_scan / seq_scan counts);
#   - every answer through the foreign partitions is exactly a brute-force
#     scan's, for k = 0..11, in every form of the condition, and
#     simhash_clusters gives the same clusters as on a local copy;
# and records what simhash_add_bands does on the partitioned table.
#
# Self-contained: three throwaway servers of $SIMHASH_PG (default 15) in
# /tmp/simhash-fdw-pg<version>/ (SIMHASH_FDW_DIR), Unix sockets only, ports
# 55440-55442 (SIMHASH_FDW_PORT moves them), removed at exit
# (SIMHASH_FDW_KEEP=1 keeps them running for a look). Needs the extension
# installed into that server (scripts/install.sh) and postgres_fdw; a
# server without postgres_fdw (the PyPI wheel's 16 and 18 have no contrib
# modules) skips the test. Findings: docs/postgres_fdw.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$(dirname "$0")/../scripts/common.sh"
require_pg
START=$(date +%s)

FDW_DIR=${SIMHASH_FDW_DIR:-/tmp/simhash-fdw-pg$PG_MAJOR}
PORT=${SIMHASH_FDW_PORT:-55440}
ROWS=${SIMHASH_FDW_ROWS:-200000}
DB=simhash_fdw
RUN=$FDW_DIR/run
NODES=(front remote1 remote2)
REMOTES=(remote1 remote2)
BANDS=(docs_part_fp_band0 docs_part_fp_band1 docs_part_fp_band2 docs_part_fp_band3)

# What simhash_add_bands('docs', 'fp') on the front (a partitioned table
# whose partitions are all foreign tables) is expected to do; see
# check_add_bands_on_foreign_partitions.
ADD_BANDS_EXPECT=${SIMHASH_FDW_ADD_BANDS_EXPECT:-refuse}
ADD_BANDS_SQLSTATE=${SIMHASH_FDW_ADD_BANDS_SQLSTATE:-42809}

SHAREDIR=$("$PG_CONFIG" --sharedir)
if [ ! -f "$SHAREDIR/extension/postgres_fdw.control" ]; then
    echo "postgres_fdw: skipped: PostgreSQL $PG_MAJOR ($PG_BIN) has no postgres_fdw" \
         "($SHAREDIR/extension/postgres_fdw.control is missing; the PyPI wheel's servers ship no contrib modules)." \
         "To run this test, use a server with contrib, e.g. PGDG's postgresql-$PG_MAJOR."
    exit 0
fi
[ -f "$SHAREDIR/extension/simhash.control" ] \
    || die "simhash is not installed into PostgreSQL $PG_MAJOR: run SIMHASH_PG=$PG_MAJOR scripts/install.sh"

port_of() {
    case $1 in
        front) echo "$PORT" ;;
        remote1) echo $((PORT + 1)) ;;
        remote2) echo $((PORT + 2)) ;;
        *) die "no node $1" ;;
    esac
}

stop_all() {
    local n
    for n in "${NODES[@]}"; do
        if [ -f "$FDW_DIR/$n/postmaster.pid" ]; then
            as_server "$PG_BIN/pg_ctl" -D "$FDW_DIR/$n" -m immediate -w stop >/dev/null 2>&1 || true
        fi
    done
}
cleanup() {
    if [ -n "${SIMHASH_FDW_KEEP:-}" ]; then
        log "SIMHASH_FDW_KEEP: servers left running, sockets in $RUN (ports $PORT-$((PORT + 2)), database $DB)"
        return
    fi
    stop_all
    rm -rf "$FDW_DIR" 2>/dev/null || $SUDO rm -rf "$FDW_DIR"
}

CHECKS=0
fail() { die "postgres_fdw test: $*"; }
pass() { CHECKS=$((CHECKS + 1)); printf 'ok %d - %s\n' "$CHECKS" "$*"; }
note() { printf 'note: %s\n' "$*"; }

# q NODE [psql arguments]: psql on NODE's database, unaligned, stop on error.
q() {
    local node=$1
    shift
    "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$RUN" -p "$(port_of "$node")" -U "$SERVER_USER" -d "$DB" "$@"
}

# same WHAT WANT GOT: passes when the texts are equal, else shows a diff.
same() {
    local what=$1 want=$2 got=$3
    if [ "$want" != "$got" ]; then
        diff -u --label "expected (brute force / local)" --label "got" \
            <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -n 40 >&2 || true
        fail "$what: the answers differ (diff above, - expected, + got)"
    fi
    pass "$what"
}

# has WHAT TEXT PATTERN...: every grep -E pattern occurs in TEXT.
has() {
    local what=$1 text=$2 p
    shift 2
    for p in "$@"; do
        grep -Eq -- "$p" <<<"$text" || { printf '%s\n' "$text" >&2; fail "$what: no /$p/ in the text above"; }
    done
}
lacks() {
    local what=$1 text=$2 p
    shift 2
    for p in "$@"; do
        ! grep -Eq -- "$p" <<<"$text" || { printf '%s\n' "$text" >&2; fail "$what: /$p/ in the text above"; }
    done
}

# ---------------------------------------------------------------------------
# The servers.

# One initdb, copied for each node (cheaper than three on a busy machine).
new_template() {
    as_server "$PG_BIN/initdb" --no-sync -D "$FDW_DIR/template" -E UTF8 --locale=C -U "$SERVER_USER" --auth=trust >/dev/null
    as_server tee -a "$FDW_DIR/template/postgresql.conf" >/dev/null <<CONF
# added by tests/fdw.sh
listen_addresses = ''
unix_socket_directories = '$RUN'
shared_preload_libraries = 'simhash'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
wal_level = minimal
max_wal_senders = 0
min_wal_size = 32MB
max_wal_size = 1GB
autovacuum = off
logging_collector = off
CONF
}
new_node() {
    local node=$1 dir=$FDW_DIR/$1
    as_server cp -a "$FDW_DIR/template" "$dir"
    echo "port = $(port_of "$node")" | as_server tee -a "$dir/postgresql.conf" >/dev/null
    as_server "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { tail -n 30 "$dir/server.log" >&2; fail "the $node server did not start"; }
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN" -p "$(port_of "$node")" -U "$SERVER_USER" -d postgres \
        -c "CREATE DATABASE $DB"
}

stop_all
rm -rf "$FDW_DIR"
mkdir -p "$RUN"
[ "$SERVER_USER" = "$(id -un)" ] || chown -R "$SERVER_USER" "$FDW_DIR"
chmod 755 "$FDW_DIR"
trap cleanup EXIT
log "PostgreSQL $PG_MAJOR ($PG_BIN): a front and two remote servers in $FDW_DIR"
new_template
pids=()
for n in "${NODES[@]}"; do
    new_node "$n" >"$FDW_DIR/$n.setup.log" 2>&1 &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { cat "$FDW_DIR/${NODES[$i]}.setup.log" >&2; fail "setting up ${NODES[$i]} failed"; }
done
rm -rf "$FDW_DIR/template"

for r in "${REMOTES[@]}"; do
    q "$r" <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE docs_part (id bigint PRIMARY KEY, fp simhash64);
SQL
done

# Three ways to reach the remotes:
#   docs        the extension declared (without it nothing is shipped), big
#               fetches, and cursor_tuple_fraction = 1 in the remote
#               sessions (see "k = 8..11" below);
#   docs_plain  postgres_fdw's defaults: the extension not declared;
#   docs_est    the extension declared and use_remote_estimate (which
#               LATERAL batches need, see below), other options default.
servers_sql() {
    local suffix=$1 options=$2 r
    for r in "${REMOTES[@]}"; do
        cat <<SQL
CREATE SERVER ${r}$suffix FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$RUN', port '$(port_of "$r")', dbname '$DB'$options);
CREATE USER MAPPING FOR CURRENT_USER SERVER ${r}$suffix OPTIONS (user '$SERVER_USER');
SQL
    done
    cat <<SQL
CREATE TABLE docs$suffix (id bigint, fp simhash64) PARTITION BY HASH (id);
CREATE FOREIGN TABLE docs${suffix}_on_remote1 PARTITION OF docs$suffix
    FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER remote1$suffix OPTIONS (table_name 'docs_part');
CREATE FOREIGN TABLE docs${suffix}_on_remote2 PARTITION OF docs$suffix
    FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER remote2$suffix OPTIONS (table_name 'docs_part');
SQL
}

log "loading $ROWS random fingerprints and planted neighbours"
q front <<SQL
CREATE EXTENSION postgres_fdw;
CREATE EXTENSION simhash;
$(servers_sql "" ", extensions 'simhash', batch_size '1000', fetch_size '10000', options '-c cursor_tuple_fraction=1'")
$(servers_sql _plain "")
$(servers_sql _est ", extensions 'simhash', use_remote_estimate 'true'")

-- The query fingerprints.
CREATE TABLE queries (qid int PRIMARY KEY, fp simhash64 NOT NULL);
INSERT INTO queries SELECT g, hashint8extended(g, 99)::simhash64 FROM generate_series(1, 6) g;

-- The oracle: the same rows in a local table.
BEGIN;
CREATE TABLE docs_local (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO docs_local SELECT g, hashint8extended(g, 42)::simhash64 FROM generate_series(1, $ROWS) g;
-- For queries 1..5, two rows at each distance 0..12: the differing bits
-- spread over all four bands (v = 0), or packed into one band (v = 1).
INSERT INTO docs_local
SELECT $ROWS + q.qid * 100 + d * 2 + v,
       (q.fp::bigint # (SELECT coalesce(bit_or(1::bigint << CASE v WHEN 0 THEN (q.qid * 7 + i * 23) % 64
                                                              ELSE (q.qid % 4) * 16 + (q.qid + i * 5) % 16 END), 0)
                        FROM generate_series(0, d - 1) i))::simhash64
FROM queries q, generate_series(0, 12) d, generate_series(0, 1) v
WHERE q.qid <= 5;
INSERT INTO docs_local SELECT $ROWS + 900 + g, NULL FROM generate_series(1, 3) g;
COMMIT;
SELECT count(*) FROM simhash_add_bands('docs_local', 'fp') \g /dev/null

-- The foreign partitions get their rows through the front.
INSERT INTO docs SELECT id, fp FROM docs_local;
SQL
for r in "${REMOTES[@]}"; do
    q "$r" -c "SELECT count(*) FROM simhash_add_bands('docs_part', 'fp')" -c "ANALYZE docs_part" >/dev/null
done
q front -c "ANALYZE docs_local" -c "ANALYZE queries" -c "ANALYZE docs"

total=$(q front -c "SELECT count(*) FROM docs_local")
shares=$(for r in "${REMOTES[@]}"; do q "$r" -c "SELECT count(*) FROM docs_part"; done)
if [ "$(awk '{ s += $1 } END { print s }' <<<"$shares")" != "$total" ] || grep -qx 0 <<<"$shares"; then
    fail "the remotes hold $(paste -sd' ' <<<"$shares") rows, not $total between them"
fi
pass "the rows ($total) are split between the remotes ($(paste -sd' ' <<<"$shares"))"
same "docs through the foreign partitions holds exactly docs_local's rows" \
    "0 0" "$(q front -c "SELECT (SELECT count(*) FROM (TABLE docs EXCEPT ALL TABLE docs_local) a) || ' ' ||
                               (SELECT count(*) FROM (TABLE docs_local EXCEPT ALL TABLE docs) b)")"

QUERIES=$(q front -F ' ' -c "SELECT qid, fp FROM queries ORDER BY qid")
Q1=$(awk 'NR == 1 { print $2 }' <<<"$QUERIES")

# ---------------------------------------------------------------------------
# Shipping: EXPLAIN (VERBOSE) on the front.

# remote_sql PLAN: "node sql" for each foreign scan in PLAN (the partition
# docs..._on_remoteN is on remoteN).
remote_sql() {
    awk '/Foreign Scan on / { match($0, /_on_remote[0-9]+/); node = substr($0, RSTART + 4, RLENGTH - 4) }
         /Remote SQL: / { sub(/^.*Remote SQL: /, ""); print node " " $0 }' <<<"$1"
}

# shipped WHAT PLAN PATTERN...: both foreign partitions are scanned, each
# with a Remote SQL matching every pattern, and nothing is filtered on the
# front.
shipped() {
    local what=$1 plan=$2 sqls p
    shift 2
    sqls=$(remote_sql "$plan")
    [ "$(cut -d' ' -f1 <<<"$sqls" | sort | paste -sd' ')" = "remote1 remote2" ] \
        || { printf '%s\n' "$plan" >&2; fail "$what: not one foreign scan on each remote"; }
    for p in "$@"; do
        [ "$(grep -Ec -- "$p" <<<"$sqls")" = 2 ] \
            || { printf '%s\n' "$plan" >&2; fail "$what: /$p/ is not in the Remote SQL of both partitions"; }
    done
    lacks "$what" "$plan" 'Filter: '
    pass "$what"
}

literal3="SELECT id FROM docs WHERE fp <~> '$Q1'::simhash64 <= 3"
plan3=$(q front -c "EXPLAIN (VERBOSE) $literal3")
shipped "literal k = 3: the condition is in both partitions' Remote SQL, no local Filter" "$plan3" \
    "WHERE \(\(public\.hamming\(fp, '$Q1'::public\.simhash64\) <= 3\)\)" \
    "public\.simhash_band\(fp, 0\) = [0-9]+\) OR .*public\.simhash_band\(fp, 3\) = [0-9]+\)"
literal7="SELECT id FROM docs WHERE fp <~> '$Q1'::simhash64 <= 7"
plan7=$(q front -c "EXPLAIN (VERBOSE) $literal7")
shipped "literal k = 7: the distance and the band neighbour lists are shipped" "$plan7" \
    "public\.hamming\(fp, '$Q1'::public\.simhash64\) <= 7" \
    "public\.simhash_band\(fp, 0\) = ANY \('\{[0-9,]+\}'::integer\[\]\)"
literal11="SELECT id FROM docs WHERE fp <~> '$Q1'::simhash64 <= 11"
plan11=$(q front -c "EXPLAIN (VERBOSE) $literal11")
shipped "literal k = 11: shipped" "$plan11" "public\.hamming\(fp, '$Q1'::public\.simhash64\) <= 11" \
    "public\.simhash_band\(fp, 3\) = ANY"
for cond in "hamming(fp, '$Q1') < 4" "3 >= '$Q1' <~> fp" "fp <~> '$Q1' = 3" "fp <~> '$Q1' BETWEEN 0 AND 3"; do
    shipped "literal '$cond': shipped" "$(q front -c "EXPLAIN (VERBOSE) SELECT id FROM docs WHERE $cond")" \
        "public\.hamming\(fp, '$Q1'::public\.simhash64\) <= 3" "public\.simhash_band\(fp, 0\) = [0-9]+\)"
done
note "Remote SQL of literal k = 3: $(remote_sql "$plan3" | head -n 1 | cut -d' ' -f2-)"

prepare="PREPARE near(simhash64, int) AS SELECT id FROM docs WHERE fp <~> \$1 <= \$2;"
custom=$(q front -c "$prepare" -c "SET plan_cache_mode = force_custom_plan" \
                 -c "EXPLAIN (VERBOSE) EXECUTE near('$Q1', 5)")
shipped "PREPARE (\$1 simhash64, \$2 int), custom plan: shipped with the values in" "$custom" \
    "public\.hamming\(fp, '$Q1'::public\.simhash64\) <= 5" "public\.simhash_band\(fp, 0\) = ANY \('\{"
generic=$(q front -c "$prepare" -c "SET plan_cache_mode = force_generic_plan" \
                  -c "EXPLAIN (VERBOSE) EXECUTE near('$Q1', 5)")
# shellcheck disable=SC2016 # $1 and $2 are the remote parameters, literally
shipped "PREPARE, force_generic_plan: shipped with \$1 and \$2 as remote parameters" "$generic" \
    'public\.hamming\(fp, \$1::public\.simhash64\) <= \$2::integer' \
    'public\.simhash_band\(fp, 0\) = ANY \(public\.simhash_band_neighbors\(\$1::public\.simhash64, 0, \$2::integer\)\)'
note "Remote SQL of the generic plan: $(remote_sql "$generic" | head -n 1 | cut -d' ' -f2-)"

lateral() { # TABLE [OFFSET 0]
    echo "SELECT q.qid, d.id FROM queries q CROSS JOIN LATERAL (SELECT id FROM $1 WHERE fp <~> q.fp <= 3 ${2:-}) d"
}
# postgres_fdw builds parameterized scans for a join clause only with
# use_remote_estimate; a sub-select it cannot pull up (OFFSET 0) keeps the
# outer column a parameter of the scan itself.
# shellcheck disable=SC2016 # $1 and $2 are the remote parameters, literally
shipped "LATERAL batch, sub-select with OFFSET 0: shipped, q.fp as a remote parameter" \
    "$(q front -c "EXPLAIN (VERBOSE) $(lateral docs 'OFFSET 0')")" \
    'public\.hamming\(fp, \$1::public\.simhash64\) <= 3' \
    'public\.simhash_band\(fp, 0\) = public\.simhash_band\(\$1::public\.simhash64, 0\)'
# shellcheck disable=SC2016 # $1 and $2 are the remote parameters, literally
shipped "LATERAL batch over servers with use_remote_estimate: shipped, q.fp as a remote parameter" \
    "$(q front -c "EXPLAIN (VERBOSE) $(lateral docs_est)")" \
    'public\.hamming\(fp, \$1::public\.simhash64\) <= 3'
plain_lateral=$(q front -c "EXPLAIN (VERBOSE) $(lateral docs)")
if grep -q 'Join Filter: .*hamming' <<<"$plain_lateral"; then
    note "LATERAL batch with default server options: not shipped; each remote sends its whole table" \
         "($(remote_sql "$plain_lateral" | head -n 1 | cut -d' ' -f2-)) and the front joins with" \
         "'Join Filter: ((hamming(docs.fp, q.fp) <= 3) AND (band conditions))'"
else
    note "LATERAL batch with default server options: $(remote_sql "$plain_lateral" | head -n 1)"
fi

noext=$(q front -c "EXPLAIN (VERBOSE) SELECT id FROM docs_plain WHERE fp <~> '$Q1'::simhash64 <= 3")
has "without extensions 'simhash'" "$noext" "Remote SQL: SELECT id, fp FROM public\.docs_part$" "Filter: \(\(hamming\(docs_plain"
pass "without the server option extensions 'simhash' nothing is shipped (whole table fetched, Filter on the front)"

# ---------------------------------------------------------------------------
# The remotes use the band indexes.

# remote_plan NODE SQL [SETTING]: the remote's plan for SQL run the way
# postgres_fdw runs it (a cursor, search_path = pg_catalog).
remote_plan() {
    q "$1" -c "SET search_path = pg_catalog" ${3:+-c "SET $3"} -c "EXPLAIN DECLARE c1 CURSOR FOR $2"
}
uses_bands() {
    local what=$1 plan=$2 b
    for b in "${BANDS[@]}"; do
        has "$what" "$plan" "Bitmap Index Scan on $b\b"
    done
    lacks "$what" "$plan" "Seq Scan"
}
for k in 3 7; do
    plan_var=plan$k
    while read -r node sql; do
        uses_bands "remote plan of k = $k on $node" "$(remote_plan "$node" "$sql")"
    done < <(remote_sql "${!plan_var}")
    pass "k = $k: on each remote, the Remote SQL as a cursor is a BitmapOr of the four band index scans"
done

# The remotes' own counts: run a query on the front in a session of its
# own; when it ends, the remote sessions end and report their scans.
wait_idle() {
    local node=$1 i
    for i in $(seq 1 100); do
        [ "$(q "$node" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] \
            && return
        sleep 0.1
    done
    fail "$node: the front's sessions did not go away"
}
scans() { # NODE: "seq_scan band_idx_scans" of docs_part
    q "$1" -c "SELECT t.seq_scan || ' ' || (SELECT coalesce(sum(i.idx_scan), 0) FROM pg_stat_user_indexes i
                                            WHERE i.relid = t.relid AND i.indexrelname LIKE 'docs\_part\_fp\_band_')
               FROM pg_stat_user_tables t WHERE t.relname = 'docs_part'"
}
# remote_scans SQL...: runs the statements in one front session; prints
# "node seq_scans band_index_scans" for what each remote did.
remote_scans() {
    local r before=() i=0 s args=() seq0 idx0 seq1 idx1
    for r in "${REMOTES[@]}"; do wait_idle "$r"; before+=("$(scans "$r")"); done
    for s in "$@"; do args+=(-c "$s"); done
    q front "${args[@]}" >/dev/null
    for r in "${REMOTES[@]}"; do
        wait_idle "$r"
        read -r seq0 idx0 <<<"${before[$i]}"
        read -r seq1 idx1 <<<"$(scans "$r")"
        echo "$r $((seq1 - seq0)) $((idx1 - idx0))"
        i=$((i + 1))
    done
}
index_only() { # WHAT SQL...
    local what=$1 out
    shift
    out=$(remote_scans "$@")
    awk '$2 != 0 || $3 == 0 { bad = 1 } END { exit bad }' <<<"$out" \
        || fail "$what: the remotes did not answer with the band indexes alone (node, seq scans, band index scans): $(paste -sd';' <<<"$out")"
    pass "$what (band index scans $(awk '{ printf "%s%s %s", sep, $1, $3; sep = ", " }' <<<"$out"); no seq scan)"
}
# Through docs_est, whose remote sessions have the default settings.
index_only "literal k = 3 through docs_est, executed: each remote scanned only the band indexes" \
    "${literal3/FROM docs /FROM docs_est }"
index_only "literal k = 7 through docs_est, executed: band indexes only" "${literal7/FROM docs /FROM docs_est }"
index_only "generic plan (k = 5) through docs_est, executed: band indexes only" \
    "${prepare/FROM docs /FROM docs_est }" "SET plan_cache_mode = force_generic_plan" "EXECUTE near('$Q1', 5)"
index_only "LATERAL batch with OFFSET 0 through docs_est, executed: band indexes only" "$(lateral docs_est 'OFFSET 0')"
index_only "LATERAL batch with use_remote_estimate (docs_est), executed: band indexes only" "$(lateral docs_est)"

# k = 8..11 probes 137 values per band: at this size (about 100k rows per
# remote) a cursor, planned for its first 10% (cursor_tuple_fraction
# 0.1, the default), is cheaper as a Seq Scan. Record what the remotes do
# with the default (docs_est's servers), and check that
# cursor_tuple_fraction = 1 (docs's servers: options '-c ...') brings the
# band indexes back.
sql11=$(remote_sql "$plan11" | awk '$1 == "remote1" { $1 = ""; print substr($0, 2) }')
note "literal k = 11, remote1's plan for the cursor with the default cursor_tuple_fraction: $(remote_plan remote1 "$sql11" | head -n 1)"
note "literal k = 11 through docs_est (default cursor_tuple_fraction), executed (node, seq scans, band index scans): $(remote_scans "${literal11/FROM docs /FROM docs_est }" | paste -sd';')"
uses_bands "k = 11 with cursor_tuple_fraction = 1" "$(remote_plan remote1 "$sql11" "cursor_tuple_fraction = 1")"
index_only "literal k = 11 through docs (servers' options '-c cursor_tuple_fraction=1'), executed: band indexes only" "$literal11"

# ---------------------------------------------------------------------------
# Exactness: every answer equals a brute-force scan of docs_local.

log "comparing answers with a brute-force scan, k = 0..11"
# The oracle: distances computed in the select list of a sub-select the
# planner cannot flatten, so no distance condition exists to rewrite, and
# no index may be used.
q front <<'SQL'
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
CREATE TABLE brute AS
SELECT qid, id, dist FROM (SELECT q.qid, d.id, hamming(d.fp, q.fp) AS dist
                           FROM queries q CROSS JOIN docs_local d OFFSET 0) s
WHERE dist <= 12;
SQL
brute_plan=$(q front -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" -c "SET enable_indexonlyscan = off" \
                     -c "EXPLAIN SELECT q.qid, d.id, hamming(d.fp, q.fp) FROM queries q CROSS JOIN docs_local d")
has "the brute-force plan" "$brute_plan" "Seq Scan on docs_local"
lacks "the brute-force plan" "$brute_plan" "Index"
want_le=$(q front -c "SELECT format('q%s k%s: %s', q.qid, k, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM brute b
                                                                     WHERE b.qid = q.qid AND b.dist <= k), ''))
                      FROM queries q CROSS JOIN generate_series(0, 11) k ORDER BY q.qid, k")
want_eq=$(q front -c "SELECT format('q%s k%s: %s', q.qid, k, coalesce((SELECT string_agg(id::text, ',' ORDER BY id) FROM brute b
                                                                     WHERE b.qid = q.qid AND b.dist = k), ''))
                      FROM queries q CROSS JOIN generate_series(0, 11) k ORDER BY q.qid, k")
# Sanity of the oracle: planted rows at every distance, ties at each k.
[ "$(grep -Ec '^q[1-5] k[0-9]+: [0-9]' <<<"$want_eq")" = 60 ] \
    || fail "the planted neighbours are not where they should be: $want_eq"
pass "oracle: $(q front -c "SELECT count(*) FROM brute WHERE dist <= 11") (query, row) pairs within 11, rows at every distance 0..11 of 5 queries"

# literal_sql TABLE FORM: one statement per (query, k) printing "qQID kK: ids".
literal_sql() {
    local table=$1 form=$2 qid hex k cond
    while read -r qid hex; do
        for k in $(seq 0 11); do
            case $form in
                le) cond="fp <~> '$hex'::simhash64 <= $k" ;;
                lt) cond="fp <~> '$hex'::simhash64 < $((k + 1))" ;;
                ge) cond="$k >= '$hex'::simhash64 <~> fp" ;;
                hamming) cond="hamming(fp, '$hex') <= $k" ;;
                between) cond="fp <~> '$hex' BETWEEN 0 AND $k" ;;
                eq) cond="fp <~> '$hex'::simhash64 = $k" ;;
            esac
            printf "SELECT format('q%%s k%%s: %%s', %s, %s, coalesce(string_agg(id::text, ',' ORDER BY id), '')) FROM %s WHERE %s;\n" \
                "$qid" "$k" "$table" "$cond"
        done
    done <<<"$QUERIES"
}
for form in le lt ge hamming between eq; do
    want=$want_le
    [ "$form" != eq ] || want=$want_eq
    case $form in
        le) text="fp <~> q <= k" ;; lt) text="fp <~> q < k + 1" ;; ge) text="k >= q <~> fp" ;;
        hamming) text="hamming(fp, q) <= k" ;; between) text="fp <~> q BETWEEN 0 AND k" ;; eq) text="fp <~> q = k" ;;
    esac
    same "literal '$text', docs_local (band indexes) = brute force" "$want" "$(literal_sql docs_local "$form" | q front)"
    same "literal '$text', docs (foreign partitions) = brute force" "$want" "$(literal_sql docs "$form" | q front)"
done
same "literal 'fp <~> q <= k', docs_est (default cursor_tuple_fraction: Seq Scans for k >= 8) = brute force" \
    "$want_le" "$(literal_sql docs_est le | q front)"

# prepared_sql MODE FORM: the same through PREPARE (\$1 simhash64, \$2 int).
prepared_sql() {
    local mode=$1 form=$2 qid hex k cond
    case $form in
        le) cond="fp <~> \$1 <= \$2" ;;
        eq) cond="fp <~> \$1 = \$2" ;;
    esac
    echo "SET plan_cache_mode = $mode;"
    echo "PREPARE p(simhash64, int, int) AS SELECT format('q%s k%s: %s', \$3, \$2, coalesce(string_agg(id::text, ',' ORDER BY id), '')) FROM docs WHERE $cond;"
    while read -r qid hex; do
        for k in $(seq 0 11); do echo "EXECUTE p('$hex', $k, $qid);"; done
    done <<<"$QUERIES"
}
same "PREPARE fp <~> \$1 <= \$2, custom plans, docs = brute force" "$want_le" "$(prepared_sql force_custom_plan le | q front)"
same "PREPARE fp <~> \$1 <= \$2, generic plan, docs = brute force" "$want_le" "$(prepared_sql force_generic_plan le | q front)"
same "PREPARE fp <~> \$1 = \$2, generic plan, docs = brute force" "$want_eq" "$(prepared_sql force_generic_plan eq | q front)"
same "PREPARE fp <~> \$1 <= \$2, plan_cache_mode = auto, docs = brute force" "$want_le" \
    "$( (prepared_sql auto le; echo "SELECT 'plans ' || generic_plans || ' ' || custom_plans FROM pg_prepared_statements WHERE name = 'p';") \
        | q front | tee "$FDW_DIR/auto.out" | grep -v '^plans ')"
note "plan_cache_mode = auto over $(grep -c . <<<"$want_le") executions: $(grep '^plans ' "$FDW_DIR/auto.out" | awk '{ print $2 " generic, " $3 " custom plans" }')"

# LATERAL batches: k = 3, and every k from a column (a run-time radius).
want_batch=$(q front -F ' ' -c "SELECT qid, id FROM brute WHERE dist <= 3 ORDER BY qid, id")
batch_all() { # TABLE [OFFSET 0]
    echo "SELECT format('q%s k%s: %s', q.qid, k, coalesce(string_agg(d.id::text, ',' ORDER BY d.id), ''))
          FROM queries q CROSS JOIN generate_series(0, 11) k
          LEFT JOIN LATERAL (SELECT id FROM $1 WHERE fp <~> q.fp <= k ${2:-}) d ON true
          GROUP BY q.qid, k ORDER BY q.qid, k"
}
for variant in "docs_local" "docs" "docs OFFSET 0" "docs_est"; do
    # shellcheck disable=SC2086
    set -- $variant
    same "LATERAL batch k = 3 over $variant = brute force" "$want_batch" \
        "$(q front -F ' ' -c "$(lateral "$1" "${2:+OFFSET 0}") ORDER BY 1, 2")"
    # Every k from a column: over docs_local, and through the remote
    # parameters of the OFFSET 0 form. (Over docs the whole table comes
    # back and is joined on the front, the join docs_local checks; docs_est
    # runs the same remote statements as OFFSET 0.)
    [ "$variant" = docs_local ] || [ "$variant" = "docs OFFSET 0" ] || continue
    same "LATERAL batch k = 0..11 (k a column) over $variant = brute force" "$want_le" \
        "$(q front -c "$(batch_all "$1" "${2:+OFFSET 0}")")"
done

# ---------------------------------------------------------------------------
# Clustering through the foreign partitions.

log "simhash_clusters over the foreign partitions"
for args in "3" "7, 'id', false"; do
    got=$(q front <<SQL
SET client_min_messages = warning;
CREATE TEMP TABLE c_fdw AS SELECT * FROM simhash_clusters('docs', 'fp', $args);
CREATE TEMP TABLE c_local AS SELECT * FROM simhash_clusters('docs_local', 'fp', $args);
SELECT (SELECT count(*) FROM c_fdw) || ' rows, ' || (SELECT count(*) FROM c_fdw WHERE id <> cluster) || ' in clusters, differences '
       || (SELECT count(*) FROM (TABLE c_fdw EXCEPT ALL TABLE c_local) a) || ' '
       || (SELECT count(*) FROM (TABLE c_local EXCEPT ALL TABLE c_fdw) b)
       || ', local ' || (SELECT count(*) FROM c_local) || ' ' || (SELECT count(*) FROM c_local WHERE id <> cluster);
SQL
)
    if ! [[ "$got" =~ ^([0-9]+)\ rows,\ ([0-9]+)\ in\ clusters,\ differences\ 0\ 0,\ local\ ([0-9]+)\ ([0-9]+)$ ]] \
        || [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[3]}" ] || [ "${BASH_REMATCH[2]}" != "${BASH_REMATCH[4]}" ] \
        || [ "${BASH_REMATCH[2]}" -eq 0 ]; then
        fail "simhash_clusters('docs', 'fp', $args) differs from docs_local's: $got"
    fi
    pass "simhash_clusters('docs', 'fp', $args) = the same on docs_local, as sets ($got)"
done

# ---------------------------------------------------------------------------
# Verified near-duplicates through the foreign partitions: the rule of
# record ships whole (distance and similarity) to the remotes that have the
# extension declared, and gives the rows it gives on a local table.

log "the rule of record over foreign partitions with texts"
for r in "${REMOTES[@]}"; do
    q "$r" -c "CREATE TABLE texts_part (id bigint PRIMARY KEY, body text,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)"
done
q front <<SQL
CREATE TABLE texts (id bigint, body text, fp simhash64) PARTITION BY HASH (id);
CREATE FOREIGN TABLE texts_on_remote1 PARTITION OF texts
    FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER remote1 OPTIONS (table_name 'texts_part');
CREATE FOREIGN TABLE texts_on_remote2 PARTITION OF texts
    FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER remote2 OPTIONS (table_name 'texts_part');
CREATE TABLE texts_local (id bigint PRIMARY KEY, body text,
                          fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO texts_local (id, body)
SELECT g, format('Report %s: %s %s.', g, md5(g::text), md5((g * 7)::text)) FROM generate_series(1, 2000) g;
INSERT INTO texts_local (id, body)
SELECT 10000 + g, format('Report %s: %s %s!', g, md5(g::text), md5((g * 7)::text)) FROM generate_series(1, 40) g;
SELECT count(*) FROM simhash_add_bands('texts_local', 'fp') \g /dev/null
SQL
# The remote tables compute their own fingerprints from the texts.
for r in "${REMOTES[@]}"; do
    m=$([ "$r" = remote1 ] && echo 0 || echo 1)
    q front -c "SELECT id, body FROM texts_local WHERE satisfies_hash_partition('texts'::regclass, 2, $m, id)" \
        | q "$r" -c "\\copy texts_part (id, body) FROM pstdin WITH (FORMAT text, DELIMITER '|')"
    q "$r" -c "SELECT count(*) FROM simhash_add_bands('texts_part', 'fp')" -c "ANALYZE texts_part" >/dev/null
done
same "the texts through the foreign partitions are texts_local's, fingerprints and all" \
    "0" "$(q front -c "SELECT count(*) FROM (SELECT id, body, fp FROM texts EXCEPT ALL SELECT id, body, fp FROM texts_local) a")"
rule="SELECT string_agg(id::text, ',' ORDER BY id) FROM %s WHERE fp <~> simhash(%s) <= 11 AND simhash_similarity(body, %s) >= 0.71"
for probe in 300 900 1500 10010 10040; do
    text=$(q front -c "SELECT quote_literal(body) FROM texts_local WHERE id = $probe")
    # shellcheck disable=SC2059
    want=$(q front -c "$(printf "$rule" texts_local "$text" "$text")")
    # Each probe finds itself, and a planted copy finds its original.
    [[ ",$want," == *",$probe,"* ]] || fail "the rule of record for row $probe does not find the row itself: $want"
    [ "$probe" -lt 10000 ] || [[ ",$want," == *",$((probe - 10000)),"* ]] || fail "the copy $probe does not find its original: $want"
    # shellcheck disable=SC2059
    same "the rule of record for row $probe over the foreign partitions" "$want" \
        "$(q front -c "$(printf "$rule" texts "$text" "$text")")"
done
# shellcheck disable=SC2059
plan=$(q front -c "EXPLAIN (VERBOSE, COSTS OFF) $(printf "$rule" texts "'Report 1: x'" "'Report 1: x'")")
has "the rule of record's plan over the foreign partitions" "$plan" \
    "Remote SQL: .*simhash_similarity\\(body" "Remote SQL: .*simhash_band"
pass "the rule of record over foreign partitions ships the similarity and the band conditions, and gives texts_local's rows"

# ---------------------------------------------------------------------------
# simhash_add_bands on the front's partitioned table.

# simhash 0.4.0 succeeded on `docs` (partitioned, every partition a
# foreign table) and returned docs_fp_band0..3: CREATE INDEX on a
# partitioned table skips foreign partitions, so it made four partitioned
# indexes that covered no partition, served no query and left the remotes
# without band indexes; on a foreign table itself CREATE INDEX failed
# without a word on what to do. Since 0.5.0 (the default, refuse): both
# calls fail with 42809 and a HINT to run simhash_add_bands on each remote
# table, creating nothing. SIMHASH_FDW_ADD_BANDS_EXPECT=record only records
# what happens.
check_add_bands_on_foreign_partitions() {
    local out on_part indexes
    out=$(q front -v VERBOSITY=verbose -c "BEGIN" -c "SELECT * FROM simhash_add_bands('docs', 'fp')" \
              -c "SELECT 'indexes ' || count(*) FROM pg_index WHERE indrelid IN ('docs'::regclass, 'docs_on_remote1'::regclass, 'docs_on_remote2'::regclass)" \
              -c "ROLLBACK" 2>&1) || true
    on_part=$(q front -v VERBOSITY=verbose -c "SELECT * FROM simhash_add_bands('docs_on_remote1', 'fp')" 2>&1) || true
    indexes=$(q front -c "SELECT count(*) FROM pg_index WHERE indrelid IN ('docs'::regclass, 'docs_on_remote1'::regclass, 'docs_on_remote2'::regclass)")
    [ "$indexes" = 0 ] || fail "simhash_add_bands left indexes on the front's docs tables"
    case $ADD_BANDS_EXPECT in
        record)
            note "simhash_add_bands('docs', 'fp') on the partitioned table with foreign partitions: $(paste -sd' ' <<<"$out")"
            note "simhash_add_bands('docs_on_remote1', 'fp') on a foreign partition: $(grep -E 'ERROR|DETAIL|HINT' <<<"$on_part" | paste -sd' ')"
            ;;
        refuse)
            has "simhash_add_bands('docs', 'fp')" "$out" "ERROR:  $ADD_BANDS_SQLSTATE: " "HINT: .*simhash_add_bands"
            has "simhash_add_bands('docs_on_remote1', 'fp')" "$on_part" "ERROR:  $ADD_BANDS_SQLSTATE: " "HINT: .*simhash_add_bands"
            pass "simhash_add_bands refuses foreign partitions with $ADD_BANDS_SQLSTATE and a HINT"
            ;;
        skip)
            lacks "simhash_add_bands('docs', 'fp')" "$out" "ERROR:"
            has "simhash_add_bands('docs', 'fp')" "$out" "(NOTICE|WARNING): .*docs_on_remote1"
            pass "simhash_add_bands skips the foreign partitions and says so"
            ;;
        *) fail "SIMHASH_FDW_ADD_BANDS_EXPECT is record, refuse or skip, not $ADD_BANDS_EXPECT" ;;
    esac
}
check_add_bands_on_foreign_partitions

echo "postgres_fdw: $CHECKS checks passed ($(($(date +%s) - START)) s, PostgreSQL $PG_MAJOR)"
