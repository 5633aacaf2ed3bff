//! The arithmetic of the near-unique guard: which band values a new
//! fingerprint is checked against, and which locks serialize it with
//! concurrent writers of a near-duplicate.
//!
//! The check probes the band indexes ([`crate::layout::Layout::probe`]):
//! every row within `k` of the new one has, in some part of the layout, a
//! key within the layout's radius of the new one's, so the probes see
//! every candidate and the exact distance decides.
//!
//! Between the check and the row's insertion another session may check a
//! near-duplicate and miss the row not yet in. The guard closes that gap
//! with short locks ([`lock_keys`]): a fingerprint locks one key per block
//! of the `k + 1`-block split of [`crate::scatter::blocks`], and two
//! fingerprints within `k` agree on at least one block, so they always
//! want one key in common. The locks are held only from the check until
//! the row is in the table (not to the end of the transaction), so an
//! unrelated row that happens to hash to the same key waits microseconds,
//! and no cycle of waits can form from the guard's locks alone: a session
//! never waits for anything else while it holds them.

use crate::scatter::bucket_keys;

/// The rows a batch load skips among its own rows, as guarded inserts one
/// at a time in the batch's order would: a row is skipped when one of its
/// earlier neighbours was kept. `pairs` holds `(later, earlier)` for each
/// pair of neighbours (`earlier < later`, by place in the order; any
/// order, repeats allowed). Returns each skipped row with the first (in
/// order) of its earlier neighbours that was kept, by skipped row. A row
/// whose earlier neighbours were all skipped is kept. Linear in the pairs
/// after sorting them.
pub fn skipped_in_order(pairs: &mut [(i64, i64)]) -> Vec<(i64, i64)> {
    pairs.sort_unstable();
    let mut skipped = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let later = pairs[i].0;
        let mut j = i;
        while j < pairs.len() && pairs[j].0 == later {
            j += 1;
        }
        // Every earlier row's fate is settled: it comes before `later`.
        if let Some(&(_, kept)) = pairs[i..j]
            .iter()
            .find(|&&(_, earlier)| earlier < later && !skipped.contains(&earlier))
        {
            skipped.insert(later);
            out.push((later, kept));
        }
        i = j;
    }
    out
}

/// The shard id in the name of a Citus shard (`<table>_<shard id>`), or
/// `None` when the name does not end in one. The guard asks Citus's
/// catalog whether that shard is its table's only one: then it holds all
/// of the table's rows (a reference table's copy on each node, a single-
/// shard or local table) and the guard can check it as one table.
pub fn citus_shard_id(relname: &str) -> Option<i64> {
    let (_, digits) = relname.rsplit_once('_')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&id| id > 0)
}

/// The name of an object of a Citus shard (a trigger, an index) as its
/// table has it: Citus names a shard's copy `<name>_<shard id>`, and the
/// suffix is taken off when it is there; any other name is as it is.
pub fn shell_name(object: &str, shard_id: i64) -> &str {
    object
        .strip_suffix(&format!("_{shard_id}"))
        .filter(|name| !name.is_empty())
        .unwrap_or(object)
}

/// The 32-bit lock keys of `fp` for a guard of distance `k`, ascending and
/// without repeats (locks are taken in this order). `salt` tells guards
/// apart (the column, say); equal salts and `k` give equal keys.
pub fn lock_keys(fp: u64, k: u32, salt: u64) -> Vec<u32> {
    let mut keys: Vec<u32> = bucket_keys(fp, k)
        .into_iter()
        .map(|key| (mix(key as u64 ^ mix(salt ^ u64::from(k))) >> 32) as u32)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// SplitMix64's finalizer: a fixed bijection that spreads similar inputs.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The 64-bit salt of a column name (FNV-1a), stable across builds.
pub fn name_salt(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hamming;
    use crate::layout::Layout;
    use crate::testutil::splitmix;

    struct Rng(u64);
    impl Rng {
        fn new(seed: u64) -> Rng {
            Rng(seed)
        }
        fn next(&mut self) -> u64 {
            splitmix(&mut self.0)
        }
    }

    fn flip(fp: u64, bits: u32, rng: &mut Rng) -> u64 {
        let mut out = fp;
        while (out ^ fp).count_ones() < bits {
            out ^= 1 << (rng.next() % 64);
        }
        out
    }

    #[test]
    fn near_fingerprints_always_share_a_lock_key() {
        let mut rng = Rng::new(14);
        for k in 0..=11 {
            for _ in 0..2000 {
                let a = rng.next();
                let b = flip(a, (rng.next() % u64::from(k + 1)) as u32, &mut rng);
                assert!(hamming(a, b) <= k);
                let (ka, kb) = (lock_keys(a, k, 7), lock_keys(b, k, 7));
                assert!(
                    ka.iter().any(|x| kb.contains(x)),
                    "k = {k}: {a:016x} and {b:016x} share no lock key"
                );
            }
        }
    }

    #[test]
    fn lock_keys_are_sorted_and_few() {
        let mut rng = Rng::new(3);
        for k in 0..=11 {
            let keys = lock_keys(rng.next(), k, 1);
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert!(!keys.is_empty() && keys.len() <= k as usize + 1);
        }
    }

    #[test]
    fn unrelated_fingerprints_rarely_share_a_lock_key() {
        // k = 3: four 16-bit blocks, so about 4 / 65536 of random pairs
        // share a block; the hash to 32 bits adds next to nothing.
        let mut rng = Rng::new(5);
        let fps: Vec<u64> = (0..2000).map(|_| rng.next()).collect();
        let keys: Vec<Vec<u32>> = fps.iter().map(|&f| lock_keys(f, 3, 1)).collect();
        let mut shared = 0;
        for i in 0..keys.len() {
            for j in i + 1..keys.len() {
                if keys[i].iter().any(|x| keys[j].contains(x)) {
                    shared += 1;
                }
            }
        }
        // 1,999,000 pairs, about 122 expected.
        assert!(shared < 400, "{shared} pairs share a key");
    }

    #[test]
    fn salts_and_distances_separate_guards() {
        let fp = 0x0123_4567_89ab_cdef;
        assert_ne!(
            lock_keys(fp, 3, name_salt(b"fp")),
            lock_keys(fp, 3, name_salt(b"fp2"))
        );
        assert_ne!(lock_keys(fp, 3, 1), lock_keys(fp, 4, 1));
        assert_eq!(lock_keys(fp, 3, 1), lock_keys(fp, 3, 1));
    }

    #[test]
    fn probes_find_every_row_within_k() {
        let mut rng = Rng::new(11);
        for (layout, k) in (0..=11)
            .map(|k| (Layout::Bands16, k))
            .chain((0..=7).map(|k| (Layout::Halves32, k)))
        {
            for _ in 0..500 {
                let a = rng.next();
                let b = flip(a, (rng.next() % u64::from(k + 1)) as u32, &mut rng);
                let probes = layout.probe(a, k).unwrap();
                assert!(!probes.is_empty() && probes.len() <= layout.parts() as usize);
                let hit = probes
                    .iter()
                    .any(|(n, values)| values.contains(&layout.key(b, i64::from(*n)).unwrap()));
                assert!(
                    hit,
                    "k = {k}: {b:016x} is within {k} of {a:016x} but no probe hits"
                );
            }
        }
    }

    #[test]
    fn a_citus_shard_name_gives_its_shard_id() {
        assert_eq!(citus_shard_id("docs_102008"), Some(102008));
        assert_eq!(citus_shard_id("my_docs_2_7"), Some(7));
        assert_eq!(citus_shard_id("docs"), None);
        assert_eq!(citus_shard_id("docs_"), None);
        assert_eq!(citus_shard_id("docs_12a"), None);
        assert_eq!(citus_shard_id("docs_0"), None);
        assert_eq!(citus_shard_id("docs_-5"), None);
        assert_eq!(citus_shard_id("docs_99999999999999999999"), None);
    }

    /// One row at a time, as the guard would: the oracle.
    fn one_at_a_time(n: i64, near: &dyn Fn(i64, i64) -> bool) -> Vec<(i64, i64)> {
        let mut kept: Vec<i64> = Vec::new();
        let mut out = Vec::new();
        for y in 0..n {
            match kept.iter().find(|&&x| near(x, y)) {
                Some(&x) => out.push((y, x)),
                None => kept.push(y),
            }
        }
        out
    }

    #[test]
    fn a_batch_skips_what_one_at_a_time_inserts_skip() {
        // A chain: 1 near 0, 2 near 1 only (kept, since 1 was skipped),
        // 3 near 2, 4 near 0 and 3.
        let mut pairs = vec![(1, 0), (2, 1), (3, 2), (4, 3), (4, 0), (4, 0)];
        assert_eq!(skipped_in_order(&mut pairs), vec![(1, 0), (3, 2), (4, 0)]);
        assert_eq!(skipped_in_order(&mut []), vec![]);
        // Random neighbourhoods against the oracle.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200 {
            let n = 1 + (round % 60) as i64;
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let salt = seed;
            let near = move |a: i64, b: i64| {
                let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
                (lo.wrapping_mul(31).wrapping_add(hi).wrapping_mul(salt | 1) >> 59) < 5
            };
            let mut pairs: Vec<(i64, i64)> = (0..n)
                .flat_map(|y| (0..y).filter(move |&x| near(x, y)).map(move |x| (y, x)))
                .rev()
                .collect();
            assert_eq!(
                skipped_in_order(&mut pairs),
                one_at_a_time(n, &near),
                "round {round}"
            );
        }
    }

    #[test]
    fn shell_names_drop_the_shard_suffix_only() {
        assert_eq!(
            shell_name("fp_near_unique_102008", 102008),
            "fp_near_unique"
        );
        assert_eq!(shell_name("fp_near_unique", 102008), "fp_near_unique");
        assert_eq!(
            shell_name("fp_near_unique_102009", 102008),
            "fp_near_unique_102009"
        );
        assert_eq!(shell_name("_102008", 102008), "_102008");
        assert_eq!(shell_name("x_1102008", 102008), "x_1102008");
    }
}
