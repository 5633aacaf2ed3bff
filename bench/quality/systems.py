"""The systems compared, each turning every text into a signature:

* ours: the `fingerprint-lines` binary of the bench crate, which computes
  exactly what SQL `simhash()` does (and, with options, candidate changes
  to the weighting: see `VARIANTS` in quality.py);
* simhash-py: PyPI `simhash`, `Simhash(text)` with its default features
  (overlapping 4-character windows of the lower-cased word characters);
* simhash-py+jieba: the same class fed PyPI `jieba` tokens (precise mode,
  lower-cased, word tokens only) with their counts as weights;
* minhash: PyPI `datasketch` MinHash, 128 permutations, over character
  5-grams (Chinese) or word 3-grams (English) of the lower-cased text;
* lsh keys: the `lsh-lines` binary of the bench crate, the 32 band keys
  of `simhash_core::lsh` (what SQL `simhash_lsh()` returns), the second
  candidate source of the rule of record (see verify.py);
* clickhouse ngram / word: ClickHouse's `ngramSimHashUTF8` and
  `wordShingleSimHashUTF8` (defaults: 3-grams, 3-word shingles) through
  PyPI `chdb`. They are UInt64 but only the low 32 bits are ever set
  (ClickHouse issue #102699: the feature hash is CRC32), so their
  distances run from 0 to 32, not 64.

A SimHash signature is an int, a MinHash signature a numpy array; None
means the system gives the text no signature (no features).
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

WORD = re.compile(r"\w", re.UNICODE)


class Failed(Exception):
    """A system that cannot run here; the report says why and goes on."""


def ours(binary: Path, texts: list[str], flags: list[str]) -> list[int | None]:
    with tempfile.TemporaryFile("w+b") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False).encode() + b"\n")
        f.seek(0)
        run = subprocess.run(
            [str(binary), *flags], stdin=f, capture_output=True, check=False
        )
    if run.returncode != 0:
        raise Failed(f"{binary.name} {' '.join(flags)}: {run.stderr.decode().strip()}")
    lines = run.stdout.decode().splitlines()
    assert len(lines) == len(texts), (len(lines), len(texts))
    return [None if v == "NULL" else int(v, 16) for v in lines]


def lsh_keys(binary: Path, texts: list[str]) -> list[tuple[int, ...] | None]:
    """Each text's band keys in band order, or None for a text without a
    word character."""
    with tempfile.TemporaryFile("w+b") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False).encode() + b"\n")
        f.seek(0)
        run = subprocess.run([str(binary)], stdin=f, capture_output=True, check=False)
    if run.returncode != 0:
        raise Failed(f"{binary.name}: {run.stderr.decode().strip()}")
    lines = run.stdout.decode().splitlines()
    assert len(lines) == len(texts), (len(lines), len(texts))
    return [None if v == "NULL" else tuple(int(x) for x in v.split()) for v in lines]


def shares_key(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    """At least one band with the same key, compared band by band as
    `simhash_core::lsh::shared_bands` compares them."""
    return a is not None and b is not None and any(x == y for x, y in zip(a, b))


# Per-process state of the pool workers: jieba's dictionary is loaded once
# per worker, not once per text.
def _init_worker() -> None:
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()


def _simhash_py(item: tuple[str, str]) -> int:
    from simhash import Simhash

    return Simhash(item[1]).value


def _simhash_py_jieba(item: tuple[str, str]) -> int | None:
    import jieba
    from simhash import Simhash

    counts = collections.Counter(t for t in jieba.lcut(item[1].lower()) if WORD.search(t))
    return Simhash(counts).value if counts else None


def _shingles(lang: str, text: str) -> set[bytes]:
    text = text.lower()
    if lang == "zh":
        t = " ".join(text.split())
        return {t[i : i + 5].encode() for i in range(max(1, len(t) - 4))} if t else set()
    words = re.findall(r"\w+", text)
    return {" ".join(words[i : i + 3]).encode() for i in range(max(1, len(words) - 2))} if words else set()


def _minhash(item: tuple[str, str]):
    from datasketch import MinHash

    sh = _shingles(*item)
    if not sh:
        return None
    m = MinHash(num_perm=128, seed=1)
    m.update_batch(list(sh))
    return m.hashvalues.copy()


_PY_SYSTEMS = {
    "simhash-py": _simhash_py,
    "simhash-py+jieba": _simhash_py_jieba,
    "minhash": _minhash,
}


def python_system(name: str, texts: list[str], langs: list[str], jobs: int) -> list:
    fn = _PY_SYSTEMS[name]
    items = list(zip(langs, texts))
    if jobs <= 1:
        _init_worker()
        return [fn(x) for x in items]
    # Long texts first, so that no worker is left with a SOTU address
    # at the end while the other idles.
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker) as pool:
        done = pool.map(fn, [items[i] for i in order], chunksize=16)
    out: list = [None] * len(items)
    for i, v in zip(order, done):
        out[i] = v
    return out


def clickhouse(texts: list[str], workdir: Path, jobs: int) -> dict[str, list[int | None]]:
    """Both ClickHouse fingerprints of every text, in one query over a
    JSON-lines file (chdb reads files directly, far faster than a query
    per text)."""
    try:
        import chdb
    except Exception as e:  # ImportError, or a broken native library
        raise Failed(f"import chdb: {e!r}") from e
    path = workdir / "clickhouse_texts.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"i": i, "t": t}, ensure_ascii=False) + "\n")
    sql = (
        "SELECT i, ngramSimHashUTF8(t), wordShingleSimHashUTF8(t) "
        f"FROM file('{path}', 'JSONEachRow', 'i UInt32, t String') ORDER BY i "
        f"SETTINGS max_threads = {max(1, jobs)}"
    )
    try:
        res = chdb.query(sql, "TabSeparated")
        rows = str(res).splitlines()
    except Exception as e:
        raise Failed(f"chdb query: {e!r}") from e
    finally:
        path.unlink(missing_ok=True)
    if len(rows) != len(texts):
        raise Failed(f"chdb returned {len(rows)} rows for {len(texts)} texts")
    ngram, word = [], []
    for row in rows:
        _, n, w = row.split("\t")
        ngram.append(int(n))
        word.append(int(w))
    return {"clickhouse ngram": ngram, "clickhouse word": word}


def hamming(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    return (a ^ b).bit_count()


def jaccard(a, b) -> float:
    if a is None or b is None:
        return 0.0
    return float(np.mean(a == b))
