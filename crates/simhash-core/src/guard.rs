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
}
