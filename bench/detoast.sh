#!/usr/bin/env bash
# What reading texts stored compressed with pglz costs SQL simhash(), which
# decodes pglz itself (crates/simhash-core/src/pglz.rs, src/detoast.rs),
# against what it costs PostgreSQL's own decoder, in one run.
#
# The corpus goes into two tables: detoast_pglz, stored as PostgreSQL
# stores text by default (pglz where a row is long and pglz saves a
# quarter), and detoast_plain, the same texts never compressed (STORAGE
# EXTERNAL). In interleaved rounds, each the median of three runs of each
# query after an untimed one, on one core (no parallel workers):
#   simhash      SELECT count(simhash(body)): the texts decoded by the core
#   read only    SELECT count(ascii(body)): each text read whole, decoded
#                by PostgreSQL (ascii() detoasts its argument), and only
#                its first character looked at
# over both tables. What decoding costs each is its time over detoast_pglz
# less its time over detoast_plain, in the same round (the rest, TOAST
# fetches and the fingerprint itself, is the same on both tables); the
# median of the rounds, in ns per byte of the texts that are compressed,
# and the ratio: PostgreSQL's cost over simhash()'s.
#
#   bench/detoast.sh [CORPUS]    JSON lines {"id", "text"}, gzip'd or not;
#                                default ../shared/data/zh_news.jsonl.gz
#   ROUNDS=15 bench/detoast.sh   rounds (default 11, minimum 3)
# It needs the extension installed as a release build (scripts/install.sh)
# and (re)starts the throwaway cluster as bench/throughput.sh does.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/zh_news.jsonl.gz}
ROUNDS=${ROUNDS:-11}
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS (give a JSON-lines file, gzip'd or not, as the first argument)"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 3 ] || die "ROUNDS must be a number >= 3, not '$ROUNDS'"
NAME=$(basename "$CORPUS")
export PGCLIENTENCODING=UTF8 PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

bench_db

log "loading $NAME into $BENCH_DB.detoast_pglz and detoast_plain"
# Each JSON line is one CSV field (see bench/throughput.sh); NUL characters,
# which text cannot hold, are dropped first.
zcat -f -- "$CORPUS" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    d["text"] = (d.get("text") or "").replace("\x00", "")
    sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
' | psql_db \
    -c "DROP TABLE IF EXISTS detoast_raw, detoast_pglz, detoast_plain" \
    -c "CREATE UNLOGGED TABLE detoast_raw (doc jsonb)" \
    -c "\\copy detoast_raw FROM pstdin WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')" \
    -c "CREATE TABLE detoast_pglz (body text COMPRESSION pglz)" \
    -c "CREATE TABLE detoast_plain (body text)" \
    -c "ALTER TABLE detoast_plain ALTER body SET STORAGE EXTERNAL" \
    -c "INSERT INTO detoast_pglz SELECT doc->>'text' FROM detoast_raw" \
    -c "INSERT INTO detoast_plain SELECT doc->>'text' FROM detoast_raw" \
    -c "DROP TABLE detoast_raw" \
    -c "VACUUM ANALYZE detoast_pglz, detoast_plain"
psql_db <<'SQL'
-- Seconds of `SELECT count(<expr>) FROM <tab>`: the median of three runs
-- after an untimed one.
CREATE OR REPLACE FUNCTION detoast_seconds(tab text, expr text) RETURNS double precision
LANGUAGE plpgsql
SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    query text := format('SELECT count(%s) FROM %I', expr, tab);
    t0 timestamptz;
    runs double precision[] := '{}';
BEGIN
    EXECUTE query;
    FOR i IN 1..3 LOOP
        t0 := clock_timestamp();
        EXECUTE query;
        runs := runs || extract(epoch FROM clock_timestamp() - t0)::double precision;
    END LOOP;
    RETURN (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY r) FROM unnest(runs) r);
END
$$;
SQL
read -r docs compressed raw_compressed stored_compressed same < <(psql_db -F ' ' -c "
    SELECT count(*), count(*) FILTER (WHERE pg_column_compression(p.body) IS NOT NULL),
           coalesce(sum(octet_length(p.body)) FILTER (WHERE pg_column_compression(p.body) IS NOT NULL), 0),
           coalesce(sum(pg_column_size(p.body)) FILTER (WHERE pg_column_compression(p.body) IS NOT NULL), 0),
           (SELECT count(*) = (SELECT count(*) FROM detoast_plain)
                   AND bit_xor(simhash(body)::bigint) = (SELECT bit_xor(simhash(body)::bigint) FROM detoast_plain)
              FROM detoast_pglz)
    FROM detoast_pglz p")
[ "$same" = t ] || die "simhash() over the compressed texts differs from simhash() over the same texts uncompressed"
[ "$compressed" -gt 0 ] || die "no text of $NAME was stored compressed: nothing to measure"
log "$compressed of $docs texts stored compressed ($raw_compressed bytes in $stored_compressed); the same fingerprints from both tables"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sp=() se=() rp=() re=() ours=() theirs=()
for ((i = 1; i <= ROUNDS; i++)); do
    read -r a b c d < <(psql_db -F ' ' -c "SELECT detoast_seconds('detoast_pglz', 'simhash(body)'),
        detoast_seconds('detoast_plain', 'simhash(body)'),
        detoast_seconds('detoast_pglz', 'ascii(body)'),
        detoast_seconds('detoast_plain', 'ascii(body)')")
    sp+=("$a") se+=("$b") rp+=("$c") re+=("$d")
    ours+=("$(awk -v p="$a" -v e="$b" 'BEGIN { print p - e }')")
    theirs+=("$(awk -v p="$c" -v e="$d" 'BEGIN { print p - e }')")
    log "round $i/$ROUNDS: simhash() $a s (pglz) $b s (plain); read only $c s (pglz) $d s (plain)"
done
m() { printf '%s\n' "$@" | median; }
sp_s=$(m "${sp[@]}") se_s=$(m "${se[@]}") rp_s=$(m "${rp[@]}") re_s=$(m "${re[@]}")
ours_s=$(m "${ours[@]}") theirs_s=$(m "${theirs[@]}")
echo
echo "== decoding pglz: median of $ROUNDS interleaved rounds, one core =="
echo "corpus                 $NAME: $docs texts, $compressed stored compressed ($raw_compressed bytes in $stored_compressed)"
awk -v sp="$sp_s" -v se="$se_s" -v rp="$rp_s" -v re="$re_s" -v o="$ours_s" -v t="$theirs_s" -v n="$raw_compressed" 'BEGIN {
    printf "simhash()   pglz %8.4f s  plain %8.4f s\n", sp, se
    printf "read only   pglz %8.4f s  plain %8.4f s\n", rp, re
    printf "decoding in simhash() (the core)     %6.3f ns per compressed byte\n", o * 1e9 / n
    printf "decoding in PostgreSQL (read only)   %6.3f ns per compressed byte\n", t * 1e9 / n
    if (o > 0) printf "ratio PostgreSQL / simhash()         %6.2f\n", t / o
    else print "ratio PostgreSQL / simhash()         (simhash() decoded in no measurable time)"
}'
