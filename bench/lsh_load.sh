#!/usr/bin/env bash
# Where loading a table with the second candidate source spends its time:
# INSERT ... SELECT of ROWS rows into five tables, interleaved REPS times,
# each as a ratio of the rate with the fingerprint bands alone:
#
#   bands          the fingerprint column and its 4x16 band indexes
#   + keys         the same with the stored keys column
#                  (simhash_lsh(body)), no index on it: computing the keys
#   + GIN          and the keys' GIN index as simhash_add_lsh builds it
#                  (fastupdate on, a 4 MB pending list)
#   + GIN no fast  the same index with fastupdate = off: every key into the
#                  index as the row goes in
#   + GIN 64MB     the same index with a 64 MB pending list: the keys wait
#                  in the list (a query reads all of it) until VACUUM or
#                  gin_clean_pending_list() moves them; that work is timed
#                  apart, after the load ("cleanup")
#
# and, for one round, the time to compute the keys and the fingerprints
# alone (SELECT count(f(body))).
#
# Rows are 6 sentences drawn at random from the sentences of the corpus
# (about 870 characters of en_docs), as in bench/lsh_sql.sh.
#
# Run: bench/lsh_load.sh [CORPUS]   default ../shared/data/en_docs.jsonl.gz;
# ROWS=50000, REPS=2. Uses the throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-50000}
REPS=${REPS:-2}
corpus=${1:-$ROOT/../shared/data/en_docs.jsonl.gz}
[ -f "$corpus" ] || die "corpus not found: $corpus"

bench_db
q() { psql_db "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus_sentences "$corpus" > "$work/sentences"
log "$(basename "$corpus"): $(wc -l < "$work/sentences") sentences; $ROWS rows; this processor: $(instruction_set)"

q <<SQL >/dev/null
SET client_min_messages = warning;
DROP TABLE IF EXISTS ll_sent, ll_rows, ll_bands, ll_keys, ll_gin, ll_gin_slow, ll_gin_64mb;
CREATE TABLE ll_sent (n serial, s text);
\\copy ll_sent (s) FROM '$work/sentences'
CREATE TABLE ll_rows AS
SELECT i AS id, string_agg(s.s, ' ' ORDER BY j) AS body
  FROM generate_series(1, $ROWS) i, generate_series(1, 6) j,
       LATERAL (SELECT s FROM ll_sent WHERE n = 1 + abs(hashint4(i * 7 + j)) % (SELECT count(*) FROM ll_sent)) s
 GROUP BY i;
CREATE TABLE ll_bands (id bigint PRIMARY KEY, body text NOT NULL,
                       fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('ll_bands', 'fp', '4x16');
CREATE TABLE ll_keys (LIKE ll_bands INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('ll_keys', 'fp', '4x16');
ALTER TABLE ll_keys ADD COLUMN body_lsh integer[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
CREATE TABLE ll_gin (LIKE ll_keys INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('ll_gin', 'fp', '4x16');
SELECT simhash_add_lsh('ll_gin', 'body');
CREATE TABLE ll_gin_slow (LIKE ll_keys INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('ll_gin_slow', 'fp', '4x16');
SELECT simhash_add_lsh('ll_gin_slow', 'body');
CREATE TABLE ll_gin_64mb (LIKE ll_keys INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('ll_gin_64mb', 'fp', '4x16');
SELECT simhash_add_lsh('ll_gin_64mb', 'body');
SQL
gin_of() {
    q -c "SELECT format('%I', c.relname) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE i.indrelid = '$1'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'gin')"
}
q -c "ALTER INDEX $(gin_of ll_gin_slow) SET (fastupdate = off)"
q -c "ALTER INDEX $(gin_of ll_gin_64mb) SET (gin_pending_list_limit = 65536)"

: > "$work/load"
for rep in $(seq 1 "$REPS"); do
    for t in ll_bands ll_keys ll_gin ll_gin_slow ll_gin_64mb; do
        q -c "TRUNCATE $t" -c "CHECKPOINT"
        t0=$(date +%s.%N)
        q -c "INSERT INTO $t (id, body) SELECT id, body FROM ll_rows"
        t1=$(date +%s.%N)
        echo "$t $(python3 -c "print($t1 - $t0)")" >> "$work/load"
        if [ "$t" = ll_gin_64mb ]; then
            q -c "SELECT gin_clean_pending_list('$(gin_of ll_gin_64mb)'::regclass)" >/dev/null
            t2=$(date +%s.%N)
            echo "cleanup $(python3 -c "print($t2 - $t1)")" >> "$work/load"
        fi
        log "round $rep: $t $(python3 -c "print(round($t1 - $t0, 2))") s"
    done
done
q -c "SET max_parallel_workers_per_gather = 0" -c "SELECT count(simhash(body)) FROM ll_rows" >/dev/null
t0=$(date +%s.%N)
q -c "SET max_parallel_workers_per_gather = 0" -c "SELECT count(simhash(body)) FROM ll_rows" >/dev/null
t1=$(date +%s.%N)
q -c "SET max_parallel_workers_per_gather = 0" -c "SELECT count(simhash_lsh(body)) FROM ll_rows" >/dev/null
t2=$(date +%s.%N)
echo "compute_fp $(python3 -c "print($t1 - $t0)")" >> "$work/load"
echo "compute_keys $(python3 -c "print($t2 - $t1)")" >> "$work/load"

python3 - "$work/load" "$ROWS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    t, s = line.split(); runs.setdefault(t, []).append(float(s))
rows = int(sys.argv[2])
base = statistics.median(runs["ll_bands"])
print("## Loading with the second source, by part (bench/lsh_load.sh)")
print()
print(f"{rows:,} rows, INSERT ... SELECT, median of {len(runs['ll_bands'])} rounds; rate as a ratio of the bands alone")
print()
print("| table | seconds | rate |")
print("|---|---:|---:|")
names = {"ll_bands": "bands", "ll_keys": "+ keys column", "ll_gin": "+ GIN (as simhash_add_lsh builds it)",
         "ll_gin_slow": "+ GIN, fastupdate off", "ll_gin_64mb": "+ GIN, 64 MB pending list (cleanup apart)"}
for t, name in names.items():
    m = statistics.median(runs[t])
    print(f"| {name} | {m:.2f} | {base / m:.2f}x |")
c = statistics.median(runs["cleanup"])
m = statistics.median(runs["ll_gin_64mb"])
print(f"| + GIN, 64 MB pending list, with its cleanup | {m + c:.2f} | {base / (m + c):.2f}x |")
print()
fp, keys = runs["compute_fp"][0], runs["compute_keys"][0]
print(f"computing alone: simhash() {fp / rows * 1e6:.1f} µs a row, simhash_lsh() {keys / rows * 1e6:.1f} µs a row ({keys / fp:.1f}x)")
PY
[ "${KEEP:-0}" = 1 ] || q -c "DROP TABLE ll_sent, ll_rows, ll_bands, ll_keys, ll_gin, ll_gin_slow, ll_gin_64mb"
