"""Concurrent ingest for bench/ingest.sh: several sessions COPY one corpus
into one table at once, a batch of rows per transaction, as an ETL job with
parallel workers does.

    python ingest_concurrent.py TABLE DATA_FILE SESSIONS BATCH

DATA_FILE holds COPY text lines (one body each). The batches are handed
out from a shared queue in file order, so near-duplicates that sit close
together in the corpus land in different sessions at the same moment. A
batch that fails with a deadlock (40P01) is retried, and counted: a
constraint such as a unique index or the near-unique guard can deadlock
when two transactions each insert a duplicate of the other's row, as
PostgreSQL does for unique keys. Prints one line of JSON: seconds of wall
time, rows offered, batches, retries. Connects with the PG* environment
variables.
"""

import json
import queue
import sys
import threading
import time

import psycopg
from psycopg import errors


def main() -> None:
    table, path, sessions, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    work: "queue.Queue[bytes]" = queue.Queue()
    for i in range(0, len(lines), batch):
        work.put(b"".join(lines[i : i + batch]))
    batches = work.qsize()
    retries = 0
    failures: list = []
    lock = threading.Lock()

    def worker() -> None:
        nonlocal retries
        try:
            with psycopg.connect(dbname=sys.argv[5] if len(sys.argv) > 5 else None) as conn:
                while True:
                    try:
                        chunk = work.get_nowait()
                    except queue.Empty:
                        return
                    while True:
                        try:
                            with conn.transaction():
                                with conn.cursor().copy(f"COPY {table} (body) FROM STDIN") as copy:
                                    copy.write(chunk)
                            break
                        except errors.DeadlockDetected:
                            with lock:
                                retries += 1
        except Exception as e:  # reported, and the run fails
            failures.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(sessions)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    if failures:
        sys.exit("ingest failed: " + "; ".join(failures))
    print(json.dumps({"seconds": seconds, "rows": len(lines), "batches": batches, "retries": retries}))


if __name__ == "__main__":
    main()
