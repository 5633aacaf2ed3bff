#!/usr/bin/env bash
# A prepared statement's executions, the first (a custom plan: the query
# text is a constant, fingerprinted once while planning) beside the sixth
# and later (PostgreSQL's generic plan from then on, where simhash($1) is a
# call the executor meets for every candidate row), side by side in one run.
#
# The table holds ROWS fingerprints: those of the corpus's texts and, for
# each, near copies with 0 to 10 of its 64 bits flipped, as a feed full
# of reprinted articles has; its band layout is what simhash_add_bands
# picks ('auto'). Each round prepares
#   SELECT id FROM gp WHERE fp <~> simhash($1) <= K
# anew and executes it EXECS times (default 8), each with another text of
# the corpus, under plan_cache_mode = auto; EXPLAIN (ANALYZE) reports each
# execution's planning and execution time and whether the plan was
# generic. Prints, per execution, the median over ROUNDS rounds, the
# ratio to the first, and the rows each query found (its candidates).
#
# Run: bench/generic_plan.sh [CORPUS]   JSON lines {"id","text"}, gzip'd
# or not; default ../shared/data/zh_news.jsonl.gz. ROWS=300000, K=7,
# ROUNDS=30, EXECS=8. Uses the throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-300000}
K=${K:-7}
ROUNDS=${ROUNDS:-30}
EXECS=${EXECS:-8}
corpus=${1:-$ROOT/../shared/data/zh_news.jsonl.gz}
[ -f "$corpus" ] || die "corpus not found: $corpus"

bench_db
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy_text_of "$corpus" > "$work/data"
log "$(basename "$corpus"): $(wc -l < "$work/data") texts; $ROWS rows; k = $K; this processor: $(instruction_set)"

psql_db <<SQL >/dev/null
SET client_min_messages = warning;
DROP TABLE IF EXISTS gp_text, gp;
CREATE TABLE gp_text (n serial, body text);
\\copy gp_text (body) FROM '$work/data'
DELETE FROM gp_text WHERE simhash(body) IS NULL;
CREATE TABLE gp (id bigint PRIMARY KEY, fp simhash64);
INSERT INTO gp
SELECT i, (simhash(t.body)::bigint # coalesce((SELECT bit_or(1::bigint << (abs(hashint4(i * 64 + j)) % 64))
                                                FROM generate_series(1, abs(hashint4(i)) % 11) j), 0))::simhash64
  FROM generate_series(1, $ROWS) i
  JOIN gp_text t ON t.n = 1 + i % (SELECT count(*) FROM gp_text);
SELECT count(*) FROM simhash_add_bands('gp', 'fp');
ANALYZE gp;
SQL
log "layout: $(psql_db -c "SELECT string_agg(DISTINCT pg_get_indexdef(indexrelid), '; ') FROM pg_index WHERE indrelid = 'gp'::regclass AND NOT indisprimary" | cut -c1-160)"

# The statements of every round, in order: PREPARE, then EXECS executions
# (each with the text of another row), each under EXPLAIN (ANALYZE).
# Each round twice, with the same texts: every execution a custom plan,
# then every execution the generic plan.
psql_db -c "SELECT stmt FROM (
                SELECT r, m, 0 AS e,
                       format('SET plan_cache_mode = %s; DEALLOCATE ALL; PREPARE gp_q(text) AS SELECT id FROM gp WHERE fp <~> simhash(\$1) <= %s;', mode, $K) AS stmt
                  FROM generate_series(1, $ROUNDS) r, unnest(ARRAY['force_custom_plan', 'force_generic_plan']) WITH ORDINALITY mm(mode, m)
                UNION ALL
                SELECT r, m, e, format('EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) EXECUTE gp_q(%L);', t.body)
                  FROM generate_series(1, $ROUNDS) r, generate_series(1, 2) m, generate_series(1, $EXECS) e,
                       LATERAL (SELECT body FROM gp_text
                                 WHERE n = 1 + abs(hashint4(r * 1000 + e)) % (SELECT count(*) FROM gp_text)) t) s
              ORDER BY r, m, e" > "$work/script.sql"
psql_db -v ON_ERROR_STOP=1 -f "$work/script.sql" > "$work/out"

python3 - "$work/out" "$EXECS" <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
execs = int(sys.argv[2])
runs, cur = [], None
for line in lines:
    if line.startswith(("Index", "Bitmap", "Seq", "Tid", "Append", "Gather", "Result", "Custom")) and cur is None:
        cur = {"generic": False, "rows": 0}
    if cur is None:
        continue
    if "$1" in line:
        cur["generic"] = True
    m = re.search(r"actual rows=(\d+)", line)
    if m and "rows" in cur and cur.get("top") is None:
        cur["top"], cur["rows"] = True, int(m.group(1))
    m = re.match(r"Planning Time: ([\d.]+) ms", line)
    if m:
        cur["plan"] = float(m.group(1))
    m = re.match(r"Execution Time: ([\d.]+) ms", line)
    if m:
        cur["exec"] = float(m.group(1))
        runs.append(cur)
        cur = None
rounds = len(runs) // (2 * execs)
print(f"{rounds} rounds of {execs} executions, each as a custom and as the generic plan")
med = {}
for m, name in ((0, "custom"), (1, "generic")):
    these = [runs[(r * 2 + m) * execs + e] for r in range(rounds) for e in range(execs)]
    assert all(x["generic"] == (m == 1) for x in these), "a plan of the other kind"
    med[name] = statistics.median(x["plan"] + x["exec"] for x in these)
    rows = statistics.median(x["rows"] for x in these)
    print(f"{name:8s} plan: median {med[name]:8.3f} ms an execution (planning + execution), median rows found {rows:.0f}")
print(f"generic / custom: {med['generic'] / med['custom']:.2f}x")
PY
