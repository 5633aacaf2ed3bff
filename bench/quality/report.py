"""Scores to metrics to Markdown and CSV.

A SimHash system calls a pair a duplicate when the Hamming distance of the
two fingerprints is at most k; MinHash when the estimated Jaccard
similarity is at least its threshold. A text without a signature matches
nothing.

Precision depends on how many of the compared pairs are duplicates, which
the yardstick chooses rather than observes, so it is stated for one fixed
mix: as many duplicate pairs as different ones, half of the latter random
and half hard. With recall R and false-positive rates F_random and F_hard,
FPR = (F_random + F_hard) / 2, precision = R / (R + FPR), and F1 is the
harmonic mean of precision and recall. The recall of a group is the mean
over its positives, and every edit kind and rate has the same number of
them (unless a group has too few texts an edit applies to).
"""

from __future__ import annotations

import collections
import csv
import io
import math
from dataclasses import dataclass, field

import numpy as np

from pairs import GROUPS, Pairs

# The seeds' distance, every SimHash library's usual threshold.
K_USUAL = 3
# What the band index answers in milliseconds and the README recommends
# for most texts: the targets are stated at this k.
K_DEFAULT = 7
# The "safe" operating point: the largest threshold at which at most this
# share of all pairs, and of hard negatives, is falsely flagged.
SAFE_ALL_PAIRS = 1e-6
SAFE_HARD = 0.01
K_CURVE = range(0, 17)
MINHASH_THRESHOLDS = (0.8, 0.7)
MINHASH_CURVE = [round(0.3 + 0.05 * i, 2) for i in range(14)]
# Thresholds of an exact similarity (verify.py): 0.30 to 0.99.
SIM_CURVE = [round(0.3 + 0.01 * i, 2) for i in range(70)]
NO_SIGNATURE = 10**6  # the distance of a pair where one side has no fingerprint


@dataclass
class Result:
    """One system's score for every pair: a distance (SimHash) or a
    similarity (MinHash)."""

    name: str
    kind: str  # "simhash", "minhash" or "similarity"
    scores: np.ndarray
    seconds: float
    bits: int = 64
    note: str = ""
    # A candidate change to ours, shown in the prototypes' table only.
    prototype: bool = False
    # group -> threshold -> (false pairs, pairs) among all pairs of the
    # group's sample (allpairs.py).
    all_pairs: dict = field(default_factory=dict)
    # Filled by `evaluate`: group -> threshold -> metrics.
    curve: dict = field(default_factory=dict)
    # A similarity's one threshold for every group (verify.choose).
    chosen: float | None = None
    # A verified rule's candidates before verification (verify.py): the
    # labeled pairs each source makes candidates, and per group the
    # candidates among all pairs.
    candidates: dict = field(default_factory=dict)


@dataclass
class Metrics:
    recall: float
    fpr_random: float
    fpr_hard: float
    # Over all pairs of a sample of the group's documents (allpairs.py).
    fpr_all: float = math.nan

    @property
    def fpr(self) -> float:
        return (self.fpr_random + self.fpr_hard) / 2

    @property
    def precision(self) -> float:
        return self.recall / (self.recall + self.fpr) if self.recall + self.fpr else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r and not math.isnan(p) else 0.0


class Masks:
    """Boolean masks over the pairs, per group and kind."""

    def __init__(self, pairs: Pairs):
        ps = pairs.pairs
        self.group = {g: np.array([p.group == g for p in ps]) for g in GROUPS}
        self.pos = np.array([p.positive for p in ps])
        self.random = np.array([not p.positive and p.kind == "random" for p in ps])
        self.hard = np.array([not p.positive and p.kind == "hard" for p in ps])
        self.variant = np.array([f"{p.kind} {p.detail}".strip() if p.positive else "" for p in ps])
        self.source = np.array([p.detail if not p.positive and p.kind == "hard" else "" for p in ps])


def _predict(res: Result, threshold) -> np.ndarray:
    if res.kind == "simhash":
        return res.scores <= threshold
    return res.scores >= threshold


def _rate(pred: np.ndarray, mask: np.ndarray) -> float:
    n = mask.sum()
    return float(pred[mask].sum() / n) if n else math.nan


def evaluate(res: Result, m: Masks) -> None:
    thresholds = {"simhash": K_CURVE, "minhash": MINHASH_CURVE}.get(res.kind, SIM_CURVE)
    for g in GROUPS:
        res.curve[g] = {}
        for t in thresholds:
            pred = _predict(res, t)
            false, total = res.all_pairs.get(g, {}).get(t, (0, 0))
            res.curve[g][t] = Metrics(
                _rate(pred, m.group[g] & m.pos),
                _rate(pred, m.group[g] & m.random),
                _rate(pred, m.group[g] & m.hard),
                false / total if total else math.nan,
            )


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}"


def _ppm(x: float) -> str:
    return "–" if math.isnan(x) else f"{1e6 * x:,.0f}" if x >= 1e-5 else f"{1e6 * x:.1f}"


def _label(r: Result, t) -> str:
    return f"{t}" if r.kind == "simhash" else f"J≥{t}" if r.kind == "minhash" else f"≥{t}"


def _rows(results: list[Result], ks=(K_DEFAULT,)):
    """(label, result, threshold) for every row of the summary: each SimHash
    system at each k of `ks`, MinHash at each of its thresholds, a
    similarity at its chosen one."""
    for r in results:
        if r.kind == "simhash":
            for k in ks:
                yield (r.name if len(ks) == 1 else f"{r.name}, k = {k}"), r, k
        elif r.kind == "similarity":
            yield f"{r.name} ≥ {r.chosen}", r, r.chosen
        else:
            for t in MINHASH_THRESHOLDS:
                yield f"{r.name} J≥{t}", r, t


def _best(r: Result, g) -> tuple:
    curve = r.curve[g]
    t = max(curve, key=lambda t: (curve[t].f1, -t if r.kind == "simhash" else t))
    return t, curve[t]


def _safe(r: Result, g) -> tuple:
    """The loosest threshold within the safe false-positive budget, or
    (None, None) when even the strictest is over it."""
    curve = r.curve[g]
    ok = [
        t
        for t, x in curve.items()
        if x.fpr_hard <= SAFE_HARD and not (x.fpr_all > SAFE_ALL_PAIRS)
    ]
    if not ok:
        return None, None
    t = max(ok) if r.kind == "simhash" else min(ok)
    return t, curve[t]


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" * 2 + "r" * (len(header) - 2)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def summary_table(results: list[Result], pairs: Pairs, m: Masks, ks=(K_USUAL, K_DEFAULT)) -> str:
    rows = []
    for g in GROUPS:
        gm = m.group[g]
        counts = f"{(gm & m.pos).sum()} / {(gm & m.random).sum()} / {(gm & m.hard).sum()}"
        for i, (label, r, t) in enumerate(_rows(results, ks)):
            x = r.curve[g][t]
            bt, bx = _best(r, g)
            best = _label(r, bt)
            st, sx = _safe(r, g)
            safe = "–" if st is None else _label(r, st)
            rows.append(
                [
                    f"{g[0]} {g[1]}" if i == 0 else "",
                    counts if i == 0 else "",
                    label,
                    _pct(x.recall),
                    _pct(x.fpr_random),
                    _pct(x.fpr_hard),
                    _ppm(x.fpr_all),
                    _pct(x.precision),
                    _pct(x.f1),
                    best,
                    _pct(bx.recall),
                    _pct(bx.fpr_hard),
                    _pct(bx.f1),
                    safe,
                    "–" if sx is None else _pct(sx.recall),
                ]
            )
    header = [
        "group",
        "pairs: pos / random / hard",
        "system and threshold",
        "recall",
        "FPR random",
        "FPR hard",
        "all pairs: false per 10⁶",
        "precision",
        "F1",
        "best k",
        "recall at best",
        "FPR hard at best",
        "F1 at best",
        "safe k",
        "recall at safe k",
    ]
    return table(header, rows, "lll" + "r" * 12)


def edit_table(results: list[Result], m: Masks, g) -> str:
    gm = m.group[g] & m.pos
    variants = list(dict.fromkeys(m.variant[gm]))
    cols = list(_rows(results))
    rows = []
    for v in variants:
        vm = gm & (m.variant == v)
        row = [v, str(vm.sum())]
        for _, r, t in cols:
            row.append(_pct(_rate(_predict(r, t), vm)))
        rows.append(row)
    return table(["edit", "pairs"] + [c[0] for c in cols], rows)


def negatives_table(results: list[Result], pairs: Pairs, m: Masks) -> str:
    cols = list(_rows(results))
    rows = []
    for g in GROUPS:
        gm = m.group[g]
        for source in ["random pair"] + sorted(set(m.source[gm & m.hard])):
            sm = gm & (m.random if source == "random pair" else m.hard & (m.source == source))
            row = [f"{g[0]} {g[1]}", source, str(sm.sum()), str(pairs.dropped[g, source])]
            for _, r, t in cols:
                row.append(_pct(_rate(_predict(r, t), sm)))
            rows.append(row)
    return table(["group", "negatives", "pairs", "dropped as near copies"] + [c[0] for c in cols], rows, "ll" + "r" * (2 + len(cols)))


def distance_table(results: list[Result], m: Masks) -> str:
    """Where each SimHash system puts unrelated texts: the distances below
    which few negatives fall are the room left for edits."""
    rows = []
    for g in GROUPS:
        for r in results:
            if r.kind != "simhash":
                continue
            row = [f"{g[0]} {g[1]}", r.name]
            for mask in (m.pos, m.random, m.hard):
                d = r.scores[m.group[g] & mask]
                d = d[d < NO_SIGNATURE]
                row.append(f"{np.median(d):.0f}" if len(d) else "–")
                row.append(f"{np.percentile(d, 1 if mask is not m.pos else 90):.0f}" if len(d) else "–")
            rows.append(row)
    header = [
        "group",
        "system",
        "positives: median",
        "positives: 90th pct",
        "random: median",
        "random: 1st pct",
        "hard: median",
        "hard: 1st pct",
    ]
    return table(header, rows)


def curve_csv(results: list[Result]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        ["system", "lang", "length", "kind", "threshold", "recall", "fpr_random", "fpr_hard", "fpr_all_pairs", "precision", "f1"]
    )
    for r in results:
        for g in GROUPS:
            for t, x in r.curve[g].items():
                w.writerow(
                    [r.name, g[0], g[1], {"simhash": "k", "minhash": "jaccard"}.get(r.kind, "similarity"), t]
                    + [f"{v:.4f}" for v in (x.recall, x.fpr_random, x.fpr_hard)]
                    + [f"{x.fpr_all:.3g}", f"{x.precision:.4f}", f"{x.f1:.4f}"]
                )
    return out.getvalue()


def edits_csv(results: list[Result], m: Masks) -> str:
    """Recall per edit at every threshold, and each system's median distance
    (or similarity) per edit, for plotting."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["system", "lang", "length", "edit", "pairs", "median_score"] + [f"recall_at_{t}" for t in K_CURVE])
    for r in results:
        if r.kind != "simhash":
            continue
        for g in GROUPS:
            gm = m.group[g] & m.pos
            for v in dict.fromkeys(m.variant[gm]):
                vm = gm & (m.variant == v)
                s = r.scores[vm]
                w.writerow(
                    [r.name, g[0], g[1], v, int(vm.sum()), f"{np.median(s):.1f}"]
                    + [f"{_rate(_predict(r, k), vm):.4f}" for k in K_CURVE]
                )
    return out.getvalue()


def dropped_note(pairs: Pairs) -> str:
    c = collections.Counter()
    for (g, _), n in pairs.dropped.items():
        c[g] += n
    return ", ".join(f"{g[0]} {g[1]}: {c[g]}" for g in GROUPS)
