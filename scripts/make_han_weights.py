"""Writes crates/simhash-core/data/han_weights.txt, the per-character weight
table of fingerprint definition version 3, from jieba's dictionary.

    python3 scripts/make_han_weights.py DICT_TXT T2S_TXT > han_weights.txt

DICT_TXT is jieba's `dict.txt` (`word frequency tag` lines; jieba-rs 0.11.0
ships it as `src/data/dict.txt`, MIT License), T2S_TXT the fold table of
version 2 (`crates/simhash-core/data/t2s.txt`). Each character of each word
counts the word's frequency once per occurrence, after folding
traditional characters to simplified ones (the fingerprint folds before it
looks a character up). A Han character's weight is its self-information,
ln(total / count), printed to 4 decimals; the rarest weigh about four times
the commonest (一 4.38, 的 5.60, 京 7.09, 鹏 10.32).

The table is part of the fingerprint definition: regenerating it must give
the shipped file byte for byte, and any change is a new definition version.
"""

import collections
import math
import sys


def is_han(c: str) -> bool:
    o = ord(c)
    return (
        0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x2FA1F
    )


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    fold = {}
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            trad, simp = line.split()
            fold[trad] = simp
    counts = collections.Counter()
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 2:
                continue
            word, freq = fields[0], int(fields[1])
            for c in word:
                c = fold.get(c, c)
                if is_han(c):
                    counts[c] += freq
    total = sum(counts.values())
    out = sys.stdout
    out.write("# Han character weights of fingerprint definition version 3: see\n")
    out.write("# scripts/make_han_weights.py. Source: jieba's dict.txt (MIT License).\n")
    for c in sorted(counts):
        out.write(f"{c} {math.log(total / counts[c]):.4f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
