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
import verify
from report import NO_SIGNATURE, Masks, Result

HERE = Path(__file__).resolve().parent

# Candidate changes to our fingerprint (options of `fingerprint-lines`).
# The default set is version 3 with one setting changed at a time: each row
# shows what that part of the definition is worth. The older set, each
# applied to version 1, is what led to version 2 (its results are in the
# history of results.md); run it with --variants v1. Paths are relative to
# this directory or to the work directory (`{work}`), where generated
# tables go.
VARIANTS = {
    # The first character-level prototype: capped counts, no chance.
    "v3 no chance caps 3": ["--v3-chance", "off", "--v3-han-cap", "3", "--v3-gram-cap", "3"],
    "v3 no chance": ["--v3-chance", "off"],
    "v3 han cap 3": ["--v3-han-cap", "3"],
    "v3 han cap 12": ["--v3-han-cap", "12"],
    "v3 han power 0": ["--v3-han-power", "0"],
    "v3 gram cap 3": ["--v3-gram-cap", "3"],
    "v3 gram cap 12": ["--v3-gram-cap", "12"],
    "v3 gram power 1": ["--v3-gram-power", "1"],
    "v3 gram unknown 1": ["--v3-gram-unknown", "1"],
    "v3 han scale 0.25": ["--v3-han-scale", "0.25"],
}
V1_VARIANTS = {
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
ALL_VARIANTS = {**VARIANTS, **V1_VARIANTS}
# The prototype shown beside the other systems in the main tables: none
# since definition version 3 ("ours") is the extension's own.
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


LONG_ZH_CHARS = 10_000
LONG_ZH_DOCS = 100


def long_texts(data: Path) -> dict[str, list[str]]:
    """Distinct long texts, none a copy of another: zh, runs of consecutive
    zh_news articles joined until each holds 10,000 characters (disjoint
    runs, so each pair shares no article; neighbours come from the same
    days and pages); en, the State of the Union addresses whole (about
    30,000 to 200,000 characters, each compared with every other)."""
    news = [d["text"] for d in pairs_mod.read_jsonl_gz(data / "zh_news.jsonl.gz")]
    zh: list[str] = []
    cur: list[str] = []
    n = 0
    for t in news:
        cur.append(t)
        n += len(t)
        if n >= LONG_ZH_CHARS:
            zh.append("\n".join(cur))
            cur, n = [], 0
            if len(zh) == LONG_ZH_DOCS:
                break
    en = [d["text"] for d in pairs_mod.read_jsonl_gz(data / "en_docs.jsonl.gz") if d["id"].startswith("sotu-")]
    return {"zh": zh, "en": en}


def long_text_rows(name: str, sigs: list, lang: str) -> list[str]:
    """[system, language, pairs, within k = 3, within k = K_DEFAULT,
    smallest distance, 1st percentile] over all pairs of distinct long
    texts: every pair within k is a false match."""
    fp = np.array([x for x in sigs if x is not None], dtype=np.uint64)
    d = np.concatenate([allpairs._popcount64(fp[i] ^ fp[i + 1 :]) for i in range(len(fp) - 1)])
    return [
        name,
        lang,
        f"{len(d):,}",
        str(int((d <= report.K_USUAL).sum())),
        str(int((d <= report.K_DEFAULT).sum())),
        str(int(d.min())),
        f"{np.percentile(d, 1):.0f}",
    ]


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
    ap.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated names, 'v1' for the variants that led to version 2, or 'none'",
    )
    ap.add_argument("--skip", default="", help="comma-separated systems to leave out")
    ap.add_argument("--skip-long", action="store_true", help="leave out the long-text check")
    ap.add_argument(
        "--set",
        choices=("first", "second"),
        default="first",
        help="second: --data is the directory second_set.py writes; results go to results-second.md, "
        "kcurve-second.csv and recall_by_edit-second.csv; no long-text check",
    )
    args = ap.parse_args()
    if args.set == "second":
        args.skip_long = True
    args.work.mkdir(parents=True, exist_ok=True)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.variants == "none":
        variants = []
    elif args.variants == "v1":
        variants = list(V1_VARIANTS)
    else:
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ALL_VARIANTS:
            ap.error(f"unknown variant {v!r}; known: {', '.join(ALL_VARIANTS)}")

    started = time.time()
    t0 = time.time()
    ps = pairs_mod.build(
        args.data, args.seed, args.positives, args.negatives, args.all_pairs, second=args.set == "second"
    )
    build_s = time.time() - t0
    chars = sum(len(t) for t in ps.texts)
    print(
        "pools: " + ", ".join(f"{g[0]} {g[1]} {n}" for g, n in ps.pool_sizes.items()),
        file=sys.stderr,
    )
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

    ours_sigs = None
    if "ours" not in skip:
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, ["--definition", "v3"]))
        simhash_result("ours", sigs, s, note="version 3, as SQL simhash()")
        ours_sigs = sigs
    if "ours v2" not in skip:
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, ["--definition", "v2"]))
        simhash_result("ours v2", sigs, s, note="version 2, as SQL simhash_v2()")
    if "ours v1" not in skip:
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, []))
        simhash_result("ours v1", sigs, s, note="version 1, as SQL simhash_v1()")
    if any("{work}/t2s.txt" in ALL_VARIANTS[v] for v in variants):
        write_t2s_table(args.work / "t2s.txt")
    if any("{work}/en_idf.txt" in ALL_VARIANTS[v] for v in variants):
        write_en_idf(args.work / "en_idf.txt")
    for v in variants:
        flags = [f.replace("{work}", str(args.work)) for f in ALL_VARIANTS[v]]
        flags = [str(HERE / f) if (HERE / f).is_file() else f for f in flags]
        sigs, s = timed(lambda: systems.ours(args.binary, ps.texts, flags))
        simhash_result(
            v, sigs, s, note="prototype: " + " ".join(ALL_VARIANTS[v]), prototype=v != HEADLINE_VARIANT
        )

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

    # Verification of the fingerprint's candidates by similarity
    # (verify.py), computed by the core's own function.
    # With "lsh" not skipped, the rule with the second candidate source
    # (a shared simhash_lsh band key) too.
    if "similarity" not in skip and ours_sigs is not None:
        t = time.time()
        ours_d = next(r.scores for r in results if r.name == "ours")
        keys = None
        if "lsh" not in skip:
            try:
                keys = systems.lsh_keys(args.binary.parent / "lsh-lines", ps.texts)
            except systems.Failed as e:
                failures.append(f"lsh: {e}")
                print(f"lsh skipped: {e}", file=sys.stderr)
        results += verify.systems(
            args.binary.parent / "similarity-lines", ps.texts, a, b, ours_d, ours_sigs, ps.samples, near, keys
        )
        print(f"similarity: {time.time() - t:.0f} s", file=sys.stderr)

    # Long texts: pairs of distinct articles and addresses that no system
    # should call duplicates.
    long_rows: list[list[str]] = []
    if not args.skip_long:
        longs = long_texts(args.data)
        for lang, texts in longs.items():
            runs = []
            if "ours" not in skip:
                runs.append(("ours", ["--definition", "v3"]))
            if "ours v2" not in skip:
                runs.append(("ours v2", ["--definition", "v2"]))
            if "ours v1" not in skip:
                runs.append(("ours v1", []))
            runs += [(v, [f.replace("{work}", str(args.work)) for f in ALL_VARIANTS[v]]) for v in variants]
            for name, flags in runs:
                flags = [str(HERE / f) if (HERE / f).is_file() else f for f in flags]
                long_rows.append(long_text_rows(name, systems.ours(args.binary, texts, flags), lang))
            for name in ("simhash-py", "simhash-py+jieba"):
                if name not in skip:
                    sigs = systems.python_system(name, texts, [lang] * len(texts), args.jobs)
                    long_rows.append(long_text_rows(name, sigs, lang))
        print(f"long texts: {sum(len(t) for t in longs.values())} texts", file=sys.stderr)

    m = Masks(ps)
    for r in results:
        report.evaluate(r, m)
    chosen = verify.choose_default(results)
    total_s = time.time() - started

    md = render(args, ps, m, results, failures, build_s, total_s, chars, long_rows, chosen)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.set == "first" else f"-{args.set}"
    (args.out / f"results{suffix}.md").write_text(md, encoding="utf-8")
    (args.out / f"kcurve{suffix}.csv").write_text(report.curve_csv(results), encoding="utf-8")
    (args.out / f"recall_by_edit{suffix}.csv").write_text(report.edits_csv(results, m), encoding="utf-8")
    print(md)
    return 0


def options_echo() -> str:
    """The command-line options but the paths of this machine."""
    out, argv = [], sys.argv[1:]
    i = 0
    while i < len(argv):
        if argv[i] in ("--data", "--binary", "--work", "--out"):
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return " ".join(out)


def render(args, ps, m, results, failures, build_s, total_s, chars, long_rows, chosen) -> str:
    main = [r for r in results if not r.prototype]
    ours = [r for r in results if (r.name.startswith("ours") or r.prototype) and r.kind == "simhash"]
    if args.set == "second":
        head = [
            "# Detection quality: results on the second set",
            "",
            "The second labeled set (see \"The second set\" in README.md): the same groups, edits, negatives "
            "and measures on Debian packages the first set does not use. Pools: "
            + ", ".join(f"{g[0]} {g[1]} {n:,} documents" for g, n in ps.pool_sizes.items())
            + f" (all pairs: the whole pool when it is smaller than {args.all_pairs:,}). Options: `{options_echo()}`.",
            "",
            f"`bench/quality/second.sh`, seed {args.seed}: {args.positives} positive pairs per ",
        ]
    else:
        head = ["# Detection quality: results", "", f"`bench/quality/run.sh`, seed {args.seed}: {args.positives} positive pairs per "]
    out = [
        *head[:-1],
        head[-1] +
        f"(group, edit, rate), {args.negatives} random and {args.negatives} hard negatives per group, "
        f"{len(ps.pairs):,} labeled pairs over {len(ps.texts):,} distinct texts ({chars / 1e6:.1f} M characters), "
        f"and all pairs of {args.all_pairs:,} documents per group. "
        f"Candidate negatives dropped as near copies: {report.dropped_note(ps)}. "
        "Precision and F1 assume as many duplicate as different pairs, half of the latter hard; "
        f"the safe k is the largest with at most {report.SAFE_HARD:.0%} of hard negatives and "
        f"{report.SAFE_ALL_PAIRS * 1e6:g} in 10⁶ of all pairs flagged (see README.md). "
        "Figures are percentages unless marked.",
        "",
        f"## Summary: k = {report.K_USUAL} and {report.K_DEFAULT} (MinHash: J ≥ 0.8 and 0.7), the best k by F1, and the safe k",
        "",
        report.summary_table(main, ps, m),
        "",
        "## Prototypes: version 3 with one setting changed at a time",
        "",
        "Options of `fingerprint-lines` (`--variants v1` measures instead the options, applied to "
        "version 1, that led to version 2):",
        "",
    ]
    out += [f"- {r.name}: `{r.note.removeprefix('prototype: ')}`" for r in ours if r.note.startswith("prototype")]
    out += [
        "",
        report.summary_table(ours, ps, m, ks=(report.K_DEFAULT,)),
        "",
    ]
    out += verify.section(results, chosen, m)
    out += [
        f"## Recall per edit, at k = {report.K_DEFAULT} (MinHash: J ≥ 0.8 and 0.7; a similarity rule at its chosen T)",
        "",
        "Every SimHash system and prototype at every k: `recall_by_edit.csv`.",
        "",
    ]
    for g in pairs_mod.GROUPS:
        out += [f"### {g[0]} {g[1]}", "", report.edit_table(main, m, g), ""]
    out += [
        f"## False-positive rate per kind of negative, at k = {report.K_DEFAULT}",
        "",
        report.negatives_table(main, ps, m),
        "",
        "## Long texts: distinct texts that must not match",
        "",
        "Not measured on the second set: it has no long texts known to be distinct." if args.set == "second" else
        f"All pairs of {LONG_ZH_DOCS} texts of {LONG_ZH_CHARS:,}+ characters made of consecutive, disjoint "
        "runs of zh_news articles, and of the 233 State of the Union addresses (en). No pair is a copy: "
        "every pair within k is a false match. The labeled pairs above are mostly shorter; this is where "
        "features that every long text of a language shares (common characters, common trigrams) show.",
        "",
        report.table(
            ["system", "language", "pairs", f"within {report.K_USUAL}", f"within {report.K_DEFAULT}",
             "smallest distance", "1st percentile"],
            long_rows,
            "ll" + "r" * 5,
        ) if long_rows else "(skipped)",
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
