#!/usr/bin/env bash
# The second candidate source (simhash_lsh) beside the fingerprint, without
# PostgreSQL: recall of edited copies of real English texts by each
# candidate source and after verification, and how many pairs of different
# texts each makes a query verify (bench/src/bin/lsh_recall.rs).
#
#   bench/lsh.sh [CORPUS]   JSON lines {"id", "text"}, gzip'd or not;
#                           default ../shared/data/en_docs.jsonl.gz
#   DOCS=1500 (the default): long originals taken
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/en_docs.jsonl.gz}
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS"
cd "$ROOT"
log "building the binary (cargo build --release -p simhash-bench)"
cargo build --release --quiet -p simhash-bench
zcat -f -- "$CORPUS" | DOCS=${DOCS:-1500} "${CARGO_TARGET_DIR:-$ROOT/target}/release/lsh-recall"
