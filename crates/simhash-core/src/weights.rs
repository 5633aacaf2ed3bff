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

use wide::f64x4;
use xxhash_rust::xxh3::xxh3_64;

use crate::idf::PassThrough;

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

/// [`exp_neg`] of four values at once, each lane the same bits as
/// [`exp_neg`] of that value: the same IEEE operations in the same order,
/// four lanes wide. The Taylor series is a chain of 24 dependent
/// multiplications and divisions, bound by their latency; four chains side
/// by side cost about what one does. A lane outside `(0, 745]` (or NaN)
/// takes the scalar function.
pub fn exp_neg_x4(xs: [f64; 4]) -> [f64; 4] {
    let k = xs.map(f64::floor);
    let r = f64x4::from(xs) - f64x4::from(k);
    let mut terms = [f64x4::ZERO; 24];
    let mut t = f64x4::ONE;
    for (i, slot) in terms.iter_mut().enumerate() {
        *slot = t;
        t = t * -r / f64x4::splat(i as f64 + 1.0);
    }
    let mut frac = f64x4::ZERO;
    for t in terms.iter().rev() {
        frac += *t;
    }
    let frac = frac.to_array();
    let mut out = [0.0; 4];
    for lane in 0..4 {
        let x = xs[lane];
        out[lane] = if x > 0.0 && x <= 745.0 {
            whole_inv_e(k[lane] as u64) * frac[lane]
        } else {
            exp_neg(x)
        };
    }
    out
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

/// [`expected_capped`] of four (mean, cap) pairs at once, each lane the
/// same bits as the scalar function (see [`exp_neg_x4`]).
pub fn expected_capped_x4(means: [f64; 4], caps: [u32; 4]) -> [f64; 4] {
    let mean = f64x4::from(means);
    let mut pk = f64x4::from(exp_neg_x4(means));
    let mut below = f64x4::ZERO;
    let longest = caps.iter().copied().max().unwrap_or(0);
    for k in 0..longest {
        // Lanes whose cap is reached keep their sum as it is.
        let counting =
            f64x4::from(caps.map(|c| if k < c { f64::from_bits(u64::MAX) } else { 0.0 }));
        let factor = f64x4::from(caps.map(|c| f64::from(c.saturating_sub(k))));
        below = counting.bitselect(below + factor * pk, below);
        pk = pk * mean / f64x4::splat(f64::from(k + 1));
    }
    let below = below.to_array();
    let mut out = [0.0; 4];
    for lane in 0..4 {
        out[lane] = f64::from(caps[lane]) - below[lane];
    }
    out
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
    pub fn weight_regardless_of_chance(&self, s: f64, tf: u64) -> f64 {
        self.weight_against(s, tf, 0.0)
    }

    /// The weight of a feature seen `tf` times, less `chance`: what
    /// [`Self::weight`] computes once it has the chance term.
    pub fn weight_against(&self, s: f64, tf: u64, chance: f64) -> f64 {
        let capped = tf.min(u64::from(self.cap)) as f64;
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

    #[test]
    fn four_lanes_give_the_scalar_bits() {
        let mut state = 99u64;
        let mut next = || crate::testutil::splitmix(&mut state);
        let specials = [
            0.0,
            -0.0,
            -1.5,
            1e-300,
            5e-324,
            0.999_999_999,
            1.0,
            744.9,
            745.0,
            745.1,
            1e9,
            f64::NAN,
            f64::INFINITY,
        ];
        for round in 0..20_000 {
            let mut xs = [0.0; 4];
            let mut caps = [0u32; 4];
            for lane in 0..4 {
                let bits = next();
                xs[lane] = match bits % 5 {
                    0 => specials[(bits >> 8) as usize % specials.len()],
                    1 => (bits >> 11) as f64 / (1u64 << 53) as f64,
                    2 => (bits >> 11) as f64 / (1u64 << 53) as f64 * 30.0,
                    3 => (bits >> 11) as f64 / (1u64 << 53) as f64 * 800.0,
                    _ => f64::from_bits(bits >> 2),
                };
                caps[lane] = [1, 3, 6, 6, 10, 0][(bits >> 20) as usize % 6];
            }
            let e = exp_neg_x4(xs);
            let c = expected_capped_x4(xs, caps);
            for lane in 0..4 {
                let (x, cap) = (xs[lane], caps[lane]);
                assert_eq!(
                    e[lane].to_bits(),
                    exp_neg(x).to_bits(),
                    "round {round}: exp_neg({x:e})"
                );
                assert_eq!(
                    c[lane].to_bits(),
                    expected_capped(x, cap).to_bits(),
                    "round {round}: expected_capped({x:e}, {cap})"
                );
            }
        }
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
