#!/usr/bin/env bash
# Ingest throughput: COPY of a real corpus into tables with more and more
# of the extension's machinery, side by side in one run, so the cost of
# each step shows as a ratio to the plain COPY.
#
#   plain        COPY into (id, body): the baseline
#   fingerprint  + fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED
#   bands        + the four band indexes (simhash_add_bands)
#   near-unique  + the simhash_near_unique('fp', '3', 'skip') trigger
#
# Run: bench/ingest.sh [CORPUS ...]   JSON lines {"id","text"}, gzip'd or
# not; default: ../shared/data/zh_news.jsonl.gz and zh_short.jsonl.gz
# beside the checkout, loaded one after the other as one larger set.
# REPS=3 (default) repetitions, median reported. Uses the throwaway cluster
# (scripts/cluster.sh; SIMHASH_PGPORT / SIMHASH_PGDATA pick another).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-3}
if [ $# -eq 0 ]; then
    set -- "$ROOT/../shared/data/zh_news.jsonl.gz" "$ROOT/../shared/data/zh_short.jsonl.gz"
fi
for f in "$@"; do [ -f "$f" ] || die "corpus not found: $f"; done

bench_db
q() { psql_db "$@"; }

# The corpus as a plain-text COPY file of bodies: decoded once, up front,
# so every variant below loads the very same bytes.
data=$(mktemp)
trap 'rm -f "$data"' EXIT
for f in "$@"; do zcat -f -- "$f"; done | python3 -c '
import json, sys
for line in sys.stdin:
    t = json.loads(line)["text"].replace("\x00", "")
    sys.stdout.write(t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + "\n")
' > "$data"
rows=$(wc -l < "$data")
mb=$(python3 -c "import sys; print(round($(stat -c %s "$data") / 1e6, 2))")
log "corpus: $rows documents, $mb MB as COPY text"

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
declare -A secs
for variant in plain fingerprint bands near-unique; do
    times=()
    for _ in $(seq 1 "$REPS"); do
        setup "$variant" >/dev/null
        t0=$(date +%s.%N)
        q -c "\\copy ingest (body) FROM '$data'"
        t1=$(date +%s.%N)
        times+=("$(python3 -c "print($t1 - $t0)")")
    done
    secs[$variant]=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (REPS + 1) / 2 ))p")
    kept=$(q -c "SELECT count(*) FROM ingest")
    log "$variant: median ${secs[$variant]} s, $kept rows kept"
done
q -c "DROP TABLE ingest"

echo
echo "== COPY of $rows documents ($mb MB), median of $REPS =="
printf '%-13s %9s %10s %8s %9s\n' variant seconds rows/s MB/s vs-plain
for variant in plain fingerprint bands near-unique; do
    s=${secs[$variant]}
    python3 -c "
s=$s; print('%-13s %9.2f %10.0f %8.2f %8.2fx' % ('$variant', s, $rows/s, $mb/s, s/${secs[plain]}))"
done
