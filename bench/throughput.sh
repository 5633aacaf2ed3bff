#!/usr/bin/env bash
# Fingerprint throughput: SQL `simhash(text)` against jieba-rs segmentation
# alone and ClickHouse's SimHash functions, on one core, over the same
# corpus.
#
# What is measured, in MB/s of the corpus's UTF-8 bytes (1 MB = 10^6 bytes):
#   segmentation      the baseline: jieba-rs alone, `Jieba::new()` then
#                     `jieba.cut(text, true)` on each raw text (precise mode,
#                     HMM on, the segmenter and mode the extension uses), in
#                     the `segment-throughput` binary of this crate; only the
#                     pass over the texts is timed, not loading or parsing
#   rust fingerprint  `Fingerprinter::fingerprint` of simhash-core over the
#                     same texts: all of what simhash() computes, without
#                     PostgreSQL (the gap to SQL is the SQL overhead)
#   sql simhash()     `SELECT count(simhash(body)) FROM throughput_docs` with
#                     max_parallel_workers_per_gather = 0, timed inside the
#                     server with clock_timestamp(), after one warm-up run
#                     of the whole corpus and one untimed run of the same
#                     query in the same session (a session's first query
#                     fills its catalog caches: about a millisecond, a
#                     tenth of a run over zh_news)
#   sql read only     the same with `ascii(body)` for `simhash(body)`:
#                     PostgreSQL reading every text whole (out of its TOAST
#                     table, decompressed) and looking at its first
#                     character; what any function of the whole text pays
#                     before it starts (simhash() decodes pglz itself, faster:
#                     bench/detoast.sh; for it the budget below is an upper
#                     bound of what reading costs)
#   rust hot scan     the first pass of the Rust fingerprint alone: the bytes
#                     read and each feature counted, no weights and no
#                     counters (`hot_scan` of the `fingerprint-stages`
#                     binary of this crate, median of 3 passes a round)
# and the ratio sql / segmentation, whose target is >= 0.8.
#   ngramSimHashUTF8, wordShingleSimHashUTF8
#                     ClickHouse's SimHash functions (chDB 4.4.0 from PyPI,
#                     in .cache/chdb-venv), `SELECT sum(f(text))` over the
#                     same texts in an in-memory table, max_threads = 1
#                     (bench/chdb_simhash.py), each query after one untimed
#                     run of it in the same session, the median of three
#                     runs a round (chDB stalls now and then); loading is
#                     not timed
#   ngramSimHashUTF8 over MergeTree
#                     the same over a MergeTree table (ClickHouse's own
#                     storage, LZ4-compressed by default): what ClickHouse
#                     pays to read its texts back, as PostgreSQL does
# and the ratio SQL simhash() / ngramSimHashUTF8 (issue target >= 1.0), and
# that ratio's budget: of ClickHouse's time per byte, what is left for the
# function once PostgreSQL has read the texts (sql read only), against
# what the Rust scan alone takes, and what is then left per distinct
# feature for its weight and its 64 counters, against what they take now.
#
# The machine may be shared and noisy, so the rounds interleave (baseline,
# SQL, baseline, SQL, ...) and each figure is the median of its rounds.
#
# Run it from anywhere in the checkout:
#   bench/throughput.sh [CORPUS]   JSON lines {"id", "text"}, gzip'd or not;
#                                  default ../shared/data/zh_news.jsonl.gz
#                                  beside the checkout
#   ROUNDS=7 bench/throughput.sh   rounds of each side (default 5, minimum 3)
#   STAGES=1 bench/throughput.sh   also time the steps of the Rust
#                                  fingerprint (NFKC, segmentation, IDF, ...)
#   SIMD=avx2 bench/throughput.sh  cap the fingerprint's vector instructions
#                                  at a level (baseline, avx2,
#                                  avx512-novbmi or avx512; it can only
#                                  lower what the processor has;
#                                  avx512-novbmi is AVX-512 as on a
#                                  processor without VBMI): SIMHASH_SIMD
#                                  for the Rust binaries and for the
#                                  server, which is restarted with it.
#                                  Each figure names the kernels that ran
#                                  and the processor (its model, and which
#                                  of avx2, avx512f/bw/vl and avx512vbmi it
#                                  has); ClickHouse picks its own
#   SQL=0 bench/throughput.sh      the Rust core against ngramSimHashUTF8
#                                  only: no PostgreSQL (nothing installed,
#                                  no cluster started), and SIMD may name
#                                  several levels, which then run side by
#                                  side, interleaved with ClickHouse in
#                                  each round (the fingerprint the median
#                                  of three passes a round, as
#                                  ClickHouse's of three runs):
#                                    SQL=0 ROUNDS=9 SIMD="avx2 avx512-novbmi avx512" bench/throughput.sh
#   COMPRESSION=lz4 bench/throughput.sh
#                                  store the texts with lz4 instead of
#                                  PostgreSQL's default pglz (the column's
#                                  COMPRESSION; pglz is the default here
#                                  too): SQL simhash() reads every text
#                                  back, and what decompressing costs is
#                                  the difference between the two runs
# It needs the extension installed as a release build (scripts/install.sh),
# (re)starts the throwaway cluster with scripts/cluster.sh (SIMHASH_PGPORT
# and SIMHASH_PGDATA pick another one) and reloads the corpus into the
# table throughput_docs of the database simhash_bench, made if missing.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/zh_news.jsonl.gz}
ROUNDS=${ROUNDS:-5}
COMPRESSION=${COMPRESSION:-pglz}
case "$COMPRESSION" in pglz | lz4) ;; *) die "COMPRESSION must be pglz or lz4, not '$COMPRESSION'" ;; esac
SIMD=${SIMD:-}
SQL=${SQL:-1}
case "$SQL" in 0 | 1) ;; *) die "SQL must be 0 or 1, not '$SQL'" ;; esac
for l in $SIMD; do
    case "$l" in baseline | avx2 | avx512-novbmi | avx512) ;; *) die "SIMD must be baseline, avx2, avx512-novbmi or avx512, not '$l'" ;; esac
done
[ "$SQL" = 0 ] || [ "$(wc -w <<<"$SIMD")" -le 1 ] || die "several levels in SIMD only with SQL=0"
# The cap, for the binaries and for the server (scripts/common.sh's
# start_cluster passes it on); with SQL=0 the levels are asked for one by
# one instead.
if [ -n "$SIMD" ] && [ "$SQL" = 1 ]; then export SIMHASH_SIMD=$SIMD; fi
# The kernels of a level's name, as the figures name them.
kernels_of() {
    case $1 in
        avx512) echo "AVX-512 with VBMI" ;;
        avx512-novbmi) echo "AVX-512 without VBMI" ;;
        avx2) echo AVX2 ;;
        baseline) echo baseline ;;
        *) echo "unknown ($1)" ;;
    esac
}
# The processor: its model, and which of the flags that pick the kernels
# it has (a flag it lacks is shown with a minus).
processor() {
    local model flags='' f
    model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
    for f in avx2 avx512f avx512bw avx512vl avx512vbmi; do
        if grep -qw "$f" /proc/cpuinfo 2>/dev/null; then flags="$flags $f"; else flags="$flags -$f"; fi
    done
    echo "${model:-unknown model}:$flags"
}
PROCESSOR=$(processor)
export PGCLIENTENCODING=UTF8 PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS (give a JSON-lines file, gzip'd or not, as the first argument)"
CORPUS=$(cd "$(dirname "$CORPUS")" && pwd)/$(basename "$CORPUS")
# PostgreSQL text holds no NUL character (en_docs has a few, in spam): every
# side reads the corpus without them, so all fingerprint the same bytes.
CLEAN=$(mktemp --suffix .jsonl)
trap 'rm -f "$CLEAN"' EXIT
zcat -f -- "$CORPUS" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    d["text"] = (d.get("text") or "").replace("\x00", "")
    sys.stdout.write(json.dumps(d, ensure_ascii=False) + "\n")
' > "$CLEAN"
NAME=$(basename "$CORPUS")
CORPUS=$CLEAN
cd "$ROOT"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 3 ] || die "ROUNDS must be a number >= 3, not '$ROUNDS'"
stage_flag=()
[ "${STAGES:-0}" = 0 ] || stage_flag=(--stages)

log "building the baseline (cargo build --release -p simhash-bench)"
cargo build --release --quiet -p simhash-bench
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/segment-throughput
[ -x "$BIN" ] || die "no binary at $BIN"

# The value of KEY in key=value lines on stdin.
value() { sed -n "s/^$1=//p" | head -n 1; }
# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
STAGES_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/fingerprint-stages
[ -x "$STAGES_BIN" ] || die "no binary at $STAGES_BIN"

if [ "$SQL" = 0 ]; then
    # The Rust core at each level against ngramSimHashUTF8, no PostgreSQL.
    [ -n "$SIMD" ] || SIMD=$("$STAGES_BIN" --rounds 1 <"$CORPUS" | value simd)
    levels=$(tr -s ' ' ',' <<<"$SIMD" | sed 's/^,//; s/,$//')
    log "the Rust core at $levels against ngramSimHashUTF8, $ROUNDS interleaved rounds (processor: $PROCESSOR)"
    CHDB_PYTHON=$(chdb_python)
    first=$("$BIN" --rounds 1 --levels "$levels" <"$CORPUS")
    docs=$(value docs <<<"$first")
    bytes=$(value bytes <<<"$first")
    ch_first=$("$CHDB_PYTHON" "$ROOT/bench/chdb_simhash.py" "$CORPUS" 1 ngram)
    [ "$(value docs <<<"$ch_first") $(value bytes <<<"$ch_first")" = "$docs $bytes" ] \
        || die "chDB read $(value docs <<<"$ch_first") texts of $(value bytes <<<"$ch_first") bytes, the binary $docs of $bytes"
    declare -A fp_of
    ngram=()
    for ((i = 1; i <= ROUNDS; i++)); do
        out=$("$BIN" --rounds 1 --levels "$levels" <"$CORPUS")
        line="round $i/$ROUNDS:"
        for l in $SIMD; do
            fp_of[$l]+="$(value "fingerprint_${l}_s" <<<"$out") "
            line="$line $l $(value "fingerprint_${l}_s" <<<"$out") s,"
        done
        ngram+=("$(value ngram_s <<<"$("$CHDB_PYTHON" "$ROOT/bench/chdb_simhash.py" "$CORPUS" 1 ngram)")")
        log "$line ngramSimHashUTF8 ${ngram[-1]} s"
    done
    ngram_s=$(printf '%s\n' "${ngram[@]}" | median)
    echo
    echo "== the Rust core against ngramSimHashUTF8: median of $ROUNDS interleaved rounds, one core, no PostgreSQL =="
    awk -v name="$NAME" -v docs="$docs" -v bytes="$bytes" 'BEGIN {
        printf "corpus                  %s: %d texts, %.3f MB of UTF-8 (1 MB = 10^6 bytes)\n", name, docs, bytes / 1e6 }'
    awk -v ngram="$ngram_s" -v bytes="$bytes" 'BEGIN {
        printf "ngramSimHashUTF8        %7.2f MB/s  (%.4f s; ClickHouse in chDB, max_threads = 1, Memory table)\n", bytes / 1e6 / ngram, ngram }'
    for l in $SIMD; do
        s=$(tr ' ' '\n' <<<"${fp_of[$l]}" | grep . | median)
        awk -v l="$l" -v k="$(kernels_of "$l")" -v s="$s" -v ngram="$ngram_s" -v bytes="$bytes" -v cpu="$PROCESSOR" 'BEGIN {
            printf "rust fingerprint %-14s %7.2f MB/s  (%.4f s)  ratio rust/ngram %5.2f  [%s; %s]\n", l, bytes / 1e6 / s, s, ngram / s, k, cpu }'
    done
    exit 0
fi

bench_db
# What the server was started with: its postmaster's environment.
server_simd=unset
if pid=$(as_server head -n 1 "$PGDATA_DIR/postmaster.pid" 2>/dev/null) \
    && env_of=$(as_server cat "/proc/$pid/environ" 2>/dev/null | tr '\0' '\n'); then
    server_simd=$(sed -n 's/^SIMHASH_SIMD=//p' <<<"$env_of" | head -n 1)
    server_simd=${server_simd:-unset}
else
    server_simd="not readable"
fi
[ "$server_simd" = "${SIMHASH_SIMD:-unset}" ] \
    || die "the server runs with SIMHASH_SIMD $server_simd, not ${SIMHASH_SIMD:-unset}"

log "loading $NAME into $BENCH_DB.throughput_docs ($COMPRESSION)"
# Each JSON line is one CSV field: valid JSON holds no raw control
# characters, so \x01 and \x02 as quote and delimiter never occur in it.
zcat -f -- "$CORPUS" | psql_db \
    -c "DROP TABLE IF EXISTS throughput_raw, throughput_docs" \
    -c "CREATE UNLOGGED TABLE throughput_raw (doc jsonb)" \
    -c "\\copy throughput_raw FROM pstdin WITH (FORMAT csv, QUOTE e'\\x01', DELIMITER e'\\x02')" \
    -c "CREATE TABLE throughput_docs (id text, body text COMPRESSION $COMPRESSION)" \
    -c "INSERT INTO throughput_docs SELECT doc->>'id', doc->>'text' FROM throughput_raw" \
    -c "DROP TABLE throughput_raw" \
    -c "VACUUM ANALYZE throughput_docs"
psql_db <<'SQL'
-- Seconds of `SELECT count(<expr>) FROM throughput_docs`, run once untimed
-- first, so that the timed run is not the session's first (catalog caches,
-- the TOAST table opened: about a millisecond).
CREATE OR REPLACE FUNCTION throughput_seconds(expr text) RETURNS double precision
LANGUAGE plpgsql
SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    query text := format('SELECT count(%s) FROM throughput_docs', expr);
    t0 timestamptz;
BEGIN
    EXECUTE query;
    t0 := clock_timestamp();
    EXECUTE query;
    RETURN extract(epoch FROM clock_timestamp() - t0);
END
$$;
SQL

# One run of the baseline binary: its key=value lines.
run_rust() { zcat -f -- "$CORPUS" | "$BIN" --rounds 1 "${stage_flag[@]}"; }

log "warming up, and checking that SQL and Rust give the same fingerprints"
first=$(run_rust)
docs=$(value docs <<<"$first")
bytes=$(value bytes <<<"$first")
read -r sql_docs sql_bytes < <(psql_db -F ' ' -c \
    "SELECT count(*), coalesce(sum(octet_length(body)), 0) FROM throughput_docs")
[ "$sql_docs $sql_bytes" = "$docs $bytes" ] \
    || die "the table holds $sql_docs texts of $sql_bytes bytes, the binary read $docs of $bytes"
read -r sql_fps sql_xor < <(psql_db -F ' ' -c "SET max_parallel_workers_per_gather = 0" -c \
    "SELECT count(h), coalesce(bit_xor(h::bigint), 0) FROM (SELECT simhash(body) AS h FROM throughput_docs) s")
# The level the Rust binary used: the server, on the same processor with
# the same SIMHASH_SIMD, detects the same.
level=$(value simd <<<"$first")
KERNELS="$(kernels_of "$level"); $PROCESSOR"
log "kernels: $KERNELS (processor: $(instruction_set); SIMHASH_SIMD ${SIMHASH_SIMD:-unset}, the server's too)"
rust_fps=$(value fingerprints <<<"$first")
rust_xor=$(value fingerprint_xor <<<"$first")
if [ "$sql_fps $sql_xor" != "$rust_fps $rust_xor" ]; then
    log "WARNING: SQL and Rust fingerprints differ (count/xor $sql_fps/$sql_xor against $rust_fps/$rust_xor):"
    log "WARNING: the installed extension is not this checkout's build; run scripts/install.sh"
fi

CHDB_PYTHON=$(chdb_python)
ch_first=$("$CHDB_PYTHON" "$ROOT/bench/chdb_simhash.py" "$CORPUS" 1)
[ "$(value docs <<<"$ch_first") $(value bytes <<<"$ch_first")" = "$docs $bytes" ] \
    || die "chDB read $(value docs <<<"$ch_first") texts of $(value bytes <<<"$ch_first") bytes, the binary $docs of $bytes"

seg=() fp=() fp2=() sql=() read=() scan=() ngram=() ngram_mt=() word=() stage_lines=()
distinct=
for ((i = 1; i <= ROUNDS; i++)); do
    out=$(run_rust)
    seg+=("$(value segment_s <<<"$out")")
    fp+=("$(value fingerprint_s <<<"$out")")
    fp2+=("$(value fingerprint_v2_s <<<"$out")")
    [ ${#stage_flag[@]} = 0 ] || stage_lines+=("$out")
    sql+=("$(psql_db -c "SELECT throughput_seconds('simhash(body)')")")
    # The same scan, each text read whole (ascii() detoasts its argument)
    # and only its first character looked at.
    read+=("$(psql_db -c "SELECT throughput_seconds('ascii(body)')")")
    stages=$("$STAGES_BIN" --rounds 3 <"$CORPUS")
    [ "$(value simd <<<"$stages")" = "$level" ] || die "fingerprint-stages ran at $(value simd <<<"$stages"), not $level"
    scan+=("$(value hot_scan_s <<<"$stages")")
    distinct=$(value distinct_features <<<"$stages")
    ch=$("$CHDB_PYTHON" "$ROOT/bench/chdb_simhash.py" "$CORPUS" 1)
    ngram+=("$(value ngram_s <<<"$ch")")
    ngram_mt+=("$(value ngram_mergetree_s <<<"$ch")")
    word+=("$(value word_s <<<"$ch")")
    log "round $i/$ROUNDS: segmentation ${seg[-1]} s, rust fingerprint ${fp[-1]} s, rust hot scan ${scan[-1]} s, sql simhash() ${sql[-1]} s, sql read only ${read[-1]} s, ngramSimHashUTF8 ${ngram[-1]} s (MergeTree ${ngram_mt[-1]} s), wordShingleSimHashUTF8 ${word[-1]} s"
done

seg_s=$(printf '%s\n' "${seg[@]}" | median)
fp_s=$(printf '%s\n' "${fp[@]}" | median)
fp2_s=$(printf '%s\n' "${fp2[@]}" | median)
sql_s=$(printf '%s\n' "${sql[@]}" | median)
read_s=$(printf '%s\n' "${read[@]}" | median)
scan_s=$(printf '%s\n' "${scan[@]}" | median)
ngram_s=$(printf '%s\n' "${ngram[@]}" | median)
ngram_mt_s=$(printf '%s\n' "${ngram_mt[@]}" | median)
word_s=$(printf '%s\n' "${word[@]}" | median)

echo
echo "== fingerprint throughput: median of $ROUNDS interleaved rounds, one core =="
awk -v name="$NAME" -v compression="$COMPRESSION" -v docs="$docs" -v bytes="$bytes" \
    -v seg="$seg_s" -v fp="$fp_s" -v fp2="$fp2_s" -v sql="$sql_s" -v read="$read_s" -v scan="$scan_s" \
    -v ngram="$ngram_s" -v ngram_mt="$ngram_mt_s" -v word="$word_s" -v distinct="$distinct" \
    -v kernels="$KERNELS" -v cpu="$(instruction_set)" -v cap="${SIMHASH_SIMD:-unset}" 'BEGIN {
    mb = bytes / 1e6
    printf "corpus                  %s: %d texts, %.3f MB of UTF-8 (1 MB = 10^6 bytes)\n", name, docs, mb
    printf "kernels                 %s (processor: %s; SIMHASH_SIMD %s, the server'"'"'s too)\n", kernels, cpu, cap
    printf "segmentation alone      %7.2f MB/s  (%.3f s; jieba-rs cut, HMM on: the baseline)\n", mb / seg, seg
    printf "rust fingerprint        %7.2f MB/s  (%.3f s; simhash-core, definition 3, no PostgreSQL) [%s]\n", mb / fp, fp, kernels
    printf "rust fingerprint v2     %7.2f MB/s  (%.3f s; definition 2: jieba words)\n", mb / fp2, fp2
    printf "rust hot scan           %7.2f MB/s  (%.4f s; definition 3 first pass alone: no weights, no counters) [%s]\n", mb / scan, scan, kernels
    printf "sql simhash()           %7.2f MB/s  (%.3f s; count(simhash(body)), no parallel workers, %s) [%s]\n", mb / sql, sql, compression, kernels
    printf "sql read only           %7.2f MB/s  (%.4f s; count(ascii(body)): each text read whole, no fingerprint)\n", mb / read, read
    printf "ratio sql/segmentation  %7.2f       (target >= 0.80)\n", seg / sql
    printf "ratio sql/rust          %7.2f       (what the SQL layer keeps of the Rust speed)\n", fp / sql
    printf "ratio v3/v2 (rust)      %7.2f       (definition 3 against 2, same run)\n", fp2 / fp
    printf "ngramSimHashUTF8        %7.2f MB/s  (%.3f s; ClickHouse in chDB, max_threads = 1, Memory table)\n", mb / ngram, ngram
    printf "  over MergeTree        %7.2f MB/s  (%.3f s; the same over ClickHouse'"'"'s own compressed storage)\n", mb / ngram_mt, ngram_mt
    printf "wordShingleSimHashUTF8  %7.2f MB/s  (%.3f s; ClickHouse in chDB, max_threads = 1, Memory table)\n", mb / word, word
    printf "ratio sql/ngram         %7.2f       (target >= 1.0) [%s]\n", ngram / sql, kernels
    printf "ratio sql/ngram over MergeTree %.2f\n", ngram_mt / sql
    printf "ratio rust/ngram        %7.2f       [%s]\n", ngram / fp, kernels
    ns = 1e9 / bytes
    left = ngram - read
    printf "\n== the budget of ratio 1.0, in ns per byte of UTF-8 ==\n"
    printf "ngramSimHashUTF8 takes                       %6.3f\n", ngram * ns
    printf "PostgreSQL reading the texts (read only)     %6.3f\n", read * ns
    printf "left for simhash() itself                    %6.3f\n", left * ns
    printf "the Rust fingerprint takes                   %6.3f  (%.2f of what is left)\n", fp * ns, fp / left
    printf "of which the scan alone                      %6.3f  (%.2f of what is left)\n", scan * ns, scan / left
    printf "per distinct feature (%d, one per %.1f bytes), in ns:\n", distinct, bytes / distinct
    printf "  its weight and 64 counters take now        %6.2f\n", (fp - scan) * 1e9 / distinct
    printf "  left for them once the scan is done        %6.2f\n", (left - scan) * 1e9 / distinct
}'
if awk -v fp="$fp_s" -v sql="$sql_s" 'BEGIN { exit !(fp / sql < 0.5) }'; then
    echo "warning: SQL runs at under half the Rust speed: is the installed library a debug"
    echo "build (cargo pgrx test installs one)? Put the release build back with scripts/install.sh."
fi

if [ ${#stage_lines[@]} -gt 0 ]; then
    echo
    echo "== where the Rust fingerprint's time goes: median s over the corpus =="
    echo "(each step is described at the top of bench/src/bin/segment_throughput.rs)"
    for key in segment normalize split segment_pieces tokens idf accumulate tokens_idf tokens_accumulate fingerprint; do
        s=$(for l in "${stage_lines[@]}"; do value "${key}_s" <<<"$l"; done | median)
        awk -v k="$key" -v s="$s" -v bytes="$bytes" \
            'BEGIN { printf "%-18s %7.4f s  %8.2f MB/s\n", k, s, bytes / 1e6 / s }'
    done
fi
