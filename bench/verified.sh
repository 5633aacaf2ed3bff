#!/usr/bin/env bash
# What verifying on the texts costs, side by side in one run:
#
#  1. Guarded COPY: the same corpus COPY'd into a table guarded at k = 11
#     ('skip'), by the fingerprint alone and verified on the texts
#     (simhash_add_guard(..., text_col => 'body'), threshold 0.71),
#     interleaved REPS times: the verified guard's rate as a ratio of the
#     unverified one's (target: at least 0.8x), and the rows each kept.
#  2. The k = 11 query at ROWS rows: `fp <~> simhash($1) <= 11` against the
#     rule of record `... AND simhash_similarity(body, $1) >= 0.71`, for
#     QUERIES query texts (rows of the table with one character changed),
#     each timed both ways, interleaved: the ratio of the medians (target:
#     the verified query within 2x), and the rows each returns.
#
# Run: bench/verified.sh [CORPUS]   JSON lines {"id","text"}, gzip'd or not;
# default ../shared/data/zh_short.jsonl.gz beside the checkout. ROWS
# (default 1000000) rows are made by joining two texts of the corpus, so
# they are distinct; QUERIES=200, REPS=3. Uses the throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-1000000}
QUERIES=${QUERIES:-200}
REPS=${REPS:-3}
corpus=${1:-$ROOT/../shared/data/zh_short.jsonl.gz}
[ -f "$corpus" ] || die "corpus not found: $corpus"

bench_db
q() { psql_db "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$work/data
copy_text_of "$corpus" > "$data"
docs=$(wc -l < "$data")
log "$(basename "$corpus"): $docs documents; this processor: $(instruction_set)"

# 1. Guarded COPY.
guard() {
    q <<SQL >/dev/null
DROP TABLE IF EXISTS vg;
CREATE TABLE vg (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL,
                 fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('vg', 'fp', '4x16');
SELECT simhash_add_guard('vg', 'fp', 11, 'skip', 'id' $( [ "$1" = verified ] && echo ", 'body', 0.71" ));
CHECKPOINT;
SQL
}
: > "$work/copy"
# COPY=0 bench/verified.sh: the query part only.
[ "${COPY:-1}" = 0 ] || for rep in $(seq 1 "$REPS"); do
    for variant in fingerprint verified; do
        guard "$variant"
        t0=$(date +%s.%N)
        q -c "SET client_min_messages = warning" -c "\\copy vg (body) FROM '$data'"
        t1=$(date +%s.%N)
        kept=$(q -c "SELECT count(*) FROM vg")
        echo "$variant $t0 $t1 $kept" >> "$work/copy"
        log "guarded COPY, round $rep: $variant $(python3 -c "print(round($t1 - $t0, 2))") s, $kept rows kept"
    done
done
[ "${COPY:-1}" = 0 ] || q -c "DROP TABLE vg"

# 2. The k = 11 query, by the fingerprint and verified.
log "making $ROWS rows of two joined texts (once per database: kept as vq)"
# (The extension is made anew by bench_db, which drops a simhash64 column
# with it: a table without one is made anew too.)
if [ "$(q -c "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('vq') AND attname = 'fp'")" = 0 ] ||
   [ "$(q -c "SELECT count(*) FROM vq")" != "$ROWS" ]; then
    q <<SQL >/dev/null
DROP TABLE IF EXISTS vq, vq_src;
CREATE TABLE vq_src (n serial, body text);
\\copy vq_src (body) FROM '$data'
CREATE TABLE vq (id bigint PRIMARY KEY, body text NOT NULL,
                 fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO vq (id, body)
SELECT i, a.body || b.body
FROM generate_series(1, $ROWS) i
JOIN vq_src a ON a.n = 1 + (i % $docs)
JOIN vq_src b ON b.n = 1 + ((i::bigint * 7919 + i / $docs) % $docs);
SELECT count(*) FROM simhash_add_bands('vq', 'fp', '4x16');
VACUUM ANALYZE vq;
DROP TABLE vq_src;
SQL
fi
# The query texts: rows of the table with one character in the middle
# changed, chosen evenly.
q -c "\\copy (SELECT overlay(body placing '的' from greatest(1, length(body) / 2) for 1) FROM vq WHERE id % ($ROWS / $QUERIES) = 0 LIMIT $QUERIES) TO '$work/queries'"
q <<SQL >/dev/null
DROP TABLE IF EXISTS vq_queries;
CREATE TABLE vq_queries (n serial, body text);
\\copy vq_queries (body) FROM '$work/queries'
DROP FUNCTION IF EXISTS vq_time(text, boolean);
CREATE FUNCTION vq_time(query text, verified boolean, OUT ms double precision, OUT hits bigint)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    IF verified THEN
        SELECT count(*) INTO hits FROM vq WHERE fp <~> simhash(query) <= 11 AND simhash_similarity(body, query) >= 0.71;
    ELSE
        SELECT count(*) INTO hits FROM vq WHERE fp <~> simhash(query) <= 11;
    END IF;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END \$\$;
SQL
for rep in $(seq 1 "$REPS"); do
    q -c "SELECT n, 'fingerprint', (vq_time(body, false)).* FROM vq_queries UNION ALL SELECT n, 'verified', (vq_time(body, true)).* FROM vq_queries" \
        -F ' ' >> "$work/query"
done
q -c "DROP TABLE vq_queries" -c "DROP FUNCTION vq_time(text, boolean)"

python3 - "$work" "$docs" "$ROWS" "$QUERIES" "$REPS" <<'PY'
import statistics, sys
work, docs, rows, queries, reps = sys.argv[1:]
secs, kept = {}, {}
for line in open(f"{work}/copy"):
    v, t0, t1, k = line.split()
    secs.setdefault(v, []).append(float(t1) - float(t0))
    kept[v] = int(k)
med = {v: statistics.median(s) for v, s in secs.items()}
if med:
    print(f"\n== guarded COPY of {docs} documents at k = 11, 'skip', median of {reps} ==")
    print("%-12s %9s %10s %10s %10s" % ("guard", "seconds", "rows/s", "rows-kept", "vs-fingerprint"))
    for v in ["fingerprint", "verified"]:
        print("%-12s %9.2f %10.0f %10d %9.2fx" % (v, med[v], int(docs) / med[v], kept[v], med["fingerprint"] / med[v]))
ms, found = {}, {}
for line in open(f"{work}/query"):
    n, v, t, f = line.split()
    ms.setdefault(v, []).append(float(t))
    found.setdefault(v, []).append(int(f))
print(f"\n== the k = 11 query at {rows} rows, {queries} query texts x {reps} ==")
print("%-12s %12s %12s %14s %12s" % ("query", "median ms", "p90 ms", "rows/query", "vs-fingerprint"))
m = {v: statistics.median(x) for v, x in ms.items()}
for v in ["fingerprint", "verified"]:
    p90 = sorted(ms[v])[int(0.9 * len(ms[v]))]
    print("%-12s %12.3f %12.3f %14.2f %11.2fx" % (v, m[v], p90, statistics.mean(found[v]), m[v] / m["fingerprint"]))
PY
