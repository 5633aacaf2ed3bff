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
    if radius >= 4 {
        // Past a few thousand values a pass over all of them is as cheap.
        return (0..=u16::MAX)
            .filter(|v| (v ^ band).count_ones() <= radius)
            .collect();
    }
    // Flip every set of at most `radius` bits: 1, 17, 137 or 697 values,
    // where the pass over 65,536 took about 100 us per band.
    ball(u64::from(band), BAND_BITS, radius)
        .into_iter()
        .map(|v| v as u16)
        .collect()
}

/// Every `width`-bit value within `radius` bits of `key` (whose bits above
/// `width` are zero), ascending, by flipping every set of at most `radius`
/// of its bits: [`ball_size`] values.
pub fn ball(key: u64, width: u32, radius: u32) -> Vec<u64> {
    let mut out = Vec::with_capacity(ball_size(width, radius) as usize);
    flips(key, 0, width, radius.min(width), &mut out);
    out.sort_unstable();
    out
}

/// Pushes `value` with every set of at most `left` of its bits `from` to
/// `width - 1` flipped.
fn flips(value: u64, from: u32, width: u32, left: u32, out: &mut Vec<u64>) {
    out.push(value);
    if left == 0 {
        return;
    }
    for bit in from..width {
        flips(value ^ (1 << bit), bit + 1, width, left - 1, out);
    }
}

/// How many `width`-bit values lie within `radius` bits of one: the sum of
/// `C(width, i)` for `i` up to `radius`.
pub fn ball_size(width: u32, radius: u32) -> u64 {
    let (width, radius) = (u64::from(width), u64::from(radius.min(width)));
    let mut total = 0u64;
    let mut c = 1u64; // C(width, 0)
    for i in 0..=radius {
        total += c;
        c = c * (width - i) / (i + 1);
    }
    total
}

/// How many values [`band_neighbors`] gives for `radius`: the sum of
/// `C(16, i)` for `i` up to `radius`.
pub fn neighbor_count(radius: u32) -> usize {
    ball_size(BAND_BITS, radius) as usize
}

/// The bound that matches no distance: `d <= -1` holds for none.
pub const NO_DISTANCE: i32 = -1;
/// The bound that matches every distance of two 64-bit fingerprints.
pub const EVERY_DISTANCE: i32 = 64;

/// The whole-number `k` for which `d <= k` holds for exactly the distances
/// `d` (0 to 64) with `d <= bound`, or with `d < bound` when `below`:
/// clamped to [`NO_DISTANCE`]..=[`EVERY_DISTANCE`], so that no bound, not
/// even `i64::MIN`, overflows.
pub fn at_most_int(bound: i64, below: bool) -> i32 {
    let k = if below {
        bound.saturating_sub(1)
    } else {
        bound
    };
    k.clamp(i64::from(NO_DISTANCE), i64::from(EVERY_DISTANCE)) as i32
}

/// [`at_most_int`] for `d < bound`.
pub fn at_most_below_int(bound: i64) -> i32 {
    at_most_int(bound, true)
}

/// [`at_most_int`] for a floating-point bound, compared with the distance
/// as a float (exact: distances are small integers). NaN matches every
/// distance, as PostgreSQL orders NaN above every number.
pub fn at_most_float(bound: f64, below: bool) -> i32 {
    if bound.is_nan() {
        return EVERY_DISTANCE;
    }
    let k = if below {
        bound.ceil() - 1.0
    } else {
        bound.floor()
    };
    k.clamp(f64::from(NO_DISTANCE), f64::from(EVERY_DISTANCE)) as i32
}

/// [`at_most_int`] for a decimal bound in PostgreSQL's `numeric` output
/// form (`-12.50`, `NaN`, `Infinity`, `-Infinity`), exactly: no rounding
/// through floating point. `None` for text not of that form.
pub fn at_most_decimal(text: &str, below: bool) -> Option<i32> {
    match text {
        "NaN" | "Infinity" => return Some(EVERY_DISTANCE),
        "-Infinity" => return Some(NO_DISTANCE),
        _ => {}
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    if whole.len() > 3 {
        // At least 1000 in size: beyond every distance either way.
        return Some(if negative {
            NO_DISTANCE
        } else {
            EVERY_DISTANCE
        });
    }
    let magnitude: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let has_fraction = i64::from(fraction.bytes().any(|c| c != b'0'));
    // floor and ceiling of the value.
    let (floor, ceil) = if negative {
        (-magnitude - has_fraction, -magnitude)
    } else {
        (magnitude, magnitude + has_fraction)
    };
    Some(if below {
        at_most_int(ceil, true)
    } else {
        at_most_int(floor, false)
    })
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
        for band in [0u16, 0x00F0, 0xA5A5, 0xFFFF, 0x8001] {
            for r in 0..=5 {
                let want: Vec<u16> = (0..=u16::MAX)
                    .filter(|v| (v ^ band).count_ones() <= r)
                    .collect();
                assert_eq!(band_neighbors(band, r), want, "band {band:04x} radius {r}");
            }
        }
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

    /// Every distance 0..=64 compared with `bound` directly and through
    /// the whole-number bound.
    fn agrees(bound: f64, below: bool, k: i32) -> bool {
        (0..=64).all(|d| {
            let direct = if below {
                f64::from(d) < bound
            } else {
                f64::from(d) <= bound
            };
            direct == (d <= k)
        })
    }

    #[test]
    fn whole_number_bounds_mean_what_the_comparison_means() {
        let ints = [
            i64::MIN,
            i64::from(i32::MIN),
            -65,
            -2,
            -1,
            0,
            1,
            3,
            4,
            11,
            63,
            64,
            65,
            i64::from(i32::MAX),
            i64::MAX,
        ];
        for &b in &ints {
            for below in [false, true] {
                let k = at_most_int(b, below);
                assert!((NO_DISTANCE..=EVERY_DISTANCE).contains(&k));
                assert!(agrees(b as f64, below, k), "{b} below={below} -> {k}");
            }
        }
        assert_eq!(at_most_below_int(i64::from(i32::MIN)), NO_DISTANCE);
        assert_eq!(at_most_below_int(4), 3);
    }

    #[test]
    fn float_bounds_mean_what_the_comparison_means() {
        let floats = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -0.5,
            -0.0,
            0.0,
            0.5,
            1.0,
            3.5,
            3.999_999,
            4.0,
            11.2,
            63.5,
            64.0,
            64.5,
            1e300,
            f64::INFINITY,
        ];
        for &b in &floats {
            for below in [false, true] {
                let k = at_most_float(b, below);
                assert!(agrees(b, below, k), "{b} below={below} -> {k}");
            }
        }
        assert_eq!(at_most_float(f64::NAN, false), EVERY_DISTANCE);
        assert_eq!(at_most_float(f64::NAN, true), EVERY_DISTANCE);
    }

    #[test]
    fn decimal_bounds_are_exact() {
        for (text, below, want) in [
            ("3", false, 3),
            ("3", true, 2),
            ("3.5", false, 3),
            ("3.5", true, 3),
            ("3.000", true, 2),
            ("3.9999999999999999999999", false, 3),
            ("3.0000000000000000000001", true, 3),
            ("0", true, -1),
            ("0.5", true, 0),
            ("-0.5", false, -1),
            ("-0.5", true, -1),
            ("-1", false, -1),
            ("64", false, 64),
            ("63.1", true, 63),
            ("000012", false, 12),
            ("123456789012345678901234567890", false, 64),
            ("-123456789012345678901234567890.5", true, -1),
            ("NaN", false, 64),
            ("Infinity", true, 64),
            ("-Infinity", false, -1),
        ] {
            assert_eq!(
                at_most_decimal(text, below),
                Some(want),
                "{text} below={below}"
            );
        }
        for bad in ["", "-", "1e5", "abc", "1.2.3", ".5"] {
            assert_eq!(at_most_decimal(bad, false), None, "{bad:?}");
        }
    }
}
