#!/usr/bin/env bash
# The yardstick on its second labeled set: the same groups, edits,
# negatives and measures on Debian packages that the shared corpora do not
# use (see "The second set" in bench/quality/README.md).
#
#   bench/quality/second.sh [OPTIONS]
#       OPTIONS    passed on to quality.py, as with run.sh, e.g.
#                  --variants none --skip clickhouse
#
# Downloads the packages with `apt-get download` (no root needed) into
# .cache/quality-second/debs, writes the corpora to
# .cache/quality-second/data (second_set.py), then measures into
# bench/quality/results-second.md (also printed), kcurve-second.csv and
# recall_by_edit-second.csv. The first set's results are not touched.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

HERE=$ROOT/bench/quality
CACHE=$ROOT/.cache/quality-second
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    die "apt-get and dpkg-deb are needed (a Debian or Ubuntu system)"

. "$HERE/venv.sh"
export PYTHONDONTWRITEBYTECODE=1

log "building the second set in ${CACHE#"$ROOT"/} (Debian packages)"
"$VENV/bin/python" "$HERE/second_set.py" --cache "$CACHE"

log "building fingerprint-lines (cargo build --release -p simhash-bench)"
(cd "$ROOT" && cargo build --release --quiet -p simhash-bench)
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/fingerprint-lines
[ -x "$BIN" ] || die "no binary at $BIN"

log "measuring the second set"
"$VENV/bin/python" "$HERE/quality.py" --set second --data "$CACHE/data" --binary "$BIN" \
    --work "$ROOT/.cache/quality-second/work" --out "$HERE" "$@"
