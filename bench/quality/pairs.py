"""The labeled pairs of the yardstick, built deterministically from the
shared developer corpora.

Four groups, reported apart because SimHash behaves differently on each:

* zh/short: zh_short.jsonl.gz texts under 200 characters (headlines, app
  descriptions, abstracts, reviews, idiom passages);
* zh/long: zh_news.jsonl.gz articles of 200 characters or more;
* en/short: English snippets of 60 to 199 characters: prose paragraphs of
  the SpamAssassin emails, and runs of whole sentences of the SOTU
  addresses (which have no paragraph breaks), as many of one as of the
  other;
* en/long: en_docs.jsonl.gz documents of 200 characters or more.

A positive pair is a document and an edited copy of it (see `edits.py`);
each edit kind and rate gets its own sample of originals, taken in one
fixed shuffled order of the group, so most variants share their originals.
A negative pair is two different documents: a random pair of the group, or
a hard pair: documents that sit next to each other in their corpus and so
share a day, a page, a speaker or a mailing list.

The corpora contain natural near-duplicates (reprints, spam campaigns,
list footers), which must not count as negatives: a candidate negative
whose character 5-gram containment (shared 5-grams over the smaller set)
is 0.5 or more is dropped, and the count of dropped pairs is reported.
"""

from __future__ import annotations

import bisect
import collections
import gzip
import itertools
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import edits

GROUPS = [("zh", "short"), ("zh", "long"), ("en", "short"), ("en", "long")]
SHORT_LIMIT = 200
EN_SHORT_MIN = 60
NEAR_COPY_CONTAINMENT = 0.5


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    # Where it comes from (sub-dataset, mailing list, SOTU ...), for hard
    # negatives and for the report.
    source: str


@dataclass(frozen=True)
class Pair:
    group: tuple[str, str]
    a: int  # text indices into Pairs.texts
    b: int
    positive: bool
    # Edit kind ("insert", "swap", ...) for positives; negative kind
    # ("random" or "hard") for negatives.
    kind: str
    # Edit rate for positives ("" when the kind has none); the hard
    # negative's source ("zh_news adjacent", ...) for negatives.
    detail: str


@dataclass
class Pairs:
    texts: list[str] = field(default_factory=list)
    text_lang: list[str] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    # (group, what) -> count of candidate negatives dropped as near copies.
    dropped: collections.Counter = field(default_factory=collections.Counter)
    # group -> text ids of the documents compared all against all
    # (allpairs.py).
    samples: dict = field(default_factory=dict)
    # group -> documents in its pool.
    pool_sizes: dict = field(default_factory=dict)
    _index: dict[tuple[str, str], int] = field(default_factory=dict)

    def text_id(self, lang: str, text: str) -> int:
        key = (lang, text)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.texts)
            self.texts.append(text)
            self.text_lang.append(lang)
        return i


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _prefix(doc_id: str) -> str:
    return doc_id.rsplit("-", 1)[0]


# Prose filter for e-mail paragraphs: no quoted lines, addresses, links or
# code, mostly letters, at least eight words, not shouted.
_NOT_PROSE = re.compile(r"^\s*>|@|https?:|www\.|[{}<>|=_#*\\]{2,}|\t", re.M)


def _is_prose(p: str) -> bool:
    letters = sum(c.isalpha() or c == " " for c in p)
    upper = sum(c.isupper() for c in p)
    return (
        not _NOT_PROSE.search(p)
        and letters >= 0.8 * len(p)
        and upper <= 0.3 * max(1, letters)
        and len(p.split()) >= 8
    )


def _sotu_snippets(doc: dict) -> list[Doc]:
    """Consecutive whole sentences of an address, packed greedily into
    snippets of EN_SHORT_MIN..SHORT_LIMIT-1 characters."""
    out, cur = [], ""
    for sent, _ in edits.sentences(doc["text"], "en"):
        cand = f"{cur} {sent}" if cur else sent
        if len(cand) < SHORT_LIMIT:
            cur = cand
            continue
        if len(cur) >= EN_SHORT_MIN:
            out.append(cur)
        cur = sent if len(sent) < SHORT_LIMIT else ""
    if len(cur) >= EN_SHORT_MIN:
        out.append(cur)
    return [Doc(f"{doc['id']}#{i}", t, "sotu") for i, t in enumerate(out)]


def load_groups(data: Path, seed: int) -> tuple[dict, dict]:
    """The document pool of each group, in corpus order, and the candidate
    hard-negative pairs of each group by source."""
    zh_news = read_jsonl_gz(data / "zh_news.jsonl.gz")
    zh_short = read_jsonl_gz(data / "zh_short.jsonl.gz")
    en_docs = read_jsonl_gz(data / "en_docs.jsonl.gz")
    poetry = read_jsonl_gz(data / "zh_poetry_small.jsonl.gz")

    pools: dict[tuple[str, str], list[Doc]] = {}
    hard: dict[tuple[str, str], dict[str, list[tuple[Doc, Doc]]]] = {}

    def adjacent(docs: list[Doc]) -> list[tuple[Doc, Doc]]:
        return [(x, y) for x, y in itertools.pairwise(docs) if x.source == y.source]

    # zh/long: articles next to each other in the paper (same day, mostly
    # the same page).
    news = [Doc(d["id"], d["text"], "zh_news") for d in zh_news]
    pools["zh", "long"] = [d for d in news if len(d.text) >= SHORT_LIMIT]
    hard["zh", "long"] = {"zh_news adjacent articles": adjacent(pools["zh", "long"])}

    # zh/short: neighbours in the same FewCLUE sub-dataset, and consecutive
    # ci poems (same poet, often the same tune pattern, so the same metre
    # and much shared diction).
    short = [
        Doc(d["id"], d["text"], _prefix(d["id"])) for d in zh_short if len(d["text"]) < SHORT_LIMIT
    ]
    pools["zh", "short"] = short
    ci = [
        Doc(d["id"], d["text"], "ci")
        for d in poetry
        if d["id"].startswith("ci-") and len(d["text"]) < SHORT_LIMIT
    ]
    hard["zh", "short"] = {
        "zh_short adjacent, same sub-dataset": adjacent(short),
        "consecutive ci poems": adjacent(ci),
    }

    # en/long: consecutive messages of one SpamAssassin folder (same
    # mailing lists, same spam campaigns' styles), and addresses of
    # consecutive years (often the same president).
    long_en = [
        Doc(d["id"], d["text"], "sotu" if d["id"].startswith("sotu") else _prefix(d["id"]))
        for d in en_docs
        if len(d["text"]) >= SHORT_LIMIT
    ]
    pools["en", "long"] = long_en
    hard["en", "long"] = {
        "emails adjacent, same folder": adjacent([d for d in long_en if d.source != "sotu"]),
        "SOTU consecutive addresses": adjacent([d for d in long_en if d.source == "sotu"]),
    }

    # en/short: prose paragraphs of the e-mails and sentence runs of the
    # addresses; hard negatives are neighbours within one document.
    paras, hard_paras = [], []
    for d in en_docs:
        if d["id"].startswith("sotu"):
            continue
        prev = None
        for i, p in enumerate(re.split(r"\n\s*\n", d["text"])):
            p = p.strip()
            if EN_SHORT_MIN <= len(p) < SHORT_LIMIT and _is_prose(p):
                cur = Doc(f"{d['id']}#{i}", p, "email")
                if prev is not None:
                    hard_paras.append((prev, cur))
                paras.append(cur)
                prev = cur
            else:
                prev = None
    snippets, hard_snips = [], []
    for d in en_docs:
        if d["id"].startswith("sotu"):
            s = _sotu_snippets(d)
            snippets.extend(s)
            hard_snips.extend(itertools.pairwise(s))
    # As many address snippets as e-mail paragraphs, so neither dominates.
    rng = random.Random(f"{seed}:en-short-balance")
    keep = set(d.id for d in rng.sample(snippets, min(len(snippets), len(paras))))
    snippets = [d for d in snippets if d.id in keep]
    pools["en", "short"] = paras + snippets
    hard["en", "short"] = {
        "email: adjacent paragraphs": hard_paras,
        "SOTU: adjacent snippets": [(x, y) for x, y in hard_snips if x.id in keep and y.id in keep],
    }

    # One copy of each text per pool: exact duplicates would make random
    # "negatives" that are really positives.
    for g, docs in pools.items():
        seen: set[str] = set()
        pools[g] = [d for d in docs if not (d.text in seen or seen.add(d.text))]
    return pools, hard


SECOND_FILES = {g: f"{g[0]}-{g[1]}" for g in GROUPS}


def load_second_groups(data: Path, seed: int) -> tuple[dict, dict]:
    """The same as `load_groups` for the second set, which `second_set.py`
    writes: per group, <lang>-<size>.jsonl.gz (the pool, in corpus order)
    and <lang>-<size>.hard.jsonl.gz (candidate hard pairs by id, with the
    kind that names their source)."""
    pools: dict[tuple[str, str], list[Doc]] = {}
    hard: dict[tuple[str, str], dict[str, list[tuple[Doc, Doc]]]] = {}
    for g, name in SECOND_FILES.items():
        docs = [Doc(d["id"], d["text"], d["source"]) for d in read_jsonl_gz(data / f"{name}.jsonl.gz")]
        by_id = {d.id: d for d in docs}
        hard[g] = collections.defaultdict(list)
        for h in read_jsonl_gz(data / f"{name}.hard.jsonl.gz"):
            hard[g][h["kind"]].append((by_id[h["a"]], by_id[h["b"]]))
        hard[g] = dict(hard[g])
        seen: set[str] = set()
        pools[g] = [d for d in docs if not (d.text in seen or seen.add(d.text))]
    return pools, hard


def shingles(text: str, n: int = 5) -> set[str]:
    t = "".join(text.lower().split())
    return {t[i : i + n] for i in range(max(1, len(t) - n + 1))}


def near_copy(a: str, b: str) -> bool:
    """Whether two texts share so much that calling them different would be
    a wrong label (a reprint, a quoted reply, a campaign variant)."""
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) >= NEAR_COPY_CONTAINMENT * min(len(sa), len(sb))


class CharSampler:
    """Draws characters with the frequencies they have in a pool, so that
    inserted and substituted characters look like the corpus (common
    characters and spaces most often), not like random code points."""

    def __init__(self, docs: list[Doc], rng: random.Random, sample: int = 3000):
        counts: collections.Counter = collections.Counter()
        for d in rng.sample(docs, min(sample, len(docs))):
            counts.update(c for c in d.text if c.isprintable())
        self.chars = list(counts)
        self.cum = list(itertools.accumulate(counts[c] for c in self.chars))

    def draw(self, rng: random.Random) -> str:
        return self.chars[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


def build(
    data: Path, seed: int, positives: int, negatives: int, all_pairs: int, second: bool = False
) -> Pairs:
    """`positives` pairs per (group, edit kind, rate), `negatives` pairs
    per (group, random or hard), and a sample of `all_pairs` documents per
    group; from the second set's files (`second_set.py`) with `second`."""
    pools, hard = (load_second_groups if second else load_groups)(data, seed)
    out = Pairs()
    for group in GROUPS:
        lang, _ = group
        pool = pools[group]
        out.pool_sizes[group] = len(pool)
        order = list(pool)
        random.Random(f"{seed}:{group}:order").shuffle(order)
        sampler = CharSampler(pool, random.Random(f"{seed}:{group}:chars"))

        for kind, rate in edits.variants(lang):
            made = 0
            for doc in order:
                rng = random.Random(f"{seed}:{group}:{kind}:{rate}:{doc.id}")
                edited = edits.apply(kind, rate, doc.text, lang, rng, sampler)
                if edited is None or edited == doc.text:
                    continue
                a, b = out.text_id(lang, doc.text), out.text_id(lang, edited)
                out.pairs.append(Pair(group, a, b, True, kind, edits.rate_label(rate)))
                made += 1
                if made == positives:
                    break

        def add_negative(x: Doc, y: Doc, kind: str, detail: str) -> bool:
            if near_copy(x.text, y.text):
                out.dropped[group, detail] += 1
                return False
            a, b = out.text_id(lang, x.text), out.text_id(lang, y.text)
            out.pairs.append(Pair(group, a, b, False, kind, detail))
            return True

        rng = random.Random(f"{seed}:{group}:random")
        made = 0
        while made < negatives:
            x, y = rng.sample(pool, 2)
            if x.id.split("#")[0] != y.id.split("#")[0]:
                made += add_negative(x, y, "random", "random pair")

        # Hard negatives: an equal share from each source, the shortfall of a
        # small source (SOTU has 232 pairs) made up by the others.
        sources = sorted(hard[group].items())
        want = negatives
        for i, (name, cands) in enumerate(sorted(sources, key=lambda s: len(s[1]))):
            share = want // (len(sources) - i)
            cands = list(cands)
            random.Random(f"{seed}:{group}:hard:{name}").shuffle(cands)
            made = 0
            for x, y in cands:
                if made == share:
                    break
                made += add_negative(x, y, "hard", name)
            want -= made

        rng = random.Random(f"{seed}:{group}:all-pairs")
        sample = rng.sample(pool, min(all_pairs, len(pool)))
        out.samples[group] = [out.text_id(lang, d.text) for d in sample]
    return out
