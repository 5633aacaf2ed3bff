//! Clustering a table that lives on many machines (Citus shards) without
//! bringing every fingerprint to one of them.
//!
//! Pigeonhole: split the 64 bits into `k + 1` blocks. Two fingerprints
//! within distance `k` differ in at most `k` bits, so at least one block is
//! the same in both. Give each fingerprint `k + 1` bucket keys, one per
//! block (the block's number and its value): two fingerprints within `k`
//! share a bucket. Send each row to the machine that holds each of its
//! buckets, cluster every bucket on its own ([`crate::cluster`], exact
//! within the bucket), and send back only what joins rows: for each row in
//! a cluster of two or more, its cluster's smallest key ([`bucket_links`]).
//! The union of those links over every bucket ([`join_links`]) is exactly
//! the clustering of the whole table: every pair within `k` is in some
//! bucket, where it is joined, and every link joins rows that are within
//! `k` of each other through a chain of such pairs.
//!
//! The price is `k + 1` copies of each row in the buckets, and each bucket
//! of `k + 1` blocks of `64 / (k + 1)` bits holds about `n / 2^(64/(k+1))`
//! rows of random fingerprints: 4 blocks of 16 bits for `k = 3` (buckets of
//! a few rows), 8 of 8 bits for `k = 7`, 12 of 5 or 6 bits for `k = 11`
//! (each bucket a 1/32 to 1/64 share of the rows, clustered by the
//! multi-probe search).

use crate::cluster::{ClusterError, Clustering, Progress};

/// The blocks of a split into `k + 1` parts: `(shift, width)`, widths
/// differing by at most one bit, covering the 64 bits from the top.
pub fn blocks(k: u32) -> Vec<(u32, u32)> {
    let parts = k + 1;
    let mut out = Vec::with_capacity(parts as usize);
    let mut top = 64;
    for i in 0..parts {
        // The first 64 % parts blocks are one bit wider.
        let width = 64 / parts + u32::from(i < 64 % parts);
        top -= width;
        out.push((top, width));
    }
    out
}

/// The `k + 1` bucket keys of `fp`: for `k = 0` the fingerprint itself;
/// otherwise the block's number in the top 6 bits and its value (at most
/// 32 bits) below.
pub fn bucket_keys(fp: u64, k: u32) -> Vec<i64> {
    if k == 0 {
        return vec![fp as i64];
    }
    blocks(k)
        .into_iter()
        .enumerate()
        .map(|(i, (shift, width))| {
            let value = (fp >> shift) & ((1u64 << width) - 1);
            (((i as u64) << 58) | value) as i64
        })
        .collect()
}

/// The links of one bucket: `(key, smallest key of its cluster)` for every
/// row of `rows` (`(key, fingerprint)`) in a cluster of two or more within
/// the bucket.
pub fn bucket_links(rows: &mut [(i64, u64)], k: u32) -> Result<Vec<(i64, i64)>, ClusterError> {
    Clustering::new(k)
        .singletons(false)
        .run(rows, &mut |_: Progress| true)
}

/// The clusters that `links` (`(key, key)` pairs, each joining two rows)
/// make: `(key, smallest key of its cluster)` for every key in a link,
/// sorted by `(cluster, key)`.
pub fn join_links(links: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut keys: Vec<i64> = links.iter().flat_map(|&(a, b)| [a, b]).collect();
    keys.sort_unstable();
    keys.dedup();
    let index = |key: i64| {
        keys.binary_search(&key)
            .expect("every key of a link is listed")
    };
    // Union-find over the sorted keys; a root is always the smallest index
    // (so the smallest key) of its set.
    let mut parent: Vec<usize> = (0..keys.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for &(a, b) in links {
        let (ra, rb) = (root(&mut parent, index(a)), root(&mut parent, index(b)));
        if ra != rb {
            let (low, high) = if ra < rb { (ra, rb) } else { (rb, ra) };
            parent[high] = low;
        }
    }
    let mut out: Vec<(i64, i64)> = (0..keys.len())
        .map(|i| (keys[i], keys[root(&mut parent, i)]))
        .collect();
    out.sort_unstable_by_key(|&(key, cluster)| (cluster, key));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::cluster;

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn blocks_cover_the_64_bits() {
        for k in 0..=11 {
            let b = blocks(k);
            assert_eq!(b.len() as u32, k + 1);
            assert_eq!(b.iter().map(|&(_, w)| w).sum::<u32>(), 64);
            let mut mask = 0u64;
            for &(shift, width) in &b {
                let m = if width == 64 {
                    u64::MAX
                } else {
                    ((1u64 << width) - 1) << shift
                };
                assert_eq!(mask & m, 0, "k = {k}: blocks overlap");
                mask |= m;
            }
            assert_eq!(mask, u64::MAX);
            let (min, max) = (b.iter().map(|b| b.1).min(), b.iter().map(|b| b.1).max());
            assert!(max.unwrap() - min.unwrap() <= 1);
        }
    }

    #[test]
    fn pairs_within_k_share_a_bucket_and_blocks_keep_keys_apart() {
        let mut s = 0x9e37_79b9_7f4a_7c15;
        for k in 0..=11u32 {
            for _ in 0..2000 {
                let a = xorshift(&mut s);
                // Flip k distinct bits.
                let mut b = a;
                let mut flipped = 0;
                while flipped < k {
                    let bit = 1u64 << (xorshift(&mut s) % 64);
                    if (a ^ b) & bit == 0 {
                        b ^= bit;
                        flipped += 1;
                    }
                }
                let (ka, kb) = (bucket_keys(a, k), bucket_keys(b, k));
                assert!(
                    ka.iter().zip(&kb).any(|(x, y)| x == y),
                    "k = {k}: {a:x} {b:x}"
                );
                // Keys of different blocks never collide.
                let mut all = ka.clone();
                all.sort_unstable();
                all.dedup();
                assert_eq!(all.len(), ka.len());
            }
        }
    }

    /// Scatter into buckets, cluster each, join the links: the clusters of
    /// the whole set, on data with chains that cross buckets.
    #[test]
    fn scattered_clustering_is_the_whole_clustering() {
        let mut s = 12345;
        for k in [0u32, 1, 3, 5, 7, 11] {
            let mut rows: Vec<(i64, u64)> = Vec::new();
            for key in 0..3000i64 {
                let fp = if key % 3 == 0 || rows.is_empty() {
                    xorshift(&mut s)
                } else {
                    // A neighbour of an earlier row: chains and copies.
                    let (_, base) = rows[(xorshift(&mut s) % rows.len() as u64) as usize];
                    let mut fp = base;
                    for _ in 0..(xorshift(&mut s) % u64::from(k + 2)) {
                        fp ^= 1u64 << (xorshift(&mut s) % 64);
                    }
                    fp
                };
                rows.push((key, fp));
            }
            let mut whole = rows.clone();
            let mut want: Vec<(i64, i64)> = cluster(&mut whole, k, &mut |_| true)
                .unwrap()
                .into_iter()
                .filter(|&(key, c)| key != c || whole_has_partner(&rows, key, k))
                .collect();
            want.sort_unstable_by_key(|&(key, c)| (c, key));

            let mut buckets: std::collections::HashMap<i64, Vec<(i64, u64)>> = Default::default();
            for &(key, fp) in &rows {
                for b in bucket_keys(fp, k) {
                    buckets.entry(b).or_default().push((key, fp));
                }
            }
            let mut links = Vec::new();
            for bucket in buckets.values_mut() {
                links.extend(bucket_links(bucket, k).unwrap());
            }
            assert_eq!(join_links(&links), want, "k = {k}");
        }
    }

    /// Whether `key` has another row within `k` (then it is not alone).
    fn whole_has_partner(rows: &[(i64, u64)], key: i64, k: u32) -> bool {
        let fp = rows.iter().find(|r| r.0 == key).unwrap().1;
        rows.iter()
            .any(|&(other, f)| other != key && (f ^ fp).count_ones() <= k)
    }

    #[test]
    fn join_links_names_the_smallest_key() {
        let got = join_links(&[(5, 9), (9, 2), (7, 8), (2, 2)]);
        assert_eq!(got, vec![(2, 2), (5, 2), (9, 2), (7, 7), (8, 7)]);
        assert!(join_links(&[]).is_empty());
    }
}
