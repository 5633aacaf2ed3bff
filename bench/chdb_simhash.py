"""ClickHouse's SimHash functions over a corpus, for bench/throughput.sh.

    python chdb_simhash.py CORPUS ROUNDS

CORPUS: JSON lines {"id", "text"}, gzip'd or not. Loads the texts into an
in-memory table of chDB (ClickHouse in process), then times, ROUNDS times
each, on one thread (max_threads = 1):

    SELECT sum(ngramSimHashUTF8(text))        (character 3-grams, the default)
    SELECT sum(wordShingleSimHashUTF8(text))  (word 3-shingles)

and prints key=value lines: docs, bytes (UTF-8), and per function the
seconds of each round (ngram_s=..., word_s=...). Loading is not timed.
"""

import os
import sys
import time

from chdb import session


def main() -> None:
    corpus, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    s = session.Session()
    s.query(
        "CREATE TABLE t ENGINE = Memory AS SELECT text FROM "
        f"file('{corpus}', 'JSONEachRow', 'id String, text String')"
    )
    docs, nbytes = s.query("SELECT count(), sum(length(text)) FROM t", "CSV").bytes().decode().strip().split(",")
    print(f"docs={docs}")
    print(f"bytes={nbytes}")
    for name, fn in (("ngram", "ngramSimHashUTF8"), ("word", "wordShingleSimHashUTF8")):
        for _ in range(rounds):
            t0 = time.perf_counter()
            s.query(f"SELECT sum({fn}(text)) FROM t SETTINGS max_threads = 1", "CSV")
            print(f"{name}_s={time.perf_counter() - t0:.6f}")


if __name__ == "__main__":
    main()
