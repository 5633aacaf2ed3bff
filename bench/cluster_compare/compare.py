"""Documents, planted near-duplicates and the in-memory alternatives for
bench/cluster_compare.sh.

  compare.py build DATA_DIR OUT.tsv N PLANTS SEED
      Writes N documents as `id<TAB>text` lines (text with tabs, newlines and
      backslashes escaped for COPY) and OUT.tsv.plants (`original copy` ids).
      Documents are real text: every zh_short text and poem, then every
      sentence of the news articles and English documents, then windows of
      2 to 6 consecutive sentences starting at each one, until N
      (overlapping windows share sentences, as crawled pages quoting each
      other do). PLANTS of them get 1 to 3 copies each, edited
      the way reposts are: white space and punctuation changed, digits and
      Latin letters made full-width, a source line appended to long ones.
      Copies replace real documents at random places, so N stays N.

  compare.py run SYSTEM DOCS.tsv N OUT.pairs
      Clusters the first N documents with SYSTEM (simhash-py: PyPI simhash's
      SimhashIndex, k = 3, its default features; minhash: datasketch
      MinHashLSH, threshold 0.8, 128 permutations, character 5-grams for
      Chinese and word 3-grams otherwise), union-find over every reported
      neighbour, and writes `id cluster` lines. Prints `seconds=` and
      `peak_mb=` (its own peak resident memory) to standard error.
"""

import gzip
import json
import random
import re
import resource
import sys
import time
from pathlib import Path

SENT = re.compile(r"(?<=[。！？!?.])\s*")
# NUL cannot be in a PostgreSQL text; other control characters go too.
CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def unesc(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def corpus(data: Path, name: str):
    with gzip.open(data / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["text"]


def documents(data: Path, n: int):
    seen = set()

    def emit(t):
        t = CTRL.sub(" ", t).strip()
        if len(t) >= 10 and t not in seen:
            seen.add(t)
            return True
        return False

    out = []
    for name in ("zh_short", "zh_poetry_small"):
        out += [CTRL.sub(" ", t).strip() for t in corpus(data, name) if emit(t)]
    sentences = []
    for name in ("zh_news", "en_docs"):
        for t in corpus(data, name):
            sentences += [s for s in SENT.split(t) if s.strip()]
    for width in (1, 2, 3, 4, 5, 6):
        for start in range(0, len(sentences) - width + 1):
            if len(out) >= n:
                return out
            t = " ".join(sentences[start : start + width])
            if emit(t):
                out.append(CTRL.sub(" ", t).strip())
    if len(out) < n:
        sys.exit(f"only {len(out)} distinct documents in the corpora, fewer than {n}")
    return out


FULL = {c: chr(ord(c) + 0xFEE0) for c in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}
PUNCT = {"，": ",", "。": ".", "！": "!", "？": "?", ",": "，", ".": "。", "：": ":", "；": ";"}


def edit(rng: random.Random, text: str, kind: int) -> str:
    if kind == 0:  # punctuation swapped between full and half width, spaces added
        t = "".join(PUNCT.get(c, c) for c in text)
        return re.sub(r"\s+", "  ", t) + " "
    if kind == 1:  # digits and Latin letters full-width
        return "".join(FULL.get(c, c) for c in text)
    # a source line, and a line break in the middle
    mid = len(text) // 2
    return text[:mid] + "\n" + text[mid:] + "\n（来源：转载）" if rng.random() < 0.5 else text + "\nSource: wire"


def build(data: Path, out: Path, n: int, plants: int, seed: int) -> None:
    rng = random.Random(seed)
    docs = documents(data, n)
    rng.shuffle(docs)
    ids = list(range(1, n + 1))
    rng.shuffle(ids)
    originals, slots = ids[:plants], ids[plants:]
    plant_pairs = []
    text = dict(zip(range(1, n + 1), docs))
    for o in originals:
        for _ in range(rng.randint(1, 3)):
            c = slots.pop()
            text[c] = edit(rng, text[o], rng.randrange(3))
            plant_pairs.append((o, c))
    with open(out, "w", encoding="utf-8") as f:
        for i in range(1, n + 1):
            f.write(f"{i}\t{esc(text[i])}\n")
    with open(f"{out}.plants", "w") as f:
        for o, c in plant_pairs:
            f.write(f"{o} {c}\n")


def find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def union(parent, a, b):
    ra, rb = find(parent, a), find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


def has_han(t: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in t)


def run(system: str, docs_path: Path, n: int, out: Path) -> None:
    docs = []
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            i, t = line.rstrip("\n").split("\t", 1)
            if int(i) <= n:
                docs.append((int(i), unesc(t)))
    started = time.time()
    parent = {i: i for i, _ in docs}
    if system == "simhash-py":
        from simhash import Simhash, SimhashIndex

        objs = [(str(i), Simhash(t)) for i, t in docs]
        index = SimhashIndex(objs, k=3)
        for i, s in objs:
            for j in index.get_near_dups(s):
                union(parent, int(i), int(j))
    elif system == "minhash":
        from datasketch import MinHash, MinHashLSH

        lsh = MinHashLSH(threshold=0.8, num_perm=128)
        sigs = []
        for i, t in docs:
            if has_han(t):
                t = re.sub(r"\s+", "", t)
                grams = {t[k : k + 5] for k in range(max(1, len(t) - 4))}
            else:
                w = t.lower().split()
                grams = {" ".join(w[k : k + 3]) for k in range(max(1, len(w) - 2))}
            m = MinHash(num_perm=128)
            m.update_batch([g.encode("utf-8") for g in grams])
            lsh.insert(str(i), m)
            sigs.append((i, m))
        for i, m in sigs:
            for j in lsh.query(m):
                union(parent, i, int(j))
    else:
        sys.exit(f"unknown system {system}")
    seconds = time.time() - started
    with open(out, "w") as f:
        for i, _ in docs:
            f.write(f"{i} {find(parent, i)}\n")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"seconds={seconds:.1f} peak_mb={peak:.0f}", file=sys.stderr)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    elif cmd == "run":
        run(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
    else:
        sys.exit(__doc__)
