//! Feature weights of fingerprint definition version 3: how much a feature
//! says about *this* text rather than about the language it is written in.
//!
//! Each feature `f` (a Han character, or a character trigram of a word in
//! another script) has a self-information `s(f) = ln(1 / p(f))` from a
//! shipped table, `p(f)` being its share of all features of its kind in a
//! large body of text. A text with `n` features of that kind is expected to
//! hold `e = n * p(f)` of `f` by chance alone. The weight of `f` is
//!
//! ```text
//! k * s(f)^γ * (min(tf, C) - E[min(X, C)]),   X ~ Poisson(e)
//! ```
//!
//! times a constant per kind, the capped count minus what the capped count
//! would be by chance.
//! In a short text `e` is tiny for every feature and the weight is the
//! plain capped count; in a long text the commonest characters (的, 是,
//! 了 …) reach the cap by chance and weigh about nothing, so two long texts
//! are compared by what is particular to each, not by the language they
//! share. Without the subtraction, two unrelated 10,000-character articles
//! came within distance 7 (`bench/quality`, long-text check); with it
//! none did. A feature that is rarer in the text than chance says so with
//! a negative weight.
//!
//! Everything here is computed with `+ - * /` on `f64`, which IEEE 754
//! rounds the same way everywhere, and the exponential is our own
//! ([`exp_neg`]): the platform's `exp` may differ in the last bit between
//! C libraries, and a fingerprint must not.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::LazyLock;

use wide::f64x4;

use xxhash_rust::xxh3::xxh3_64;

use crate::cpu::Simd;
use crate::idf::{to_fixed, PassThrough};

/// e^-x for `x >= 0`, from basic arithmetic only: e^-x = (e^-1)^k *
/// e^-(x - k) with `k = floor(x)`, the second factor by its Taylor series
/// (24 terms, for `0 <= x - k < 1`: the error is below 2^-80). Anything
/// past 745 underflows to 0 as IEEE doubles do.
pub fn exp_neg(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return if x == 0.0 { 1.0 } else { 1.0 / exp_neg(-x) };
    }
    if x > 745.0 {
        return 0.0;
    }
    let k = x.floor();
    let r = x - k;
    // Taylor series of e^-r, summed from the small end.
    let mut terms = [0.0f64; 24];
    let mut t = 1.0;
    for (i, slot) in terms.iter_mut().enumerate() {
        *slot = t;
        t = t * -r / (i as f64 + 1.0);
    }
    let mut frac = 0.0;
    for t in terms.iter().rev() {
        frac += t;
    }
    whole_inv_e(k as u64) * frac
}

/// e^-1 to the last bit.
const INV_E: f64 = 0.367_879_441_171_442_33;

/// E[min(X, cap)] for X ~ Poisson(mean): `cap - sum_{k<cap} (cap - k) P(X = k)`.
pub fn expected_capped(mean: f64, cap: u32) -> f64 {
    let mut pk = exp_neg(mean);
    let mut below = 0.0;
    for k in 0..cap {
        below += f64::from(cap - k) * pk;
        pk = pk * mean / f64::from(k + 1);
    }
    f64::from(cap) - below
}

/// (e^-1)^n by squaring, as [`exp_neg`] computes it.
#[inline]
fn whole_inv_e(mut n: u64) -> f64 {
    let mut whole = 1.0;
    let mut base = INV_E;
    while n > 0 {
        if n & 1 == 1 {
            whole *= base;
        }
        base *= base;
        n >>= 1;
    }
    whole
}

/// The cap that [`expected_capped6_fast`] serves: both kinds of version 3
/// features count up to six occurrences.
pub const FAST_CAP: u32 = 6;

/// Where [`expected_capped6_fast`] stops: from this mean on, E[min(X, 6)]
/// is within 3e-15 of 6.
pub(crate) const FAST_MEAN_LIMIT: f64 = 50.0;

/// Steps per unit of the table of e^-x below.
pub(crate) const FAST_STEPS: f64 = 64.0;

/// `exp_neg(j / 64)` for `j` in `0..50 * 64`: 3,200 values, 25 KB.
pub(crate) static EXP_STEPS: LazyLock<Vec<f64>> = LazyLock::new(|| {
    (0..(FAST_MEAN_LIMIT * FAST_STEPS) as u32)
        .map(|j| exp_neg(f64::from(j) / FAST_STEPS))
        .collect()
});

/// Builds the table of e^-j/64 now rather than at the first weight.
pub fn prepare() {
    LazyLock::force(&EXP_STEPS);
}

/// The coefficients of e^x's series to the sixth power: 1 / i!.
pub(crate) const EXP_SERIES: [f64; 7] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
];

/// How far [`expected_capped6_fast`] may be from [`expected_capped`] with
/// cap 6, at most, for any mean: 2e-12.
///
/// Both are a few dozen rounded operations away from the exact value of
/// E[min(X, 6)], each with a relative error of at most u = 2^-53:
///
/// - `expected_capped`: `exp_neg` is off by at most about (220 + 2m) u
///   relative (24 Taylor terms of two roundings each and their sum, below
///   70 u absolute on a value above e^-1; e^-1 raised to the whole part,
///   at most 2m + 20 roundings), the Poisson sum adds 3 roundings a term,
///   so `below` is off by at most (250 + 2m) u times its value
///   e^-m P(m) <= 6, where P(m) = 6 + 5m + 2m^2 + m^3/2 + m^4/12 +
///   m^5/120: that product is largest at m = 0, 1,500 u = 1.7e-13;
/// - `expected_capped6_fast`: e^-m as a table value (an `exp_neg`, off by
///   at most 320 u below m = 50) times a degree-6 polynomial in r < 1/64
///   (truncation below 0.5 u, Horner 14 u), times P(m) by Horner (12 u):
///   at most 360 u relative on e^-m P(m) <= 6, so 2,200 u = 2.4e-13
///   absolute; past m = 50 it says 6, 3e-15 from the exact value.
///
/// Together at most 4.1e-13; the bound leaves a factor of almost five
/// above that. `tests::the_fast_chance_is_within_its_bound` measures the
/// largest distance over 300,000 means (about 1e-15).
pub const CHANCE_ERROR: f64 = 2e-12;

/// E[min(X, 6)] for X ~ Poisson(mean), within [`CHANCE_ERROR`] of
/// [`expected_capped`]`(mean, 6)`, with no division and no loop: 6 - e^-m
/// P(m), e^-m from a table of e^-j/64 and a short series in what is left.
/// `None` for a mean that is negative, infinite or not a number (no text
/// gives one).
#[inline]
pub fn expected_capped6_fast(mean: f64) -> Option<f64> {
    if !(mean >= 0.0 && mean.is_finite()) {
        return None;
    }
    if mean >= FAST_MEAN_LIMIT {
        return Some(6.0);
    }
    let j = (mean * FAST_STEPS) as usize;
    // Exact: j / 64 and mean are within 1/64 of each other.
    let x = j as f64 / FAST_STEPS - mean;
    const C: [f64; 7] = EXP_SERIES;
    let series = ((((((C[6] * x + C[5]) * x + C[4]) * x + C[3]) * x + C[2]) * x + C[1]) * x) + C[0];
    let e = EXP_STEPS[j] * series;
    let m = mean;
    let p = 6.0 + m * (5.0 + m * (2.0 + m * (0.5 + m * (1.0 / 12.0 + m * (1.0 / 120.0)))));
    Some(6.0 - e * p)
}

/// One feature to weigh in a batch ([`fixed_weights6`]): the weight is
/// `to_fixed(factor * (scale * (capped - chance)))`, chance being
/// E[min(X, 6)] for X ~ Poisson(`mean`), as [`Weighing::fixed_weight`]
/// computes it (`scale` is the weighing's scale times s^γ, `capped` the
/// count up to the cap).
#[derive(Debug, Clone, Copy, Default)]
pub struct ToWeigh {
    pub scale: f64,
    pub capped: f64,
    pub factor: f64,
    pub mean: f64,
}

impl ToWeigh {
    /// `to_fixed` of the weight against `chance`.
    #[inline(always)]
    pub(crate) fn fixed(&self, chance: f64) -> i64 {
        to_fixed(self.factor * (self.scale * (self.capped - chance)))
    }
}

/// How many features [`fixed_weights6`] takes at once.
pub const WEIGH_BATCH: usize = 64;

/// The fixed-point weights of up to [`WEIGH_BATCH`] features whose cap is
/// 6, into `out`: the bits of [`Weighing::fixed_weight`], the same
/// certified shortcut, four lanes at a time with `wide` from the chance
/// term to the rounded weights at both ends of its interval (the same
/// IEEE operations as [`expected_capped6_fast`] and [`to_fixed`]); only
/// a lane the shortcut does not certify takes the 24-term series.
pub fn fixed_weights6(batch: &[ToWeigh], out: &mut [i64]) {
    fixed_weights6_as(Simd::detected(), batch, out);
}

/// [`fixed_weights6`] with the vector instructions of `simd` (the
/// baseline's when the processor does not have them): the same bits.
pub fn fixed_weights6_as(simd: Simd, batch: &[ToWeigh], out: &mut [i64]) {
    assert!(batch.len() <= WEIGH_BATCH && out.len() >= batch.len());
    fixed_weights6_by(simd, batch.len(), |k| batch[k], out);
}

/// [`fixed_weights6_as`] of the `n` features that `feature(0)`,
/// `feature(1)` ... give, in that order, each asked for once: the caller
/// gathers them straight into the kernel's lanes instead of into a batch
/// that the kernel reads back.
// The one kind of unsafe code in this crate: calling a function compiled
// for instructions the processor was found to have.
#[allow(unsafe_code)]
#[inline]
pub fn fixed_weights6_by(
    simd: Simd,
    n: usize,
    feature: impl FnMut(usize) -> ToWeigh,
    out: &mut [i64],
) {
    assert!(n <= WEIGH_BATCH && out.len() >= n);
    match simd {
        // SAFETY: the processor has the instructions the function is
        // compiled with (`available`).
        #[cfg(target_arch = "x86_64")]
        _ if simd.is_avx512() && simd.available() => unsafe { weights_avx512(n, feature, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 if simd.available() => unsafe { weights_avx2(n, feature, out) },
        _ => {
            let mut feature = feature;
            let mut group = [ToWeigh::default(); 4 * ROWS];
            for start in (0..n).step_by(4 * ROWS) {
                let len = (n - start).min(4 * ROWS);
                for (k, f) in group[..len].iter_mut().enumerate() {
                    *f = feature(start + k);
                }
                weigh_group(&group[..len], &mut out[start..start + len]);
            }
        }
    }
}

/// [`weigh_batch_lanes`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512dq,avx512bw,avx512vl")]
fn weights_avx512(n: usize, feature: impl FnMut(usize) -> ToWeigh, out: &mut [i64]) {
    weigh_batch_lanes(n, feature, out);
}

/// [`weigh_batch_lanes`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn weights_avx2(n: usize, feature: impl FnMut(usize) -> ToWeigh, out: &mut [i64]) {
    weigh_batch_lanes(n, feature, out);
}

/// [`weigh_lanes`] over a batch of `n` features, [`LANES`] at a time.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn weigh_batch_lanes(n: usize, mut feature: impl FnMut(usize) -> ToWeigh, out: &mut [i64]) {
    for start in (0..n).step_by(LANES) {
        let len = (n - start).min(LANES);
        weigh_lanes(len, |k| feature(start + k), &mut out[start..start + len]);
    }
}

/// Features [`weigh_lanes`] takes at once.
const LANES: usize = 16;

/// [`weigh_group`] of the `len` (up to [`LANES`]) features `feature`
/// gives, written lane by lane, for the compiler to turn into vector code
/// as wide as the instructions it may use: each step a loop over all
/// lanes, with no branch but the one to the series for the lanes the
/// shortcut does not certify. The same IEEE operations, in the same
/// order, as `weigh_group`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn weigh_lanes(len: usize, mut feature: impl FnMut(usize) -> ToWeigh, out: &mut [i64]) {
    let steps: &[f64] = &EXP_STEPS;
    let mut mean = [0.0f64; LANES];
    let mut scale = [0.0f64; LANES];
    let mut capped = [0.0f64; LANES];
    let mut factor = [0.0f64; LANES];
    for k in 0..len {
        let f = feature(k);
        mean[k] = f.mean;
        scale[k] = f.scale;
        capped[k] = f.capped;
        factor[k] = f.factor;
    }
    let mut served = [false; LANES];
    let mut fast = [false; LANES];
    let mut m = [0.0f64; LANES];
    let mut j = [0.0f64; LANES];
    for l in 0..LANES {
        let mn = mean[l];
        served[l] = (0.0..FAST_MEAN_LIMIT).contains(&mn);
        fast[l] = served[l] | (FAST_MEAN_LIMIT..f64::INFINITY).contains(&mn);
        m[l] = if served[l] { mn } else { 0.0 };
        let v = m[l] * FAST_STEPS;
        let nearest = (v + TWO_52) - TWO_52;
        j[l] = nearest - if nearest > v { 1.0 } else { 0.0 };
    }
    let mut t = [0.0f64; LANES];
    let last = steps.len() - 1;
    for l in 0..LANES {
        let index = (j[l] + TWO_52).to_bits().wrapping_sub(TWO_52.to_bits()) as usize;
        let value = steps[index.min(last)];
        t[l] = if served[l] { value } else { 0.0 };
    }
    let mut x = [0.0f64; LANES];
    for l in 0..LANES {
        x[l] = j[l] / FAST_STEPS - m[l];
    }
    let mut series = [EXP_SERIES[6]; LANES];
    for coefficient in EXP_SERIES[..6].iter().rev() {
        for l in 0..LANES {
            series[l] = series[l] * x[l] + *coefficient;
        }
    }
    let mut p = [1.0 / 120.0; LANES];
    for coefficient in [1.0 / 12.0, 0.5, 2.0, 5.0, 6.0] {
        for l in 0..LANES {
            p[l] = coefficient + m[l] * p[l];
        }
    }
    let mut certified = [false; LANES];
    let mut fixed = [0i64; LANES];
    for l in 0..LANES {
        let chance = 6.0 - (t[l] * series[l]) * p[l];
        let weight = |chance: f64| factor[l] * (scale[l] * (capped[l] - chance)) * FIXED_ONE;
        let high = weight(chance - CHANCE_ERROR);
        let low = weight(chance + CHANCE_ERROR);
        let high_r = round_away_lane(high);
        certified[l] = fast[l]
            & (high_r == round_away_lane(low))
            & (high.abs() < ROUND_LIMIT)
            & (low.abs() < ROUND_LIMIT)
            & (factor[l] >= 0.0)
            & (scale[l] >= 0.0)
            & (scale[l] < f64::INFINITY);
        fixed[l] = (high_r + ONE_AND_HALF_52)
            .to_bits()
            .wrapping_sub(ONE_AND_HALF_52.to_bits()) as i64;
    }
    for (k, w) in out[..len].iter_mut().enumerate() {
        *w = if certified[k] {
            fixed[k]
        } else {
            let f = ToWeigh {
                mean: mean[k],
                scale: scale[k],
                capped: capped[k],
                factor: factor[k],
            };
            f.fixed(expected_capped(f.mean, FAST_CAP))
        };
    }
}

/// [`round_away`] of one lane.
#[inline(always)]
fn round_away_lane(y: f64) -> f64 {
    let a = y.abs();
    let n = (a + TWO_52) - TWO_52;
    let n = n + if a - n == 0.5 { 1.0 } else { 0.0 };
    if y < 0.0 {
        -n
    } else {
        n
    }
}

/// Rows of four features [`weigh_group`] takes at once.
const ROWS: usize = 4;

/// [`fixed_weights6`] of up to `4 * ROWS` features: each step for all
/// rows before the next, so that the rows' long chains of dependent
/// operations run side by side rather than one after the other.
#[inline(always)]
fn weigh_group(group: &[ToWeigh], out: &mut [i64]) {
    let steps: &[f64] = &EXP_STEPS;
    let c = f64x4::splat;
    let big = c(TWO_52);
    // The features by field, four lanes to a row, padded with lanes that
    // weigh nothing.
    let mut fields = [[[0.0f64; 4]; ROWS]; 4];
    for (k, f) in group.iter().enumerate() {
        let (row, lane) = (k / 4, k % 4);
        fields[0][row][lane] = f.mean;
        fields[1][row][lane] = f.scale;
        fields[2][row][lane] = f.capped;
        fields[3][row][lane] = f.factor;
    }
    let [mean, scale, capped, factor] = fields.map(|rows| rows.map(f64x4::from));
    let mut high_r = [c(0.0); ROWS];
    let mut slow = [0u32; ROWS];
    let mut m = [c(0.0); ROWS];
    let mut t = [c(0.0); ROWS];
    let mut x = [c(0.0); ROWS];
    let mut fast = [c(0.0); ROWS];
    for r in 0..ROWS {
        // The means the table serves, below 50; from 50 on the chance is
        // 6.0, which the table value 0 and a mean of 0 make it below, as
        // `expected_capped6_fast` says; a mean that is negative, infinite
        // or not a number takes the slow way.
        let served = mean[r].simd_ge(c(0.0)) & mean[r].simd_lt(c(FAST_MEAN_LIMIT));
        fast[r] =
            served | (mean[r].simd_ge(c(FAST_MEAN_LIMIT)) & mean[r].simd_lt(c(f64::INFINITY)));
        m[r] = served & mean[r];
        // j = floor(64 m), below 3,200: 2^52 added and taken away rounds
        // to the nearest whole number, one less when that is above.
        let v = m[r] * c(FAST_STEPS);
        let nearest = (v + big) - big;
        let j = nearest - (nearest.simd_gt(v) & c(1.0));
        let index: [u64; 4] = wide::bytemuck::cast(j + big);
        let base = TWO_52.to_bits();
        t[r] = served
            & f64x4::from([
                steps[(index[0] - base) as usize],
                steps[(index[1] - base) as usize],
                steps[(index[2] - base) as usize],
                steps[(index[3] - base) as usize],
            ]);
        // Exact: j / 64 and the mean are within 1/64 of each other.
        x[r] = j / c(FAST_STEPS) - m[r];
    }
    let mut series = [c(EXP_SERIES[6]); ROWS];
    for coefficient in EXP_SERIES[..6].iter().rev() {
        for r in 0..ROWS {
            series[r] = series[r] * x[r] + c(*coefficient);
        }
    }
    let mut p = [c(1.0 / 120.0); ROWS];
    for coefficient in [1.0 / 12.0, 0.5, 2.0, 5.0, 6.0] {
        for r in 0..ROWS {
            p[r] = c(coefficient) + m[r] * p[r];
        }
    }
    for r in 0..ROWS {
        let chance = c(6.0) - (t[r] * series[r]) * p[r];
        // `ToWeigh::fixed` at both ends of the interval, as `to_fixed`
        // scales them.
        let weight = |chance: f64x4| factor[r] * (scale[r] * (capped[r] - chance)) * c(FIXED_ONE);
        let high = weight(chance - c(CHANCE_ERROR));
        let low = weight(chance + c(CHANCE_ERROR));
        high_r[r] = round_away(high);
        // Certified: both ends round alike, within the range where
        // `round_away` is `to_fixed`'s rounding, and the weight falls as
        // the chance rises (NaN compares false all the way).
        let limit = c(ROUND_LIMIT);
        let certified = fast[r]
            & high_r[r].simd_eq(round_away(low))
            & high.abs().simd_lt(limit)
            & low.abs().simd_lt(limit)
            & factor[r].simd_ge(c(0.0))
            & scale[r].simd_ge(c(0.0))
            & scale[r].simd_lt(c(f64::INFINITY));
        slow[r] = !certified.to_bitmask() & 0xF;
    }
    // Whole numbers below 2^51 in magnitude, as integers: their bits plus
    // 1.5 * 2^52, less those of 1.5 * 2^52.
    let offset = ONE_AND_HALF_52.to_bits();
    for (r, (fours, out)) in group.chunks(4).zip(out.chunks_mut(4)).enumerate() {
        let shifted: [u64; 4] = wide::bytemuck::cast(high_r[r] + c(ONE_AND_HALF_52));
        for (lane, (f, w)) in fours.iter().zip(out.iter_mut()).enumerate() {
            *w = if slow[r] >> lane & 1 == 0 {
                shifted[lane].wrapping_sub(offset) as i64
            } else {
                f.fixed(expected_capped(f.mean, FAST_CAP))
            };
        }
    }
}

/// `min(tf, cap)` as a double, through `u32` (a conversion from `u64`
/// takes a dozen instructions where SSE2 has no unsigned one; the value
/// is the same).
#[inline(always)]
fn capped(tf: u64, cap: u32) -> f64 {
    f64::from(tf.min(u64::from(cap)) as u32)
}

/// 2^52, from which on every double is a whole number.
const TWO_52: f64 = (1u64 << 52) as f64;

/// 1.5 * 2^52: a whole number below 2^51 in magnitude added to it is
/// exact, and its bits are those of this plus the number.
const ONE_AND_HALF_52: f64 = (3u64 << 51) as f64;

/// 2^16: what [`to_fixed`] multiplies by.
pub(crate) const FIXED_ONE: f64 = (1u64 << crate::idf::WEIGHT_FRACTION_BITS) as f64;

/// Below this magnitude [`round_away`] is exact: 2^51.
const ROUND_LIMIT: f64 = (1u64 << 51) as f64;

/// `y` rounded to the nearest whole number, halves away from zero, as
/// [`to_fixed`] rounds, for `|y|` below [`ROUND_LIMIT`] (anything for any
/// other): 2^52 added and taken away again rounds `|y|` to the nearest
/// whole number, ties to even, exactly; `|y|` less that is exact too
/// (within 1/2 of it, Sterbenz), and is 1/2 only for a tie rounded down.
#[inline(always)]
fn round_away(y: f64x4) -> f64x4 {
    let big = f64x4::splat(TWO_52);
    let a = y.abs();
    let n = (a + big) - big;
    let tie_down = (a - n).simd_eq(f64x4::splat(0.5));
    let n = n + (tie_down & f64x4::splat(1.0));
    y.simd_lt(f64x4::splat(0.0)).bitselect(-n, n)
}

/// Self-information per feature, keyed by the feature's xxh3-64 hash.
#[derive(Debug, Clone)]
pub struct SelfInfo {
    /// hash -> (s, p = e^-s).
    by_hash: HashMap<u64, (f64, f64), BuildHasherDefault<PassThrough>>,
    /// What a feature missing from the table gets.
    unknown: (f64, f64),
}

impl SelfInfo {
    /// Parses `feature value` lines (`#` lines are comments; a line that is
    /// not two fields with a finite non-negative number second is skipped).
    /// A feature missing from the table gets self-information `unknown`.
    pub fn parse(table: &str, unknown: f64) -> Self {
        let mut by_hash = HashMap::with_capacity_and_hasher(
            table.len() / 8,
            BuildHasherDefault::<PassThrough>::default(),
        );
        for line in table.lines() {
            if line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(feature), Some(value), None) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let Ok(s) = value.parse::<f64>() {
                if s.is_finite() && s >= 0.0 {
                    by_hash.insert(xxh3_64(feature.as_bytes()), (s, exp_neg(s)));
                }
            }
        }
        SelfInfo {
            by_hash,
            unknown: (unknown, exp_neg(unknown)),
        }
    }

    /// (self-information, probability, whether the table lists it) of the
    /// feature with `hash`; a feature it does not list gets the table's
    /// value for unknowns.
    #[inline]
    pub fn get(&self, hash: u64) -> (f64, f64, bool) {
        match self.by_hash.get(&hash) {
            Some(&(s, p)) => (s, p, true),
            None => (self.unknown.0, self.unknown.1, false),
        }
    }

    /// Whether the table lists the feature with `hash`.
    pub fn contains(&self, hash: u64) -> bool {
        self.by_hash.contains_key(&hash)
    }

    /// How many features the table lists.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the table lists nothing.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// How one kind of feature is weighed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weighing {
    /// A constant factor, which sets how much this kind of feature weighs
    /// against the other kind in a text that has both.
    pub scale: f64,
    /// C: occurrences counted at most.
    pub cap: u32,
    /// A factor for a feature missing from the table: a trigram no body
    /// of English text has is mostly what a typo made up.
    pub unknown: f64,
    /// γ: the power of the self-information (0: every feature alike).
    pub power: Power,
}

/// The exponent γ of the self-information, from the few that need no `pow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    /// s^0 = 1.
    Zero,
    /// s^1.
    One,
}

impl Weighing {
    /// The weight of a feature with self-information `s` and probability
    /// `p`, seen `tf` times in a text with `n` features of its kind.
    pub fn weight(&self, s: f64, p: f64, tf: u64, n: u64) -> f64 {
        self.weight_against(s, tf, expected_capped(n as f64 * p, self.cap))
    }

    /// The weight with nothing subtracted for chance: for a text in which
    /// no feature at all is above chance (one word repeated a million
    /// times), which would otherwise weigh nothing and get the fingerprint
    /// 0 that every such text shares.
    #[inline]
    pub fn weight_regardless_of_chance(&self, s: f64, tf: u64) -> f64 {
        self.weight_against(s, tf, 0.0)
    }

    /// `to_fixed(factor * self.weight_against(s, tf, expected_capped(mean,
    /// self.cap)))`, the fixed-point weight version 3 adds, the same bits,
    /// mostly without the 24-term series of [`expected_capped`].
    ///
    /// That expression falls as the chance term rises (every rounding is
    /// monotone, and `factor` and the scale are not negative), so when it
    /// gives one integer for both ends of [`expected_capped6_fast`]'s
    /// interval, plus or minus [`CHANCE_ERROR`], it gives that integer for
    /// the exact chance term inside the interval too. Otherwise (a weight
    /// within about 2.3e-6 of a rounding boundary, a few in a million of
    /// them) it is computed the slow way.
    #[inline]
    pub fn fixed_weight(&self, s: f64, factor: f64, tf: u64, mean: f64) -> i64 {
        let f = self.to_weigh(s, factor, tf, mean);
        let monotone = f.factor >= 0.0 && f.scale >= 0.0 && f.scale.is_finite();
        if self.cap == FAST_CAP && monotone {
            if let Some(chance) = expected_capped6_fast(mean) {
                let high = f.fixed(chance - CHANCE_ERROR);
                if high == f.fixed(chance + CHANCE_ERROR) {
                    return high;
                }
            }
        }
        f.fixed(expected_capped(mean, self.cap))
    }

    /// What [`fixed_weights6`] needs of a feature with self-information
    /// `s`, seen `tf` times, whose chance term has mean `mean`: the same
    /// operations as [`Self::weight_against`], in the same order.
    #[inline]
    pub fn to_weigh(&self, s: f64, factor: f64, tf: u64, mean: f64) -> ToWeigh {
        let scale = match self.power {
            Power::Zero => 1.0,
            Power::One => s,
        };
        ToWeigh {
            scale: self.scale * scale,
            capped: capped(tf, self.cap),
            factor,
            mean,
        }
    }

    /// The weight of a feature seen `tf` times, less `chance`: what
    /// [`Self::weight`] computes once it has the chance term.
    #[inline]
    pub fn weight_against(&self, s: f64, tf: u64, chance: f64) -> f64 {
        let capped = capped(tf, self.cap);
        let scale = match self.power {
            Power::Zero => 1.0,
            Power::One => s,
        };
        self.scale * scale * (capped - chance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_neg_matches_the_library_to_a_few_ulps() {
        let mut x = 0.0;
        while x < 60.0 {
            let ours = exp_neg(x);
            let lib = (-x).exp();
            assert!(
                ((ours - lib) / lib).abs() < 1e-14,
                "x = {x}: {ours} vs {lib}"
            );
            x += 0.0137;
        }
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(800.0), 0.0);
        assert!((exp_neg(-1.0) - std::f64::consts::E).abs() < 1e-14);
        assert!(exp_neg(f64::NAN).is_nan());
    }

    /// Weighings like version 3's two (Han characters, trigrams).
    const LIKE_VERSION_3: [Weighing; 2] = [
        Weighing {
            scale: 1.0,
            cap: 6,
            unknown: 1.0,
            power: Power::One,
        },
        Weighing {
            scale: 1.0,
            cap: 6,
            unknown: 0.3,
            power: Power::Zero,
        },
    ];

    /// Means spread over every range the chance term takes: tiny (short
    /// texts, rare features), around the cap, and past the table.
    fn means(count: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        let mut out = vec![
            0.0,
            5e-324,
            1e-300,
            1.0 / 64.0,
            0.999_999_999,
            1.0,
            6.0,
            49.999_999,
            50.0,
            744.9,
            745.1,
            1e9,
        ];
        while out.len() < count {
            let bits = crate::testutil::splitmix(&mut state);
            let unit = (bits >> 11) as f64 / (1u64 << 53) as f64;
            out.push(match bits % 4 {
                0 => unit * 0.05,
                1 => unit * 8.0,
                2 => unit * 60.0,
                _ => (unit * 40.0 - 30.0).exp2(),
            });
        }
        out
    }

    #[test]
    fn the_fast_chance_is_within_its_bound() {
        let mut worst: f64 = 0.0;
        for m in means(300_000, 99) {
            let fast = expected_capped6_fast(m).expect("a mean >= 0");
            worst = worst.max((fast - expected_capped(m, 6)).abs());
        }
        // Measured about 1e-15: a hundredth of the bound is a wide margin
        // that still fails if the bound's reasoning went wrong.
        assert!(worst < CHANCE_ERROR / 100.0, "{worst:e}");
        assert_eq!(expected_capped6_fast(-1.0), None);
        assert_eq!(expected_capped6_fast(f64::NAN), None);
        assert_eq!(expected_capped6_fast(f64::INFINITY), None);
    }

    #[test]
    fn a_batch_has_the_bits_of_one_at_a_time() {
        let weighings = LIKE_VERSION_3;
        let mut state = 17u64;
        let all = means(50_000, 23);
        // Every batch length, odd ones too, with means of every range,
        // the special ones among them.
        for (round, chunk) in all.chunks(WEIGH_BATCH).enumerate() {
            let chunk = &chunk[..chunk.len() - round % 7];
            let mut batch = Vec::new();
            let mut expected = Vec::new();
            for &m in chunk {
                let bits = crate::testutil::splitmix(&mut state);
                let w = &weighings[(bits & 1) as usize];
                let s = (bits >> 11) as f64 / (1u64 << 53) as f64 * 18.0;
                let factor = if bits & 2 == 0 { 1.0 } else { w.unknown };
                let tf = 1 + (bits >> 3) % 8;
                batch.push(w.to_weigh(s, factor, tf, m));
                expected.push(w.fixed_weight(s, factor, tf, m));
            }
            check_batch(&batch, &expected, round);
        }
        // Weights a hair from a rounding boundary (the slow lanes), beside
        // ordinary ones, and means the shortcut does not take.
        let w = LIKE_VERSION_3[0];
        let mut batch = Vec::new();
        let mut expected = Vec::new();
        for (k, &m) in all.iter().take(WEIGH_BATCH * 8).enumerate() {
            let chance = expected_capped6_fast(m).unwrap_or(0.0);
            let capped = 1 + k as u64 % 6;
            let gap = capped as f64 - chance;
            let target = (k % 50) as f64 + 0.5 + [0.0, 1e-9, -1e-9, 0.25][k % 4];
            let s = if gap > 0.0 {
                target / (FIXED_ONE * gap * w.scale)
            } else {
                1.0
            };
            let m = [m, m, -1.0, f64::NAN, f64::INFINITY, m][k % 6];
            batch.push(w.to_weigh(s, 1.0, capped, m));
            expected.push(w.fixed_weight(s, 1.0, capped, m));
        }
        for (round, (chunk, expected)) in batch
            .chunks(WEIGH_BATCH)
            .zip(expected.chunks(WEIGH_BATCH))
            .enumerate()
        {
            check_batch(chunk, expected, round);
        }
    }

    /// The weights of `batch` at every level this processor has, and lane
    /// by lane without the wider levels' instructions (their source, on
    /// any processor), are `expected`.
    fn check_batch(batch: &[ToWeigh], expected: &[i64], round: usize) {
        for simd in Simd::ALL.into_iter().filter(|s| s.available()) {
            let mut out = [0i64; WEIGH_BATCH];
            fixed_weights6_as(simd, batch, &mut out);
            assert_eq!(&out[..batch.len()], expected, "{simd:?} round {round}");
        }
        let mut out = [0i64; WEIGH_BATCH];
        for (group, out) in batch.chunks(LANES).zip(out.chunks_mut(LANES)) {
            weigh_lanes(group.len(), |k| group[k], out);
        }
        assert_eq!(&out[..batch.len()], expected, "lane by lane, round {round}");
    }

    #[test]
    fn round_away_rounds_as_to_fixed_does() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.499_999_999_999_999_94,
            -0.499_999_999_999_999_94,
            4_503_599_627_370_495.5 / 2.0,
            ROUND_LIMIT - 1.0,
            -(ROUND_LIMIT - 0.5),
            5e-324,
        ];
        let mut state = 99u64;
        for _ in 0..100_000 {
            let bits = crate::testutil::splitmix(&mut state);
            let unit = (bits >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if bits & 1 == 0 { 1.0 } else { -1.0 };
            values.push(match bits >> 1 & 3 {
                0 => sign * (unit * 1e7).round() + sign * 0.5,
                1 => sign * unit * 1e7,
                2 => sign * (unit * 51.0).exp2(),
                _ => sign * unit,
            });
        }
        for v in values.chunks(4) {
            let mut lanes = [0.0; 4];
            lanes[..v.len()].copy_from_slice(v);
            let got = round_away(f64x4::from(lanes)).to_array();
            for (&y, &r) in lanes.iter().zip(&got) {
                assert_eq!(r as i64, to_fixed(y / FIXED_ONE), "{y:e}");
                assert_eq!(round_away_lane(y).to_bits(), r.to_bits(), "{y:e}");
            }
        }
    }

    #[test]
    fn the_fixed_weight_has_the_bits_of_the_series() {
        let weighings = [
            LIKE_VERSION_3[0],
            LIKE_VERSION_3[1],
            // Not the fast cap: the series every time.
            Weighing {
                scale: 1.0,
                cap: 3,
                unknown: 1.0,
                power: Power::One,
            },
        ];
        let mut state = 7u64;
        let mut slow = 0;
        let all = means(150_000, 5);
        for (i, &m) in all.iter().enumerate() {
            let bits = crate::testutil::splitmix(&mut state);
            let w = &weighings[i % 3];
            let s = (bits >> 11) as f64 / (1u64 << 53) as f64 * 18.0;
            let factor = if bits & 1 == 0 { 1.0 } else { w.unknown };
            let tf = 1 + (bits >> 3) % 8;
            let exact = to_fixed(factor * w.weight_against(s, tf, expected_capped(m, w.cap)));
            assert_eq!(
                w.fixed_weight(s, factor, tf, m),
                exact,
                "{m} {s} {tf} {factor}"
            );
        }
        // No fast chance: the series decides (0 * inf is NaN there).
        let w = &weighings[0];
        let exact = to_fixed(w.weight_against(3.0, 2, expected_capped(f64::INFINITY, 6)));
        assert_eq!(w.fixed_weight(3.0, 1.0, 2, f64::INFINITY), exact);
        // Weights on a rounding boundary: s * (tf - chance) * 65536 an
        // odd multiple of one half, for which only the series decides.
        for m in means(20_000, 11) {
            let w = &weighings[0];
            let chance = expected_capped(m, 6);
            if chance.is_nan() || chance >= 1.0 || chance == 0.0 {
                continue;
            }
            let target = ((1.0 - chance) * 65536.0).floor() + 0.5;
            let s = target / 65536.0 / (1.0 - chance);
            for s in [s, s.next_up(), s.next_down()] {
                let exact = to_fixed(w.weight_against(s, 1, chance));
                assert_eq!(w.fixed_weight(s, 1.0, 1, m), exact, "{m} {s}");
                if let Some(fast) = expected_capped6_fast(m) {
                    let hi = to_fixed(w.weight_against(s, 1, fast - CHANCE_ERROR));
                    slow +=
                        usize::from(hi != to_fixed(w.weight_against(s, 1, fast + CHANCE_ERROR)));
                }
            }
        }
        // The boundary cases do take the slow way.
        assert!(slow > 1000, "{slow}");
    }

    #[test]
    fn expected_capped_agrees_with_a_direct_sum() {
        for &mean in &[0.0f64, 1e-6, 0.01, 0.5, 1.0, 2.5, 6.0, 30.0, 400.0] {
            for cap in [1u32, 3, 6] {
                // Sum min(k, cap) P(k) over k directly.
                let mut direct = 0.0;
                let mut pk = (-mean).exp();
                for k in 0..2000u32 {
                    direct += f64::from(k.min(cap)) * pk;
                    pk *= mean / f64::from(k + 1);
                }
                let ours = expected_capped(mean, cap);
                assert!(
                    (ours - direct).abs() < 1e-9,
                    "{mean} {cap}: {ours} vs {direct}"
                );
                assert!((0.0..=f64::from(cap)).contains(&ours));
            }
        }
        // A feature that cannot occur by chance keeps its whole count; one
        // that must occur many times by chance is expected at the cap.
        assert_eq!(expected_capped(0.0, 6), 0.0);
        assert!((expected_capped(1000.0, 6) - 6.0).abs() < 1e-12);
    }

    #[test]
    fn common_features_of_long_texts_weigh_about_nothing() {
        let w = Weighing {
            scale: 1.0,
            cap: 6,
            unknown: 1.0,
            power: Power::One,
        };
        let common = (3.0, exp_neg(3.0)); // about 1 in 20
        let rare = (12.0, exp_neg(12.0));
        // In a 5-feature text, one occurrence of the common one is mostly
        // above chance, and the rare one counts fully; in a 20-feature
        // text the common one is expected once, so once says nothing.
        assert!(w.weight(common.0, common.1, 1, 5) > 0.7 * common.0);
        assert!((w.weight(rare.0, rare.1, 1, 5) - rare.0).abs() < 1e-3);
        assert!(w.weight(common.0, common.1, 1, 20).abs() < 0.05);
        // In a 10,000-feature text the common one is expected 500 times:
        // six occurrences are what chance gives.
        assert!(w.weight(common.0, common.1, 6, 10_000).abs() < 1e-9);
        assert!(w.weight(common.0, common.1, 2, 10_000) < 0.0);
        // The rare one (expected 0.06 times) keeps 99% of its six.
        let r = w.weight(rare.0, rare.1, 6, 10_000);
        assert!(r > 0.98 * 6.0 * rare.0 && r < 6.0 * rare.0, "{r}");
        let flat = Weighing {
            scale: 1.0,
            cap: 3,
            unknown: 1.0,
            power: Power::Zero,
        };
        assert_eq!(flat.weight(9.0, 0.0, 7, 100), 3.0);
    }

    #[test]
    fn tables_parse_with_comments_and_unknowns() {
        let t = SelfInfo::parse("# header\na 1.5\nb\nc x\nd -1\nе 2 3\nf 4.0\n", 9.0);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(xxh3_64(b"a")).0, 1.5);
        assert!((t.get(xxh3_64(b"a")).1 - (-1.5f64).exp()).abs() < 1e-15);
        assert_eq!(t.get(xxh3_64(b"zz")).0, 9.0);
        assert!(t.get(xxh3_64(b"a")).2 && !t.get(xxh3_64(b"zz")).2);
        assert!(t.contains(xxh3_64(b"f")));
        assert!(!t.contains(xxh3_64(b"d")));
    }
}
