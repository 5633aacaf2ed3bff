//! Step 4 of the fingerprint: 64 weighted counters, then one bit each.
//!
//! For every token occurrence with feature hash `h` and weight `w`, counter
//! `i` gains `+w` when bit `i` of `h` is 1 and `-w` when it is 0. Bit `i` of
//! the fingerprint is 1 exactly when counter `i` ends above zero (a tie at
//! zero gives 0). Bit 0 is the least significant bit of the `u64`; the text
//! form prints the most significant bit first.
//!
//! Adding `w` once per occurrence is the same sum as adding `tf * w` once
//! per distinct token, without a map of the distinct tokens: memory stays
//! constant whatever the text.
//!
//! The counters are sixteen `i64x4` vectors. Each takes four bits of the
//! hash; a 16-entry table turns those four bits into lane masks (0 where
//! the bit is 1, -1 where it is 0) and `(w ^ m) - m` negates `w` exactly in
//! the lanes whose mask is -1. Integer arithmetic makes the sum exact and
//! independent of order and platform.

use wide::i64x4;

/// Lane masks for each value of a 4-bit group: lane `j` is 0 when bit `j`
/// of the group is set (keep `+w`), and -1 when it is clear (negate).
const NEGATE_MASKS: [[i64; 4]; 16] = {
    let mut table = [[0i64; 4]; 16];
    let mut nibble = 0;
    while nibble < 16 {
        let mut lane = 0;
        while lane < 4 {
            table[nibble][lane] = if nibble & (1 << lane) != 0 { 0 } else { -1 };
            lane += 1;
        }
        nibble += 1;
    }
    table
};

/// The 64 signed counters of one fingerprint under construction.
#[derive(Debug, Clone)]
pub struct Accumulator {
    counters: [i64x4; 16],
    masks: [i64x4; 16],
    features: u64,
}

impl Default for Accumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl Accumulator {
    pub fn new() -> Self {
        Accumulator {
            counters: [i64x4::ZERO; 16],
            masks: NEGATE_MASKS.map(i64x4::new),
            features: 0,
        }
    }

    /// Adds one occurrence of a feature with hash `hash` and weight `weight`.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: i64) {
        let w = i64x4::splat(weight);
        for (group, counter) in self.counters.iter_mut().enumerate() {
            let m = self.masks[((hash >> (4 * group)) & 0xF) as usize];
            *counter += (w ^ m) - m;
        }
        self.features += 1;
    }

    /// How many occurrences were added.
    pub fn features(&self) -> u64 {
        self.features
    }

    /// The 64 counters, counter `i` at index `i`.
    pub fn counters(&self) -> [i64; 64] {
        let mut out = [0i64; 64];
        for (group, v) in self.counters.iter().enumerate() {
            out[4 * group..4 * group + 4].copy_from_slice(&v.to_array());
        }
        out
    }

    /// The fingerprint: bit `i` set when counter `i` is above zero. `None`
    /// when nothing was added, so that texts without features have no
    /// fingerprint rather than all sharing one.
    pub fn finish(&self) -> Option<u64> {
        if self.features == 0 {
            return None;
        }
        let mut fp = 0u64;
        for (i, c) in self.counters().iter().enumerate() {
            if *c > 0 {
                fp |= 1 << i;
            }
        }
        Some(fp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix;

    /// The definition, written the slow obvious way.
    fn scalar(features: &[(u64, i64)]) -> Option<u64> {
        if features.is_empty() {
            return None;
        }
        let mut counters = [0i64; 64];
        for &(h, w) in features {
            for (i, c) in counters.iter_mut().enumerate() {
                *c += if h >> i & 1 == 1 { w } else { -w };
            }
        }
        Some(
            (0..64)
                .filter(|&i| counters[i] > 0)
                .fold(0u64, |fp, i| fp | 1 << i),
        )
    }

    #[test]
    fn matches_the_scalar_definition() {
        let mut s = 42;
        for n in [1usize, 2, 3, 10, 100, 1000] {
            let features: Vec<(u64, i64)> = (0..n)
                .map(|_| (splitmix(&mut s), (splitmix(&mut s) % 1_000_000) as i64))
                .collect();
            let mut acc = Accumulator::new();
            for &(h, w) in &features {
                acc.add(h, w);
            }
            assert_eq!(acc.finish(), scalar(&features), "n = {n}");
            assert_eq!(acc.features(), n as u64);
        }
    }

    #[test]
    fn one_feature_gives_its_own_hash() {
        let mut acc = Accumulator::new();
        acc.add(0xDEAD_BEEF_0123_4567, 7);
        assert_eq!(acc.finish(), Some(0xDEAD_BEEF_0123_4567));
        let c = acc.counters();
        assert_eq!(c[0], 7); // bit 0 of ...67 is 1
        assert_eq!(c[3], -7); // bit 3 of ...67 is 0
    }

    #[test]
    fn ties_give_zero_bits() {
        let mut acc = Accumulator::new();
        acc.add(u64::MAX, 5);
        acc.add(0, 5);
        assert_eq!(acc.counters(), [0; 64]);
        assert_eq!(acc.finish(), Some(0));
    }

    #[test]
    fn order_does_not_matter() {
        let mut s = 7;
        let features: Vec<(u64, i64)> = (0..50)
            .map(|_| (splitmix(&mut s), (splitmix(&mut s) % 900_000) as i64))
            .collect();
        let mut fwd = Accumulator::new();
        let mut rev = Accumulator::new();
        features.iter().for_each(|&(h, w)| fwd.add(h, w));
        features.iter().rev().for_each(|&(h, w)| rev.add(h, w));
        assert_eq!(fwd.counters(), rev.counters());
    }

    #[test]
    fn nothing_added_is_no_fingerprint() {
        assert_eq!(Accumulator::new().finish(), None);
    }

    #[test]
    fn a_heavier_feature_wins_the_vote() {
        let mut acc = Accumulator::new();
        acc.add(0xFFFF_0000_FFFF_0000, 3);
        acc.add(0x0000_FFFF_0000_FFFF, 2);
        assert_eq!(acc.finish(), Some(0xFFFF_0000_FFFF_0000));
    }
}
