#!/usr/bin/env bash
# Ingest throughput: COPY of a real corpus into tables with more and more
# of the extension's machinery, side by side in one run, so the cost of
# each step shows as a ratio.
#
#   plain        COPY into (id, body): the baseline
#   fingerprint  + fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED
#   bands        + the four band indexes (simhash_add_bands)
#   near-unique  + the simhash_near_unique('fp', '3', 'skip') trigger
#
# The guard's cost is near-unique against bands: the same table with and
# without the guard (target: at least 0.5x). Then the concurrent part:
# SESSIONS sessions (default 4) COPY the corpus into one table at once,
# BATCH rows (default 500) per transaction, into bands and into
# near-unique: rows/s of each, batches retried after a deadlock, rows
# kept, and the pairs within distance 3 left in the table (the guard's
# must be 0).
#
# Run: bench/ingest.sh [CORPUS ...]   JSON lines {"id","text"}, gzip'd or
# not, each measured on its own; default: ../shared/data/zh_news.jsonl.gz
# and zh_short.jsonl.gz beside the checkout (news articles, short texts).
# REPS=3 (default) rounds of the one-session variants, interleaved, median
# reported. Uses the throwaway cluster (scripts/cluster.sh; SIMHASH_PGPORT
# / SIMHASH_PGDATA pick another) and psycopg 3 in .cache/test-venv for the
# concurrent sessions.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-3}
SESSIONS=${SESSIONS:-4}
BATCH=${BATCH:-500}
if [ $# -eq 0 ]; then
    set -- "$ROOT/../shared/data/zh_news.jsonl.gz" "$ROOT/../shared/data/zh_short.jsonl.gz"
fi
for f in "$@"; do [ -f "$f" ] || die "corpus not found: $f"; done

bench_db
q() { psql_db "$@"; }
PYTHON=$(psycopg_python)

setup() {
    q <<SQL
DROP TABLE IF EXISTS ingest;
CREATE TABLE ingest (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL
    $( [ "$1" != plain ] && echo ", fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED" ));
$( case "$1" in bands|near-unique) echo "SELECT count(*) FROM simhash_add_bands('ingest', 'fp');" ;; esac )
$( [ "$1" = near-unique ] && echo "CREATE TRIGGER near_unique BEFORE INSERT ON ingest FOR EACH ROW EXECUTE FUNCTION simhash_near_unique('fp', '3', 'skip');" )
CHECKPOINT;
SQL
}
near_pairs() {
    q -c "SELECT count(*) FROM ingest a, LATERAL (SELECT 1 FROM ingest b WHERE b.fp <~> a.fp <= 3 AND b.id > a.id) x"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$work/data
# VARIANTS="plain fingerprint" CONCURRENT=0 bench/ingest.sh: only COPY
# with a generated fingerprint column against plain COPY.
variants=${VARIANTS:-plain fingerprint bands near-unique}
case " $variants " in *" plain "*) ;; *) die "VARIANTS must hold plain, the baseline" ;; esac
for corpus in "$@"; do
    # The corpus as a plain-text COPY file of bodies: decoded once, up
    # front, so every variant loads the very same bytes.
    copy_text_of "$corpus" > "$data"
    name=$(basename "$corpus")
    rows=$(wc -l < "$data")
    bytes=$(stat -c %s "$data")
    log "$name: $rows documents, $bytes bytes as COPY text"

    : > "$work/single"
    for rep in $(seq 1 "$REPS"); do
        for variant in $variants; do
            setup "$variant" >/dev/null
            t0=$(date +%s.%N)
            q -c "\\copy ingest (body) FROM '$data'"
            t1=$(date +%s.%N)
            kept=$(q -c "SELECT count(*) FROM ingest")
            echo "$variant $t0 $t1 $kept" >> "$work/single"
            log "$name round $rep: $variant $(python3 -c "print(round($t1 - $t0, 2))") s, $kept rows kept"
        done
    done

    : > "$work/concurrent"
    [ "${CONCURRENT:-1}" = 0 ] || for variant in bands near-unique; do
        setup "$variant" >/dev/null
        result=$("$PYTHON" "$ROOT/bench/ingest_concurrent.py" ingest "$data" "$SESSIONS" "$BATCH" "$BENCH_DB")
        echo "$variant $result $(q -c "SELECT count(*) FROM ingest") $(near_pairs)" >> "$work/concurrent"
        log "$name, $SESSIONS sessions: $variant $(tail -1 "$work/concurrent")"
    done
    q -c "DROP TABLE ingest"

    python3 - "$work" "$name" "$rows" "$bytes" "$REPS" "$SESSIONS" "$BATCH" <<'PY'
import json, statistics, sys
work, name, rows, nbytes, reps, sessions, batch = sys.argv[1:]
rows, mb = int(rows), int(nbytes) / 1e6
secs = {}
for line in open(f"{work}/single"):
    variant, t0, t1, _ = line.split()
    secs.setdefault(variant, []).append(float(t1) - float(t0))
med = {v: statistics.median(s) for v, s in secs.items()}
print(f"\n== {name}: COPY of {rows} documents ({mb:.2f} MB), one session, median of {reps} ==")
print("%-13s %9s %10s %8s %9s %9s" % ("variant", "seconds", "rows/s", "MB/s", "vs-plain", "vs-bands"))
for v in [v for v in ["plain", "fingerprint", "bands", "near-unique"] if v in med]:
    s = med[v]
    vs_bands = "%8.2fx" % (med["bands"] / s) if "bands" in med else "%9s" % "-"
    print("%-13s %9.2f %10.0f %8.2f %8.2fx %s" % (v, s, rows / s, mb / s, med["plain"] / s, vs_bands))
conc = {}
for line in open(f"{work}/concurrent"):
    variant, rest = line.split(" ", 1)
    j, kept, pairs = rest.rsplit(" ", 2)
    conc[variant] = (json.loads(j), int(kept), int(pairs))
if not conc:
    sys.exit(0)
print(f"== {name}: {sessions} sessions at once, {batch} rows per transaction ==")
print("%-13s %9s %10s %9s %8s %10s %10s" % ("variant", "seconds", "rows/s", "vs-bands", "retries", "rows-kept", "near-pairs"))
base = conc["bands"][0]["seconds"]
for v in ["bands", "near-unique"]:
    j, kept, pairs = conc[v]
    print("%-13s %9.2f %10.0f %8.2fx %8d %10d %10d" % (v, j["seconds"], j["rows"] / j["seconds"], base / j["seconds"], j["retries"], kept, pairs))
PY
done
