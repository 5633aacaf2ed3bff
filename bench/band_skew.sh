#!/usr/bin/env bash
# Band-bucket skew of real fingerprints: how many heap rechecks a k <= 3
# probe of the four 16-bit band indexes costs on real text, against the
# uniform-random arithmetic (N / 65,536 per band), and what a repeated
# boilerplate footer does to it.
#
# Run: bench/band_skew.sh [CORPUS ...]   JSON lines {"id","text"}, gzip'd
# or not; default: the four corpora of ../shared/data beside the checkout.
# Each corpus is fingerprinted with definition 3 (SQL `simhash(text)`) by
# the Rust core (the `fingerprint-lines` binary, no PostgreSQL), once as
# it is and once with the same 120-character footer appended to every text
# (a site's copyright line, say). FOOTER= sets another footer.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

if [ $# -eq 0 ]; then
    set -- "$ROOT"/../shared/data/{zh_news,zh_short,en_docs,zh_poetry_small}.jsonl.gz
fi
for f in "$@"; do [ -f "$f" ] || die "corpus not found: $f"; done
FOOTER=${FOOTER:-本网站所有内容均受版权保护，未经书面许可，任何单位和个人不得转载、摘编或以其他方式使用。联系电话：010-12345678，电子邮箱：service@example.com，地址：北京市朝阳区某某路1号。}

log "building fingerprint-lines (cargo build --release -p simhash-bench)"
cargo build --release --quiet -p simhash-bench
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/fingerprint-lines
[ -x "$BIN" ] || die "no binary at $BIN"

for corpus in "$@"; do
    name=$(basename "$corpus" .jsonl.gz)
    zcat -f -- "$corpus" | "$BIN" --definition v3 | python3 "$ROOT/bench/band_skew.py" "$name"
    zcat -f -- "$corpus" | FOOTER=$FOOTER python3 -c '
import json, os, sys
footer = os.environ["FOOTER"]
for line in sys.stdin:
    d = json.loads(line)
    print(json.dumps({"text": (d.get("text") or "") + "\n" + footer}, ensure_ascii=False))
' | "$BIN" --definition v3 | python3 "$ROOT/bench/band_skew.py" "$name + footer"
done
