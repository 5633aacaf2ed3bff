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
//! Counter `i` is `2 S_i - W`, where `W` is the sum of all the weights and
//! `S_i` the sum of those whose hash has bit `i` set: so only `S_i` is
//! kept, one masked add per bit, no negation. The 64 sums are eight
//! `i32x8` vectors: each byte of the hash picks, from a 256-entry table,
//! the lane masks of its eight bits, and `w & mask` adds `w` to the lanes
//! whose bit is set. A weight below 2^23 in magnitude goes there (every
//! version 3 weight does: at most 17.73 * 6 * 2^16); after 256 of them the
//! 32-bit lanes, which cannot have overflowed, are added into 64-bit sums.
//! A larger weight goes straight to the 64-bit sums. Integer arithmetic
//! makes the sum exact and independent of order and platform; the scalar
//! definition in the tests is the oracle.

use wide::i32x8;

use crate::cpu::Simd;

/// [`sums_lanes`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq,avx512bw,avx512vl")]
fn sums_avx512(small: &mut [i32x8; 8], hashes: &[u64], weights: &[i64]) {
    sums_lanes(small, hashes, weights);
}

/// [`small_and_total`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq,avx512bw,avx512vl")]
fn small_and_total_avx512(weights: &[i64]) -> (bool, i64) {
    small_and_total(weights)
}

/// [`small_and_total`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn small_and_total_avx2(weights: &[i64]) -> (bool, i64) {
    small_and_total(weights)
}

/// Whether every weight is small (below [`SMALL`] in magnitude), and their
/// sum: one pass with no early exit, which the compiler turns into vector
/// code.
#[inline(always)]
fn small_and_total(weights: &[i64]) -> (bool, i64) {
    let mut small = true;
    let mut total = 0i64;
    for &w in weights {
        small &= (w > -SMALL) & (w < SMALL);
        // Exact when all are small; otherwise not used.
        total = total.wrapping_add(w);
    }
    (small, total)
}

/// [`sums_lanes`] with AVX2: each byte of the hash picks the lane masks
/// of its eight bits from [`LANE_MASKS`], as the baseline's sums do, and
/// `w & mask` is added: two instructions a vector of eight lanes, beside
/// the load of the masks. Written with the intrinsics because `wide`'s
/// `i32x8`, compiled for the baseline, is two SSE2 halves whatever the
/// function calling it may use, and the compiler's vector code of
/// [`sums_lanes`] for AVX2 turns each bit into a mask with shifts, which
/// only two of the ports take (shifting each bit into the sign with
/// `vpsllvd` and `vpsrad`: a quarter more of the time of these sums, in
/// a profile of zh_news on an Intel Xeon at AVX2). The same integer sums,
/// in any order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sums_avx2(small: &mut [i32x8; 8], hashes: &[u64], weights: &[i64]) {
    use std::arch::x86_64::*;
    let mut sums: [__m256i; 8] = wide::bytemuck::cast(*small);
    for (&h, &w) in hashes.iter().zip(weights) {
        let w = _mm256_set1_epi32(w as i32);
        for (k, sum) in sums.iter_mut().enumerate() {
            let byte = (h >> (8 * k)) & 0xFF;
            let mask: __m256i = wide::bytemuck::cast(LANE_MASKS[byte as usize]);
            *sum = _mm256_add_epi32(*sum, _mm256_and_si256(w, mask));
        }
    }
    *small = wide::bytemuck::cast(sums);
}

/// The 32-bit sums of a batch of small weights (below 2^23 in magnitude,
/// no more than fit before a spill) written lane by lane, for the compiler
/// to turn into vector code as wide as the instructions it may use: lane
/// `i` gains `w` when bit `i` of the hash is set.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn sums_lanes(small: &mut [i32x8; 8], hashes: &[u64], weights: &[i64]) {
    let mut sums: [i32; 64] = wide::bytemuck::cast(*small);
    for (&h, &w) in hashes.iter().zip(weights) {
        let w = w as i32;
        let halves = [h as u32, (h >> 32) as u32];
        for (half, bits) in halves.into_iter().enumerate() {
            for (lane, sum) in sums[32 * half..32 * half + 32].iter_mut().enumerate() {
                *sum += if bits >> lane & 1 == 1 { w } else { 0 };
            }
        }
    }
    *small = wide::bytemuck::cast(sums);
}

/// Lane masks for each value of a byte: lane `j` is -1 when bit `j` of the
/// byte is set (add `w`), 0 when it is clear.
const LANE_MASKS: [[i32; 8]; 256] = {
    let mut table = [[0i32; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut lane = 0;
        while lane < 8 {
            table[byte][lane] = if byte & (1 << lane) != 0 { -1 } else { 0 };
            lane += 1;
        }
        byte += 1;
    }
    table
};

/// Weights below this in magnitude are summed in 32-bit lanes.
const SMALL: i64 = 1 << 23;

/// How many small weights the 32-bit lanes take before they are spilled:
/// 256 * (2^23 - 1) < 2^31.
const SPILL_EVERY: u32 = 256;

/// The 64 signed counters of one fingerprint under construction.
#[derive(Debug, Clone)]
pub struct Accumulator {
    /// `S_i` of the small weights since the last spill: bit `i` in lane
    /// `i % 8` of vector `i / 8`.
    small: [i32x8; 8],
    pending: u32,
    /// `S_i` of everything spilled and of the large weights.
    set: [i64; 64],
    /// `W`.
    total: i64,
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
            small: [i32x8::ZERO; 8],
            pending: 0,
            set: [0; 64],
            total: 0,
            features: 0,
        }
    }

    /// Adds one occurrence of a feature with hash `hash` and weight `weight`.
    #[inline]
    pub fn add(&mut self, hash: u64, weight: i64) {
        if weight > -SMALL && weight < SMALL {
            let w = i32x8::splat(weight as i32);
            for (byte, sums) in self.small.iter_mut().enumerate() {
                let mask = i32x8::from(LANE_MASKS[((hash >> (8 * byte)) & 0xFF) as usize]);
                *sums += w & mask;
            }
            self.pending += 1;
            if self.pending == SPILL_EVERY {
                self.spill();
            }
        } else {
            for (bit, sum) in self.set.iter_mut().enumerate() {
                if hash >> bit & 1 == 1 {
                    *sum += weight;
                }
            }
        }
        self.total += weight;
        self.features += 1;
    }

    /// [`Self::add`] of each (hash, weight) pair, the same sums; when the
    /// weights are all small and fit before the next spill, half the sums
    /// at a time are kept in registers over the whole batch rather than
    /// loaded and stored again for every feature.
    #[inline]
    pub fn add_all(&mut self, hashes: &[u64], weights: &[i64]) {
        self.add_all_as(Simd::detected(), hashes, weights);
    }

    /// [`Self::add_all`] with the vector instructions of `simd` (the
    /// baseline's when the processor does not have them): the same sums.
    #[inline]
    #[allow(unsafe_code)]
    pub fn add_all_as(&mut self, simd: Simd, hashes: &[u64], weights: &[i64]) {
        assert_eq!(hashes.len(), weights.len());
        let n = hashes.len();
        let (small, total) = match simd {
            // SAFETY: as below.
            #[cfg(target_arch = "x86_64")]
            _ if simd.is_avx512() && simd.available() => unsafe { small_and_total_avx512(weights) },
            // SAFETY: as below.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 if simd.available() => unsafe { small_and_total_avx2(weights) },
            _ => small_and_total(weights),
        };
        if !small || n > SPILL_EVERY as usize {
            for (&h, &w) in hashes.iter().zip(weights) {
                self.add(h, w);
            }
            return;
        }
        if self.pending as usize + n > SPILL_EVERY as usize {
            self.spill();
        }
        match simd {
            // SAFETY: the processor has the instructions the function is
            // compiled with (`available`).
            #[cfg(target_arch = "x86_64")]
            _ if simd.is_avx512() && simd.available() => unsafe {
                sums_avx512(&mut self.small, hashes, weights)
            },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 if simd.available() => unsafe {
                sums_avx2(&mut self.small, hashes, weights)
            },
            _ => self.sums_baseline(hashes, weights),
        }
        self.pending += n as u32;
        if self.pending == SPILL_EVERY {
            self.spill();
        }
        self.total += total;
        self.features += n as u64;
    }

    /// The baseline's sums of a batch of small weights.
    #[inline(always)]
    fn sums_baseline(&mut self, hashes: &[u64], weights: &[i64]) {
        for half in [0, 4] {
            let mut sums: [i32x8; 4] = [
                self.small[half],
                self.small[half + 1],
                self.small[half + 2],
                self.small[half + 3],
            ];
            for (&h, &w) in hashes.iter().zip(weights) {
                let w = i32x8::splat(w as i32);
                for (k, sum) in sums.iter_mut().enumerate() {
                    let byte = (h >> (8 * (half + k))) & 0xFF;
                    *sum += w & i32x8::from(LANE_MASKS[byte as usize]);
                }
            }
            self.small[half..half + 4].copy_from_slice(&sums);
        }
    }

    /// Moves the 32-bit sums into the 64-bit ones.
    fn spill(&mut self) {
        for (byte, sums) in self.small.iter_mut().enumerate() {
            for (lane, v) in sums.to_array().into_iter().enumerate() {
                self.set[8 * byte + lane] += i64::from(v);
            }
            *sums = i32x8::ZERO;
        }
        self.pending = 0;
    }

    /// How many occurrences were added.
    pub fn features(&self) -> u64 {
        self.features
    }

    /// The 64 counters, counter `i` at index `i`.
    pub fn counters(&self) -> [i64; 64] {
        let mut out = [0i64; 64];
        for (byte, sums) in self.small.iter().enumerate() {
            for (lane, v) in sums.to_array().into_iter().enumerate() {
                let i = 8 * byte + lane;
                out[i] = 2 * (self.set[i] + i64::from(v)) - self.total;
            }
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
    fn large_weights_and_many_features_match_the_scalar_definition() {
        // Weights on both sides of the 32-bit lanes' limit, and enough
        // features to spill them many times (also with the most each
        // lane can take between spills).
        let mut s = 4242;
        for n in [255usize, 256, 257, 1000, 5000] {
            let features: Vec<(u64, i64)> = (0..n)
                .map(|i| {
                    let h = splitmix(&mut s);
                    let w = match i % 5 {
                        0 => SMALL - 1,
                        1 => -(SMALL - 1),
                        2 => SMALL,
                        3 => -(splitmix(&mut s) as i64 >> 20),
                        _ => (splitmix(&mut s) % 100_000) as i64,
                    };
                    (h, w)
                })
                .collect();
            let mut acc = Accumulator::new();
            for &(h, w) in &features {
                acc.add(h, w);
            }
            assert_eq!(acc.finish(), scalar(&features), "n = {n}");
            let mut counters = [0i64; 64];
            for &(h, w) in &features {
                for (i, c) in counters.iter_mut().enumerate() {
                    *c += if h >> i & 1 == 1 { w } else { -w };
                }
            }
            assert_eq!(acc.counters(), counters, "n = {n}");
        }
        // The most a 32-bit lane holds: 256 times the largest small weight
        // on one bit, then spilled.
        let mut acc = Accumulator::new();
        for _ in 0..SPILL_EVERY * 3 {
            acc.add(u64::MAX, SMALL - 1);
        }
        assert_eq!(acc.counters()[63], i64::from(SPILL_EVERY * 3) * (SMALL - 1));
    }

    #[test]
    fn batches_have_the_counters_of_one_at_a_time() {
        // Every level this processor has (the others fall back to the
        // baseline, which is tested anyway).
        for simd in Simd::ALL.into_iter().filter(|s| s.available()) {
            batches_match_one_at_a_time(simd);
        }
    }

    #[test]
    fn the_sums_lane_by_lane_are_the_baselines() {
        // The wider levels' source, run here without their instructions:
        // the same sums as the baseline's on any processor.
        let mut s = 4242;
        for round in 0..300 {
            let n = (splitmix(&mut s) % 65) as usize;
            let hashes: Vec<u64> = (0..n)
                .map(|i| match (round + i) % 7 {
                    0 => u64::MAX,
                    1 => 0,
                    2 => 1 << 63 | 1,
                    _ => splitmix(&mut s),
                })
                .collect();
            let weights: Vec<i64> = (0..n)
                .map(|i| match (round + i) % 5 {
                    0 => SMALL - 1,
                    1 => -(SMALL - 1),
                    _ => (splitmix(&mut s) % 2_000_001) as i64 - 1_000_000,
                })
                .collect();
            let mut baseline = Accumulator::new();
            baseline.sums_baseline(&hashes, &weights);
            let mut lanes = Accumulator::new();
            sums_lanes(&mut lanes.small, &hashes, &weights);
            assert_eq!(lanes.small, baseline.small, "round {round}");
        }
    }

    fn batches_match_one_at_a_time(simd: Simd) {
        let mut s = 777;
        for round in 0..200 {
            let mut acc = Accumulator::new();
            let mut features = Vec::new();
            // Batches of every size up to past a spill, some with a large
            // weight, some with the largest small one on every bit.
            while features.len() < 3000 {
                let n = (splitmix(&mut s) % 300) as usize;
                let batch: Vec<(u64, i64)> = (0..n)
                    .map(|i| match (round + i) % 97 {
                        0 if round % 3 == 0 => (splitmix(&mut s), SMALL),
                        1 if round % 5 == 0 => (u64::MAX, SMALL - 1),
                        2 if round % 5 == 0 => (0, -(SMALL - 1)),
                        _ => (
                            splitmix(&mut s),
                            (splitmix(&mut s) % 2_000_001) as i64 - 1_000_000,
                        ),
                    })
                    .collect();
                let (hashes, weights): (Vec<u64>, Vec<i64>) = batch.iter().copied().unzip();
                acc.add_all_as(simd, &hashes, &weights);
                features.extend(batch);
            }
            let mut counters = [0i64; 64];
            for &(h, w) in &features {
                for (i, c) in counters.iter_mut().enumerate() {
                    *c += if h >> i & 1 == 1 { w } else { -w };
                }
            }
            assert_eq!(acc.counters(), counters, "{simd:?} round {round}");
            assert_eq!(acc.finish(), scalar(&features), "{simd:?} round {round}");
            assert_eq!(acc.features(), features.len() as u64);
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
