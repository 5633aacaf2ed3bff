"""ClickHouse's SimHash functions over a corpus, for bench/throughput.sh.

    python chdb_simhash.py CORPUS ROUNDS [QUERIES]

CORPUS: JSON lines {"id", "text"}, gzip'd or not. Loads the texts into an
in-memory table of chDB (ClickHouse in process), then times, ROUNDS times
each, on one thread (max_threads = 1):

    SELECT sum(ngramSimHashUTF8(text))        (character 3-grams, the default)
    SELECT sum(wordShingleSimHashUTF8(text))  (word 3-shingles)

and the first again over a MergeTree table of the same texts (ClickHouse's
own storage, compressed with LZ4 by default), each after one untimed run
of it, and prints key=value lines: docs, bytes (UTF-8), and per query the
seconds of each round, the median of three runs (ngram_s=..., word_s=...,
ngram_mergetree_s=...). Loading is not timed. QUERIES, a comma-separated
list of those names (ngram, word, ngram_mergetree), runs only those (the
MergeTree table is then made only when asked for).
"""

import os
import sys
import time

from chdb import session


def main() -> None:
    corpus, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    wanted = sys.argv[3].split(",") if len(sys.argv) > 3 else ["ngram", "word", "ngram_mergetree"]
    s = session.Session()
    s.query(
        "CREATE TABLE t ENGINE = Memory AS SELECT text FROM "
        f"file('{corpus}', 'JSONEachRow', 'id String, text String')"
    )
    if "ngram_mergetree" in wanted:
        s.query("CREATE TABLE m ENGINE = MergeTree ORDER BY tuple() AS SELECT text FROM t")
        s.query("OPTIMIZE TABLE m FINAL")
    docs, nbytes = s.query("SELECT count(), sum(length(text)) FROM t", "CSV").bytes().decode().strip().split(",")
    print(f"docs={docs}")
    print(f"bytes={nbytes}")
    queries = (
        ("ngram", "ngramSimHashUTF8", "t"),
        ("word", "wordShingleSimHashUTF8", "t"),
        ("ngram_mergetree", "ngramSimHashUTF8", "m"),
    )
    unknown = set(wanted) - {name for name, _, _ in queries}
    if unknown:
        sys.exit(f"chdb_simhash.py: no query {', '.join(sorted(unknown))}")
    for name, fn, table in queries:
        if name not in wanted:
            continue
        query = f"SELECT sum({fn}(text)) FROM {table} SETTINGS max_threads = 1"
        # Once untimed, as the SQL side is: no timed run is the first.
        s.query(query, "CSV")
        for _ in range(rounds):
            # The median of three runs: chDB stalls now and then for tens
            # of milliseconds (about every twentieth query here, the
            # fourth of a session among them), which would otherwise land
            # on whichever query came fourth.
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                s.query(query, "CSV")
                runs.append(time.perf_counter() - t0)
            print(f"{name}_s={sorted(runs)[1]:.6f}")


if __name__ == "__main__":
    main()
