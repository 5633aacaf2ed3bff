#!/usr/bin/env bash
# The set-based load against a plain load of the same rows, side by side
# in one run: SOURCE rows (texts of the corpus joined two by two, one in
# PLANTED an edited copy of a target row, one in PLANTED a copy of an
# earlier source row) into a target of TARGET rows with its band indexes,
#
#   plain   INSERT INTO target (id, body) SELECT id, body FROM source
#   new     SELECT * FROM simhash_insert_new('target', 'source', K, 'id')
#
# each into a fresh copy of the target, REPS times interleaved: the rates
# and their ratio (target of the issue: at least 0.5x), and the rows each
# kept.
#
# Run: bench/insert_new.sh [CORPUS]   default ../shared/data/zh_short.jsonl.gz
# TARGET=1000000 SOURCE=100000 PLANTED=20 K=3 REPS=3 LAYOUT=4x16 (the
# target's band layout: 4x16c, 2x32 ...). Uses the throwaway
# cluster.
#
# CITUS=1: on a fresh Citus cluster of scripts/citus.sh (a coordinator and
# two workers, in CITUS_BENCH_DIR, default /tmp/simhash-citus-bench-pgNN,
# ports from CITUS_BENCH_PORT, default 55450; destroyed at the end), the
# target distributed by id over SHARDS shards (default 32); the source is
# a local table on the coordinator, as a staging table is.
#
# PROFILE=1: then one more call, each of its statements with its duration
# (auto_explain with ANALYZE, so slower than the rounds).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TARGET=${TARGET:-1000000}
SOURCE=${SOURCE:-100000}
PLANTED=${PLANTED:-20}
K=${K:-3}
LAYOUT=${LAYOUT:-4x16}
REPS=${REPS:-3}
corpus=${1:-$ROOT/../shared/data/zh_short.jsonl.gz}
[ -f "$corpus" ] || die "corpus not found: $corpus"

CITUS=${CITUS:-}
SHARDS=${SHARDS:-32}
work=$(mktemp -d)
if [ -n "$CITUS" ]; then
    trap 'citus_sh destroy >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    log "a fresh Citus cluster in $CITUS_BENCH_DIR (ports $CITUS_BENCH_PORT-$((CITUS_BENCH_PORT + 2))), $SHARDS shards"
    citus_bench_db
    distribute="SELECT create_distributed_table('ins_target', 'id', shard_count => $SHARDS);"
else
    trap 'rm -rf "$work"' EXIT
    bench_db
    distribute=""
fi
q() { psql_db "$@"; }
copy_text_of "$corpus" > "$work/data"
docs=$(wc -l < "$work/data")
log "$(basename "$corpus"): $docs documents; target $TARGET rows, source $SOURCE; this processor: $(instruction_set)"

q <<SQL >/dev/null
DROP TABLE IF EXISTS ins_src_texts, ins_base, ins_source;
CREATE TABLE ins_src_texts (n serial, body text);
\\copy ins_src_texts (body) FROM '$work/data'
-- The target's rows, made once: two texts joined, distinct.
CREATE TABLE ins_base (id bigint PRIMARY KEY, body text NOT NULL);
INSERT INTO ins_base
SELECT i, a.body || b.body FROM generate_series(1, $TARGET) i
JOIN ins_src_texts a ON a.n = 1 + (i % $docs)
JOIN ins_src_texts b ON b.n = 1 + ((i::bigint * 7919 + i / $docs) % $docs);
-- The source: new rows, edited copies of target rows, copies of earlier
-- source rows.
CREATE TABLE ins_source (id bigint, body text);
INSERT INTO ins_source
SELECT $TARGET + i,
       CASE WHEN i % $PLANTED = 0 THEN (SELECT overlay(t.body placing '的' from 2 for 1) FROM ins_base t WHERE t.id = i)
            WHEN i % $PLANTED = 1 AND i > $PLANTED THEN a.body || b.body || '。'
            ELSE b.body || a.body END
FROM generate_series(1, $SOURCE) i
JOIN ins_src_texts a ON a.n = 1 + ((i - 1) % $docs)
JOIN ins_src_texts b ON b.n = 1 + (((i - 1)::bigint * 104729 + 17) % $docs);
DROP TABLE ins_src_texts;
SQL

fresh() {
    q <<SQL >/dev/null
DROP TABLE IF EXISTS ins_target;
CREATE TABLE ins_target (id bigint PRIMARY KEY, body text NOT NULL,
                         fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
$distribute
INSERT INTO ins_target (id, body) SELECT id, body FROM ins_base;
SELECT count(*) FROM simhash_add_bands('ins_target', 'fp', '$LAYOUT');
VACUUM ANALYZE ins_target;
CHECKPOINT;
SQL
}
: > "$work/times"
for rep in $(seq 1 "$REPS"); do
    for variant in plain new; do
        fresh
        t0=$(date +%s.%N)
        if [ "$variant" = plain ]; then
            q -c "INSERT INTO ins_target (id, body) SELECT id, body FROM ins_source" >/dev/null
        else
            q -c "SET client_min_messages = warning" -c "SELECT * FROM simhash_insert_new('ins_target', 'ins_source', $K, 'id')" >/dev/null
        fi
        t1=$(date +%s.%N)
        kept=$(q -c "SELECT count(*) - $TARGET FROM ins_target")
        echo "$variant $t0 $t1 $kept" >> "$work/times"
        log "round $rep: $variant $(python3 -c "print(round($t1 - $t0, 2))") s, $kept rows in"
    done
done
if [ -n "${PROFILE:-}" ]; then
    # Where the time of one call goes: each statement it runs, with its
    # duration, from auto_explain (nested statements, ANALYZE on).
    fresh
    q <<'SQL' 2>&1 | python3 -c '
import re, sys
text = sys.stdin.read()
for m in re.finditer(r"duration: ([0-9.]+) ms\s+plan:\s*Query Text: (.*?)\n", text):
    ms, query = float(m.group(1)), " ".join(m.group(2).split())
    if ms >= 5:
        print("%10.1f ms  %s" % (ms, query[:110]))
'
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SET auto_explain.log_analyze = on;
SET client_min_messages = notice;
SELECT * FROM simhash_insert_new('ins_target', 'ins_source', 3, 'id');
SQL
fi
q -c "DROP TABLE ins_target, ins_base, ins_source"
python3 - "$work/times" "$SOURCE" "$TARGET" "$K" "$REPS" "${CITUS:+, Citus: coordinator + 2 workers, $SHARDS shards}" <<'PY'
import statistics, sys
path, source, target, k, reps, where = sys.argv[1:]
secs, kept = {}, {}
for line in open(path):
    v, t0, t1, n = line.split()
    secs.setdefault(v, []).append(float(t1) - float(t0))
    kept[v] = int(n)
med = {v: statistics.median(s) for v, s in secs.items()}
print(f"\n== {source} rows into {target} with band indexes, k = {k}, median of {reps}{where} ==")
print("%-7s %9s %10s %10s %9s" % ("load", "seconds", "rows/s", "rows-in", "vs-plain"))
for v in ["plain", "new"]:
    print("%-7s %9.2f %10.0f %10d %8.2fx" % (v, med[v], int(source) / med[v], kept[v], med["plain"] / med[v]))
PY
