#!/usr/bin/env bash
# The weights and counters of definition 3 at each level of vector
# instructions this processor has (crates/simhash-core/src/cpu.rs), side by
# side: `fingerprint-stages --simd LEVEL` over the same corpus, the levels
# interleaved round by round, median nanoseconds per byte of UTF-8 of the
# whole fingerprint (`fingerprint`) and of the scan alone (`hot_scan`, the
# part no level changes), and each level's speed against the baseline's in
# the same run. Every level gives the same fingerprints (`replica_ok=1`
# checks that each run's fingerprints are those of the definition).
#
#   bench/simd.sh [CORPUS]          JSON lines {"id", "text"}, gzip'd or
#                                   not; default ../shared/data/zh_news.jsonl.gz
#   ROUNDS=7 bench/simd.sh          rounds (default 5, minimum 3)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/zh_news.jsonl.gz}
ROUNDS=${ROUNDS:-5}
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 3 ] || die "ROUNDS must be a number >= 3, not '$ROUNDS'"
cd "$ROOT"
log "building the binary (cargo build --release -p simhash-bench)"
cargo build --release --quiet -p simhash-bench
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/fingerprint-stages
TEXTS=$(mktemp)
trap 'rm -f "$TEXTS"' EXIT
zcat -f -- "$CORPUS" > "$TEXTS"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
value() { sed -n "s/^$1=//p" | head -n 1; }

# The levels this processor has: the binary says which one it used.
levels=()
for level in baseline avx2 avx512; do
    used=$("$BIN" --rounds 1 --simd "$level" < "$TEXTS" | value simd)
    [ "$used" = "$level" ] && levels+=("$level") || log "this processor has no $level: skipped"
done

declare -A fp scan
for ((i = 1; i <= ROUNDS; i++)); do
    for level in "${levels[@]}"; do
        out=$("$BIN" --rounds 1 --simd "$level" < "$TEXTS")
        [ "$(value replica_ok <<<"$out")" = 1 ] || die "$level: the fingerprints are not those of the definition"
        fp[$level]+="$(value fingerprint_ns_per_byte <<<"$out") "
        scan[$level]+="$(value hot_scan_ns_per_byte <<<"$out") "
    done
    log "round $i/$ROUNDS done"
done

echo
echo "== definition 3 by level of vector instructions: $(basename "$CORPUS"), median of $ROUNDS interleaved rounds, ns per byte =="
base=$(tr ' ' '\n' <<<"${fp[baseline]}" | grep . | median)
for level in "${levels[@]}"; do
    f=$(tr ' ' '\n' <<<"${fp[$level]}" | grep . | median)
    s=$(tr ' ' '\n' <<<"${scan[$level]}" | grep . | median)
    awk -v l="$level" -v f="$f" -v s="$s" -v b="$base" \
        'BEGIN { printf "%-9s fingerprint %6.3f  scan %6.3f  weights and counters %6.3f  speed against baseline %5.2fx\n", l, f, s, f - s, b / f }'
done
