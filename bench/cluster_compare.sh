#!/usr/bin/env bash
# Whole-table clustering side by side with what a user would otherwise
# reach for, on the same real documents in one run:
#
#   ours        SELECT * FROM simhash_clusters('cc_docs', 'fp', 3) over a
#               stored simhash64 column (fingerprinting timed apart)
#   sql join    the plain-SQL self-join over four band columns a user could
#               write by hand: band columns and B-tree indexes built, then
#               every pair sharing a band and within 3 bits (pairs only, no
#               connected components: a lower bound on that approach)
#   simhash-py  PyPI simhash 2.1.2 SimhashIndex, k = 3, its own features
#   minhash     PyPI datasketch 2.0.0 MinHashLSH, threshold 0.8
#
# Documents: N real texts from the shared corpora (bench/cluster_compare/
# compare.py says how), of which PLANTS have 1 to 3 reposted copies each
# (punctuation, width, a source line). A planted pair is "must find" when
# our fingerprints of the two are within 3; each system's recall of the
# planted pairs (both in one of its clusters) is reported. Time and peak
# memory: ours and the join inside the server (clock_timestamp; the
# backend's VmHWM over a scan of the table); the Python tools as their own
# process (wall time of the clustering after reading the file; peak RSS).
#
# Run: bench/cluster_compare.sh [DATA_DIR] [N] [PLANTS]
#        DATA_DIR  default $SIMHASH_DATA, else ../shared/data beside the checkout
#        N         documents, default 1000000;  PLANTS default 50000
#      PY_TIMEOUT=seconds per Python tool (default 1800); one that does not
#      finish is reported as such and run again on the first N/10 documents.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DATA=${SIMHASH_DATA:-$ROOT/../shared/data}
if [ $# -gt 0 ] && [ -d "$1" ]; then DATA=$1; shift; fi
N=${1:-1000000}
PLANTS=${2:-50000}
PY_TIMEOUT=${PY_TIMEOUT:-1800}
[ -f "$DATA/zh_short.jsonl.gz" ] || die "corpora not found in $DATA: give the shared data directory"

# The Python tools: the yardstick's pinned environment.
VENV=$ROOT/.cache/quality-venv
REQ=$ROOT/bench/quality/requirements.txt
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ "$(cat "$VENV/requirements.sha256" 2>/dev/null)" != "$want" ]; then
    log "preparing the Python environment in ${VENV#"$ROOT"/}"
    python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
    echo "$want" >"$VENV/requirements.sha256"
fi
PY="$VENV/bin/python"
export PYTHONDONTWRITEBYTECODE=1
HERE=$ROOT/bench/cluster_compare
WORK=$ROOT/.cache/cluster_compare
mkdir -p "$WORK"
DOCS=$WORK/docs-$N-$PLANTS.tsv
if [ ! -f "$DOCS.plants" ]; then
    log "building $N documents with $PLANTS planted originals"
    "$PY" "$HERE/compare.py" build "$DATA" "$DOCS" "$N" "$PLANTS" 1998
fi
mb=$(stat -c %s "$DOCS" | awk '{ printf "%.0f", $1 / 1e6 }')

bench_db
hwm="SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmHWM:\\s+(\\d+)'))[1]::bigint / 1024 AS hwm"
# Scan the table first (its pages then count in both readings of the peak),
# read the peak, start the clock.
start_timing="SET client_min_messages = warning;
SELECT count(*), sum(fp::bigint) FROM cc_docs \\gset
$hwm \\gset before_
SELECT clock_timestamp() AS t0 \\gset"
log "loading and fingerprinting"
fp_s=$(psql_db <<SQL | tail -1
DROP TABLE IF EXISTS cc_docs, cc_plants, cc_must, cc_ours, cc_join, cc_py;
CREATE TABLE cc_docs (id bigint PRIMARY KEY, body text, fp simhash64);
CREATE TABLE cc_plants (original bigint, copy bigint);
\copy cc_docs (id, body) FROM '$DOCS'
\copy cc_plants FROM '$DOCS.plants' WITH (DELIMITER ' ')
SELECT clock_timestamp() AS t0 \gset
UPDATE cc_docs SET fp = simhash(body);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1);
SQL
)
psql_db <<'SQL'
VACUUM ANALYZE cc_docs;
CREATE TABLE cc_must AS
SELECT p.* FROM cc_plants p JOIN cc_docs a ON a.id = p.original JOIN cc_docs b ON b.id = p.copy
WHERE hamming(a.fp, b.fp) <= 3;
SQL
plants=$(psql_db -c "SELECT count(*) FROM cc_plants")
must=$(psql_db -c "SELECT count(*) FROM cc_must")

# recall SYSTEM_TABLE LIMIT: planted pairs within the first LIMIT ids that
# the system's clusters join: "found/of".
recall() {
    psql_db -c "SELECT count(*) FILTER (WHERE a.cluster = b.cluster) || '/' || count(*)
                FROM cc_plants p JOIN $1 a ON a.id = p.original JOIN $1 b ON b.id = p.copy
                WHERE p.original <= $2 AND p.copy <= $2"
}

rows=()
log "ours: simhash_clusters(k = 3)"
read -r ours_s ours_mb clusters <<<"$(psql_db -F' ' <<SQL | tail -1
$start_timing
CREATE TABLE cc_ours AS SELECT * FROM simhash_clusters('cc_docs', 'fp', 3);
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS s \gset
$hwm \gset after_
SELECT round(:s::numeric, 2), :after_hwm - :before_hwm, (SELECT count(DISTINCT cluster) FROM cc_ours);
SQL
)"
must_found=$(psql_db -c "SELECT count(*) FILTER (WHERE a.cluster = b.cluster) || '/' || count(*)
                         FROM cc_must p JOIN cc_ours a ON a.id = p.original JOIN cc_ours b ON b.id = p.copy")
rows+=("| ours: simhash_clusters, k = 3 | $N | $ours_s s (+ $fp_s s fingerprinting) | $ours_mb MB | $clusters | $(recall cc_ours "$N") | $must_found |")

log "plain SQL: band columns, indexes, self-join"
read -r join_s join_mb pairs <<<"$(psql_db -F' ' <<SQL | tail -1
$start_timing
CREATE TABLE cc_bands AS
SELECT id, fp::bigint AS fp, (fp::bigint >> 48) & 65535 AS b0, (fp::bigint >> 32) & 65535 AS b1,
       (fp::bigint >> 16) & 65535 AS b2, fp::bigint & 65535 AS b3 FROM cc_docs;
CREATE INDEX ON cc_bands (b0); CREATE INDEX ON cc_bands (b1);
CREATE INDEX ON cc_bands (b2); CREATE INDEX ON cc_bands (b3);
ANALYZE cc_bands;
CREATE TABLE cc_join AS
SELECT DISTINCT x.id AS a, y.id AS b FROM cc_bands x JOIN cc_bands y
  ON (x.b0 = y.b0 OR x.b1 = y.b1 OR x.b2 = y.b2 OR x.b3 = y.b3)
 AND x.id < y.id AND bit_count((x.fp # y.fp)::bit(64)) <= 3;
SELECT extract(epoch FROM clock_timestamp() - :'t0') AS s \gset
$hwm \gset after_
SELECT round(:s::numeric, 2), :after_hwm - :before_hwm, (SELECT count(*) FROM cc_join);
DROP TABLE cc_bands;
SQL
)"
join_found=$(psql_db -c "SELECT count(j.a) || '/' || count(*) FROM cc_must p
                         LEFT JOIN cc_join j ON j.a = least(p.original, p.copy) AND j.b = greatest(p.original, p.copy)")
rows+=("| plain SQL self-join on band columns (pairs only) | $N | $join_s s | $join_mb MB | $pairs pairs | – | $join_found (direct pairs) |")

for system in simhash-py minhash; do
    for n in "$N" $((N / 10)); do
        log "$system on $n documents (at most $PY_TIMEOUT s)"
        out=$WORK/$system-$n.clusters
        if timeout "$PY_TIMEOUT" "$PY" "$HERE/compare.py" run "$system" "$DOCS" "$n" "$out" 2>"$WORK/$system.err"; then
            read -r s peak <<<"$(sed -n 's/^seconds=\([0-9.]*\) peak_mb=\([0-9]*\)$/\1 \2/p' "$WORK/$system.err")"
            psql_db -c "DROP TABLE IF EXISTS cc_py" -c "CREATE TABLE cc_py (id bigint, cluster bigint)" \
                -c "\\copy cc_py FROM '$out' WITH (DELIMITER ' ')"
            clusters=$(psql_db -c "SELECT count(DISTINCT cluster) FROM cc_py")
            must_py=$(psql_db -c "SELECT count(*) FILTER (WHERE a.cluster = b.cluster) || '/' || count(*)
                                  FROM cc_must p JOIN cc_py a ON a.id = p.original JOIN cc_py b ON b.id = p.copy")
            rows+=("| $system | $n | $s s | $peak MB | $clusters | $(recall cc_py "$n") | $must_py |")
            if [ "$n" != "$N" ]; then
                # Ours on the same prefix, for a like-for-like time.
                s_ours=$(psql_db <<SQL | tail -1
SET client_min_messages = warning;
CREATE TEMP VIEW prefix AS SELECT id, fp FROM cc_docs WHERE id <= $n;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM simhash_clusters('prefix', 'fp', 3) \gset
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 2);
SQL
)
                rows+=("| ours on the same $n documents | $n | $s_ours s | | | | |")
            fi
            break
        fi
        rows+=("| $system | $n | did not finish in $PY_TIMEOUT s | | | | |")
    done
done

{
    printf '# Clustering side by side: results\n\n'
    printf '`bench/cluster_compare.sh`: %s documents (%s MB of text), %s planted copies of %s originals,\n' "$N" "$mb" "$plants" "$PLANTS"
    printf '%s of the planted pairs within distance 3 of our fingerprint ("must find").\n\n' "$must"
    printf '| system | documents | time | peak memory | clusters | planted pairs found | "must find" pairs found |\n'
    printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
    printf '%s\n' "${rows[@]}"
} | tee "$HERE/results.md"
psql_db -c "DROP TABLE IF EXISTS cc_docs, cc_plants, cc_must, cc_ours, cc_join, cc_py"
