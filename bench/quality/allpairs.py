"""False positives at scale: every pair of a sample of documents.

A table of a million documents holds half a trillion pairs, so a
false-positive rate that 2,000 labeled negatives measure as 0 can still
flood a search with false matches. Here every pair among `--all-pairs`
documents of a group (2,500 give 3.1 million pairs) is compared, which
resolves rates down to about one in a million.

Some of those pairs are real near-duplicates (reprints, campaign spam,
the same list footer): a pair a system flags is checked with the same
near-copy test that screens the labeled negatives and, when it is one,
left out of the count. Only pairs a system could flag within the reported
range are checked: distance up to 16 (64-bit fingerprints) or 8 (32-bit),
similarity from the lowest MinHash threshold of the curve.
"""

from __future__ import annotations

import numpy as np

import pairs as pairs_mod

# Popcount of every 16-bit value, for distances of whole matrices at once.
_POP16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.uint8)


def _popcount64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    out = np.zeros(x.shape, dtype=np.uint8)
    for shift in (0, 16, 32, 48):
        out += _POP16[((x >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.intp)]
    return out


class NearCopies:
    """`pairs.near_copy` for pairs of text ids, remembering each text's
    5-grams (as a sorted array of their hashes, an eighth of the memory of
    a set of strings) and each verdict: the same pairs come up again for
    every system."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.grams: dict[int, np.ndarray] = {}
        self.cache: dict[tuple[int, int], bool] = {}

    def _grams(self, i: int) -> np.ndarray:
        g = self.grams.get(i)
        if g is None:
            g = self.grams[i] = np.unique(
                np.fromiter((hash(s) for s in pairs_mod.shingles(self.texts[i])), dtype=np.int64)
            )
        return g

    def __call__(self, i: int, j: int) -> bool:
        key = (min(i, j), max(i, j))
        v = self.cache.get(key)
        if v is None:
            a, b = self._grams(i), self._grams(j)
            shared = len(np.intersect1d(a, b, assume_unique=True))
            v = self.cache[key] = shared >= pairs_mod.NEAR_COPY_CONTAINMENT * min(len(a), len(b))
        return v


def simhash_counts(sigs: list, ids: list[int], bits: int, near: NearCopies, ks) -> dict:
    """k -> (false pairs, pairs compared) among `ids`."""
    have = [i for i in ids if sigs[i] is not None]
    fp = np.array([sigs[i] for i in have], dtype=np.uint64)
    n = len(have)
    total = n * (n - 1) // 2
    verify_below = bits // 4
    hist = np.zeros(bits + 1, dtype=np.int64)
    copies = np.zeros(bits + 1, dtype=np.int64)
    for r in range(n - 1):
        d = _popcount64(fp[r] ^ fp[r + 1 :])
        hist += np.bincount(d, minlength=bits + 1)[: bits + 1]
        for c in np.nonzero(d <= verify_below)[0]:
            if near(have[r], have[r + 1 + c]):
                copies[d[c]] += 1
    false = np.cumsum(hist - copies)
    return {k: (int(false[min(k, bits)]), total) for k in ks}


def minhash_counts(sigs: list, ids: list[int], near: NearCopies, thresholds) -> dict:
    have = [i for i in ids if sigs[i] is not None]
    m = np.stack([sigs[i] for i in have])
    n = len(have)
    total = n * (n - 1) // 2
    lowest = min(thresholds)
    sims: list[np.ndarray] = []
    for r in range(n - 1):
        s = (m[r] == m[r + 1 :]).mean(axis=1)
        hit = np.nonzero(s >= lowest)[0]
        sims.extend(s[c] for c in hit if not near(have[r], have[r + 1 + c]))
    sims_a = np.array(sims)
    return {t: (int((sims_a >= t).sum()), total) for t in thresholds}
