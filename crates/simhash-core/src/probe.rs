//! How a band index finds every fingerprint within distance `k`, exactly.
//!
//! Split 64 bits into four 16-bit bands. If `hamming(a, b) <= k`, the four
//! bands' own distances add up to at most `k`, so at least one band differs
//! in at most `floor(k / 4)` bits (the pigeonhole principle). Probing every
//! band of the index with every value within `floor(k / 4)` bits of the
//! query's band therefore finds every match: one value per band for
//! `k <= 3`, 17 for `k <= 7`, 137 for `k <= 11`. The candidates are then
//! checked exactly, so nothing extra is returned either.

use crate::distance::BAND_BITS;

/// The largest `k` the band index answers by probing. Beyond it a probe
/// touches 697 or more values per band and a scan is the better plan.
pub const MAX_PROBED_K: u32 = 11;

/// How many bits a band may differ in for fingerprints within `k`.
#[inline]
pub fn probe_radius(k: u32) -> u32 {
    (k / 4).min(BAND_BITS)
}

/// Every 16-bit value within `radius` bits of `band`, in ascending order.
/// `radius >= 16` gives all 65,536 values.
pub fn band_neighbors(band: u16, radius: u32) -> Vec<u16> {
    let radius = radius.min(BAND_BITS);
    let mut out: Vec<u16> = (0..=u16::MAX)
        .filter(|v| (v ^ band).count_ones() <= radius)
        .collect();
    out.sort_unstable();
    out
}

/// How many values [`band_neighbors`] gives for `radius`: the sum of
/// `C(16, i)` for `i` up to `radius`.
pub fn neighbor_count(radius: u32) -> usize {
    let radius = radius.min(BAND_BITS) as usize;
    let mut total = 0usize;
    let mut c = 1usize; // C(16, 0)
    for i in 0..=radius {
        total += c;
        c = c * (16 - i) / (i + 1);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::{band, hamming};
    use crate::testutil::splitmix;

    #[test]
    fn probe_sizes_match_the_design() {
        assert_eq!(band_neighbors(0x1234, probe_radius(3)), vec![0x1234]);
        assert_eq!(band_neighbors(0x1234, probe_radius(7)).len(), 17);
        assert_eq!(band_neighbors(0x1234, probe_radius(11)).len(), 137);
        assert_eq!(band_neighbors(0xFFFF, 16).len(), 65_536);
        for r in 0..=17 {
            assert_eq!(
                band_neighbors(0xA5A5, r).len(),
                neighbor_count(r),
                "radius {r}"
            );
        }
    }

    #[test]
    fn neighbors_are_exactly_the_values_within_the_radius() {
        let got = band_neighbors(0x00F0, 1);
        assert!(got.contains(&0x00F0));
        assert!(got.contains(&0x00F1));
        assert!(got.contains(&0x80F0));
        assert!(!got.contains(&0x00F3));
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn probing_finds_every_fingerprint_within_k() {
        // For each k, flip exactly k random bits (the hardest case, and
        // often concentrated in few bands) and check that some band of the
        // copy is among the probed neighbours of the original's band.
        let mut s = 1;
        for k in 0..=MAX_PROBED_K {
            let r = probe_radius(k);
            for _ in 0..2_000 {
                let a = splitmix(&mut s);
                let mut b = a;
                while hamming(a, b) < k {
                    b ^= 1 << (splitmix(&mut s) % 64);
                }
                let found = (0..4).any(|n| {
                    let (qa, qb) = (band(a, n).unwrap(), band(b, n).unwrap());
                    (qa ^ qb).count_ones() <= r
                });
                assert!(found, "k = {k}: {a:016x} vs {b:016x}");
            }
        }
    }

    #[test]
    fn a_smaller_radius_would_miss_some() {
        // The radius is not larger than it needs to be: with k = 7 spread
        // as 2+2+2+1 bits, no band is within radius 0.
        let a = 0u64;
        let b = 0b11u64 << 48 | 0b11 << 32 | 0b11 << 16 | 0b1;
        assert_eq!(hamming(a, b), 7);
        assert!((0..4).all(|n| band(a, n) != band(b, n)));
        assert_eq!(probe_radius(7), 1);
    }
}
