#!/usr/bin/env bash
# The second candidate source in PostgreSQL (simhash_add_lsh), beside the
# fingerprint bands alone, side by side in one run:
#
#  1. Space: the keys column and its GIN index, bytes per row, beside the
#     band indexes.
#  2. Loading: INSERT ... SELECT of ROWS rows into a table with the bands
#     alone and into one with the bands and the keys, interleaved REPS
#     times: the rate with both as a ratio of the rate with the bands.
#  3. The verified query: the rule by the fingerprint alone
#     (fp <~> simhash($1) <= 11 AND simhash_similarity(body, $1) >= 0.82)
#     and by either source ((... OR body_lsh &&& simhash_lsh($1)) AND ...),
#     for QUERIES texts that are rows of the table with 5% of their
#     characters replaced at scattered places, each timed both ways,
#     interleaved: the ratio of the medians, and how many queries found
#     their original each way.
#  4. The verified guard ('skip', k = 11, 0.82) and the verified load
#     (simhash_insert_new): GUARDED rows (copies with 5% edits and new
#     texts) into a copy of the table with the bands alone and one with
#     both: the rates as a ratio, and the rows kept.
#
# Rows are 6 sentences drawn at random from the sentences of the corpus
# (distinct rows that share a sentence now and then, as articles do).
#
# Run: bench/lsh_sql.sh [CORPUS]   JSON lines {"id","text"}, gzip'd or not;
# default ../shared/data/en_docs.jsonl.gz. ROWS=200000, QUERIES=100,
# GUARDED=2000, REPS=2, WORKERS (parallel workers per query; default the
# server's setting). QUERY_ONLY=1: the query alone (3.), on tables filled
# first and indexed after (the way to reach 1M rows and more in minutes);
# no loading or guard figures. Uses the throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-200000}
QUERIES=${QUERIES:-100}
GUARDED=${GUARDED:-2000}
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
DROP TABLE IF EXISTS ls_sent, ls_rows, ls_fp, ls_both, ls_queries, ls_new;
DROP FUNCTION IF EXISTS ls_edit(text, int);
CREATE TABLE ls_sent (n serial, s text);
\\copy ls_sent (s) FROM '$work/sentences'
CREATE TABLE ls_rows AS
SELECT i AS id, string_agg(s.s, ' ' ORDER BY j) AS body
  FROM generate_series(1, $ROWS) i, generate_series(1, 6) j,
       LATERAL (SELECT s FROM ls_sent WHERE n = 1 + abs(hashint4(i * 7 + j)) % (SELECT count(*) FROM ls_sent)) s
 GROUP BY i;
-- 5% of the characters replaced by letters at scattered places.
CREATE FUNCTION ls_edit(t text, seed int) RETURNS text LANGUAGE sql IMMUTABLE AS \$f\$
    SELECT string_agg(CASE WHEN abs(hashint8(seed::bigint * 100003 + i)) % 20 = 0 THEN chr(97 + abs(hashint4(seed + i)) % 26)
                           ELSE substr(t, i, 1) END, '' ORDER BY i)
      FROM generate_series(1, length(t)) i
\$f\$;
CREATE TABLE ls_fp (id bigint PRIMARY KEY, body text NOT NULL,
                    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT count(*) FROM simhash_add_bands('ls_fp', 'fp', '4x16');
CREATE TABLE ls_both (LIKE ls_fp INCLUDING ALL);
SELECT count(*) FROM simhash_add_bands('ls_both', 'fp', '4x16');
SELECT simhash_add_lsh('ls_both', 'body');
SQL

# 2. Loading, interleaved (QUERY_ONLY=1: filled, then indexed).
: > "$work/load"
if [ "${QUERY_ONLY:-0}" = 1 ]; then
    REPS=0
    q -c "DROP INDEX $(q -At -c "SELECT string_agg(format('%I', c.relname), ', ') FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                                  WHERE i.indrelid IN ('ls_fp'::regclass, 'ls_both'::regclass) AND NOT i.indisprimary")"
    t0=$(date +%s.%N)
    for t in ls_fp ls_both; do
        q -c "INSERT INTO $t (id, body) SELECT id, body FROM ls_rows"
    done
    t1=$(date +%s.%N)
    # The rows are in both tables now; the disk they took goes to the
    # indexes (10M rows: about 9 GB).
    q -c "TRUNCATE ls_rows"
    q -c "SET maintenance_work_mem = '512MB'" -c "SELECT count(*) FROM simhash_add_bands('ls_fp', 'fp', '4x16')" \
      -c "SELECT count(*) FROM simhash_add_bands('ls_both', 'fp', '4x16')" >/dev/null
    t2=$(date +%s.%N)
    q -c "SET maintenance_work_mem = '512MB'" -c "SELECT simhash_add_lsh('ls_both', 'body')" >/dev/null
    t3=$(date +%s.%N)
    log "filled and indexed, $ROWS rows in each table: both filled in $(python3 -c "print(round($t1 - $t0, 1))") s," \
        "the band indexes of both built in $(python3 -c "print(round($t2 - $t1, 1))") s, the keys' GIN index in $(python3 -c "print(round($t3 - $t2, 1))") s"
fi
for rep in $(seq 1 "$REPS"); do
    for t in ls_fp ls_both; do
        q -c "TRUNCATE $t" -c "CHECKPOINT"
        t0=$(date +%s.%N)
        q -c "INSERT INTO $t (id, body) SELECT id, body FROM ls_rows"
        t1=$(date +%s.%N)
        echo "$t $(python3 -c "print($t1 - $t0)")" >> "$work/load"
        log "load, round $rep: $t $(python3 -c "print(round($t1 - $t0, 1))") s"
    done
done
q -c "VACUUM ANALYZE ls_fp" -c "VACUUM ANALYZE ls_both"

# 1. Space.
space=$(q <<'SQL'
SELECT format('keys column %s B a row (pg_column_size), GIN index %s B a row, band indexes %s B a row',
              (SELECT round(avg(pg_column_size(body_lsh))) FROM ls_both),
              round(pg_relation_size(i.indexrelid)::numeric / (SELECT count(*) FROM ls_both)),
              round((SELECT sum(pg_relation_size(x.indexrelid)) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
                      WHERE x.indrelid = 'ls_fp'::regclass AND c.relname LIKE '%band%')::numeric / (SELECT count(*) FROM ls_fp)))
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'ls_both'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'gin');
SQL
)
log "space: $space"

# 3. The verified query, interleaved per query.
q -c "CREATE TABLE ls_queries AS SELECT id, ls_edit(body, id::int) AS q FROM ls_fp ORDER BY hashint8(id) LIMIT $QUERIES"
# Custom plans: a generic plan would work out simhash($1) and
# simhash_lsh($1) again for every candidate row, either way (the subject
# of another benchmark).
# WORKERS=N: max_parallel_workers_per_gather for the queries (default:
# the server's).
q -At -c "SET client_min_messages = notice" -c "SET plan_cache_mode = force_custom_plan" \
  ${WORKERS:+-c "SET max_parallel_workers_per_gather = $WORKERS"} -f - 2>&1 <<'SQL' | grep -o 'Q .*' > "$work/query"
DO $$
DECLARE
    r record;
    t0 timestamptz;
    a double precision;
    b double precision;
    c double precision;
    d double precision;
    fa boolean;
    fb boolean;
    fc boolean;
    fd boolean;
BEGIN
    FOR r IN SELECT * FROM ls_queries LOOP
        t0 := clock_timestamp();
        fa := r.id IN (SELECT id FROM ls_fp WHERE fp <~> simhash(r.q) <= 11 AND simhash_similarity(body, r.q) >= 0.82);
        a := extract(epoch FROM clock_timestamp() - t0);
        t0 := clock_timestamp();
        fb := r.id IN (SELECT id FROM ls_both WHERE (fp <~> simhash(r.q) <= 11 OR body_lsh &&& simhash_lsh(r.q))
                                                AND simhash_similarity(body, r.q) >= 0.82);
        b := extract(epoch FROM clock_timestamp() - t0);
        t0 := clock_timestamp();
        fc := r.id IN (SELECT id FROM ls_both WHERE fp <~> simhash(r.q) <= 11 AND simhash_similarity(body, r.q) >= 0.82
                       UNION
                       SELECT id FROM ls_both WHERE body_lsh &&& simhash_lsh(r.q) AND simhash_similarity(body, r.q) >= 0.82);
        c := extract(epoch FROM clock_timestamp() - t0);
        -- The same UNION with the arrays' own && (estimated as a share of
        -- the table, not as keys).
        t0 := clock_timestamp();
        fd := r.id IN (SELECT id FROM ls_both WHERE fp <~> simhash(r.q) <= 11 AND simhash_similarity(body, r.q) >= 0.82
                       UNION
                       SELECT id FROM ls_both WHERE body_lsh && simhash_lsh(r.q) AND simhash_similarity(body, r.q) >= 0.82);
        d := extract(epoch FROM clock_timestamp() - t0);
        RAISE NOTICE 'Q % % % % % % % %', a, b, c, d, fa, fb, fc, fd;
    END LOOP;
END
$$;
SQL
cands=$(q -c "SELECT round(avg((SELECT count(*) FROM ls_both WHERE body_lsh &&& simhash_lsh(q))), 1) FROM ls_queries")

# 4. The verified guard and the verified load: copies with 5% edits of
# GUARDED / 2 rows and as many new texts (rows of other sentences).
[ "${QUERY_ONLY:-0}" = 1 ] && GUARDED=0
q <<SQL >/dev/null
CREATE TABLE ls_new AS
SELECT row_number() OVER () + 10000000 AS id, body FROM (
  SELECT ls_edit(body, id::int + 7) AS body FROM ls_rows ORDER BY hashint8(id + 1) LIMIT $GUARDED / 2) a
UNION ALL
SELECT i + 20000000, string_agg(s.s, ' ' ORDER BY j)
  FROM generate_series(1, $GUARDED / 2) i, generate_series(1, 6) j,
       LATERAL (SELECT s FROM ls_sent WHERE n = 1 + abs(hashint4(i * 13 + j + 999)) % (SELECT count(*) FROM ls_sent)) s
 GROUP BY i;
SELECT simhash_add_guard('ls_fp', 'fp', 11, 'skip', 'id', 'body', 0.82);
SELECT simhash_add_guard('ls_both', 'fp', 11, 'skip', 'id', 'body', 0.82);
SQL
: > "$work/guard"
for rep in $(seq 1 "$REPS"); do
    for t in ls_fp ls_both; do
        t0=$(date +%s.%N)
        q -c "SET client_min_messages = warning" -c "BEGIN" -c "INSERT INTO $t (id, body) SELECT id, body FROM ls_new ORDER BY id" \
          -c "SELECT count(*) FROM $t WHERE id > 10000000" -c "ROLLBACK" > "$work/kept"
        t1=$(date +%s.%N)
        echo "guard $t $(python3 -c "print($t1 - $t0)") $(tail -1 "$work/kept")" >> "$work/guard"
        t0=$(date +%s.%N)
        q -c "SET client_min_messages = warning" -c "BEGIN" -c "ALTER TABLE $t DISABLE TRIGGER USER" \
          -c "SELECT inserted FROM simhash_insert_new('$t', 'ls_new', 11, 'id', text_col => 'body', threshold => 0.82)" -c "ROLLBACK" > "$work/kept"
        t1=$(date +%s.%N)
        echo "load $t $(python3 -c "print($t1 - $t0)") $(tail -1 "$work/kept")" >> "$work/guard"
    done
done

python3 - "$work" "$space" "$cands" <<'PY'
import statistics, sys
work, space, cands = sys.argv[1], sys.argv[2], sys.argv[3]
load = {}
for line in open(f"{work}/load"):
    t, s = line.split(); load.setdefault(t, []).append(float(s))
a, b, c, d, fa, fb, fc, fd = [], [], [], [], 0, 0, 0, 0
for line in open(f"{work}/query"):
    _, x, y, z, w, p, r, u, v = line.split()
    a.append(float(x)); b.append(float(y)); c.append(float(z)); d.append(float(w))
    fa += p == "t"; fb += r == "t"; fc += u == "t"; fd += v == "t"
g = {}
for line in open(f"{work}/guard"):
    kind, t, s, kept = line.split(); g.setdefault((kind, t), []).append((float(s), int(kept)))
print("## The second candidate source in PostgreSQL (bench/lsh_sql.sh)")
print()
print(f"- space: {space}")
if load:
    bf, bb = statistics.median(load["ls_fp"]), statistics.median(load["ls_both"])
    print(f"- loading: bands alone {bf:.1f} s, bands and keys {bb:.1f} s: {bf / bb:.2f}x the rate")
ma, mb, mc, md = (statistics.median(x) for x in (a, b, c, d))
print(f"- verified query, median of {len(a)}: fingerprint alone {ma * 1000:.2f} ms; either source (&&&), OR {mb * 1000:.2f} ms ({mb / ma:.2f}x), "
      f"UNION {mc * 1000:.2f} ms ({mc / ma:.2f}x); the UNION with the arrays' && {md * 1000:.2f} ms ({md / ma:.2f}x); "
      f"originals found {fa}, {fb}, {fc} and {fd} of {len(a)}; rows sharing a key with a query: {cands} on average")
for kind in ("guard", "load") if g else ():
    f = statistics.median(s for s, _ in g[(kind, "ls_fp")]); bo = statistics.median(s for s, _ in g[(kind, "ls_both")])
    kf, kb = g[(kind, "ls_fp")][0][1], g[(kind, "ls_both")][0][1]
    print(f"- verified {kind}: fingerprint alone {f:.2f} s ({kf} kept), both {bo:.2f} s ({kb} kept): {f / bo:.2f}x the rate")
PY
# KEEP=1: the tables stay, for a closer look.
[ "${KEEP:-0}" = 1 ] || q -c "DROP TABLE ls_sent, ls_rows, ls_fp, ls_both, ls_queries, ls_new" -c "DROP FUNCTION ls_edit(text, int)"
