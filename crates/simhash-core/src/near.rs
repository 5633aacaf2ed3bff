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
    /// Whether [`BandSet::within_each`] asks memory ahead: the batch has
    /// at least [`PREFETCH_FROM`] fingerprints.
    ahead: bool,
}

/// Runs asked of memory ahead by [`BandSet::within_each`], and how many
/// cache lines of each (fingerprints per line: [`LINE`]).
const PREFETCH_RUNS: usize = 128;
const PREFETCH_LINES: usize = 8;
const LINE: usize = 64 / std::mem::size_of::<u64>();
/// Batches smaller than this are not asked ahead: their runs (32 bytes a
/// fingerprint) stay in the caches, and `bench/near.sh` found asking
/// ahead slower there (0.60x at 20,000, 0.86x at 100,000; 1.21x at
/// 300,000 and 1.63x at 1,000,000).
const PREFETCH_FROM: usize = 200_000;

/// Fingerprints compared between two calls of a search's check: about
/// 2 ms of work on one core.
pub const CHECK_WORK: usize = 1 << 20;

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
    /// More pairs within `k` than the caller's bound.
    TooManyPairs,
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
            ahead: fps.len() >= PREFETCH_FROM,
        })
    }

    /// Calls `found(position, distance)` once for each fingerprint of the
    /// batch within `k` of `fp`, in no particular order.
    /// Returns how many fingerprints it compared (the work done).
    pub fn within(&self, fp: u64, mut found: impl FnMut(u32, u32)) -> usize {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: the processor was seen to have `popcnt` in `new`.
            #[allow(unsafe_code)]
            return unsafe { self.within_popcnt(fp, &mut found) };
        }
        self.within_any(fp, &mut found)
    }

    /// [`BandSet::within`] compiled with `popcnt`: one instruction per
    /// compare where the baseline needs a dozen (the compares are most of
    /// the time of a large batch).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn within_popcnt(&self, fp: u64, found: &mut impl FnMut(u32, u32)) -> usize {
        self.within_any(fp, found)
    }

    #[inline(always)]
    fn within_any(&self, fp: u64, found: &mut impl FnMut(u32, u32)) -> usize {
        let mut work = 0;
        for b in 0..BANDS as usize {
            let own = band_of(fp, b as u32);
            let (runs, positions, starts) = (&self.runs[b], &self.positions[b], &self.starts[b]);
            for &mask in &self.masks {
                let v = (own ^ mask) as usize;
                let (lo, hi) = (starts[v] as usize, starts[v + 1] as usize);
                work += hi - lo + 1;
                for (i, &other) in runs[lo..hi].iter().enumerate() {
                    let d = (fp ^ other).count_ones();
                    if d <= self.k && !self.seen_before(fp, other, b as u32) {
                        found(positions[lo + i], d);
                    }
                }
            }
        }
        work
    }

    /// [`BandSet::within`] for each of `queries`: calls
    /// `found(query, position, distance)` for each match, query by query.
    /// Faster than one query at a time: the runs of a few queries are
    /// asked of memory before any of them is read (the batch's runs are
    /// tens of megabytes at a million rows, and each query's are a few
    /// scattered cache lines: `bench/near.sh` measures it).
    ///
    /// `check` is called after every [`CHECK_WORK`] fingerprints compared
    /// (whatever the queries, so a batch whose fingerprints share their
    /// bands is checked as often as any other); when it returns `false`
    /// the search stops with [`NearError::Interrupted`].
    pub fn within_each(
        &self,
        queries: &[u64],
        mut found: impl FnMut(usize, u32, u32),
        check: &mut impl FnMut() -> bool,
    ) -> Result<(), NearError> {
        let mut work = 0;
        let mut tick = |done: usize| {
            work += done;
            if work >= CHECK_WORK {
                work = 0;
                if !check() {
                    return Err(NearError::Interrupted);
                }
            }
            Ok(())
        };
        if !self.ahead {
            // A batch whose runs the caches hold: asking ahead only costs.
            for (q, &fp) in queries.iter().enumerate() {
                tick(self.within(fp, |pos, d| found(q, pos, d)))?;
            }
            return Ok(());
        }
        // Queries whose runs are asked for at once: about 128 runs.
        let group = (PREFETCH_RUNS / (BANDS as usize * self.masks.len())).max(1);
        for (g, chunk) in queries.chunks(group).enumerate() {
            for &fp in chunk {
                self.prefetch(fp);
            }
            for (i, &fp) in chunk.iter().enumerate() {
                let q = g * group + i;
                tick(self.within(fp, |pos, d| found(q, pos, d)))?;
            }
        }
        Ok(())
    }

    /// Asks memory for the first [`PREFETCH_LINES`] cache lines of each
    /// run `fp` will read, without waiting for them.
    #[inline]
    fn prefetch(&self, fp: u64) {
        #[cfg(target_arch = "x86_64")]
        for b in 0..BANDS as usize {
            let own = band_of(fp, b as u32);
            let (runs, starts) = (&self.runs[b], &self.starts[b]);
            for &mask in &self.masks {
                let v = (own ^ mask) as usize;
                let (lo, hi) = (starts[v] as usize, starts[v + 1] as usize);
                let end = hi.min(lo + PREFETCH_LINES * LINE);
                for at in (lo..end).step_by(LINE) {
                    // SAFETY: `at` is inside `runs` (below `hi`, at most
                    // its length), and a prefetch reads nothing the
                    // program sees: it only warms the cache.
                    #[allow(unsafe_code)]
                    unsafe {
                        std::arch::x86_64::_mm_prefetch(
                            runs.as_ptr().add(at).cast::<i8>(),
                            std::arch::x86_64::_MM_HINT_T0,
                        );
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fp;
    }

    /// Whether a band before `b` already leads from `fp` to `other`.
    #[inline]
    fn seen_before(&self, fp: u64, other: u64, b: u32) -> bool {
        (0..b).any(|e| (band_of(fp, e) ^ band_of(other, e)).count_ones() <= self.radius)
    }
}

/// Every pair of positions `(later, earlier)` of `fps` within `k` of each
/// other, with their distance, sorted. `check` is called as
/// [`BandSet::within_each`] calls it; when it returns `false` the search
/// stops with [`NearError::Interrupted`]. The pairs take 12 bytes each;
/// past `max_pairs` of them the search stops with
/// [`NearError::TooManyPairs`].
pub fn pairs_within(
    fps: &[u64],
    k: u32,
    max_pairs: usize,
    check: &mut impl FnMut() -> bool,
) -> Result<Vec<(u32, u32, u32)>, NearError> {
    let set = BandSet::new(fps, k)?;
    let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
    let mut full = None;
    // The queries in chunks, so that a search over its bound stops soon.
    for (c, chunk) in fps.chunks(4096).enumerate() {
        let base = c * 4096;
        set.within_each(
            chunk,
            |q, j, d| {
                let i = base + q;
                if (j as usize) < i && full.is_none() {
                    if pairs.len() >= max_pairs {
                        full = Some(NearError::TooManyPairs);
                        return;
                    }
                    if pairs.len() == pairs.capacity()
                        && pairs.try_reserve(pairs.len().max(1024)).is_err()
                    {
                        full = Some(NearError::OutOfMemory);
                        return;
                    }
                    pairs.push((i as u32, j, d));
                }
            },
            check,
        )?;
        if let Some(e) = full {
            return Err(e);
        }
    }
    pairs.sort_unstable();
    Ok(pairs)
}

/// The rule of one-at-a-time inserts over `fps` in their order, without
/// holding the pairs: a place is skipped when an earlier place within `k`
/// of it was kept. Returns each skipped place with the first (in order)
/// kept place it matched, by skipped place: what
/// [`crate::guard::skipped_in_order`] returns for the pairs of
/// [`pairs_within`], in memory linear in `fps` whatever the pairs.
/// `check` is called as [`BandSet::within_each`] calls it.
pub fn skipped_in_order_within(
    fps: &[u64],
    k: u32,
    check: &mut impl FnMut() -> bool,
) -> Result<Vec<(u32, u32)>, NearError> {
    let set = BandSet::new(fps, k)?;
    let mut kept = filled(fps.len(), false)?;
    let mut out = Vec::new();
    for (c, chunk) in fps.chunks(1024).enumerate() {
        let base = c * 1024;
        // Per query of the chunk, the first earlier kept place it matched:
        // the chunk's own places are settled in order below, so matches
        // inside the chunk are kept aside until their turn.
        let mut inside: Vec<(u32, u32)> = Vec::new();
        let mut first: Vec<Option<u32>> = filled(chunk.len(), None)?;
        set.within_each(
            chunk,
            |q, j, _| {
                let i = base + q;
                let j_ = j as usize;
                if j_ < base {
                    if kept[j_] && first[q].is_none_or(|f| j < f) {
                        first[q] = Some(j);
                    }
                } else if j_ < i {
                    inside.push((q as u32, j));
                }
            },
            check,
        )?;
        inside.sort_unstable();
        let mut at = 0;
        for (q, &before) in first.iter().enumerate() {
            let i = base + q;
            let mut best = before;
            while at < inside.len() && inside[at].0 as usize == q {
                let j = inside[at].1;
                if kept[j as usize] && best.is_none_or(|f| j < f) {
                    best = Some(j);
                }
                at += 1;
            }
            match best {
                Some(j) => out.push((i as u32, j)),
                None => kept[i] = true,
            }
        }
    }
    Ok(out)
}

/// A batch of `simhash_insert_new` settled in memory, for a load that
/// reads its target once: which rows one-at-a-time guarded inserts in the
/// batch's order would skip, and for which row. Exact copies (the same
/// fingerprint) are settled by their first row, as the load's SQL steps
/// settle them: only first copies are looked up in the target and paired.
pub struct Batch {
    /// The rows in the batch's order: their place `n`, key and fingerprint.
    ns: Vec<i64>,
    keys: Vec<Option<i64>>,
    fps: Vec<u64>,
    /// Per row (in order), the place of the first row with its
    /// fingerprint (its own place for a first copy).
    first: Vec<u32>,
    /// The places of the first copies, in order, and their index.
    firsts: Vec<u32>,
    set: BandSet,
    k: u32,
}

/// A skipped row: its place `n`, the key it matched (a batch row's key
/// may be NULL) and the distance.
pub type Skip = (i64, Option<i64>, u32);

/// What a batch row matched in the target: the key (NULL for a target row
/// without one: it still counts, as the guard counts it) and the distance.
pub type TargetMatch = Option<(Option<i64>, u32)>;

/// Keeps in `slot` the match to report of a batch row that matched a
/// target row with `key` at distance `d`: the smallest key, a NULL key
/// only when no other was found.
pub fn keep_smallest_key(slot: &mut TargetMatch, key: Option<i64>, d: u32) {
    let rank = |key: Option<i64>| (key.is_none(), key);
    if slot.is_none_or(|(k0, _)| rank(key) < rank(k0)) {
        *slot = Some((key, d));
    }
}

impl Batch {
    /// The batch of rows `(ns[i], keys[i], fps[i])`, any order (`ns`
    /// distinct), its first copies indexed for `k`.
    pub fn new(ns: &[i64], keys: &[Option<i64>], fps: &[u64], k: u32) -> Result<Batch, NearError> {
        if ns.len() != keys.len() || ns.len() != fps.len() || ns.len() > MAX_BATCH {
            return Err(NearError::Refused);
        }
        let mut order = filled(ns.len(), 0u32)?;
        for (i, o) in order.iter_mut().enumerate() {
            *o = i as u32;
        }
        order.sort_unstable_by_key(|&i| ns[i as usize]);
        let (mut sn, mut sk, mut sf) = (
            filled(ns.len(), 0i64)?,
            filled(ns.len(), None)?,
            filled(ns.len(), 0u64)?,
        );
        for (to, &from) in order.iter().enumerate() {
            sn[to] = ns[from as usize];
            sk[to] = keys[from as usize];
            sf[to] = fps[from as usize];
        }
        drop(order);
        // The first place of each fingerprint: places sorted by
        // (fingerprint, place).
        let mut by_fp = filled(ns.len(), 0u32)?;
        for (i, o) in by_fp.iter_mut().enumerate() {
            *o = i as u32;
        }
        by_fp.sort_unstable_by_key(|&i| (sf[i as usize], i));
        let mut first = filled(ns.len(), 0u32)?;
        let mut lead = 0u32;
        for (j, &i) in by_fp.iter().enumerate() {
            if j == 0 || sf[by_fp[j - 1] as usize] != sf[i as usize] {
                lead = i;
            }
            first[i as usize] = lead;
        }
        drop(by_fp);
        let mut firsts = Vec::new();
        firsts
            .try_reserve_exact(ns.len())
            .map_err(|_| NearError::OutOfMemory)?;
        firsts.extend((0..ns.len() as u32).filter(|&i| first[i as usize] == i));
        let first_fps: Vec<u64> = firsts.iter().map(|&i| sf[i as usize]).collect();
        let set = BandSet::new(&first_fps, k)?;
        Ok(Batch {
            ns: sn,
            keys: sk,
            fps: sf,
            first,
            firsts,
            set,
            k,
        })
    }

    /// The index of the first copies, to look target rows up in: its
    /// positions are indexes into the first copies (see [`Batch::skipped`]).
    pub fn firsts(&self) -> &BandSet {
        &self.set
    }

    /// How many first copies the batch has.
    pub fn first_count(&self) -> usize {
        self.firsts.len()
    }

    /// Every row skipped, as `(n, matched key, distance)` in order, given
    /// what each first copy matched in the target (`target[i]`: the key,
    /// NULL for a target row without one, and distance for the `i`th first
    /// copy, or `None`). A first copy that
    /// matched the target is skipped for it; the others are paired among
    /// themselves and skipped as one at a time inserts would skip them
    /// ([`crate::guard::skipped_in_order`]); a later copy is skipped for
    /// its first copy when that was kept, else for what its first copy
    /// matched.
    pub fn skipped(
        &self,
        target: &[TargetMatch],
        check: &mut impl FnMut() -> bool,
    ) -> Result<Vec<Skip>, NearError> {
        if target.len() != self.firsts.len() {
            return Err(NearError::Refused);
        }
        // Per place: why it is skipped (key, distance), if it is.
        let mut why: Vec<Option<(Option<i64>, u32)>> = filled(self.ns.len(), None)?;
        let mut open = Vec::new(); // places of first copies the target left
        for (f, &place) in self.firsts.iter().enumerate() {
            match target[f] {
                Some((key, d)) => why[place as usize] = Some((key, d)),
                None => open.push(place),
            }
        }
        let open_fps: Vec<u64> = open.iter().map(|&p| self.fps[p as usize]).collect();
        for (a, b) in skipped_in_order_within(&open_fps, self.k, check)? {
            let (l, e) = (open[a as usize] as usize, open[b as usize] as usize);
            why[l] = Some((self.keys[e], (self.fps[l] ^ self.fps[e]).count_ones()));
        }
        // Later copies, in order: their first copy is settled before them.
        for place in 0..self.ns.len() {
            let lead = self.first[place] as usize;
            if lead != place {
                why[place] = Some(why[lead].unwrap_or((self.keys[lead], 0)));
            }
        }
        Ok(why
            .into_iter()
            .enumerate()
            .filter_map(|(p, w)| w.map(|(key, d)| (self.ns[p], key, d)))
            .collect())
    }
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
    fn within_each_answers_as_within_does_query_by_query() {
        let mut seed = 5;
        for k in 0..=MAX_PROBED_K {
            let fps = batch(&mut seed, 500);
            let mut set = BandSet::new(&fps, k).unwrap();
            // More queries than one group at every k, some repeated.
            let queries: Vec<u64> = fps
                .iter()
                .step_by(3)
                .copied()
                .chain((0..40).map(|_| rng(&mut seed)))
                .collect();
            let mut want = Vec::new();
            for (q, &fp) in queries.iter().enumerate() {
                set.within(fp, |j, d| want.push((q, j, d)));
            }
            assert!(!want.is_empty(), "k = {k}");
            // Both ways: asking ahead (as a large batch does) or not.
            for ahead in [false, true] {
                set.ahead = ahead;
                let mut got = Vec::new();
                set.within_each(&queries, |q, j, d| got.push((q, j, d)), &mut || true)
                    .unwrap();
                assert_eq!(got, want, "k = {k}, ahead {ahead}");
            }
        }
    }

    /// One-at-a-time guarded inserts, by hand: each row in order is
    /// skipped for the smallest target key within `k`, else for the first
    /// kept earlier row within `k`.
    fn one_at_a_time(
        rows: &[(i64, Option<i64>, u64)],
        target: &[(Option<i64>, u64)],
        k: u32,
    ) -> Vec<Skip> {
        let mut rows = rows.to_vec();
        rows.sort_unstable();
        let mut kept: Vec<(Option<i64>, u64)> = Vec::new();
        let mut out = Vec::new();
        for &(n, key, fp) in &rows {
            let t = target
                .iter()
                .filter(|&&(_, f)| hamming(f, fp) <= k)
                .min_by_key(|&&(key, _)| (key.is_none(), key))
                .map(|&(key, f)| (key, f));
            let e = kept.iter().find(|&&(_, f)| hamming(f, fp) <= k).copied();
            match t.or(e) {
                Some((m, f)) => out.push((n, m, hamming(f, fp))),
                None => kept.push((key, fp)),
            }
        }
        out
    }

    #[test]
    fn batch_skips_as_one_at_a_time_inserts_do() {
        let mut seed = 13;
        for k in [0, 2, 3, 5, 8, 11] {
            let fps = batch(&mut seed, 600);
            // Places shuffled (n = a permutation of 0..600, times 10),
            // keys far from the places; the target: some batch
            // fingerprints moved a bit, and random ones.
            let ns: Vec<i64> = (0..600i64).map(|i| (i * 7919 % 600) * 10).collect();
            // One key in 50 NULL.
            let keys: Vec<Option<i64>> = (0..600i64)
                .map(|i| (i % 50 != 7).then_some(1_000_000 + i))
                .collect();
            let target: Vec<(Option<i64>, u64)> = fps
                .iter()
                .step_by(9)
                .enumerate()
                .map(|(i, &f)| f ^ ((i as u64 % 2) << (i * 37 % 64)))
                .chain((0..30).map(|_| rng(&mut seed)))
                .enumerate()
                // One target key in 5 NULL: such a row still matches.
                .map(|(i, f)| ((i % 5 != 2).then_some(500 - i as i64), f))
                .collect();
            let b = Batch::new(&ns, &keys, &fps, k).unwrap();
            let mut best = vec![None; b.first_count()];
            let queries: Vec<u64> = target.iter().map(|&(_, f)| f).collect();
            b.firsts()
                .within_each(
                    &queries,
                    |q, pos, d| keep_smallest_key(&mut best[pos as usize], target[q].0, d),
                    &mut || true,
                )
                .unwrap();
            let got = b.skipped(&best, &mut || true).unwrap();
            let rows: Vec<(i64, Option<i64>, u64)> =
                (0..600).map(|i| (ns[i], keys[i], fps[i])).collect();
            let want = one_at_a_time(&rows, &target, k);
            assert!(
                want.iter().any(|s| s.1 < Some(1_000_000)),
                "k = {k}: some target matches"
            );
            if k >= 3 {
                assert!(
                    want.iter().any(|s| s.1.is_none()),
                    "k = {k}: some skips report a NULL key"
                );
            }
            assert!(
                want.iter().any(|s| s.1 >= Some(1_000_000)),
                "k = {k}: some batch matches"
            );
            assert!(b.first_count() < 600, "k = {k}: the batch has copies");
            assert_eq!(got, want, "k = {k}");
        }
    }

    #[test]
    fn batch_refuses_arrays_of_different_lengths() {
        assert!(matches!(
            Batch::new(&[1, 2], &[Some(1)], &[1, 2], 3),
            Err(NearError::Refused)
        ));
        let b = Batch::new(&[], &[], &[], 3).unwrap();
        assert_eq!(b.skipped(&[], &mut || true), Ok(vec![]));
        assert!(matches!(
            b.skipped(&[None], &mut || true),
            Err(NearError::Refused)
        ));
    }

    #[test]
    fn pairs_within_against_every_pair() {
        let mut seed = 11;
        for k in [0, 1, 3, 4, 7, 8, 11] {
            let fps = batch(&mut seed, 300);
            let got = pairs_within(&fps, k, usize::MAX, &mut || true).unwrap();
            // The order rule without the pairs: as skipped_in_order says.
            let mut pairs: Vec<(i64, i64)> = got
                .iter()
                .map(|&(i, j, _)| (i64::from(i), i64::from(j)))
                .collect();
            let by_pairs: Vec<(u32, u32)> = crate::guard::skipped_in_order(&mut pairs)
                .into_iter()
                .map(|(a, b)| (a as u32, b as u32))
                .collect();
            assert_eq!(
                skipped_in_order_within(&fps, k, &mut || true).unwrap(),
                by_pairs,
                "k = {k}: the order rule"
            );
            if !got.is_empty() {
                assert_eq!(
                    pairs_within(&fps, k, got.len() - 1, &mut || true),
                    Err(NearError::TooManyPairs),
                    "k = {k}: a bound below the pairs"
                );
            }
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
        assert_eq!(pairs_within(&[], 3, 0, &mut || false), Ok(vec![]));
        // Checked by work, not by rows: 20,000 fingerprints that share
        // every band value (a batch that is all work between row counts).
        let same: Vec<u64> = (0..20_000u64).map(|i| i << 56 >> 56).collect();
        let mut calls = 0;
        assert_eq!(
            pairs_within(&same, 0, usize::MAX, &mut || {
                calls += 1;
                false
            }),
            Err(NearError::Interrupted)
        );
        assert_eq!(calls, 1);
        let mut calls = 0;
        assert_eq!(
            skipped_in_order_within(&same, 11, &mut || {
                calls += 1;
                calls < 3
            }),
            Err(NearError::Interrupted)
        );
        assert_eq!(calls, 3);
    }
}
