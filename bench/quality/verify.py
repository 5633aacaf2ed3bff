"""Verification by similarity: a fingerprint candidate (Hamming distance at
most k) is called a duplicate only when the two texts' similarity is at
least a threshold T.

The similarity is `simhash_core::similarity` (weighted containment of
character 3-grams of the fingerprint's normalized stream: see the module's
documentation), computed by the bench crate's `similarity-lines`, so the
figures are the core's own function. Three alternatives are measured
beside it with the same binary, to justify the choice: containment of 4-
and 5-grams, and Jaccard of the sets of 5-grams (what MinHash estimates,
here exact).

Each (measure, k) is one system whose score is the similarity when the
distance is at most k and -1 otherwise, so its threshold curve is the rule
"distance <= k AND similarity >= T" for every T. Each measure alone (no
fingerprint) is a system too. Over all pairs of each group's sample
(allpairs.py) only pairs within the largest k can pass a rule, so only
those are verified; a measure alone has no all-pairs figure.

A rule's operating point is chosen as the product would choose its
default: the threshold (one for all four groups) that maximizes the worst
group's F1 among those with precision >= MIN_PRECISION in every group and
at most report.SAFE_ALL_PAIRS (1 in 10^6) of all pairs falsely flagged in
every group (when none has both, the best worst-group F1). The second
condition is there because the labeled negatives alone do not constrain
a verified rule: they exclude near copies, and no rule within k = 11
flags one of them at any T measured, while over all pairs a lower T
does let unrelated pairs through.

The rule of record has a second candidate source (`simhash_core::lsh`,
SQL `simhash_lsh()`): a pair is a duplicate when (its fingerprints are
within 11 AND c3 >= T) OR (they are farther apart, the two texts share a
band key, compared band by band, AND c3 >= T AND (j5 >= J_MIN OR cont5 >=
C_MIN)), j5 and cont5 being the product's exact Jaccard and containment of
the sets of character 5-grams of the normalized stream
(`simhash_core::similarity::GramOverlap`, `simhash_core::lsh::second_test`,
the measures `jaccard` and `containment` of `similarity-lines`; the
Jaccard checked here to equal the experimental j5 on every pair
computed). That rule is a system of its own (RULE_NAME,
from the keys `lsh-lines` prints), measured beside the fingerprint-only
rule on the same pairs: at the fingerprint-only rule's chosen T, at
STRICT_T, and at its own T chosen the same way. Over all pairs, the pairs
that share a key are verified too. The earlier form of the rule (a shared
key verified by c3 alone, "ours (k≤11 ∨ lsh) ∧ c3") and the same
candidates verified by c4, c5 or j5 alone are kept as prototypes.
"""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import allpairs
import systems as systems_mod
from pairs import GROUPS
from report import NO_SIGNATURE, SAFE_ALL_PAIRS, SIM_CURVE, Result

MEASURES = {
    "c3": "containment of 3-grams (the definition)",
    "c4": "containment of 4-grams",
    "c5": "containment of 5-grams",
    "j5": "Jaccard of the sets of 5-grams",
}
KS = (7, 9, 11)
MIN_PRECISION = 0.999
# The fingerprint's reach in the rule with the second candidate source.
LSH_K = 11
# The stricter threshold: an edit of 5% of the characters a copy, 10% not
# (the README's `SET simhash.similarity_threshold = 0.82`).
STRICT_T = 0.82
# The product's default threshold (`simhash.similarity_threshold`), where
# the rule with the second candidate source is reported first.
DEFAULT_T = 0.71
# The key-only candidates' second test (`simhash_core::lsh::second_test`):
# j5 at least J_MIN, or cont5 at least C_MIN.
J_MIN = 0.50
C_MIN = 0.85
# The product's Jaccard and containment of 5-grams, columns of
# `similarity-lines`.
RULE_COLUMNS = ["jaccard", "containment"]
SECOND_TEST = f"(j5≥{J_MIN:.2f} ∨ cont5≥{C_MIN:.2f})"
RULE_NAME = f"ours k≤{LSH_K} ∧ c3, or key ∧ c3 ∧ {SECOND_TEST}"


def second_test(rows: np.ndarray) -> np.ndarray:
    """The key-only candidates' second test, on rows of MEASURES then
    RULE_COLUMNS."""
    jr = len(MEASURES)
    return (rows[:, jr] >= J_MIN) | (rows[:, jr + 1] >= C_MIN)


def similarities(binary: Path, texts: list[str], pairs: list[tuple[int, int]], measures: list[str]) -> np.ndarray:
    """One row per pair, one column per measure."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8") as f, tempfile.TemporaryFile("w+b") as p:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
        f.flush()
        p.write("".join(f"{i} {j}\n" for i, j in pairs).encode())
        p.seek(0)
        run = subprocess.run(
            [str(binary), "--texts", f.name, "--measures", ",".join(measures)],
            stdin=p,
            capture_output=True,
            check=False,
        )
    if run.returncode != 0:
        raise RuntimeError(f"{binary.name}: {run.stderr.decode().strip()}")
    out = np.array([[float(v) for v in line.split("\t")] for line in run.stdout.decode().splitlines()])
    assert out.shape == (len(pairs), len(measures)), out.shape
    return out


def candidates(sigs: list, ids: list[int], k: int, near: allpairs.NearCopies) -> tuple[list, int]:
    """The pairs of `ids` within distance k that are not near copies, as
    (i, j, distance), and how many pairs were compared (as
    allpairs.simhash_counts counts them)."""
    have = [i for i in ids if sigs[i] is not None]
    fp = np.array([sigs[i] for i in have], dtype=np.uint64)
    out = []
    for r in range(len(have) - 1):
        d = allpairs._popcount64(fp[r] ^ fp[r + 1 :])
        for c in np.nonzero(d <= k)[0]:
            i, j = have[r], have[r + 1 + c]
            if not near(i, j):
                out.append((i, j, int(d[c])))
    n = len(have)
    return out, n * (n - 1) // 2


def lsh_candidates(keys: list, ids: list[int], near: allpairs.NearCopies) -> set[tuple[int, int]]:
    """The pairs of `ids` that have the same key in a band (systems.shares_key)
    and are not near copies, as (smaller id, larger id)."""
    buckets: dict[tuple[int, int], list[int]] = {}
    for i in ids:
        for band, key in enumerate(keys[i] or ()):
            buckets.setdefault((band, key), []).append(i)
    out = set()
    for members in buckets.values():
        for x in range(len(members) - 1):
            for y in range(x + 1, len(members)):
                i, j = members[x], members[y]
                out.add((min(i, j), max(i, j)))
    return {(i, j) for i, j in out if not near(i, j)}


def systems(
    binary: Path,
    texts: list[str],
    a,
    b,
    distances: np.ndarray,
    sigs: list,
    samples: dict,
    near,
    keys: list | None = None,
) -> list[Result]:
    """Every measure alone and with each k, as Results of kind
    "similarity" (all marked prototypes; `choose_default` promotes the
    chosen rule); with `keys` (systems.lsh_keys), the rule with the second
    candidate source too."""
    t0 = time.time()
    cands = {g: candidates(sigs, ids, max(KS), near) for g, ids in samples.items()}
    pairs = list(zip(a.tolist(), b.tolist()))
    labeled = len(pairs)
    for g in samples:
        pairs += [(i, j) for i, j, _ in cands[g][0]]
    sims = similarities(binary, texts, pairs, list(MEASURES) + RULE_COLUMNS)
    seconds = time.time() - t0
    results = []
    for m_i, (m, note) in enumerate(MEASURES.items()):
        s = sims[:labeled, m_i]
        results.append(Result(f"{m} alone", "similarity", s, seconds, note=f"{note}, no fingerprint", prototype=True))
        for k in KS:
            r = Result(
                f"ours k≤{k} ∧ {m}",
                "similarity",
                np.where((distances <= k) & (distances < NO_SIGNATURE), s, -1.0),
                seconds,
                note=f"version 3 within {k}, verified by {note}",
                prototype=True,
            )
            at = labeled
            for g in samples:
                found, total = cands[g]
                cs = np.array([sims[at + n, m_i] for n, (_, _, d) in enumerate(found) if d <= k])
                at += len(found)
                r.all_pairs[g] = {t: (int((cs >= t).sum()) if len(cs) else 0, total) for t in SIM_CURVE}
            results.append(r)
    if keys is not None:
        results.extend(_with_lsh(binary, texts, a, b, distances, sigs, samples, near, keys, cands, sims, labeled, seconds))
    return results


def _with_lsh(binary, texts, a, b, distances, sigs, samples, near, keys, cands, sims, labeled, seconds) -> list[Result]:
    """The rule of record (RULE_NAME: see the module's documentation);
    as prototypes, its earlier form (distance <= LSH_K OR a shared band
    key) AND c3 >= T, and the same with each alternative measure (to tell
    whether the measure or the candidates decide)."""
    t0 = time.time()
    c3, j5, jr = list(MEASURES).index("c3"), list(MEASURES).index("j5"), len(MEASURES)
    width = len(MEASURES) + len(RULE_COLUMNS)
    fp = (distances <= LSH_K) & (distances < NO_SIGNATURE)
    shared = np.array([systems_mod.shares_key(keys[i], keys[j]) for i, j in zip(a.tolist(), b.tolist())], dtype=bool)
    # Over all pairs: the fingerprint's candidates (their similarities are
    # known) and the pairs that only share a key (computed now).
    at = labeled
    known: dict[str, dict[tuple[int, int], np.ndarray]] = {}
    extra: dict[str, list[tuple[int, int]]] = {}
    for g, ids in samples.items():
        found, _ = cands[g]
        known[g] = {(min(i, j), max(i, j)): sims[at + n] for n, (i, j, d) in enumerate(found) if d <= LSH_K}
        at += len(found)
        extra[g] = sorted(lsh_candidates(keys, ids, near) - known[g].keys())
    todo = [p for g in samples for p in extra[g]]
    more = similarities(binary, texts, todo, list(MEASURES) + RULE_COLUMNS) if todo else np.zeros((0, width))
    per_group = {}
    at = 0
    for g, ids in samples.items():
        rows = list(known[g].values()) + list(more[at : at + len(extra[g])])
        at += len(extra[g])
        have = sum(1 for i in ids if sigs[i] is not None or keys[i] is not None)
        per_group[g] = (np.array(rows).reshape(-1, width), len(known[g]), have * (have - 1) // 2)
    # The product's Jaccard against the experimental j5, on every pair.
    every = np.vstack([sims, more])
    j5_check = (len(every), float(np.abs(every[:, jr] - every[:, j5]).max()) if len(every) else 0.0)
    seconds += time.time() - t0
    results = []
    # The rule of record.
    key_only = ~fp & shared & second_test(sims[:labeled])
    r = Result(
        RULE_NAME,
        "similarity",
        np.where(fp | key_only, sims[:labeled, c3], -1.0),
        seconds,
        note=f"version 3 within {LSH_K}, or farther with the same simhash_lsh key in a band and {SECOND_TEST}, "
        "verified by c3",
    )
    for g in samples:
        cs, n_known, total = per_group[g]
        score = np.where((np.arange(len(cs)) < n_known) | second_test(cs), cs[:, c3], -1.0)
        r.all_pairs[g] = {t: (int((score >= t).sum()), total) for t in SIM_CURVE}
    r.candidates = {
        "fingerprint": fp,
        "lsh": shared,
        "key and j5": key_only,
        "all pairs": {
            g: (
                per_group[g][1],
                per_group[g][1] + len(extra[g]),
                per_group[g][1] + int(second_test(per_group[g][0][per_group[g][1] :]).sum()),
                per_group[g][2],
            )
            for g in samples
        },
        "j5 check": j5_check,
    }
    results.append(r)
    # The earlier form and the alternative measures.
    for m_i, (m, note) in enumerate(MEASURES.items()):
        r = Result(
            f"ours (k≤{LSH_K} ∨ lsh) ∧ {m}",
            "similarity",
            np.where(fp | shared, sims[:labeled, m_i], -1.0),
            seconds,
            note=f"version 3 within {LSH_K} or the same simhash_lsh key in a band, verified by {note}",
            prototype=True,
        )
        for g in samples:
            cs, _, total = per_group[g]
            r.all_pairs[g] = {t: (int((cs[:, m_i] >= t).sum()), total) for t in SIM_CURVE}
        results.append(r)
    return results


def choose(r: Result, thresholds=None) -> tuple:
    """(threshold, meets the precision in every group, worst group's F1)
    of the operating point described in the module's documentation. Ties
    go to the stricter threshold."""
    best = None
    for t in thresholds or r.curve[GROUPS[0]]:
        ms = [r.curve[g][t] for g in GROUPS]
        ok = all(_meets(x) for x in ms)
        worst = min(x.f1 for x in ms)
        strict = -t if r.kind == "simhash" else t
        key = (ok, worst, strict)
        if best is None or key > best[0]:
            best = (key, t)
    (ok, worst, _), t = best
    return t, ok, worst


def _meets(x) -> bool:
    return not math.isnan(x.precision) and x.precision >= MIN_PRECISION and not x.fpr_all > SAFE_ALL_PAIRS


def choose_default(results: list[Result]) -> Result | None:
    """Sets each similarity system's `chosen` threshold; promotes the best
    rule of the definition's measure (and the measure alone) to the main
    tables; returns that rule.

    The rule with the second candidate source is in the main tables too,
    at the chosen rule's T (the threshold is the product's setting, the
    same whatever finds the candidates); its own T, chosen the same way,
    is kept as `candidates["own T"]`."""
    best = None
    for r in results:
        if r.kind != "similarity":
            continue
        r.chosen, ok, worst = choose(r)
        if r.candidates:
            r.prototype = False
        elif r.name.startswith("ours") and r.name.endswith("c3") and "lsh" not in r.name:
            if best is None or (ok, worst) > best[0]:
                best = ((ok, worst), r)
        if r.name == "c3 alone":
            r.prototype = False
    if best is None:
        return None
    best[1].prototype = False
    for r in results:
        if r.candidates:
            r.candidates["own T"] = r.chosen
            r.chosen = best[1].chosen
    return best[1]


def _metric_rows(points, fields) -> list[list[str]]:
    """One table row per group and (label, result, threshold) of `points`:
    the group (on its first row), the label, `fields` in %, and the
    all-pairs false matches per million."""
    from report import _pct, _ppm

    rows = []
    for g in GROUPS:
        for i, (label, r, t) in enumerate(points):
            x = r.curve[g][t]
            rows.append(
                [f"{g[0]} {g[1]}" if i == 0 else "", label]
                + [_pct(getattr(x, f)) for f in fields]
                + [_ppm(x.fpr_all)]
            )
    return rows


def section(results: list[Result], chosen: Result | None, m=None) -> list[str]:
    """The Markdown of results.md's "Verified by similarity"."""
    from report import K_DEFAULT, _pct, _ppm, table

    sims = [r for r in results if r.kind == "similarity"]
    if not sims or chosen is None:
        return []
    out = [
        "## Verified by similarity",
        "",
        "A fingerprint candidate (distance at most k) is a duplicate only when the texts' similarity is at "
        "least T: `simhash_core::similarity` (c3, the definition: weighted containment of character "
        "3-grams of the fingerprint's normalized stream) or an alternative (c4, c5: containment of 4- "
        "and 5-grams; j5: Jaccard of the sets of 5-grams), each computed by `similarity-lines`. "
        f"Each row's T is one threshold for all four groups: the best worst-group F1 with precision ≥ "
        f"{MIN_PRECISION:.1%} and at most {SAFE_ALL_PAIRS * 1e6:g} in 10⁶ of all pairs flagged, in every group "
        "(see verify.py: the labeled negatives exclude near copies, so no verified rule flags one of them). "
        "All pairs: only pairs within k are verified; a measure alone has no all-pairs figure (–), so it "
        "is held to the labeled precision only.",
        "",
    ]
    rows = []
    for r in sims:
        t = r.chosen
        ms = [r.curve[g][t] for g in GROUPS]
        ok = all(_meets(x) for x in ms)
        rows.append(
            [r.name, f"≥ {t}", "yes" if ok else "no", _pct(min(x.f1 for x in ms))]
            + [_pct(x.f1) for x in ms]
            + [_pct(min(x.precision for x in ms)), _pct(max(x.fpr_hard for x in ms))]
            + [_ppm(max(x.fpr_all for x in ms)) if not all(math.isnan(x.fpr_all) for x in ms) else "–"]
        )
    out += [
        table(
            ["rule", "T", "meets both everywhere", "worst F1"]
            + [f"F1 {g[0]} {g[1]}" for g in GROUPS]
            + ["lowest precision", "highest FPR hard", "most all-pairs false per 10⁶"],
            rows,
            "ll" + "r" * 9,
        ),
        "",
        f"### The chosen rule beside the fingerprint alone and MinHash",
        "",
        f"Chosen: **{chosen.name} ≥ {chosen.chosen}**. The fingerprint alone at k = {K_DEFAULT} (the "
        "default) and at its own k chosen by the same criterion; MinHash at its J chosen by the same "
        "criterion; the similarity alone at its T.",
        "",
    ]
    points = [(f"{chosen.name} ≥ {chosen.chosen}", chosen, chosen.chosen)]
    by_name = {r.name: r for r in results}
    if "ours" in by_name:
        ours = by_name["ours"]
        k, _, _ = choose(ours)
        points.append((f"ours, k = {K_DEFAULT}", ours, K_DEFAULT))
        if k != K_DEFAULT:
            points.append((f"ours, k = {k}", ours, k))
    if "minhash" in by_name:
        mh = by_name["minhash"]
        j, _, _ = choose(mh)
        points.append((f"minhash J ≥ {j}", mh, j))
    if "c3 alone" in by_name:
        c3 = by_name["c3 alone"]
        points.append((f"c3 alone ≥ {c3.chosen}", c3, c3.chosen))
    rows = _metric_rows(points, ("recall", "precision", "f1", "fpr_random", "fpr_hard"))
    out += [
        table(
            ["group", "system", "recall", "precision", "F1", "FPR random", "FPR hard", "all pairs: false per 10⁶"],
            rows,
            "ll" + "r" * 6,
        ),
        "",
    ]
    lsh = next((r for r in sims if r.candidates), None)
    if lsh is not None and m is not None:
        earlier = by_name.get(f"ours (k≤{LSH_K} ∨ lsh) ∧ c3")
        out += lsh_section(lsh, chosen, by_name.get("minhash"), m, earlier)
    c3 = by_name.get("c3 alone")
    if m is not None and c3 is not None:
        out += [
            "### Similarity (c3) of the positives, by edit: median and 10th percentile",
            "",
            "Where a threshold falls among the edits: a rule with T above an edit's median loses most "
            "copies with that edit.",
            "",
        ]
        variants = list(dict.fromkeys(m.variant[m.pos]))
        rows = []
        for v in variants:
            row = [v]
            for g in GROUPS:
                s = c3.scores[m.group[g] & m.pos & (m.variant == v)]
                row.append(f"{np.median(s):.2f} / {np.percentile(s, 10):.2f}" if len(s) else "–")
            rows.append(row)
        out += [table(["edit"] + [f"{g[0]} {g[1]}" for g in GROUPS], rows, "l" + "r" * len(GROUPS)), ""]
    return out


def _at(scores: np.ndarray, t: float, m, g, pos: np.ndarray, higher=True) -> tuple:
    """(recall over `pos`, precision, F1, FPR random, FPR hard) of a score
    at threshold t in group g; precision as report.Metrics has it (as many
    duplicate as different pairs, half of the latter hard)."""
    pred = scores >= t if higher else scores <= t
    rate = lambda mask: float(pred[mask].sum() / mask.sum()) if mask.sum() else math.nan
    rec, fr, fh = rate(m.group[g] & pos), rate(m.group[g] & m.random), rate(m.group[g] & m.hard)
    fpr = (fr + fh) / 2
    prec = rec / (rec + fpr) if rec + fpr else math.nan
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return rec, prec, f1, fr, fh


def reading_section(rule: Result, lsh: Result, minhash: Result | None, m) -> list[str]:
    """The reading of `simhash.similarity_threshold = 0.82` (issue's
    target): copies with up to 5% of their characters edited are
    near-duplicates, copies with 10% edited are not. Positives are every
    edit but the 10% ones; how many of the 10% copies each rule flags is a
    column of its own (they are neither counted as found nor as false
    positives in F1). MinHash at its best J per group (the most favourable
    reading for it)."""
    from report import _pct, table

    ten = np.array(["10%" in str(v) for v in m.variant])
    pos5 = m.pos & ~ten
    pos10 = m.pos & ten
    points = [(f"{lsh.name} ≥ {STRICT_T}", lsh.scores, STRICT_T), (f"{rule.name} ≥ {STRICT_T}", rule.scores, STRICT_T)]
    rows = []
    for g in GROUPS:
        pts = list(points)
        if minhash is not None:
            best = max(
                (round(0.1 + 0.05 * i, 2) for i in range(18)),
                key=lambda j: _at(minhash.scores, j, m, g, pos5)[2],
            )
            pts.append((f"minhash J ≥ {best} (its best here)", minhash.scores, best))
        for i, (label, scores, t) in enumerate(pts):
            rec, prec, f1, fr, fh = _at(scores, t, m, g, pos5)
            flagged10 = _at(scores, t, m, g, pos10)[0]
            rows.append(
                [f"{g[0]} {g[1]}" if i == 0 else "", label]
                + [_pct(x) for x in (f1, rec, prec, fr, fh, flagged10)]
            )
    return [
        f"#### The reading of T = {STRICT_T}: copies with up to 5% of their characters edited are "
        "near-duplicates, 10% are not",
        "",
        "Positives: every edit except the 10% ones (insert, delete and substitute at 1, 3 and 5%, swap, "
        "footer, punctuation, width, and in Chinese traditional characters). The 10% copies are left out of "
        "F1 and the share of them each rule flags is shown apart (under this reading a flagged one is a false "
        "positive). MinHash at its best J in each group.",
        "",
        table(
            ["group", "system", "F1", "recall", "precision", "FPR random", "FPR hard", "10% copies flagged"],
            rows,
            "ll" + "r" * 6,
        ),
        "",
    ]


def lsh_section(lsh: Result, rule: Result, minhash: Result | None, m, earlier: Result | None = None) -> list[str]:
    """The Markdown of "The rule with the second candidate source": the
    rule of record beside the fingerprint-only rule and MinHash at its
    chosen J, at the chosen T and at STRICT_T; the earlier form of the
    rule (a shared key verified by c3 alone); the candidates of each
    source before verification."""
    from report import _pct, _ppm, table

    t0 = DEFAULT_T
    j = choose(minhash)[0] if minhash is not None else None

    def rows_at(points) -> list[list[str]]:
        return _metric_rows(points, ("f1", "recall", "precision", "fpr_random", "fpr_hard"))

    head = ["group", "system", "F1", "recall", "precision", "FPR random", "FPR hard", "all pairs: false per 10⁶"]
    main = [(f"{rule.name} ≥ {t0}", rule, t0), (f"{lsh.name} ≥ {t0}", lsh, t0)]
    if minhash is not None:
        main.append((f"minhash J ≥ {j}", minhash, j))
    strict = [(f"{rule.name} ≥ {STRICT_T}", rule, STRICT_T), (f"{lsh.name} ≥ {STRICT_T}", lsh, STRICT_T)]
    others = []
    own = lsh.candidates.get("own T", t0)
    if own not in (t0, STRICT_T):
        others.append((f"{lsh.name} ≥ {own} (its own T)", lsh, own))
    if earlier is not None:
        others += [(f"{earlier.name} ≥ {t} (earlier form)", earlier, t) for t in (t0, STRICT_T)]
    n_check, diff = lsh.candidates["j5 check"]
    fp, key, kj = lsh.candidates["fingerprint"], lsh.candidates["lsh"], lsh.candidates["key and j5"]
    crow = []
    for g in GROUPS:
        row = [f"{g[0]} {g[1]}"]
        for mask in (m.pos, m.hard, m.random):
            gm = m.group[g] & mask
            n = gm.sum()
            row += [_pct(float((c & gm).sum() / n)) if n else "–" for c in (fp, key, kj)]
        within, either, passing, total = lsh.candidates["all pairs"][g]
        row += [_ppm(x / total) if total else "–" for x in (within, either, passing)]
        crow.append(row)
    out = [
        "### The rule with the second candidate source",
        "",
        f"The rule of record: a pair is a near-duplicate when (the fingerprints are within {LSH_K} AND c3 ≥ T) "
        f"OR (they are farther apart AND the texts have the same key in at least one of the 32 bands of "
        "`simhash_core::lsh`, SQL `simhash_lsh()`, printed by `lsh-lines`, compared band by band, AND c3 ≥ T "
        f"AND (j5 ≥ {J_MIN:.2f} OR cont5 ≥ {C_MIN:.2f})), j5 and cont5 being the exact Jaccard and containment "
        "(distinct grams of both over those of the text with fewer) of the sets of character 5-grams of the "
        "normalized stream (`simhash_core::lsh::second_test`, SQL `simhash_lsh_match()`, the measures `jaccard` "
        f"and `containment` of `similarity-lines`; on the {n_check:,} pairs computed the Jaccard differs from "
        f"the experimental j5 by at most {diff:g}). "
        f"Beside the fingerprint-only rule and MinHash at its J chosen by the same criterion; first at the "
        f"default T ({t0}"
        + (f"; the fingerprint-only rule's T chosen by the criterion above is {rule.chosen}" if rule.chosen != t0 else ", the T chosen by the criterion above")
        + f"), then at {STRICT_T} (an edit of 5% of the characters a copy, 10% not). All pairs: "
        "the pairs that share a key are verified too.",
        "",
        table(head, rows_at(main), "ll" + "r" * 6),
        "",
        f"At T = {STRICT_T}:",
        "",
        table(head, rows_at(strict), "ll" + "r" * 6),
        "",
    ]
    out += reading_section(rule, lsh, minhash, m)
    if others:
        out += [
            "For comparison: "
            + ("the rule at its own T chosen by the same criterion; " if own not in (t0, STRICT_T) else "")
            + "its earlier form, which verified a shared key by c3 alone (no j5 test): on long English texts, "
            "addresses on one subject (State of the Union) share a key and a containment of trigrams of 0.8 "
            "to 0.94, and pass it.",
            "",
            table(head, rows_at(others), "ll" + "r" * 6),
            "",
        ]
    out += [
        "Candidates before verification, percent of the labeled pairs of each kind: within "
        f"{LSH_K} (fingerprint), sharing a key (key), past {LSH_K} sharing a key and passing the second test "
        f"{SECOND_TEST} (key ∧ 2nd); all pairs (near copies left out), per 10⁶: within the distance, either "
        "source (the rows a query verifies), and within the distance or key ∧ 2nd (the pairs c3 is left to "
        "decide).",
        "",
        table(
            ["group"]
            + [f"{k}: {s}" for k in ("positives", "hard", "random") for s in ("fingerprint", "key", "key ∧ 2nd")]
            + ["all pairs per 10⁶: fingerprint", "all pairs per 10⁶: either", "all pairs per 10⁶: fp or key ∧ 2nd"],
            crow,
            "l" + "r" * 12,
        ),
        "",
    ]
    return out
