"""Ways to keep the recall the second candidate source (a shared
`simhash_core::lsh` band key) adds without its false matches on long
English texts: the pairs within distance 11 keep the rule c3 >= 0.71; the
key-only candidates (past 11, sharing a key) are held to a stricter test.
Variant (g) is the rule of record (verify.py: c3 >= T and (j5 >= 0.50 or
cont5 >= 0.85)); (f) was, before the containment.

    .cache/quality-venv/bin/python bench/quality/lsh_variants.py \
        --data DATA_DIR --bin target/release [--positives 300 ...]
        [--threshold 0.82] [--second]   (--second: DATA_DIR is the
        directory second_set.py writes, .cache/quality-second/data)

Prints one table: per rule and group, F1, recall, the recall of the
copies with a footer appended, FPR on hard negatives,
and false matches per 10^6 over all pairs of the group's sample (near
copies left out), as quality.py measures them. Same pairs, same seed,
same metrics as quality.py; only our fingerprint, the keys and the
similarities are computed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import allpairs
import pairs as pairs_mod
import systems
import verify
from pairs import GROUPS

K = 11
T = 0.71
J5 = 0.46
MEASURES = ["c3", "j5", "containment"]


def shared(a, b) -> int:
    if a is None or b is None:
        return 0
    return sum(1 for x, y in zip(a, b) if x == y)


# rule name -> f(d, n, c3, j5) -> bool, vectorized over numpy arrays: d the
# distance (large when a side has no fingerprint), n the shared bands.
def _rules():
    fp = lambda d, n, c3, j5, ct=None: (d <= K) & (c3 >= T)
    key_only = lambda d, n: (d > K) & (n >= 1)
    out = {
        "today: k≤11 ∧ c3": fp,
        "current: (k≤11 ∨ lsh) ∧ c3": lambda d, n, c3, j5, ct=None: ((d <= K) | (n >= 1)) & (c3 >= T),
        "(a) key-only: ≥2 bands ∧ c3": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5) | ((d > K) & (n >= 2) & (c3 >= T)),
        "(b) key-only: ≥3 bands ∧ c3": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5) | ((d > K) & (n >= 3) & (c3 >= T)),
        "(c) key-only: ≥4 bands ∧ c3": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5) | ((d > K) & (n >= 4) & (c3 >= T)),
        "(d, exact J) key-only: c3 ∧ j5≥0.46": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5)
        | (key_only(d, n) & (c3 >= T) & (j5 >= J5)),
        "(f, the earlier rule of record) key-only: c3 ∧ j5≥0.50": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5)
        | (key_only(d, n) & (c3 >= T) & (j5 >= 0.50)),
        "(g, the rule of record) key-only: c3 ∧ (j5≥0.50 ∨ cont5≥0.85)": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5)
        | (key_only(d, n) & (c3 >= T) & ((j5 >= 0.50) | (ct >= 0.85))),
        "(e) key-only: j5≥0.46": lambda d, n, c3, j5, ct=None: fp(d, n, c3, j5) | (key_only(d, n) & (j5 >= J5)),
    }
    for bands in (1, 2, 3, 4):
        for j in (0.46, 0.47, 0.48, 0.49, 0.50, 0.55):
            if (bands, j) != (1, 0.46):
                out[f"key-only: ≥{bands} bands ∧ j5≥{j:.2f}"] = (
                    lambda d, n, c3, j5, ct=None, bands=bands, j=j: fp(d, n, c3, j5) | ((d > K) & (n >= bands) & (j5 >= j))
                )
    for bands in (5, 6, 8):
        out[f"key-only: ≥{bands} bands ∧ c3"] = (
            lambda d, n, c3, j5, ct=None, bands=bands: fp(d, n, c3, j5) | ((d > K) & (n >= bands) & (c3 >= T))
        )
    return out


def main() -> int:
    global T
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--bin", type=Path, required=True, help="directory of fingerprint-lines, lsh-lines, similarity-lines")
    ap.add_argument("--seed", type=int, default=1998)
    ap.add_argument("--positives", type=int, default=300)
    ap.add_argument("--negatives", type=int, default=1000)
    ap.add_argument("--all-pairs", type=int, default=2500)
    ap.add_argument("--threshold", type=float, default=T, help="T, the similarity threshold (default 0.71)")
    ap.add_argument("--second", action="store_true", help="the second labeled set (second_set.py's directory)")
    args = ap.parse_args()

    t0 = time.time()
    T = args.threshold
    ps = pairs_mod.build(args.data, args.seed, args.positives, args.negatives, args.all_pairs, second=args.second)
    print(f"pairs: {len(ps.pairs)} over {len(ps.texts)} texts, {time.time() - t0:.0f} s", file=sys.stderr)
    sigs = systems.ours(args.bin / "fingerprint-lines", ps.texts, ["--definition", "v3"])
    keys = systems.lsh_keys(args.bin / "lsh-lines", ps.texts)
    print(f"fingerprints and keys: {time.time() - t0:.0f} s", file=sys.stderr)
    near = allpairs.NearCopies(ps.texts)

    big = 10**6
    a = [p.a for p in ps.pairs]
    b = [p.b for p in ps.pairs]
    d_l = np.array([big if (x := systems.hamming(sigs[i], sigs[j])) is None else x for i, j in zip(a, b)])
    n_l = np.array([shared(keys[i], keys[j]) for i, j in zip(a, b)])

    # All pairs: candidates of either source, near copies left out.
    cand: dict = {}
    totals: dict = {}
    for g, ids in ps.samples.items():
        found, _ = verify.candidates(sigs, ids, K, near)
        ps_g = {(min(i, j), max(i, j)) for i, j, _ in found} | verify.lsh_candidates(keys, ids, near)
        cand[g] = sorted(ps_g)
        have = sum(1 for i in ids if sigs[i] is not None or keys[i] is not None)
        totals[g] = have * (have - 1) // 2
    print(f"all-pairs candidates: {time.time() - t0:.0f} s", file=sys.stderr)

    todo = list(zip(a, b)) + [p for g in ps.samples for p in cand[g]]
    sims = verify.similarities(args.bin / "similarity-lines", ps.texts, todo, MEASURES)
    print(f"similarities of {len(todo)} pairs: {time.time() - t0:.0f} s", file=sys.stderr)
    c3_l, j5_l, ct_l = sims[: len(a), 0], sims[: len(a), 1], sims[: len(a), 2]
    at = len(a)
    allp = {}
    for g in ps.samples:
        s = sims[at : at + len(cand[g])]
        at += len(cand[g])
        d = np.array([big if (x := systems.hamming(sigs[i], sigs[j])) is None else x for i, j in cand[g]])
        n = np.array([shared(keys[i], keys[j]) for i, j in cand[g]])
        allp[g] = (d, n, s[:, 0], s[:, 1], s[:, 2])

    grp = np.array([f"{p.group[0]} {p.group[1]}" for p in ps.pairs])
    pos = np.array([p.positive for p in ps.pairs])
    footer = np.array([p.positive and p.kind == "footer" for p in ps.pairs])
    rnd = np.array([not p.positive and p.kind == "random" for p in ps.pairs])
    hard = np.array([not p.positive and p.kind == "hard" for p in ps.pairs])

    rows = []
    for name, rule in _rules().items():
        pred = rule(d_l, n_l, c3_l, j5_l, ct_l)
        for g in GROUPS:
            gm = grp == f"{g[0]} {g[1]}"
            r = pred[gm & pos].mean()
            fr, fh = pred[gm & rnd].mean(), pred[gm & hard].mean()
            fpr = (fr + fh) / 2
            prec = r / (r + fpr) if r + fpr else math.nan
            f1 = 2 * prec * r / (prec + r) if prec + r else 0.0
            ap_false = int(rule(*allp[g]).sum())
            rows.append([name, f"{g[0]} {g[1]}", f"{100 * f1:.1f}", f"{100 * r:.1f}", f"{100 * pred[gm & footer].mean():.1f}", f"{100 * fh:.2f} ({int(pred[gm & hard].sum())}/{int((gm & hard).sum())})",
                         f"{100 * fr:.2f}", f"{ap_false / totals[g] * 1e6:.1f} ({ap_false})"])
    head = ["rule (key-only = past 11, sharing a key)", "group", "F1", "recall", "recall, footer", "FPR hard", "FPR random",
            "all pairs false per 10⁶ (count)"]
    print(f"T = {T}; seed {args.seed}; {args.positives} positives per (group, edit, rate), "
          f"{args.negatives} random + {args.negatives} hard negatives per group, all pairs of {args.all_pairs} "
          f"documents per group ({', '.join(f'{g[0]} {g[1]}: {totals[g]:,}' for g in GROUPS)} pairs)\n")
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join(["---"] * 2 + ["---:"] * 6) + " |")
    for r in rows:
        print("| " + " | ".join(r) + " |")

    # Where the key-only false matches sit: shared bands and j5 of the
    # en long hard negatives that share a key but are past 11.
    m = (grp == "en long") & hard & (d_l > K) & (n_l >= 1)
    if m.any():
        print("\nen long hard negatives past 11 sharing a key: bands, c3, j5")
        for x, y, z in sorted(zip(n_l[m], c3_l[m], j5_l[m]), reverse=True)[:40]:
            print(f"  {x:2d} {y:.3f} {z:.3f}")
    mp = (grp == "en long") & pos & (d_l > K) & (n_l >= 1) & (c3_l >= T)
    print("\nen long positives past 11 sharing a key with c3 ≥ T: bands histogram",
          np.bincount(n_l[mp], minlength=33).tolist())
    print(f"done in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
