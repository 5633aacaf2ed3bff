#!/usr/bin/env bash
# Two commits' hot path side by side: the `fingerprint-stages` binary of
# each (bench/src/bin/fingerprint_stages.rs), built in release mode from a
# temporary worktree with its own target directory, run over the same
# corpus in interleaved rounds; the median of each pass's nanoseconds per
# byte (`hot_scan`, `hot_weigh`, `fingerprint`) for each commit, and the
# speed of the second against the first in the same run (each round the
# median of 3 passes). Both must give the fingerprints of the definition
# (`replica_ok=1`). For the effect of one change on the speed, on a noisy
# machine.
#
#   bench/commits.sh OLD NEW [CORPUS]   CORPUS: JSON lines {"id", "text"},
#                                       gzip'd or not; default
#                                       ../shared/data/zh_news.jsonl.gz
#   ROUNDS=9 bench/commits.sh ...       rounds (default 7, minimum 3)
#   SIMD=avx2 bench/commits.sh ...      both at a level of vector
#                                       instructions (fingerprint-stages
#                                       --simd; default the widest there is)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: bench/commits.sh OLD NEW [CORPUS]"
OLD=$1 NEW=$2
CORPUS=${3:-$ROOT/../shared/data/zh_news.jsonl.gz}
ROUNDS=${ROUNDS:-7}
simd=()
[ -z "${SIMD:-}" ] || simd=(--simd "$SIMD")
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 3 ] || die "ROUNDS must be a number >= 3, not '$ROUNDS'"
for c in "$OLD" "$NEW"; do
    git -C "$ROOT" rev-parse --verify --quiet "$c^{commit}" >/dev/null || die "no commit $c"
done

work=$(mktemp -d)
cleanup() {
    for side in old new; do
        git -C "$ROOT" worktree remove --force "$work/$side" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
zcat -f -- "$CORPUS" > "$work/corpus.jsonl"
for side in old new; do
    commit=$OLD
    [ "$side" = new ] && commit=$NEW
    git -C "$ROOT" worktree add --quiet --detach "$work/$side" "$commit"
    log "building fingerprint-stages of $commit"
    (cd "$work/$side" && CARGO_TARGET_DIR=$work/target-$side cargo build --release --quiet -p simhash-bench)
done

value() { sed -n "s/^$1=//p" | head -n 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A ns
passes=(hot_scan hot_weigh fingerprint)
for ((i = 1; i <= ROUNDS; i++)); do
    for side in old new; do
        out=$("$work/target-$side/release/fingerprint-stages" --rounds 3 "${simd[@]}" < "$work/corpus.jsonl")
        [ "$(value replica_ok <<<"$out")" = 1 ] || die "$side: the fingerprints are not those of the definition"
        for pass in "${passes[@]}"; do
            ns[$side.$pass]+="$(value "${pass}_ns_per_byte" <<<"$out") "
        done
    done
    log "round $i/$ROUNDS done"
done

echo
echo "== $OLD against $NEW: $(basename "$CORPUS"), median of $ROUNDS interleaved rounds, ns per byte, level ${SIMD:-the widest}, processor $(instruction_set) =="
for pass in "${passes[@]}"; do
    o=$(tr ' ' '\n' <<<"${ns[old.$pass]}" | grep . | median)
    n=$(tr ' ' '\n' <<<"${ns[new.$pass]}" | grep . | median)
    awk -v p="$pass" -v o="$o" -v n="$n" 'BEGIN { printf "%-12s %6.3f  %6.3f  speed %5.2fx\n", p, o, n, o / n }'
done
