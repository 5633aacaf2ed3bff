"""The detection-quality yardstick: labeled pairs from the shared corpora,
every system on the same pairs in the same run, one report.

Run it through `bench/quality/run.sh`, which prepares the Python
environment and the `fingerprint-lines` binary; see README.md beside this
file for what is measured and how to read the tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import allpairs
import pairs as pairs_mod
import report
import systems
from report import NO_SIGNATURE, Masks, Result

HERE = Path(__file__).resolve().parent

# Candidate changes to our fingerprint, each applied to version 1 (the
# options of `fingerprint-lines`; none of them is the extension's
# definition; version 2 is "ours v2 candidate" without the English IDF
# table, whose wordfreq data could not ship and which lowered English
# recall). Paths are relative to this directory or to the work
# directory (`{work}`), where generated tables go. "ours v2 candidate"
# combines the ones that helped; oov-idf 4 and tf-cap 3 were chosen among
# 4/6/8 and log/2/3 on these same corpora, so its margin is optimistic.
VARIANTS = {
    "ours t2s": ["--charmap", "{work}/t2s.txt"],
    "ours oov=4": ["--oov-idf", "4"],
    "ours tf=log": ["--tf", "log"],
    "ours tf-cap=3": ["--tf-cap", "3"],
    "ours stopwords": ["--stopwords", "stopwords_en.txt"],
    "ours en-idf": ["--idf", "{work}/en_idf.txt"],
    "ours shingles": ["--shingles"],
    "ours v2 candidate": [
        "--charmap",
        "{work}/t2s.txt",
        "--oov-idf",
        "4",
        "--tf-cap",
        "3",
        "--idf",
        "{work}/en_idf.txt",
    ],
}
# The prototype shown beside the other systems in the main tables: none
# since definition version 2 ("ours") is the extension's own.
HEADLINE_VARIANT = None


def write_t2s_table(path: Path) -> None:
    """Traditional to simplified, one character to one, from the tables of
    PyPI `opencc-python-reimplemented` (the edits use zhconv's tables, so
    the normalization is not the edit run backwards)."""
    import opencc

    src = Path(opencc.__file__).parent / "dictionary" / "TSCharacters.txt"
    with open(src, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        for line in f:
            trad, simp = line.rstrip("\n").split("\t")
            simp = simp.split()[0]
            if len(trad) == 1 and len(simp) == 1 and trad != simp:
                out.write(f"{trad} {simp}\n")


def write_en_idf(path: Path, words: int = 100_000) -> None:
    """An IDF-like weight for English words, -ln(frequency) from PyPI
    `wordfreq` (its own data, no download), capped at the largest IDF of
    jieba's table (13.90) so that both scripts share one scale: `the` gets
    2.9, `government` 7.9, `linux` 11.5."""
    import math

    import wordfreq

    with open(path, "w", encoding="utf-8") as out:
        for w in wordfreq.top_n_list("en", words):
            if w.isalnum():
                idf = min(13.900677652, -math.log(wordfreq.word_frequency(w, "en")))
                out.write(f"{w} {idf:.6f}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the shared corpora directory")
    ap.add_argument("--binary", type=Path, required=True, help="the fingerprint-lines binary")
    ap.add_argument("--work", type=Path, required=True, help="scratch directory")
    ap.add_argument("--out", type=Path, default=HERE, help="where results.md and the CSVs go")
    ap.add_argument("--seed", type=int, default=1998)
    ap.add_argument("--positives", type=int, default=300, help="pairs per (group, edit, rate)")
    ap.add_argument("--negatives", type=int, default=1000, help="pairs per (group, random|hard)")
    ap.add_argument("--all-pairs", type=int, default=2500, help="documents per group compared all against all")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, or 'none'")
    ap.add_argument("--skip", default="", help="comma-separated systems to leave out")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    variants = [] if args.variants == "none" else [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")

    started = time.time()
    t0 = time.time()
    ps = pairs_mod.build(args.data, args.seed, args.positives, args.negatives, args.all_pairs)
    build_s = time.time() - t0
    chars = sum(len(t) for t in ps.texts)
    print(
        f"pairs: {len(ps.pairs)} over {len(ps.texts)} texts ({chars / 1e6:.1f} M characters), "
        f"built in {build_s:.0f} s",
        file=sys.stderr,
    )
    a = np.array([p.a for p in ps.pairs])
    b = np.array([p.b for p in ps.pairs])

    results: list[Result] = []
    failures: list[str] = []
    near = allpairs.NearCopies(ps.texts)

    def simhash_result(
        name: str, sigs: list, seconds: float, bits: int = 64, note: str = "", prototype: bool = False
    ) -> None:
        d = np.array(
            [NO_SIGNATURE if (x := systems.hamming(sigs[i], sigs[j])) is None else x for i, j in zip(a, b)]
        )
        r = Result(name, "simhash", d, seconds, bits, note, prototype)
        t = time.time()
        for g, ids in ps.samples.items():
            r.all_pairs[g] = allpairs.simhash_counts(sigs, ids, bits, near, report.K_CURVE)
        results.append(r)
        print(f"{name}: {seconds:.0f} s, all pairs {time.time() - t:.0f} s", file=sys.stderr)

    def timed(fn):
        t = time.time()
        out = fn()
        return out, time.time() - t

    if "ours" not in skip:
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, ["--definition", "v2"]))
        simhash_result("ours", sigs, s, note="version 2, as SQL simhash()")
    if "ours v1" not in skip:
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, []))
        simhash_result("ours v1", sigs, s, note="version 1, as SQL simhash_v1()")
    if any("{work}/t2s.txt" in VARIANTS[v] for v in variants):
        write_t2s_table(args.work / "t2s.txt")
    if any("{work}/en_idf.txt" in VARIANTS[v] for v in variants):
        write_en_idf(args.work / "en_idf.txt")
    for v in variants:
        flags = [f.replace("{work}", str(args.work)) for f in VARIANTS[v]]
        flags = [str(HERE / f) if (HERE / f).is_file() else f for f in flags]
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, flags))
        simhash_result(v, sigs, s, note="prototype: " + " ".join(VARIANTS[v]), prototype=v != HEADLINE_VARIANT)

    for name in ("simhash-py", "simhash-py+jieba"):
        if name not in skip:
            sigs, s = timed(lambda: systems.python_system(name, ps.texts, ps.text_lang, args.jobs))
            simhash_result(name, sigs, s)

    if "clickhouse" not in skip:
        try:
            both, s = timed(lambda: systems.clickhouse(ps.texts, args.work, args.jobs))
            for name, sigs in both.items():
                simhash_result(name, sigs, s / 2, bits=32, note="32 significant bits")
        except systems.Failed as e:
            failures.append(f"clickhouse (chdb): {e}")
            print(f"clickhouse skipped: {e}", file=sys.stderr)

    if "minhash" not in skip:
        sigs, s = timed(lambda: systems.python_system("minhash", ps.texts, ps.text_lang, args.jobs))
        sim = np.array([systems.jaccard(sigs[i], sigs[j]) for i, j in zip(a, b)])
        r = Result("minhash", "minhash", sim, s)
        for g, ids in ps.samples.items():
            r.all_pairs[g] = allpairs.minhash_counts(sigs, ids, near, report.MINHASH_CURVE)
        results.append(r)
        print(f"minhash: {s:.0f} s", file=sys.stderr)

    m = Masks(ps)
    for r in results:
        report.evaluate(r, m)
    total_s = time.time() - started

    md = render(args, ps, m, results, failures, build_s, total_s, chars)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(md, encoding="utf-8")
    (args.out / "kcurve.csv").write_text(report.curve_csv(results), encoding="utf-8")
    (args.out / "recall_by_edit.csv").write_text(report.edits_csv(results, m), encoding="utf-8")
    print(md)
    return 0


def render(args, ps, m, results, failures, build_s, total_s, chars) -> str:
    main = [r for r in results if not r.prototype]
    ours = [r for r in results if r.name.startswith("ours")]
    out = [
        "# Detection quality: results",
        "",
        f"`bench/quality/run.sh`, seed {args.seed}: {args.positives} positive pairs per "
        f"(group, edit, rate), {args.negatives} random and {args.negatives} hard negatives per group, "
        f"{len(ps.pairs):,} labeled pairs over {len(ps.texts):,} distinct texts ({chars / 1e6:.1f} M characters), "
        f"and all pairs of {args.all_pairs:,} documents per group. "
        f"Candidate negatives dropped as near copies: {report.dropped_note(ps)}. "
        "Precision and F1 assume as many duplicate as different pairs, half of the latter hard; "
        f"the safe k is the largest with at most {report.SAFE_HARD:.0%} of hard negatives and "
        f"{report.SAFE_ALL_PAIRS * 1e6:g} in 10⁶ of all pairs flagged (see README.md). "
        "Figures are percentages unless marked.",
        "",
        "## Summary: k = 3 (MinHash: J ≥ 0.8 and 0.7), the best k by F1, and the safe k",
        "",
        report.summary_table(main, ps, m),
        "",
        "## Prototypes measured on the way to version 2 (options applied to version 1)",
        "",
        "Options of `fingerprint-lines`, each alone and then combined:",
        "",
    ]
    out += [f"- {r.name}: `{r.note.removeprefix('prototype: ')}`" for r in ours if r.note.startswith("prototype")]
    out += [
        "",
        report.summary_table(ours, ps, m),
        "",
        "## Recall per edit, at k = 3",
        "",
        "Every SimHash system and prototype at every k: `recall_by_edit.csv`.",
        "",
    ]
    for g in pairs_mod.GROUPS:
        out += [f"### {g[0]} {g[1]}", "", report.edit_table(main, m, g), ""]
    out += [
        "## False-positive rate per kind of negative, at k = 3",
        "",
        report.negatives_table(main, ps, m),
        "",
        "## Distances (SimHash systems)",
        "",
        report.distance_table(main, m),
        "",
        "## Systems",
        "",
        report.table(
            ["system", "note", "seconds"],
            [[r.name, r.note or "", f"{r.seconds:.1f}"] for r in results],
            "llr",
        ),
        "",
    ]
    if failures:
        out += ["Skipped:", ""] + [f"- {f}" for f in failures] + [""]
    out += [
        f"Pairs built in {build_s:.0f} s; whole run {total_s:.0f} s with {args.jobs} worker processes "
        f"(Python {platform.python_version()}, {os.cpu_count()} CPUs).",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
