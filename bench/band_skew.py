"""Band-bucket skew of real fingerprints, for bench/band_skew.sh.

    python3 band_skew.py NAME < fingerprints   (16 hex digits or NULL a line)

A k <= 3 probe reads, in each of the four 16-bit band indexes, every row
whose band equals the query's: its candidates (heap rechecks) are the sum
of four bucket sizes. On uniformly random fingerprints a bucket holds about
N / 65,536 rows; real ones are skewed (texts that share a template share
bands). Prints, for every row taken as the query: the candidates of its
probe (other rows only) at p50, p99 and max, against the uniform
expectation, and per band the largest bucket and the distinct values.
"""

import sys
from collections import Counter


def main() -> None:
    name = sys.argv[1]
    fps = []
    nulls = 0
    for line in sys.stdin:
        line = line.strip()
        if line == "NULL" or not line:
            nulls += 1
            continue
        fps.append(int(line, 16))
    n = len(fps)
    if n == 0:
        print(f"{name}: no fingerprints")
        return
    bands = [Counter((fp >> (48 - 16 * b)) & 0xFFFF for fp in fps) for b in range(4)]
    candidates = sorted(
        sum(bands[b][(fp >> (48 - 16 * b)) & 0xFFFF] for b in range(4)) - 4 for fp in fps
    )

    def pct(p: float) -> int:
        return candidates[min(n - 1, int(p * n))]

    uniform = 4 * (n - 1) / 65536
    print(
        f"{name}: {n} fingerprints ({nulls} NULL), {len(set(fps))} distinct; "
        f"k<=3 probe candidates p50 {pct(0.5)}, p99 {pct(0.99)}, max {candidates[-1]}, "
        f"mean {sum(candidates) / n:.2f} (uniform random: mean {uniform:.2f})"
    )
    for b, counter in enumerate(bands):
        value, size = counter.most_common(1)[0]
        print(
            f"  band {b}: {len(counter)} distinct values, largest bucket {size} rows "
            f"(value {value:04x}, {100 * size / n:.2f}% of rows)"
        )


if __name__ == "__main__":
    main()
