#!/usr/bin/env bash
# Detection quality of the fingerprint against other near-duplicate
# detectors, on labeled pairs built from the shared corpora: see
# bench/quality/README.md.
#
#   bench/quality/run.sh [DATA_DIR] [OPTIONS]
#       DATA_DIR   the corpora directory; default $SIMHASH_DATA, else
#                  ../shared/data beside the checkout
#       OPTIONS    passed on to quality.py (--help lists them), e.g.
#                  --positives 100 --negatives 300   a quicker, rougher run
#                  --variants none --skip clickhouse
#                  --jobs 1                          worker processes (default 2)
#
# Writes bench/quality/results.md (also printed), kcurve.csv and
# recall_by_edit.csv. The Python environment lives in .cache/quality-venv
# and is rebuilt when requirements.txt changes.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

HERE=$ROOT/bench/quality
DATA=${SIMHASH_DATA:-$ROOT/../shared/data}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    DATA=$1
    shift
fi
for f in zh_news zh_short en_docs zh_poetry_small; do
    [ -f "$DATA/$f.jsonl.gz" ] ||
        die "corpus $DATA/$f.jsonl.gz not found: give the shared corpora directory as the first argument or in SIMHASH_DATA"
done
DATA=$(cd "$DATA" && pwd)

. "$HERE/venv.sh"

log "building fingerprint-lines (cargo build --release -p simhash-bench)"
(cd "$ROOT" && cargo build --release --quiet -p simhash-bench)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/fingerprint-lines
[ -x "$BIN" ] || die "no binary at $BIN"

log "measuring (a few minutes)"
# No __pycache__ in the source directory: nothing else would clean it up.
export PYTHONDONTWRITEBYTECODE=1
"$VENV/bin/python" "$HERE/quality.py" --data "$DATA" --binary "$BIN" \
    --work "$ROOT/.cache/quality" --out "$HERE" "$@"
