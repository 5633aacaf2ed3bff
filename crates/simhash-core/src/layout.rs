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
//!
//! [`choose_for`] is what `'auto'` follows: of the three layouts SQL
//! offers ([`Pick`]: the bands, the covering bands `4x16c`, the halves),
//! those that answer the `k` queried by probing, the one with the least
//! estimated query time times the table's size (heap and band indexes,
//! per row). The covering bands read the fingerprints of a probed key
//! from their index entries instead of the heap: about ten times faster
//! per row ruled out, at about 126 bytes of index a row against 30 for
//! the bands and 45 for the halves. So they are chosen where they make the
//! query faster by more than they make the table larger: for `k` above 3
//! on tables of some hundred thousand rows to some tens of millions, and
//! sooner the wider the rows (the heap outweighs the index).

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

/// What a probe costs beside its key lookups and rows: planning, the
/// executor, the neighbour lists. At 10M rows `4x16c` answers `k <= 3` in
/// 0.17 ms with 4 lookups and about 610 index entries read (the figures
/// here are of `LAYOUTS="4x16c 2x32 4x16" bench/band_index.sh 10000000`,
/// PostgreSQL 15, in docs/performance.md).
pub const QUERY_US: f64 = 100.0;
/// The same for the halves, whose 33 keys a half for `k <= 3` cost more
/// than their lookups: 0.24 to 0.26 ms at 1M and 10M rows with 66 lookups
/// and about one row rechecked.
pub const HALVES_QUERY_US: f64 = 170.0;
/// One key looked up in a B-tree index: the halves answer `k <= 7` with
/// 10,978 lookups in 11 ms at 10M rows.
pub const LOOKUP_US: f64 = 1.0;
/// One heap row fetched and rechecked: the bands answer `k <= 7` at 10M
/// rows with 68 lookups and 10,426 rows rechecked in 13 ms.
pub const RECHECK_US: f64 = 1.2;
/// One covering index entry read and compared: `4x16c` reads those same
/// 10,426 entries in 1.5 ms at 10M rows (104,000 in 12 ms at 100M).
pub const ENTRY_US: f64 = 0.13;

/// A layout `'auto'` may pick: the layouts of SQL, the covering bands
/// apart from the plain ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pick {
    /// `4x16`: four 16-bit bands.
    Bands16,
    /// `2x32`: two 32-bit halves.
    Halves32,
    /// `4x16c`: the 16-bit bands, each index entry with the fingerprint.
    Covering16,
}

impl Pick {
    /// Every pick, leanest first (the order ties go by).
    pub const ALL: [Pick; 3] = [Pick::Bands16, Pick::Halves32, Pick::Covering16];

    /// The layout's name in SQL.
    pub fn name(self) -> &'static str {
        match self {
            Pick::Bands16 => "4x16",
            Pick::Halves32 => "2x32",
            Pick::Covering16 => "4x16c",
        }
    }

    /// The split of the bits it indexes.
    pub fn layout(self) -> Layout {
        match self {
            Pick::Bands16 | Pick::Covering16 => Layout::Bands16,
            Pick::Halves32 => Layout::Halves32,
        }
    }

    /// Index bytes per row, all parts together, as measured at 10M rows
    /// (`bench/band_index.sh`: 273 MB, 449 MB and 1.26 GB; B-tree
    /// deduplication makes the bands' a little larger on small tables).
    pub fn index_bytes_per_row(self) -> f64 {
        match self {
            Pick::Bands16 => 30.0,
            Pick::Halves32 => 45.0,
            Pick::Covering16 => 126.0,
        }
    }

    /// The estimated time of one probe for distance `k` (up to 11) on a
    /// table of `rows` uniformly spread fingerprints, in milliseconds:
    /// the keys looked up, and the rows they hold, rechecked in the heap
    /// or, for the covering bands, read from the index entries.
    pub fn probe_ms(self, rows: f64, k: u32) -> f64 {
        let layout = self.layout();
        let keys: u64 = (0..layout.parts()).map(|n| layout.keys_of(k, n)).sum();
        let keys = keys as f64;
        let per_key = rows.max(0.0) / 2f64.powi(layout.width() as i32);
        let us = match self {
            Pick::Bands16 => QUERY_US + keys * LOOKUP_US + keys * per_key * RECHECK_US,
            Pick::Covering16 => QUERY_US + keys * LOOKUP_US + keys * per_key * ENTRY_US,
            Pick::Halves32 => HALVES_QUERY_US + keys * LOOKUP_US + keys * per_key * RECHECK_US,
        };
        us / 1000.0
    }
}

/// How `'auto'` weighs one pick for a table (see [`estimates`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub pick: Pick,
    /// Whether it answers `k` by probing (else a query is a scan).
    pub serves: bool,
    /// [`Pick::probe_ms`], for a pick that serves `k`.
    pub probe_ms: f64,
    /// [`Pick::index_bytes_per_row`].
    pub index_bytes: f64,
    /// `probe_ms` times the bytes a row takes with the pick's indexes
    /// (heap and index); the least is chosen. Infinite for a pick that
    /// does not serve `k`.
    pub cost: f64,
}

/// The picks' estimates for a table of `rows` rows of `row_bytes` heap
/// bytes each, queried with distance `k`. A `k` above 11 (which no layout
/// serves: a query is a scan) is weighed as 11, a negative one as 0;
/// rows or row bytes that are negative or NaN as 0, rows above 2^63 as
/// 2^63.
pub fn estimates(rows: f64, row_bytes: f64, k: i64) -> [Estimate; 3] {
    // At most 2^63 rows, so that every estimate stays finite.
    let rows = if rows.is_nan() {
        0.0
    } else {
        rows.clamp(0.0, 2f64.powi(63))
    };
    let row_bytes = if row_bytes.is_nan() {
        0.0
    } else {
        row_bytes.max(0.0)
    };
    let k = k.clamp(0, i64::from(MAX_PROBED_K)) as u32;
    Pick::ALL.map(|pick| {
        let serves = pick.layout().serves(k);
        let probe_ms = if serves {
            pick.probe_ms(rows, k)
        } else {
            f64::INFINITY
        };
        let index_bytes = pick.index_bytes_per_row();
        Estimate {
            pick,
            serves,
            probe_ms,
            index_bytes,
            cost: probe_ms * (row_bytes + index_bytes),
        }
    })
}

/// The layout `'auto'` gives a table of `rows` rows of `row_bytes` heap
/// bytes each queried with distance `k`: of the [`estimates`], the least
/// cost (the leanest on a tie).
pub fn choose_for(rows: f64, row_bytes: f64, k: i64) -> Pick {
    let all = estimates(rows, row_bytes, k);
    let mut best = all[0];
    for e in &all[1..] {
        if e.cost < best.cost {
            best = *e;
        }
    }
    best.pick
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

    /// The model against the figures it was fitted to (10M rows,
    /// docs/performance.md), within a third: k = 3, 7 and 11.
    #[test]
    fn the_estimates_meet_the_measurements() {
        let measured = [
            (Pick::Bands16, 3, 1.2),
            (Pick::Bands16, 7, 13.0),
            (Pick::Bands16, 11, 87.0),
            (Pick::Halves32, 3, 0.26),
            (Pick::Halves32, 7, 11.0),
            (Pick::Covering16, 3, 0.17),
            (Pick::Covering16, 7, 1.5),
            (Pick::Covering16, 11, 11.0),
        ];
        for (pick, k, ms) in measured {
            let est = pick.probe_ms(1e7, k);
            assert!(
                est > ms / 1.5 && est < ms * 1.5,
                "{pick:?} k={k}: {est} ms against {ms}"
            );
        }
    }

    /// Skinny rows (an id and the fingerprint: 44 heap bytes).
    const SKINNY: f64 = 44.0;

    #[test]
    fn auto_picks_by_k_size_and_width() {
        // k = 7 at 10M rows: the covering bands (1.5 ms against the
        // halves' 11 for about twice the table).
        assert_eq!(choose_for(1e7, SKINNY, 7), Pick::Covering16);
        // k = 3 at 10M: the halves (the covering bands are hardly faster).
        assert_eq!(choose_for(1e7, SKINNY, 3), Pick::Halves32);
        // ... unless the rows are wide: then the index is cheap.
        assert_eq!(choose_for(1e7, 2000.0, 3), Pick::Covering16);
        // k = 11: only the bands serve; covering from a few hundred
        // thousand rows.
        assert_eq!(choose_for(1e4, SKINNY, 11), Pick::Bands16);
        assert_eq!(choose_for(1e6, SKINNY, 11), Pick::Covering16);
        assert_eq!(choose_for(1e9, SKINNY, 11), Pick::Covering16);
        // Small tables: the bands, whatever k.
        for k in 0..=11 {
            assert_eq!(choose_for(1000.0, SKINNY, k), Pick::Bands16, "k={k}");
            assert_eq!(choose_for(0.0, 0.0, k), Pick::Bands16, "k={k}");
        }
        // Large tables queried within 7: the halves, whose cost hardly
        // grows, where the covering bands read ever more entries.
        assert_eq!(choose_for(1e9, SKINNY, 7), Pick::Halves32);
        assert_eq!(choose_for(1e8, SKINNY, 3), Pick::Halves32);
        // Beyond 11 (a scan) as 11, below 0 as 0; nonsense inputs as 0.
        assert_eq!(choose_for(1e7, SKINNY, 40), choose_for(1e7, SKINNY, 11));
        assert_eq!(choose_for(1e7, SKINNY, -5), choose_for(1e7, SKINNY, 0));
        assert_eq!(choose_for(f64::NAN, f64::NAN, 3), Pick::Bands16);
        assert_eq!(choose_for(-1.0, -1.0, 7), Pick::Bands16);
        assert_eq!(choose_for(f64::INFINITY, SKINNY, 7), Pick::Halves32);
    }

    #[test]
    fn the_chosen_pick_serves_k_and_costs_least() {
        for rows in [0.0, 1e3, 1e5, 1e6, 3e6, 1e7, 3e7, 1e8, 1e9] {
            for row_bytes in [0.0, SKINNY, 300.0, 5000.0] {
                for k in 0..=11 {
                    let chosen = choose_for(rows, row_bytes, k);
                    let all = estimates(rows, row_bytes, k);
                    let e = all.iter().find(|e| e.pick == chosen).unwrap();
                    assert!(e.serves && e.cost.is_finite());
                    assert!(all.iter().all(|o| o.cost >= e.cost));
                }
            }
        }
        // A wider row never takes the covering bands away.
        for rows in [1e5, 1e6, 1e7, 1e8] {
            for k in 0..=11 {
                let mut was_covering = false;
                for row_bytes in [0.0, 44.0, 100.0, 300.0, 1000.0, 1e4, 1e5] {
                    let covering = choose_for(rows, row_bytes, k) == Pick::Covering16;
                    assert!(
                        covering || !was_covering,
                        "rows={rows} k={k} bytes={row_bytes}"
                    );
                    was_covering = covering;
                }
            }
        }
        for pick in Pick::ALL {
            assert_eq!(
                Layout::from_name(pick.name()).is_some(),
                pick != Pick::Covering16
            );
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
