#!/usr/bin/env bash
# The check of a batch against a target read once, in memory and without
# PostgreSQL (simhash_insert_new's scan): every target fingerprint looked
# up in the batch's band index one query at a time, against groups of
# queries whose runs are asked of memory first (BandSet::within_each),
# interleaved round by round in one run. Both must find the same matches.
#
#   bench/near.sh [CORPUS]     JSON lines {"id", "text"}, gzip'd or not;
#                              default ../shared/data/zh_short.jsonl.gz
#   BATCH=1000000 TARGET=10000000 K=3 ROUNDS=3 (the defaults)
#
# Making the fingerprints of the texts takes most of the run (about 150 s
# at the defaults on one core).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/zh_short.jsonl.gz}
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS"
cd "$ROOT"
log "building the binary (cargo build --release -p simhash-bench)"
cargo build --release --quiet -p simhash-bench
log "this processor: $(instruction_set)"
zcat -f -- "$CORPUS" | "${CARGO_TARGET_DIR:-$ROOT/target}/release/near-match" \
    --batch "${BATCH:-1000000}" --target "${TARGET:-10000000}" --k "${K:-3}" --rounds "${ROUNDS:-3}"
