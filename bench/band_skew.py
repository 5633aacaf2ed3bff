"""Band-bucket skew of real fingerprints, for bench/band_skew.sh.

    python3 band_skew.py NAME < fingerprints   (16 hex digits or NULL a line)

A k <= 3 probe reads, in each of the four 16-bit band indexes, every row
whose band equals the query's: its candidates (heap rechecks) are the sum
of four bucket sizes. On uniformly random fingerprints a bucket holds about
N / 65,536 rows; real ones are skewed (texts that share a template share
bands). Prints, for every row taken as the query: the candidates of its
probe (other rows only) at p50, p99 and max, against the uniform
expectation, and per band the largest bucket and the distinct values.

Then the same for the 2 x 32 layout (simhash_core::layout): a k <= 3 probe
reads, in each 32-bit half's index, the rows whose half equals the query's
or differs from it in one bit (33 keys per half); uniform expectation
66 N / 2^32.
"""

import sys
from collections import Counter


def largest_buckets(label: str, counters: list, digits: int, n: int) -> None:
    """Per part: its distinct keys and its largest bucket."""
    for part, counter in enumerate(counters):
        value, size = counter.most_common(1)[0]
        print(
            f"  {label} {part}: {len(counter)} distinct values, largest bucket {size} rows "
            f"(value {value:0{digits}x}, {100 * size / n:.2f}% of rows)"
        )


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
    largest_buckets("band", bands, 4, n)

    halves = [Counter((fp >> (32 - 32 * h)) & 0xFFFFFFFF for fp in fps) for h in range(2)]
    by_half = [{} for _ in range(2)]
    for i, fp in enumerate(fps):
        for h in range(2):
            by_half[h].setdefault((fp >> (32 - 32 * h)) & 0xFFFFFFFF, []).append(i)

    hits = 0

    def half_candidates(i: int) -> int:
        # Rows a k <= 3 probe of the halves fetches (a row found through
        # both halves is fetched once), and of those the ones within 3.
        nonlocal hits
        fp = fps[i]
        found = set()
        for h in range(2):
            key = (fp >> (32 - 32 * h)) & 0xFFFFFFFF
            for probe in [key] + [key ^ (1 << bit) for bit in range(32)]:
                found.update(by_half[h].get(probe, ()))
        found.discard(i)
        hits += sum(1 for j in found if bin(fp ^ fps[j]).count("1") <= 3)
        return len(found)

    candidates = sorted(half_candidates(i) for i in range(n))
    uniform = 66 * (n - 1) / 2**32
    total = sum(candidates)
    print(
        f"  2x32: k<=3 probe candidates p50 {pct(0.5)}, p99 {pct(0.99)}, max {candidates[-1]}, "
        f"mean {total / n:.2f} (uniform random: mean {uniform:.4f}); "
        f"{100 * hits / max(total, 1):.0f}% of them within 3"
    )
    largest_buckets("half", halves, 8, n)


if __name__ == "__main__":
    main()
