//! Band layouts: how a fingerprint's 64 bits are split into index keys, and
//! which `k` each split answers exactly.
//!
//! A layout cuts the fingerprint into `parts` keys of `width` bits. Two
//! fingerprints within distance `k` differ in at most `k` bits in all, so
//! some part differs in at most `floor(k / parts)` of them (the pigeonhole
//! principle): probing every part's index with every key within that
//! radius of the query's key finds every match, and the exact distance
//! removes the rest. Finer (Norouzi, Punjani and Fleet's multi-index
//! hashing): with `q = floor(k / parts)` and `r = k mod parts`, either one
//! of the first `r + 1` parts differs in at most `q` bits or one of the
//! others in at most `q - 1` (else the parts would differ in at least
//! `(r + 1)(q + 1) + (parts - r - 1) q = k + 1` bits), so the later parts
//! are probed with a radius one smaller, and not at all when that is
//! negative ([`Layout::radius_of`]). `k = 4` on the bands looks up 20
//! keys instead of 68; `k = 3`, 7 and 11 (`r = parts - 1`) are unchanged.
//!
//! - [`Layout::Bands16`], four 16-bit bands: one key per band for
//!   `k <= 3`, 17 for `k <= 7`, 137 for `k <= 11`. Each key holds about
//!   `N / 2^16` rows, so a probe rechecks `4N / 2^16` rows for `k <= 3`:
//!   cheap up to a few million rows, 6 thousand at 100 million.
//! - [`Layout::Halves32`], two 32-bit halves: 33 keys per half for
//!   `k <= 3` (the key and its 32 one-bit neighbours), 529 for `k <= 5`,
//!   5,489 for `k <= 7`. Each key holds about `N / 2^32` rows: 66 keys
//!   recheck about 1.5 random rows at 100 million, 15 at a billion. More
//!   index descents, almost no heap rechecks: the layout for large tables.
//!
//! [`choose`] picks one from a table's size; [`Layout::serves`] says which
//! `k` a layout answers by probing (beyond it, a scan).

use crate::probe::{ball, ball_size, MAX_PROBED_K};

/// A split of the 64 bits into index keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Four 16-bit bands, `simhash_band(fp, 0..3)`.
    Bands16,
    /// Two 32-bit halves, `simhash_band32(fp, 0..1)`.
    Halves32,
}

/// From this many rows on, [`choose`] picks [`Layout::Halves32`]: there a
/// `k <= 3` probe of four 16-bit bands rechecks about 256 heap rows
/// (`4N / 2^16`), and 66 descents of the 32-bit halves cost less
/// (`bench/band_index.sh` measures both).
pub const HALVES_FROM_ROWS: f64 = 4_194_304.0; // 2^22

/// The layout for a table of about `rows` rows.
pub fn choose(rows: f64) -> Layout {
    if rows >= HALVES_FROM_ROWS {
        Layout::Halves32
    } else {
        Layout::Bands16
    }
}

impl Layout {
    /// Every layout, in the order they are listed to users.
    pub const ALL: [Layout; 2] = [Layout::Bands16, Layout::Halves32];

    /// The layout's name in SQL: `4x16` or `2x32`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Bands16 => "4x16",
            Layout::Halves32 => "2x32",
        }
    }

    /// The layout named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }

    /// How many keys (indexes) the layout has.
    pub fn parts(self) -> u32 {
        match self {
            Layout::Bands16 => 4,
            Layout::Halves32 => 2,
        }
    }

    /// How many bits each key has.
    pub fn width(self) -> u32 {
        64 / self.parts()
    }

    /// The largest `k` answered by probing: beyond it the probe would touch
    /// so many keys that a scan is the better plan.
    pub fn max_k(self) -> u32 {
        match self {
            Layout::Bands16 => MAX_PROBED_K,
            // radius 3: 5,489 keys per half; radius 4 would be 41,449.
            Layout::Halves32 => 7,
        }
    }

    /// Whether a probe of this layout answers `k` exactly.
    pub fn serves(self, k: u32) -> bool {
        k <= self.max_k()
    }

    /// Key `n` of `fp`, counted from the most significant bits, or `None`
    /// when the layout has no part `n`.
    pub fn key(self, fp: u64, n: i64) -> Option<u64> {
        if !(0..i64::from(self.parts())).contains(&n) {
            return None;
        }
        let width = self.width();
        let shift = width * (self.parts() - 1 - n as u32);
        Some((fp >> shift) & ((1u64 << width) - 1))
    }

    /// The radius part `n` is probed with for `k`: `floor(k / parts)` for
    /// the first `k mod parts + 1` parts, one less for the others, and
    /// `None` for a part that need not be probed (see the module comment).
    /// For any `k`, served or not.
    pub fn radius_of(self, k: u32, n: u32) -> Option<u32> {
        let (q, r) = (k / self.parts(), k % self.parts());
        let radius = if n <= r { q } else { q.checked_sub(1)? };
        Some(radius.min(self.width()))
    }

    /// How many keys a probe for `k` looks up in part `n`: the sum of
    /// `C(width, i)` for `i` up to its radius (0 for a part not probed).
    pub fn keys_of(self, k: u32, n: u32) -> u64 {
        self.radius_of(k, n)
            .map_or(0, |radius| ball_size(self.width(), radius))
    }

    /// Every key part `n` is probed with for `k` (within its radius of
    /// the query's key), ascending: empty for a part not probed; `None`
    /// when the layout has no part `n` or does not serve `k` (the list
    /// would be too long to be worth probing).
    pub fn neighbors(self, fp: u64, n: i64, k: u32) -> Option<Vec<u64>> {
        let key = self.key(fp, n)?;
        if !self.serves(k) {
            return None;
        }
        let Some(radius) = self.radius_of(k, n as u32) else {
            return Some(Vec::new());
        };
        Some(ball(key, self.width(), radius))
    }

    /// The keys a probe for `k` looks up, part by part (the parts probed
    /// only), or `None` when the layout does not serve `k`.
    pub fn probe(self, fp: u64, k: u32) -> Option<Vec<(u32, Vec<u64>)>> {
        (0..self.parts())
            .filter(|&n| self.radius_of(k, n).is_some())
            .map(|n| Some((n, self.neighbors(fp, i64::from(n), k)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hamming;
    use crate::testutil::splitmix;

    #[test]
    fn names_round_trip() {
        for layout in Layout::ALL {
            assert_eq!(Layout::from_name(layout.name()), Some(layout));
        }
        assert_eq!(Layout::from_name("3x21"), None);
        assert_eq!(Layout::from_name(""), None);
    }

    #[test]
    fn keys_are_the_bits_from_the_left() {
        let fp = 0x0123_4567_89ab_cdef;
        assert_eq!(Layout::Bands16.key(fp, 0), Some(0x0123));
        assert_eq!(Layout::Bands16.key(fp, 3), Some(0xcdef));
        assert_eq!(Layout::Halves32.key(fp, 0), Some(0x0123_4567));
        assert_eq!(Layout::Halves32.key(fp, 1), Some(0x89ab_cdef));
        assert_eq!(Layout::Halves32.key(u64::MAX, 1), Some(0xffff_ffff));
        for n in [-1, 2, 4, i64::MAX, i64::MIN] {
            assert_eq!(Layout::Halves32.key(fp, n), None);
        }
        // The 16-bit bands are the extension's simhash_band.
        for n in 0..4 {
            assert_eq!(
                Layout::Bands16.key(fp, n),
                crate::band(fp, n).map(u64::from)
            );
        }
    }

    #[test]
    fn probe_sizes_match_the_design() {
        let h = Layout::Halves32;
        // Keys per half for k = 0..7: the first half with floor(k / 2),
        // the second with one less when k is even.
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 6, 7].map(|k| [h.keys_of(k, 0), h.keys_of(k, 1)]),
            [
                [1, 0],
                [1, 1],
                [33, 1],
                [33, 33],
                [529, 33],
                [529, 529],
                [5489, 529],
                [5489, 5489]
            ]
        );
        let b = Layout::Bands16;
        assert_eq!(
            [1, 3, 4, 7, 8, 11].map(|k| (0..4).map(|n| b.keys_of(k, n)).sum::<u64>()),
            [2, 4, 20, 68, 188, 548]
        );
        assert!(h.serves(7) && !h.serves(8));
        assert_eq!(h.neighbors(0, 0, 8), None);
        assert_eq!(h.probe(0, 8), None);
        let fp = 0xdead_beef_0bad_f00d;
        for layout in Layout::ALL {
            for k in 0..=layout.max_k() {
                let probe = layout.probe(fp, k).unwrap();
                let probed = (0..layout.parts())
                    .filter(|&n| layout.keys_of(k, n) > 0)
                    .count();
                assert_eq!(probe.len(), probed);
                for (n, keys) in probe {
                    assert_eq!(keys.len() as u64, layout.keys_of(k, n));
                    assert!(keys.windows(2).all(|w| w[0] < w[1]));
                    assert!(keys.iter().all(|&v| v < 1u64 << layout.width()));
                }
            }
        }
    }

    #[test]
    fn neighbors_are_exactly_the_keys_within_the_radius() {
        let fp = 0x8000_0001_7fff_fffe;
        for layout in Layout::ALL {
            for k in 0..=layout.max_k() {
                for n in 0..layout.parts() {
                    let key = layout.key(fp, i64::from(n)).unwrap();
                    let keys = layout.neighbors(fp, i64::from(n), k).unwrap();
                    match layout.radius_of(k, n) {
                        None => assert!(keys.is_empty()),
                        Some(radius) => {
                            assert!(keys.iter().all(|&v| (v ^ key).count_ones() <= radius));
                            assert!(keys.contains(&key));
                        }
                    }
                }
            }
        }
    }

    /// The rule itself, for every way of spreading at most `k` differing
    /// bits over the parts: some probed part differs within its radius.
    #[test]
    fn every_spread_of_k_bits_meets_a_probed_radius() {
        for layout in Layout::ALL {
            let m = layout.parts() as usize;
            for k in 0..=layout.max_k() {
                let mut spread = vec![0u32; m];
                loop {
                    if spread.iter().sum::<u32>() <= k {
                        let met = (0..m).any(|n| {
                            layout
                                .radius_of(k, n as u32)
                                .is_some_and(|r| spread[n] <= r)
                        });
                        assert!(met, "{layout:?} k={k} spread={spread:?}");
                    }
                    // Next spread, each part 0..=k (an odometer).
                    let mut i = 0;
                    while i < m && spread[i] == k {
                        spread[i] = 0;
                        i += 1;
                    }
                    if i == m {
                        break;
                    }
                    spread[i] += 1;
                }
            }
        }
    }

    /// Every fingerprint within `k` of a query shares one of the probed
    /// keys, for every layout and every `k` it serves: random
    /// fingerprints, and skewed ones that differ only inside one part.
    #[test]
    fn probing_finds_every_fingerprint_within_k() {
        let mut seed = 7u64;
        for layout in Layout::ALL {
            for k in 0..=layout.max_k() {
                for round in 0..300 {
                    let q = splitmix(&mut seed);
                    // Flip k bits (some maybe twice): spread over the whole
                    // fingerprint, or packed into as few parts as may be.
                    let mut other = q;
                    for i in 0..k {
                        let bit = if round % 2 == 0 {
                            splitmix(&mut seed) % 64
                        } else {
                            u64::from(i % 64)
                        };
                        other ^= 1 << bit;
                    }
                    assert!(hamming(q, other) <= k);
                    let probe = layout.probe(q, k).unwrap();
                    let hit = probe.iter().any(|(n, keys)| {
                        let key = layout.key(other, i64::from(*n)).unwrap();
                        keys.binary_search(&key).is_ok()
                    });
                    assert!(hit, "{layout:?} k={k} q={q:x} other={other:x}");
                }
            }
        }
    }

    /// Each part's radius is as small as it may be: for every probed part
    /// there is a fingerprint within `k` that only that part finds, at
    /// exactly its radius (every other part differs by one more than its
    /// own radius, or is not probed).
    #[test]
    fn a_smaller_radius_would_miss_some() {
        for layout in Layout::ALL {
            let m = layout.parts();
            for k in 0..=layout.max_k() {
                for t in (0..m).filter(|&t| layout.radius_of(k, t).is_some()) {
                    let spread: Vec<u32> = (0..m)
                        .map(|n| match layout.radius_of(k, n) {
                            Some(r) if n == t => r,
                            Some(r) => r + 1,
                            None => 0,
                        })
                        .collect();
                    // (r + 1)(q + 1) + (m - r - 1) q - 1 = k bits in all.
                    assert_eq!(spread.iter().sum::<u32>(), k, "{layout:?} k={k}");
                    let mut other = 0u64;
                    for (n, &d) in spread.iter().enumerate() {
                        // Part 0 is the most significant.
                        let low = (m - 1 - n as u32) * layout.width();
                        for b in 0..d {
                            other |= 1 << (low + b);
                        }
                    }
                    let probe = layout.probe(0, k).unwrap();
                    let finders: Vec<u32> = probe
                        .iter()
                        .filter(|(n, keys)| {
                            let key = layout.key(other, i64::from(*n)).unwrap();
                            keys.binary_search(&key).is_ok()
                        })
                        .map(|(n, _)| *n)
                        .collect();
                    assert_eq!(finders, vec![t], "{layout:?} k={k} part {t}");
                }
            }
        }
    }

    #[test]
    fn the_choice_grows_with_the_table() {
        assert_eq!(choose(0.0), Layout::Bands16);
        assert_eq!(choose(-1.0), Layout::Bands16);
        assert_eq!(choose(1e6), Layout::Bands16);
        assert_eq!(choose(HALVES_FROM_ROWS), Layout::Halves32);
        assert_eq!(choose(1e9), Layout::Halves32);
    }
}
