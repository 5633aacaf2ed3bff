//! Which fingerprints of a set held in memory lie within `k` of a given
//! one, exactly: the set-based load's check of a batch against itself and
//! against a target read once from start to end.
//!
//! The batch is indexed by its four 16-bit bands ([`crate::probe`]): for
//! each band, the batch sorted by that band's value with the start of
//! each value's run (a table of 65,537 offsets, so a lookup is two reads).
//! A query probes each band with every value within
//! [`probe_radius`]`(k)` bits of its own, checks each fingerprint found
//! exactly, and reports a fingerprint only at the first band where it can
//! be found, so each match comes once.
//!
//! Cost per query: `4 * neighbor_count(radius)` lookups and, on random
//! fingerprints, `batch / 65,536` compares per lookup: at `k = 3` against a
//! batch of a million, 4 lookups and about 61 compares.
//! `bench/insert_new.sh` measures it against the band indexes' probe.

use crate::distance::{BANDS, BAND_BITS};
use crate::probe::{ball, probe_radius, MAX_PROBED_K};

const VALUES: usize = 1 << BAND_BITS;

/// A batch of fingerprints indexed by band. Indexes are positions in the
/// slice it was built from.
pub struct BandSet {
    k: u32,
    radius: u32,
    /// The XOR masks of the band values within `radius` bits.
    masks: Vec<u16>,
    /// Per band: the fingerprints sorted by the band's value (the loop
    /// that compares reads only these, 8 bytes each) ...
    runs: Vec<Vec<u64>>,
    /// ... and their positions in the batch, in the same order.
    positions: Vec<Vec<u32>>,
    /// Whether the processor has `popcnt` (the compare loop is then
    /// compiled with it).
    popcnt: bool,
    /// Per band: where each value's run starts in `runs`, and the end.
    starts: Vec<Vec<u32>>,
}

/// A batch larger than this (positions are 32-bit) is refused.
pub const MAX_BATCH: usize = u32::MAX as usize;

/// Why a batch cannot be searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NearError {
    /// `k` above [`MAX_PROBED_K`], or more than [`MAX_BATCH`] rows.
    Refused,
    /// The allocator refused the memory (an error, not an abort).
    OutOfMemory,
    /// The caller's check said stop.
    Interrupted,
}

/// A zeroed vector of `n` items, or [`NearError::OutOfMemory`].
fn filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>, NearError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| NearError::OutOfMemory)?;
    v.resize(n, value);
    Ok(v)
}

#[inline]
fn band_of(fp: u64, b: u32) -> u16 {
    (fp >> (BAND_BITS * (BANDS - 1 - b))) as u16
}

impl BandSet {
    /// Indexes `fps` for queries within `k` (at most [`MAX_PROBED_K`]):
    /// 16 bytes a fingerprint per band. [`NearError::Refused`] when `k` is
    /// larger or the batch has more than [`MAX_BATCH`] fingerprints.
    pub fn new(fps: &[u64], k: u32) -> Result<BandSet, NearError> {
        if k > MAX_PROBED_K || fps.len() > MAX_BATCH {
            return Err(NearError::Refused);
        }
        let radius = probe_radius(k);
        let masks = ball(0, BAND_BITS, radius)
            .into_iter()
            .map(|m| m as u16)
            .collect();
        let mut runs = Vec::with_capacity(BANDS as usize);
        let mut positions = Vec::with_capacity(BANDS as usize);
        let mut starts = Vec::with_capacity(BANDS as usize);
        for b in 0..BANDS {
            // A counting sort by the band's value: stable, so each run
            // keeps the batch's order.
            let mut start = filled(VALUES + 1, 0u32)?;
            for &fp in fps {
                start[band_of(fp, b) as usize + 1] += 1;
            }
            for v in 0..VALUES {
                start[v + 1] += start[v];
            }
            let mut next = filled(VALUES + 1, 0u32)?;
            next.copy_from_slice(&start);
            let mut run = filled(fps.len(), 0u64)?;
            let mut pos = filled(fps.len(), 0u32)?;
            for (i, &fp) in fps.iter().enumerate() {
                let slot = &mut next[band_of(fp, b) as usize];
                run[*slot as usize] = fp;
                pos[*slot as usize] = i as u32;
                *slot += 1;
            }
            runs.push(run);
            positions.push(pos);
            starts.push(start);
        }
        #[cfg(target_arch = "x86_64")]
        let popcnt = std::arch::is_x86_feature_detected!("popcnt");
        #[cfg(not(target_arch = "x86_64"))]
        let popcnt = false;
        Ok(BandSet {
            k,
            radius,
            masks,
            runs,
            positions,
            popcnt,
            starts,
        })
    }

    /// Calls `found(position, distance)` once for each fingerprint of the
    /// batch within `k` of `fp`, in no particular order.
    pub fn within(&self, fp: u64, mut found: impl FnMut(u32, u32)) {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: the processor was seen to have `popcnt` in `new`.
            #[allow(unsafe_code)]
            unsafe {
                self.within_popcnt(fp, &mut found)
            };
            return;
        }
        self.within_any(fp, &mut found);
    }

    /// [`BandSet::within`] compiled with `popcnt`: one instruction per
    /// compare where the baseline needs a dozen (the compares are most of
    /// the time of a large batch).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn within_popcnt(&self, fp: u64, found: &mut impl FnMut(u32, u32)) {
        self.within_any(fp, found);
    }

    #[inline(always)]
    fn within_any(&self, fp: u64, found: &mut impl FnMut(u32, u32)) {
        for b in 0..BANDS as usize {
            let own = band_of(fp, b as u32);
            let (runs, positions, starts) = (&self.runs[b], &self.positions[b], &self.starts[b]);
            for &mask in &self.masks {
                let v = (own ^ mask) as usize;
                let (lo, hi) = (starts[v] as usize, starts[v + 1] as usize);
                for (i, &other) in runs[lo..hi].iter().enumerate() {
                    let d = (fp ^ other).count_ones();
                    if d <= self.k && !self.seen_before(fp, other, b as u32) {
                        found(positions[lo + i], d);
                    }
                }
            }
        }
    }

    /// Whether a band before `b` already leads from `fp` to `other`.
    #[inline]
    fn seen_before(&self, fp: u64, other: u64, b: u32) -> bool {
        (0..b).any(|e| (band_of(fp, e) ^ band_of(other, e)).count_ones() <= self.radius)
    }
}

/// Every pair of positions `(later, earlier)` of `fps` within `k` of each
/// other, with their distance, sorted. `check` is called every 65,536
/// positions; when it returns `false` the search stops with
/// [`NearError::Interrupted`]. The pairs take 12 bytes each.
pub fn pairs_within(
    fps: &[u64],
    k: u32,
    check: &mut impl FnMut() -> bool,
) -> Result<Vec<(u32, u32, u32)>, NearError> {
    let set = BandSet::new(fps, k)?;
    let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
    let mut full = false;
    for (i, &fp) in fps.iter().enumerate() {
        if i % 65_536 == 65_535 && !check() {
            return Err(NearError::Interrupted);
        }
        set.within(fp, |j, d| {
            if (j as usize) < i && !full {
                if pairs.len() == pairs.capacity()
                    && pairs.try_reserve(pairs.len().max(1024)).is_err()
                {
                    full = true;
                    return;
                }
                pairs.push((i as u32, j, d));
            }
        });
        if full {
            return Err(NearError::OutOfMemory);
        }
    }
    pairs.sort_unstable();
    Ok(pairs)
}

/// The estimated costs behind [`scan_is_cheaper`], in nanoseconds, from
/// `bench/insert_new.sh` at 20,000 rows into 200,000 with the check forced
/// each way (`simhash.load_check`, `PROFILE=1`): the scan read the target
/// at about 0.65 us a row; the probe took about 50 us a batch row.
mod cost {
    /// Reading one target row through the scan (SPI, a heap tuple).
    pub const SCAN_ROW: f64 = 500.0;
    /// Reading one row of a Citus shard through the node of the load.
    pub const REMOTE_ROW: f64 = 1_500.0;
    /// One lookup of a band value in a [`super::BandSet`].
    pub const LOOKUP: f64 = 5.0;
    /// One compare of a fingerprint found there.
    pub const COMPARE: f64 = 2.0;
    /// One probe of a band index for one value (a B-tree descent).
    pub const PROBE: f64 = 4_000.0;
    /// One heap row a probe returns, fetched and checked.
    pub const HEAP_ROW: f64 = 300.0;
    /// How much fuller than uniform the band value of a text's fingerprint
    /// is: about 30 heap rows a probe at 200,000 rows, where uniform bands
    /// give 3.
    pub const SKEW: f64 = 10.0;
}

/// Whether reading a target of `target_rows` once against a batch of
/// `batch_rows` held in memory is expected to cost less than probing the
/// target's band indexes once for each batch row, for distance `k`.
/// Both find the same matches. A target in `shards` shards (Citus; 1
/// for a table on one node) is probed in each shard, and read from all
/// of them through one node.
pub fn scan_is_cheaper(target_rows: f64, batch_rows: f64, k: u32, shards: u32) -> bool {
    if k > MAX_PROBED_K || !(target_rows >= 0.0 && batch_rows >= 0.0) {
        return false;
    }
    let (shards, read) = if shards > 1 {
        (f64::from(shards), cost::REMOTE_ROW)
    } else {
        (1.0, cost::SCAN_ROW)
    };
    let lookups = f64::from(BANDS) * ball(0, BAND_BITS, probe_radius(k)).len() as f64;
    let per_value = VALUES as f64;
    // Rows per band value, fuller than uniform by the skew.
    let (batch_run, target_run) = (
        batch_rows / per_value * cost::SKEW,
        target_rows / per_value * cost::SKEW,
    );
    let scan = target_rows * (read + lookups * (cost::LOOKUP + batch_run * cost::COMPARE));
    let probe = batch_rows * lookups * (shards * cost::PROBE + target_run * cost::HEAP_ROW);
    scan < probe
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;

    fn rng(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut x = *seed;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^ (x >> 29)
    }

    /// A batch with clumps: random values, some with a few bits flipped,
    /// some repeated, many sharing a band.
    fn batch(seed: &mut u64, n: usize) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::with_capacity(n);
        for i in 0..n {
            let r = rng(seed);
            let fp = match (i % 5, out.last()) {
                (1, Some(&prev)) => prev ^ (1 << (r % 64)) ^ (1 << ((r >> 8) % 64)),
                (2, Some(&prev)) => prev,
                (3, _) => (r & 0x0000_ffff_ffff_ffff) | 0xbeef_0000_0000_0000,
                (4, Some(&prev)) => prev ^ (r & 0x0101_0101_0101_0101 & rng(seed)),
                _ => r,
            };
            out.push(fp);
        }
        out
    }

    #[test]
    fn within_finds_each_match_once_against_a_scan() {
        let mut seed = 7;
        for k in 0..=MAX_PROBED_K {
            let fps = batch(&mut seed, 400);
            let set = BandSet::new(&fps, k).unwrap();
            for q in fps.iter().copied().chain((0..50).map(|_| rng(&mut seed))) {
                let mut got = Vec::new();
                set.within(q, |j, d| got.push((j, d)));
                got.sort_unstable();
                let want: Vec<(u32, u32)> = fps
                    .iter()
                    .enumerate()
                    .filter(|&(_, &f)| hamming(q, f) <= k)
                    .map(|(j, &f)| (j as u32, hamming(q, f)))
                    .collect();
                assert_eq!(got, want, "k = {k}, query {q:016x}");
            }
        }
    }

    #[test]
    fn pairs_within_against_every_pair() {
        let mut seed = 11;
        for k in [0, 1, 3, 4, 7, 8, 11] {
            let fps = batch(&mut seed, 300);
            let got = pairs_within(&fps, k, &mut || true).unwrap();
            let mut want = Vec::new();
            for i in 0..fps.len() {
                for j in 0..i {
                    let d = hamming(fps[i], fps[j]);
                    if d <= k {
                        want.push((i as u32, j as u32, d));
                    }
                }
            }
            assert!(!want.is_empty(), "k = {k}: the batch has pairs");
            assert_eq!(got, want, "k = {k}");
        }
    }

    #[test]
    fn scans_when_the_target_is_small_beside_the_batch() {
        assert!(scan_is_cheaper(1_000.0, 1_000_000.0, 3, 1));
        assert!(!scan_is_cheaper(100_000_000.0, 10.0, 3, 1));
        // The benchmark's sizes: 20,000 rows into 200,000 and 1M into 10M
        // scan; 100 rows into 10M probe.
        assert!(scan_is_cheaper(200_000.0, 20_000.0, 3, 1));
        assert!(scan_is_cheaper(10_000_000.0, 1_000_000.0, 3, 1));
        assert!(!scan_is_cheaper(10_000_000.0, 100.0, 3, 1));
        assert!(!scan_is_cheaper(1_000.0, 1_000_000.0, 12, 1));
        assert!(!scan_is_cheaper(f64::NAN, 10.0, 3, 1));
        // On 32 shards: a few rows probe, a large batch reads.
        assert!(!scan_is_cheaper(10_000_000.0, 1_000.0, 3, 32));
        assert!(scan_is_cheaper(10_000_000.0, 100_000.0, 3, 32));
        // Monotone: a larger target never tips the choice towards the scan.
        let mut last = true;
        for t in (0..40).map(|i| 1.5f64.powi(i)) {
            let now = scan_is_cheaper(t, 50_000.0, 7, 1);
            assert!(last || !now, "target {t}");
            last = now;
        }
    }

    #[test]
    fn refuses_and_stops() {
        assert!(matches!(
            BandSet::new(&[1, 2], MAX_PROBED_K + 1),
            Err(NearError::Refused)
        ));
        assert_eq!(pairs_within(&[], 3, &mut || false), Ok(vec![]));
        let fps: Vec<u64> = (0..70_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut calls = 0;
        assert_eq!(
            pairs_within(&fps, 0, &mut || {
                calls += 1;
                false
            }),
            Err(NearError::Interrupted)
        );
        assert_eq!(calls, 1);
    }
}
