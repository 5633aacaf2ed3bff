#!/usr/bin/env bash
# Same bits: the fingerprints of every text of the shared corpora under a
# definition, computed by this checkout's core and by the core of another
# commit (default: c59e94f, the last commit before the hot path of
# definition 3 was rewritten), side by side. A speed-up of a released
# definition must not change one bit of it.
#
#   bench/same_bits.sh [COMMIT]     every *.jsonl.gz of ../shared/data
#   VERSION=v2 bench/same_bits.sh   another definition (default v3)
#
# Each side is the core's `fp` example (crates/simhash-core/examples/fp.rs),
# built in release mode; the other commit is checked out into a temporary
# worktree with its own target directory. Texts are fed one per line, so
# line breaks inside a text become U+2029 (a separator to every
# definition) on both sides alike.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OTHER=${1:-c59e94f}
VERSION=${VERSION:-v3}
DATA=$ROOT/../shared/data
ls "$DATA"/*.jsonl.gz >/dev/null 2>&1 || die "no corpora in $DATA"
git -C "$ROOT" rev-parse --verify --quiet "$OTHER^{commit}" >/dev/null || die "no commit $OTHER"

work=$(mktemp -d)
trap 'git -C "$ROOT" worktree remove --force "$work/other" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$ROOT" worktree add --quiet --detach "$work/other" "$OTHER"

log "building the fp example of this checkout and of $OTHER"
(cd "$ROOT" && cargo build --release --quiet -p simhash-core --example fp)
(cd "$work/other" && CARGO_TARGET_DIR=$work/target cargo build --release --quiet -p simhash-core --example fp)
ours=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/fp
theirs=$work/target/release/examples/fp

status=0
for corpus in "$DATA"/*.jsonl.gz; do
    name=$(basename "$corpus" .jsonl.gz)
    zcat "$corpus" | python3 -c '
import json, sys
for line in sys.stdin:
    t = (json.loads(line).get("text") or "").replace("\x00", "")
    sys.stdout.write(t.replace("\r", "\u2029").replace("\n", "\u2029") + "\n")
' > "$work/$name.txt"
    "$ours" "$VERSION" < "$work/$name.txt" | cut -f1 > "$work/$name.ours"
    "$theirs" "$VERSION" < "$work/$name.txt" | cut -f1 > "$work/$name.theirs"
    texts=$(wc -l < "$work/$name.ours")
    differ=$(paste "$work/$name.ours" "$work/$name.theirs" | awk -F'\t' '$1 != $2' | wc -l)
    printf '%-18s %7d texts  %s: %d fingerprints differ\n' "$name" "$texts" "$VERSION" "$differ"
    [ "$differ" = 0 ] || status=1
done
[ $status = 0 ] && echo "same bits as $OTHER" || echo "DIFFERENT from $OTHER"
exit $status
