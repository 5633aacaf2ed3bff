#!/usr/bin/env bash
# The core's pglz decoder (crates/simhash-core/src/pglz.rs, which
# simhash() uses on texts PostgreSQL stored compressed with pglz) against
# the same format decoded one item at a time, as PostgreSQL's own loop
# does: the `pglz-decode` binary (bench/src/bin/pglz_decode.rs) over the
# texts of at least 2,000 bytes of a corpus, compressed by the core's
# compressor. In-process and on one core; the end-to-end effect is in
# bench/throughput.sh (SQL simhash() against PostgreSQL reading the texts).
#
#   bench/pglz.sh [CORPUS]     JSON lines {"id", "text"}, gzip'd or not;
#                              default ../shared/data/zh_news.jsonl.gz
#   ROUNDS=9 bench/pglz.sh     rounds (default 7)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CORPUS=${1:-$ROOT/../shared/data/zh_news.jsonl.gz}
ROUNDS=${ROUNDS:-7}
[ -f "$CORPUS" ] || die "corpus not found: $CORPUS"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] || die "ROUNDS must be a number >= 1, not '$ROUNDS'"
cargo build --release --quiet -p simhash-bench --bin pglz-decode
zcat -f -- "$CORPUS" | "$ROOT/target/release/pglz-decode" --rounds "$ROUNDS"
