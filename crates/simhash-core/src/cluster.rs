//! Clustering `(key, fingerprint)` rows: the connected components of the
//! graph "Hamming distance <= k", exactly, for `k` from 0 to [`MAX_K`].
//!
//! Every pair of rows within `k` ends in one cluster, a chain of such pairs
//! joins its ends however far apart they are, and no two rows are joined
//! except through such a chain. A cluster is named by the smallest key in
//! it. Rows are rows: two rows with the same key are two entries of the
//! output, and so are two rows with the same fingerprint.
//!
//! # How
//!
//! 1. Sort the rows by fingerprint. Equal fingerprints are one vertex of the
//!    graph: from here on only the `m` distinct values are searched, and a
//!    union-find (path halving, union by size) over their positions in
//!    sorted order holds the components.
//! 2. Search for the pairs within `k` by the pigeonhole rule of
//!    [`crate::probe`], applied recursively:
//!
//!    *Split the bits in which a set of values differs into `p` parts. Two
//!    values within `b` bits of each other differ in at most `b / p` bits
//!    (rounded down) of some part.*
//!
//!    So group the set by the value of one part (one sort), and search
//!    each group on its own and together with each group whose part value
//!    is within `b / p` bits of its own; then the same for every other
//!    part. `p` is chosen by a cost estimate (`plan`). On a million
//!    random fingerprints the first level is the band index: 4 parts of 16
//!    bits, the bands, with radius [`probe_radius`]: equal bands for
//!    `k = 3`, the 17 band values within 1 bit for `k` from 5 to 7, the 137
//!    within 2 for `k` from 8 to 11. `k = 4` gets 5 exact parts of 12 or 13
//!    bits (0.64 s, as fast as the bands with radius 1), `k = 1` two exact
//!    halves and `k = 2` three exact thirds (fewer sorts, smaller groups).
//!    At `k = 0` nothing is searched: distinct values are never within 0.
//! 3. Name each component by its smallest key.
//!
//! # Hot buckets
//!
//! A group, or a pair of neighbouring groups, is compared pair by pair only
//! when it is small: a group of at most [`SET_LEAF`] values, or a pair of
//! groups whose smaller side has at most [`PAIR_LEAF`] (so at most 32
//! comparisons per value of the larger side). Anything bigger goes through
//! step 2 again, on its own. Its values agree on the bits of the part it
//! was grouped by, so only the bits that still vary inside it are split
//! (computed, not assumed: the OR of `value ^ first value`), and for a pair
//! of groups the bits that are constant on each side but differ between
//! the sides are taken off the distance budget first. A million
//! fingerprints that all share band 0 are thus searched by three 16-bit
//! parts of the other 48 bits (radius 1 at `k = 3`, 2 at `k = 7`, 3 at
//! `k = 11`), and a bucket that is still large there is split again, down
//! to the leaves. Each level fixes at least one more bit (usually a third
//! or a quarter of them), so there are at most 64 levels. Where a group
//! varies in no more than the budget, every pair in it is within `k`: it
//! is joined in one pass with nothing compared.
//!
//! Before a group and its neighbour groups are searched, their values are
//! checked for being in more than one component: if they are all joined
//! already, nothing there can change the result and the whole subtree is
//! skipped. The check stops at the first value in another component, so on
//! sparse data it costs one or two `find`s per group; on a dense bucket it
//! saves the searches of the later parts (1M rows sharing band 0 at
//! `k = 11`, one cluster in the end: 5.2 s; 18.2 s when only groups too
//! big for a leaf were checked). A `find` per compared pair would cost
//! more than the compare it saves (a likely cache miss against a few
//! vector instructions), so the leaves compare first and call `find` only
//! on a hit.
//!
//! Worst case: per level, a value is sorted once per part (`p <= 12`) and
//! takes part in its own group's search and in one search per non-empty
//! neighbour group (at most `ball(w, r) - 1` of them for parts of `w`
//! bits), and that repeats at every level. A set whose groups never shrink
//! (values packed into few bits, yet never within `k` of each other, so
//! never skipped) pays that factor at each level; such sets are dense
//! codes, not text fingerprints, and even 262,144 codewords of a distance-4
//! code packed into 24 bits cluster in 0.15 s at `k = 3`.
//!
//! Measured on one core of an AMD EPYC, release build, 1M rows
//! (`bench/src/bin/cluster_throughput.rs`, 50,000 planted groups of 2 to 5
//! copies, every copy found in its base's cluster):
//!
//! | data                         | k = 3  | k = 7  | k = 11 |
//! |------------------------------|--------|--------|--------|
//! | uniformly random 64 bits     | 0.21 s | 0.63 s | 3.50 s |
//! | every row with band 0 = BEEF | 0.48 s | 2.68 s | 5.14 s |
//!
//! The sort takes 0.03 s and the labelling 0.04 s of each; the rest is the
//! search. `k = 11` on random rows is 4.2 billion candidate pairs from the
//! bands with radius 2, at 0.85 ns each: the reason for [`MAX_K`]. The
//! first clustering (version 0.1, kept as the baseline in
//! `bench/src/baseline_clusters.rs`), which splits into `k + 1` exact parts at
//! every level, takes 0.32 s and 7.80 s on the random rows, 0.74 s and
//! 266 s on the shared band 0, at `k` = 3 and 7 (same clusters).
//!
//! # Memory
//!
//! With `n` rows of which `m` have distinct fingerprints: 16 bytes per
//! distinct value for the search set (fingerprint and index) and 8 for the
//! union-find (parent and size); then, once the search set is freed, 8 per
//! distinct value for the smallest keys and 16 per row for the output.
//! Peak: `max(24 m, 16 m + 16 n)`, at most 32 bytes per row (measured: 32
//! at 1M rows, by the peak resident memory), beside the caller's 16-byte
//! rows, which are sorted in place, not copied. The recursion's own state
//! is a few small vectors per level.
//!
//! [`probe_radius`]: crate::probe::probe_radius

use std::fmt;

use crate::probe::MAX_PROBED_K;

/// The largest `k` clustered: the band index's own limit. Above it the
/// first level probes 697 or more values per band: on a million random
/// rows about 21 billion candidate pairs (estimated), five times the 4.2
/// billion of `k = 11`.
pub const MAX_K: u32 = MAX_PROBED_K;

/// A set of at most this many values compares all its pairs (2,016 at
/// most) rather than being split again. 32 and 128 measure the same.
pub const SET_LEAF: usize = 64;

/// Two groups of which the smaller has at most this many values compare
/// all their pairs: `PAIR_LEAF` comparisons per value of the larger one.
/// Band buckets hold 15 values on average at 1M rows and pairs of them must
/// stay leaves: with 16, the pairs of buckets above it recurse and random
/// rows at `k = 11` take 24.9 s instead of 3.5 s; 64 measures the same as
/// 32.
pub const PAIR_LEAF: usize = 32;

/// A set, or a pair of groups, with at most this many pairs compares them
/// all (in blocks of [`SET_LEAF`] or [`PAIR_LEAF`] values) rather than being
/// split again, whatever the sizes: a split costs several sorts, a plan
/// and a table per part, about 50 µs on groups of 150, while 23,000 pairs
/// compare in 20 µs. At 10M random rows a band bucket holds 150 values and
/// `k = 7` took 115 s with only the size limits above, 40 s with this one
/// (`cluster-throughput 10000000 --k 7`; 1M rows measure the same).
pub const LEAF_PAIRS: usize = 32 * 1024;

/// Units of work (a value sorted or a pair compared) between two calls of
/// the progress callback: about 0.06 ms of comparisons.
const PROGRESS_EVERY: u64 = 1 << 16;

/// What the clustering is doing when it reports progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sorting the rows by fingerprint (one call, before the sort).
    Sort,
    /// Searching the distinct fingerprints for pairs within `k`.
    Search,
    /// Naming each cluster by its smallest key and writing the output.
    Label,
}

/// Counts handed to the progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What is being done.
    pub phase: Phase,
    /// Input rows.
    pub rows: usize,
    /// Distinct fingerprints (0 until the sort is done).
    pub distinct: usize,
    /// The top-level pass being searched, from 0: with fingerprints whose
    /// 64 bits all vary, pass `i` is band `i`.
    pub pass: u32,
    /// Top-level passes in all: the parts the varying bits are split into
    /// (4, the bands, on a million random fingerprints for most `k`).
    pub passes: u32,
    /// Top-level buckets (distinct values of the pass's bits) finished in
    /// this pass.
    pub buckets_done: usize,
    /// Top-level buckets in this pass.
    pub buckets: usize,
    /// Fingerprint pairs compared so far.
    pub pairs: u64,
    /// Pairs within `k` that joined two components so far.
    pub joins: u64,
}

/// Why [`Clustering::run`] gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterError {
    /// `k` is above [`MAX_K`].
    DistanceTooLarge { k: u32, max: u32 },
    /// More than `u32::MAX` distinct fingerprints: they are indexed by
    /// `u32` to keep the union-find at 8 bytes each.
    TooManyFingerprints { distinct: usize },
    /// The progress callback returned `false`.
    Interrupted,
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::DistanceTooLarge { k, max } => {
                write!(f, "distance {k} is above the largest clustered, {max}")
            }
            ClusterError::TooManyFingerprints { distinct } => {
                write!(
                    f,
                    "{distinct} distinct fingerprints, more than {}",
                    u32::MAX
                )
            }
            ClusterError::Interrupted => write!(f, "clustering interrupted"),
        }
    }
}

impl std::error::Error for ClusterError {}

/// The settings of one clustering: the distance and whether rows alone in
/// their cluster are returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clustering {
    k: u32,
    singletons: bool,
}

/// [`Clustering::new`]`(k).run(rows, progress)`: every row, singletons
/// included.
pub fn cluster(
    rows: &mut [(i64, u64)],
    k: u32,
    progress: &mut impl FnMut(Progress) -> bool,
) -> Result<Vec<(i64, i64)>, ClusterError> {
    Clustering::new(k).run(rows, progress)
}

impl Clustering {
    /// Clusters within distance `k`, singletons included.
    pub fn new(k: u32) -> Self {
        Clustering {
            k,
            singletons: true,
        }
    }

    /// Whether rows alone in their cluster (no other row within `k`, no
    /// other row with the same fingerprint) are in the output.
    pub fn singletons(self, keep: bool) -> Self {
        Clustering {
            singletons: keep,
            ..self
        }
    }

    /// Clusters `rows` (`(key, fingerprint)`) and returns `(key, cluster)`
    /// for each row, where `cluster` is the smallest key of the row's
    /// cluster, sorted by `(cluster, key)`. Rows with equal keys are
    /// distinct rows: each has its own entry, and their clusters may
    /// differ. `rows` is left sorted by `(fingerprint, key)`.
    ///
    /// `progress` is called at the start of each phase and then every
    /// 65,536 units of work (values sorted or pairs compared, about
    /// 0.06 ms); returning `false` stops the run with
    /// [`ClusterError::Interrupted`]. The one sort of the rows cannot be
    /// interrupted (0.03 s per million rows).
    ///
    /// Speed and memory: see the [module](self) documentation.
    pub fn run(
        &self,
        rows: &mut [(i64, u64)],
        progress: &mut impl FnMut(Progress) -> bool,
    ) -> Result<Vec<(i64, i64)>, ClusterError> {
        self.run_with(rows, progress, plan)
    }

    /// [`Clustering::run`] with another way to split the bits: any split
    /// that keeps the pigeonhole rule gives the same clusters, which the
    /// tests check by running several.
    fn run_with(
        &self,
        rows: &mut [(i64, u64)],
        progress: &mut impl FnMut(Progress) -> bool,
        plan: Planner,
    ) -> Result<Vec<(i64, i64)>, ClusterError> {
        let k = self.k;
        if k > MAX_K {
            return Err(ClusterError::DistanceTooLarge { k, max: MAX_K });
        }
        let mut state = Progress {
            phase: Phase::Sort,
            rows: rows.len(),
            distinct: 0,
            pass: 0,
            passes: 0,
            buckets_done: 0,
            buckets: 0,
            pairs: 0,
            joins: 0,
        };
        if !progress(state) {
            return Err(ClusterError::Interrupted);
        }
        rows.sort_unstable_by_key(|&(key, fp)| (fp, key));

        // The distinct values, each with its index in sorted order.
        let distinct = 1 + rows.windows(2).filter(|w| w[0].1 != w[1].1).count();
        let distinct = if rows.is_empty() { 0 } else { distinct };
        if distinct > u32::MAX as usize {
            return Err(ClusterError::TooManyFingerprints { distinct });
        }
        let mut items: Vec<Item> = Vec::with_capacity(distinct);
        for &(_, fp) in rows.iter() {
            if items.last().is_none_or(|it| it.fp != fp) {
                let id = items.len() as u32;
                items.push(Item { fp, id });
            }
        }
        state.distinct = distinct;
        state.phase = Phase::Search;
        let mut search = Search {
            k,
            uf: UnionFind::new(distinct),
            plan,
            progress,
            state,
            work: 0,
        };
        search.report()?;
        // At k = 0 distinct values are never joined: the sort did it all.
        if k > 0 {
            search.set(&mut items, 0)?;
        }
        drop(items);

        let Search {
            mut uf,
            progress,
            mut state,
            ..
        } = search;
        state.phase = Phase::Label;
        if !progress(state) {
            return Err(ClusterError::Interrupted);
        }
        Ok(label(rows, &mut uf, self.singletons))
    }
}

/// Names each row's component by its smallest key. `rows` is sorted by
/// fingerprint, and the `i`-th distinct fingerprint is union-find index
/// `i`.
fn label(rows: &[(i64, u64)], uf: &mut UnionFind, singletons: bool) -> Vec<(i64, i64)> {
    let mut smallest = vec![i64::MAX; uf.parent.len()];
    let mut id = 0u32;
    for (i, &(key, fp)) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].1 != fp {
            id += 1;
        }
        let root = uf.find(id) as usize;
        smallest[root] = smallest[root].min(key);
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut id = 0u32;
    for (i, &(key, fp)) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].1 != fp {
            id += 1;
        }
        let root = uf.find(id);
        if !singletons {
            // Alone: the only value in its component, and the only row
            // with that value.
            let shared =
                (i > 0 && rows[i - 1].1 == fp) || rows.get(i + 1).is_some_and(|r| r.1 == fp);
            if uf.size[root as usize] == 1 && !shared {
                continue;
            }
        }
        out.push((key, smallest[root as usize]));
    }
    out.sort_unstable_by_key(|&(key, cluster)| (cluster, key));
    out
}

/// Union-find over distinct values: path halving, union by size. The size
/// (in distinct values) also tells the labelling which clusters are
/// singletons.
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// Joins the components of `a` and `b`; `true` if they were two.
    fn union(&mut self, a: u32, b: u32) -> bool {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        if self.size[ra as usize] < self.size[rb as usize] {
            std::mem::swap(&mut ra, &mut rb);
        }
        self.parent[rb as usize] = ra;
        self.size[ra as usize] += self.size[rb as usize];
        true
    }
}

/// A distinct fingerprint and its union-find index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    fp: u64,
    id: u32,
}

/// The bits that vary within `items`: OR of each value XOR the first.
fn varying(items: &[Item]) -> u64 {
    let first = items.first().map_or(0, |it| it.fp);
    items.iter().fold(0, |v, it| v | (it.fp ^ first))
}

/// `bits` cut into `p` parts of sizes within one of each other, most
/// significant bits first: for all 64 bits and `p = 4`, the four bands.
fn split(bits: u64, p: u32) -> Vec<u64> {
    let n = bits.count_ones();
    let mut parts = vec![0u64; p as usize];
    let mut rank = 0;
    for bit in (0..64).rev() {
        if bits >> bit & 1 == 1 {
            parts[(rank * p / n) as usize] |= 1 << bit;
            rank += 1;
        }
    }
    parts
}

/// How many values lie within `r` bits of one `w`-bit value.
fn ball(w: u32, r: u32) -> f64 {
    let (mut total, mut c) = (0.0, 1.0);
    for i in 0..=r.min(w) {
        total += c;
        c = c * f64::from(w - i) / f64::from(i + 1);
    }
    total
}

/// Whether a part is a run of at most 16 bits, so that [`Starts`] can
/// index it by a table.
fn tabulable(mask: u64) -> bool {
    let shift = mask.trailing_zeros();
    let width = mask.count_ones();
    width <= 16 && mask >> shift == (1u64 << width) - 1
}

/// The estimated cost of one level, in pair comparisons, if the bits were
/// uniformly random: each part sorts the values, looks up the neighbour
/// groups of every group, and compares the values of neighbouring groups.
/// `b_len` is `None` for one set, where each pair is looked at once.
fn cost(parts: &[u64], r: u32, a_len: usize, b_len: Option<usize>) -> f64 {
    // In units of one leaf comparison (0.85 ns measured). Sorting 1M rows
    // takes 0.03 s, about 35 units per value: modelled as 2 log2(n). A
    // lookup with its leaf call is put at 16 units, and a binary search
    // adds two per halving; rough weights, but the choices they lead to are
    // the measured best ones (see `plan`).
    let na = a_len as f64;
    let nb = b_len.unwrap_or(a_len) as f64;
    let n = na + b_len.map_or(0.0, |b| b as f64);
    let log = n.max(2.0).log2();
    let once = if b_len.is_none() { 0.5 } else { 1.0 };
    parts
        .iter()
        .map(|&mask| {
            let cells = 2f64.powi(mask.count_ones() as i32);
            let probes = ball(mask.count_ones(), r);
            let lookup = if tabulable(mask) && cells <= 4.0 * nb {
                16.0
            } else {
                16.0 + 2.0 * nb.max(2.0).log2()
            };
            let groups = na.min(cells);
            2.0 * log * n + groups * probes * lookup * once + na * probes * nb / cells * once
        })
        .sum()
}

/// Chooses the parts and the radius: [`plan`], or another in the tests.
type Planner = fn(u64, u32, usize, Option<usize>) -> (Vec<u64>, u32);

/// How to search a set (`b_len` `None`) or a pair of sets of these sizes,
/// whose varying bits are `bits`, for pairs within `budget`: the parts and
/// the radius within a part.
///
/// Any `p` parts with radius `budget / p` find every pair (the pigeonhole
/// rule); `p` is chosen by [`cost`]. Four parts of 16 bits, the bands, win
/// on a million random fingerprints for `k = 3` and from 5 to 11 (at
/// `k = 7`, 8 exact parts of 8 bits would leave groups of 3,900 values,
/// against 15 per band; the first clustering (the bench's baseline) does that: 7.80 s
/// against 0.61 s in the same run). A million values sharing band 0 at
/// `k = 7` get 3 parts of 16 bits with radius 2: 2.8 s, against 13.0 s
/// measured with 4 parts of 12 bits and radius 1, whose groups of 244 need
/// a second level.
fn plan(bits: u64, budget: u32, a_len: usize, b_len: Option<usize>) -> (Vec<u64>, u32) {
    let most = (budget + 1).min(bits.count_ones()).max(1);
    (1..=most)
        .map(|p| (split(bits, p), budget / p))
        .min_by(|x, y| {
            let (cx, cy) = (cost(&x.0, x.1, a_len, b_len), cost(&y.0, y.1, a_len, b_len));
            cx.total_cmp(&cy)
        })
        .expect("at least one part")
}

/// Every non-empty submask of `mask` with at most `r` bits: the XOR
/// patterns from a part value to its neighbours.
fn patterns(mask: u64, r: u32) -> Vec<u64> {
    fn go(bits: &[u64], from: usize, left: u32, acc: u64, out: &mut Vec<u64>) {
        for i in from..bits.len() {
            let x = acc | bits[i];
            out.push(x);
            if left > 1 {
                go(bits, i + 1, left - 1, x, out);
            }
        }
    }
    let bits: Vec<u64> = (0..64)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| 1u64 << b)
        .collect();
    let mut out = Vec::new();
    if r > 0 {
        go(&bits, 0, r, 0, &mut out);
    }
    out
}

/// Where each part value's group starts in a slice sorted by `fp & mask`.
/// Built when the part is a run of at most 16 bits (the bands, and most
/// parts below them) and the slice has at least a quarter as many values
/// as the table has entries; otherwise lookups are binary searches.
struct Starts {
    shift: u32,
    starts: Vec<u32>,
}

impl Starts {
    fn build(items: &[Item], mask: u64) -> Option<Starts> {
        let shift = mask.trailing_zeros();
        let width = mask.count_ones();
        if !tabulable(mask) || (1usize << width) > 4 * items.len() {
            return None;
        }
        let mut starts = vec![0u32; (1 << width) + 1];
        for it in items {
            starts[((it.fp & mask) >> shift) as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        Some(Starts { shift, starts })
    }

    /// The range of the group with part value `key`.
    fn range(&self, key: u64) -> (usize, usize) {
        let i = (key >> self.shift) as usize;
        (self.starts[i] as usize, self.starts[i + 1] as usize)
    }
}

/// The range of `items` (sorted by `fp & mask`) whose part value is `key`,
/// by binary search.
fn search(items: &[Item], mask: u64, key: u64) -> (usize, usize) {
    let lo = items.partition_point(|it| it.fp & mask < key);
    let hi = lo + items[lo..].partition_point(|it| it.fp & mask == key);
    (lo, hi)
}

/// The end of the group starting at `from` in a slice sorted by
/// `fp & mask`.
fn group_end(items: &[Item], mask: u64, from: usize) -> usize {
    let key = items[from].fp & mask;
    from + items[from..]
        .iter()
        .position(|it| it.fp & mask != key)
        .unwrap_or(items.len() - from)
}

/// Whether any of `fps` is within `k` of `x`. Written without an early exit
/// so that it compiles to a vector loop (SSE2, four values per iteration):
/// on random data nearly every leaf comparison misses, and the exact loop
/// runs only on a hit. [`crate::hamming`], with its run-time `popcnt` but
/// one call per pair, made random rows at `k = 11` take 6.8 s instead of
/// 3.5 s.
#[inline]
fn any_within(fps: &[u64], x: u64, k: u32) -> bool {
    fps.iter()
        .fold(false, |hit, &y| hit | ((x ^ y).count_ones() <= k))
}

struct Search<'p, P> {
    k: u32,
    uf: UnionFind,
    plan: Planner,
    progress: &'p mut P,
    state: Progress,
    work: u64,
}

impl<P: FnMut(Progress) -> bool> Search<'_, P> {
    fn report(&mut self) -> Result<(), ClusterError> {
        self.work = 0;
        if (self.progress)(self.state) {
            Ok(())
        } else {
            Err(ClusterError::Interrupted)
        }
    }

    fn tick(&mut self, work: u64) -> Result<(), ClusterError> {
        self.work += work;
        if self.work >= PROGRESS_EVERY {
            self.report()?;
        }
        Ok(())
    }

    fn join(&mut self, a: u32, b: u32) {
        if self.uf.union(a, b) {
            self.state.joins += 1;
        }
    }

    /// Whether all of `items` are already in one component. Stops at the
    /// first one that is not.
    fn joined<'i>(&mut self, mut items: impl Iterator<Item = &'i Item>) -> bool {
        let Some(first) = items.next() else {
            return true;
        };
        let root = self.uf.find(first.id);
        items.all(|it| self.uf.find(it.id) == root)
    }

    /// Joins every pair within `k` inside `items`.
    fn set(&mut self, items: &mut [Item], depth: u32) -> Result<(), ClusterError> {
        if items.len() < 2 {
            return Ok(());
        }
        if items.len() <= SET_LEAF {
            return self.set_leaf(items);
        }
        if self.joined(items.iter()) {
            return Ok(());
        }
        let bits = varying(items);
        if bits.count_ones() <= self.k {
            // Every pair is within k.
            let first = items[0].id;
            for it in &items[1..] {
                self.join(first, it.id);
            }
            return self.tick(items.len() as u64);
        }
        if items.len() * (items.len() - 1) / 2 <= LEAF_PAIRS {
            // All pairs, in blocks: each block with itself and with every
            // later block.
            for (i, block) in items.chunks(SET_LEAF).enumerate() {
                self.set_leaf(block)?;
                for later in items
                    .get((i + 1) * SET_LEAF..)
                    .unwrap_or(&[])
                    .chunks(PAIR_LEAF)
                {
                    self.pair_leaf(block, later)?;
                }
            }
            return Ok(());
        }
        let (parts, radius) = (self.plan)(bits, self.k, items.len(), None);
        let mut near: Vec<(usize, usize)> = Vec::new();
        for (pass, &mask) in parts.iter().enumerate() {
            items.sort_unstable_by_key(|it| it.fp & mask);
            self.tick(items.len() as u64)?;
            let pats = patterns(mask, radius);
            let starts = if pats.is_empty() {
                None
            } else {
                Starts::build(items, mask)
            };
            if depth == 0 {
                self.state.pass = pass as u32;
                self.state.passes = parts.len() as u32;
                self.state.buckets_done = 0;
                self.state.buckets = 1 + items
                    .windows(2)
                    .filter(|w| w[0].fp & mask != w[1].fp & mask)
                    .count();
                self.report()?;
            }
            let mut from = 0;
            while from < items.len() {
                let key = items[from].fp & mask;
                let to = group_end(items, mask, from);
                let (left, right) = items.split_at_mut(to);
                let here = &mut left[from..];
                // Neighbour groups with a larger part value: each pair of
                // groups is searched once, from its smaller value. The
                // table holds positions in `items`; `right` starts at `to`,
                // before any larger value's group.
                near.clear();
                for &p in &pats {
                    let other = key ^ p;
                    if other < key {
                        continue;
                    }
                    let (lo, hi) = match &starts {
                        Some(s) => {
                            let (lo, hi) = s.range(other);
                            (lo - to, hi - to)
                        }
                        None => search(right, mask, other),
                    };
                    if lo < hi {
                        near.push((lo, hi));
                    }
                }
                let around = near.iter().flat_map(|&(lo, hi)| right[lo..hi].iter());
                if !self.joined(here.iter().chain(around)) {
                    self.set(here, depth + 1)?;
                    for &(lo, hi) in &near {
                        self.pair(here, &mut right[lo..hi])?;
                    }
                }
                if depth == 0 {
                    self.state.buckets_done += 1;
                }
                from = to;
            }
        }
        Ok(())
    }

    /// Joins every pair within `k` with one value in `a`, one in `b`.
    fn pair(&mut self, a: &mut [Item], b: &mut [Item]) -> Result<(), ClusterError> {
        if a.is_empty() || b.is_empty() {
            return Ok(());
        }
        if a.len().min(b.len()) <= PAIR_LEAF {
            return self.pair_leaf(a, b);
        }
        if self.joined(a.iter().chain(b.iter())) {
            return Ok(());
        }
        let bits = varying(a) | varying(b);
        // Bits constant in `a` and in `b` may still differ between them:
        // that much of the budget is spent on every pair.
        let fixed = ((a[0].fp ^ b[0].fp) & !bits).count_ones();
        if fixed > self.k {
            return Ok(());
        }
        let budget = self.k - fixed;
        if bits.count_ones() <= budget {
            let first = a[0].id;
            for it in a[1..].iter().chain(b.iter()) {
                self.join(first, it.id);
            }
            return self.tick((a.len() + b.len()) as u64);
        }
        if a.len() * b.len() <= LEAF_PAIRS {
            let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
            for block in small.chunks(PAIR_LEAF) {
                self.pair_leaf(block, large)?;
            }
            return Ok(());
        }
        let (parts, radius) = (self.plan)(bits, budget, a.len(), Some(b.len()));
        let mut near: Vec<(usize, usize)> = Vec::new();
        for &mask in &parts {
            a.sort_unstable_by_key(|it| it.fp & mask);
            b.sort_unstable_by_key(|it| it.fp & mask);
            self.tick((a.len() + b.len()) as u64)?;
            let mut pats = patterns(mask, radius);
            pats.push(0);
            let starts = Starts::build(b, mask);
            let mut from = 0;
            while from < a.len() {
                let key = a[from].fp & mask;
                let to = group_end(a, mask, from);
                near.clear();
                for &p in &pats {
                    let (lo, hi) = match &starts {
                        Some(s) => s.range(key ^ p),
                        None => search(b, mask, key ^ p),
                    };
                    if lo < hi {
                        near.push((lo, hi));
                    }
                }
                let around = near.iter().flat_map(|&(lo, hi)| b[lo..hi].iter());
                if !self.joined(a[from..to].iter().chain(around)) {
                    for &(lo, hi) in &near {
                        self.pair(&mut a[from..to], &mut b[lo..hi])?;
                    }
                }
                from = to;
            }
        }
        Ok(())
    }

    fn set_leaf(&mut self, items: &[Item]) -> Result<(), ClusterError> {
        let mut fps = [0u64; SET_LEAF];
        for (f, it) in fps.iter_mut().zip(items) {
            *f = it.fp;
        }
        let k = self.k;
        for i in 1..items.len() {
            let x = fps[i];
            if any_within(&fps[..i], x, k) {
                for j in 0..i {
                    if (x ^ fps[j]).count_ones() <= k {
                        self.join(items[i].id, items[j].id);
                    }
                }
            }
        }
        let pairs = (items.len() * (items.len() - 1) / 2) as u64;
        self.state.pairs += pairs;
        self.tick(pairs)
    }

    fn pair_leaf(&mut self, a: &[Item], b: &[Item]) -> Result<(), ClusterError> {
        let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        let mut fps = [0u64; PAIR_LEAF];
        for (f, it) in fps.iter_mut().zip(small) {
            *f = it.fp;
        }
        let fps = &fps[..small.len()];
        let k = self.k;
        for y in large {
            if any_within(fps, y.fp, k) {
                for (j, &x) in fps.iter().enumerate() {
                    if (x ^ y.fp).count_ones() <= k {
                        self.join(small[j].id, y.id);
                    }
                }
            }
        }
        let pairs = (a.len() * b.len()) as u64;
        self.state.pairs += pairs;
        self.tick(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::hamming;
    use crate::testutil::splitmix;

    /// The definition, the slow obvious way: union every pair of rows
    /// within `k`, name each component by its smallest key. One pass over
    /// all pairs serves every `k` of `ks`.
    fn reference(rows: &[(i64, u64)], ks: &[u32]) -> Vec<Vec<(i64, i64)>> {
        let mut ufs: Vec<UnionFind> = ks.iter().map(|_| UnionFind::new(rows.len())).collect();
        let most = ks.iter().copied().max().unwrap_or(0);
        let fps: Vec<u64> = rows.iter().map(|r| r.1).collect();
        for i in 0..fps.len() {
            let x = fps[i];
            for (j, &y) in fps.iter().enumerate().skip(i + 1) {
                let d = (x ^ y).count_ones();
                if d > most {
                    continue;
                }
                for (uf, &k) in ufs.iter_mut().zip(ks) {
                    if d <= k {
                        uf.union(i as u32, j as u32);
                    }
                }
            }
        }
        ufs.iter_mut()
            .map(|uf| {
                let mut smallest = vec![i64::MAX; rows.len()];
                for (i, &(key, _)) in rows.iter().enumerate() {
                    let r = uf.find(i as u32) as usize;
                    smallest[r] = smallest[r].min(key);
                }
                let mut out: Vec<(i64, i64)> = (0..rows.len())
                    .map(|i| (rows[i].0, smallest[uf.find(i as u32) as usize]))
                    .collect();
                out.sort_unstable_by_key(|&(key, c)| (c, key));
                out
            })
            .collect()
    }

    fn run(rows: &[(i64, u64)], k: u32) -> (Vec<(i64, i64)>, Progress) {
        run_planned(rows, k, plan)
    }

    fn run_planned(rows: &[(i64, u64)], k: u32, planner: Planner) -> (Vec<(i64, i64)>, Progress) {
        let mut rows = rows.to_vec();
        let mut last = None;
        let out = Clustering::new(k)
            .run_with(
                &mut rows,
                &mut |p| {
                    last = Some(p);
                    true
                },
                planner,
            )
            .unwrap();
        (out, last.unwrap())
    }

    /// Four parts (the bands, on 64 varying bits) with radius `b / 4` at
    /// every level: the band index all the way down.
    fn bands(bits: u64, b: u32, _: usize, _: Option<usize>) -> (Vec<u64>, u32) {
        let p = bits.count_ones().min(4);
        (split(bits, p), b / p)
    }

    /// `b + 1` parts, radius 0: exact matches only.
    fn exact(bits: u64, b: u32, _: usize, _: Option<usize>) -> (Vec<u64>, u32) {
        let p = bits.count_ones().min(b + 1);
        (split(bits, p), b / p)
    }

    /// Three parts with radius `b / 3`.
    fn thirds(bits: u64, b: u32, _: usize, _: Option<usize>) -> (Vec<u64>, u32) {
        let p = bits.count_ones().min(3);
        (split(bits, p), b / p)
    }

    /// The planners every result is checked with: the cost model, which on
    /// small sets mostly picks exact parts, and fixed splits that exercise
    /// the neighbour probes (radius 1 to 3) at every level.
    const PLANNERS: [(&str, Planner); 4] = [
        ("plan", plan),
        ("bands", bands),
        ("exact", exact),
        ("thirds", thirds),
    ];

    /// Checks `cluster` against `reference` for each of `ks`, with every
    /// planner, and returns the progress at the end of each run with the
    /// cost model (for its pair count).
    fn check(rows: &[(i64, u64)], ks: &[u32]) -> Vec<Progress> {
        let want = reference(rows, ks);
        let mut lasts = Vec::new();
        for (&k, want) in ks.iter().zip(want) {
            for (name, planner) in PLANNERS {
                let (got, last) = run_planned(rows, k, planner);
                assert_eq!(got.len(), rows.len(), "k = {k}: one entry per row");
                if got != want {
                    let diff = got.iter().zip(&want).position(|(g, w)| g != w);
                    panic!(
                        "k = {k}, {name}: differs from brute force at {diff:?} of {}",
                        got.len()
                    );
                }
                if name == "plan" {
                    lasts.push(last);
                }
            }
        }
        lasts
    }

    /// Keys 0, 1, 2, ... in a shuffled order, so that the smallest key is
    /// not simply the first row.
    fn keyed(fps: &[u64], seed: u64) -> Vec<(i64, u64)> {
        let mut s = seed;
        let mut keys: Vec<i64> = (0..fps.len() as i64).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, (splitmix(&mut s) % (i as u64 + 1)) as usize);
        }
        keys.into_iter().zip(fps.iter().copied()).collect()
    }

    /// `fp` with `n` distinct random bits flipped, all inside `mask`.
    fn flip(s: &mut u64, fp: u64, n: u32, mask: u64) -> u64 {
        assert!(n <= mask.count_ones());
        let mut diff = 0u64;
        while diff.count_ones() < n {
            diff |= (1u64 << (splitmix(s) % 64)) & mask;
        }
        fp ^ diff
    }

    /// Number of distinct clusters in an output.
    fn clusters(out: &[(i64, i64)]) -> usize {
        let mut ids: Vec<i64> = out.iter().map(|&(_, c)| c).collect();
        ids.dedup();
        ids.len()
    }

    /// Random bases with near copies at 1 to k + 2 bits (some just out of
    /// reach), exact duplicates, and chains.
    fn mixed(seed: u64, n: usize, k: u32) -> Vec<u64> {
        let mut s = seed;
        let mut fps = Vec::new();
        while fps.len() < n {
            let base = splitmix(&mut s);
            fps.push(base);
            match splitmix(&mut s) % 5 {
                0 => fps.push(base),
                1 => {
                    for _ in 0..1 + splitmix(&mut s) % 4 {
                        let d = 1 + (splitmix(&mut s) % u64::from(k + 2)) as u32;
                        fps.push(flip(&mut s, base, d.min(64), u64::MAX));
                    }
                }
                2 => {
                    let mut v = base;
                    for _ in 0..4 {
                        v = flip(&mut s, v, k.max(1), u64::MAX);
                        fps.push(v);
                    }
                }
                _ => {}
            }
        }
        fps.truncate(n);
        fps
    }

    #[test]
    fn flip_flips_exactly_n_bits_inside_the_mask() {
        let mut s = 5;
        for n in 0..=12 {
            let fp = splitmix(&mut s);
            let v = flip(&mut s, fp, n, 0x0000_FFFF_0000_0000);
            assert_eq!(hamming(fp, v), n);
            assert_eq!((fp ^ v) & !0x0000_FFFF_0000_0000, 0);
        }
    }

    #[test]
    fn matches_brute_force_on_mixed_sets_for_every_k() {
        for k in 0..=MAX_K {
            let fps = mixed(100 + u64::from(k), 2_000, k);
            let last = check(&keyed(&fps, u64::from(k)), &[k]);
            assert!(last[0].joins > 0 || k == 0, "k = {k}: the data has pairs");
        }
    }

    #[test]
    fn many_identical_fingerprints_collapse() {
        // 3,000 rows over 5 values; at k = 0 exactly 5 clusters, each named
        // by its smallest key, and no pair of distinct values compared.
        let values = [0u64, 0b1111, 0xFFFF << 48, u64::MAX, 0x5555_5555_5555_5555];
        let fps: Vec<u64> = (0..3_000).map(|i| values[i % 5]).collect();
        let rows = keyed(&fps, 1);
        let (out, last) = run(&rows, 0);
        assert_eq!(clusters(&out), 5);
        assert_eq!(last.distinct, 5);
        assert_eq!(last.pairs, 0);
        // Each cluster is named by the smallest key among its value's rows.
        for &v in &values {
            let smallest = rows.iter().filter(|r| r.1 == v).map(|r| r.0).min().unwrap();
            let named: Vec<i64> = rows
                .iter()
                .filter(|r| r.1 == v)
                .map(|r| out.iter().find(|o| o.0 == r.0).unwrap().1)
                .collect();
            assert!(named.iter().all(|&c| c == smallest), "value {v:x}");
            assert_eq!(named.len(), 600);
        }
        // Only 0 and 1111 are within 11 bits: joined from k = 4 on.
        for k in 0..=MAX_K {
            let (out, _) = run(&rows, k);
            assert_eq!(clusters(&out), if k >= 4 { 4 } else { 5 }, "k = {k}");
        }
        check(&rows, &[0, 3, 4, 11]);
    }

    #[test]
    fn differences_inside_one_band() {
        // Every value differs from the others only inside band 2: bands 0,
        // 1 and 3 put them all in one bucket, which must be split by the
        // varying bits rather than compared pair by pair.
        let mut s = 11;
        let base = splitmix(&mut s);
        let mask = 0x0000_0000_FFFF_0000;
        let mut fps: Vec<u64> = (0..1_500)
            .map(|_| base ^ (splitmix(&mut s) & mask))
            .collect();
        for _ in 0..500 {
            let d = 1 + (splitmix(&mut s) % 3) as u32;
            fps.push(flip(&mut s, base, d, mask));
        }
        let rows = keyed(&fps, 2);
        let ks: Vec<u32> = (0..=MAX_K).collect();
        check(&rows, &ks);
    }

    #[test]
    fn chains_join_far_ends() {
        // a ~ b ~ c ~ ... each link exactly k bits, ends far apart.
        let mut s = 3;
        for k in 1..=MAX_K {
            let mut chain = vec![splitmix(&mut s)];
            for _ in 0..12 {
                let last = *chain.last().unwrap();
                // Flip bits no earlier link flipped, so the ends drift apart.
                let mut v = flip(&mut s, last, k, u64::MAX);
                while hamming(v, chain[0]) <= hamming(last, chain[0]) {
                    v = flip(&mut s, last, k, u64::MAX);
                }
                chain.push(v);
            }
            assert!(
                hamming(chain[0], chain[12]) > k,
                "k = {k}: the ends are not neighbours"
            );
            let mut fps = chain.clone();
            fps.extend((0..300).map(|_| splitmix(&mut s)));
            let rows: Vec<(i64, u64)> = fps
                .iter()
                .enumerate()
                .map(|(i, &f)| (i as i64, f))
                .collect();
            let (out, _) = run(&rows, k);
            let of = |key: i64| out.iter().find(|r| r.0 == key).unwrap().1;
            assert!(
                (0..13).all(|i| of(i) == 0),
                "k = {k}: the chain is one cluster"
            );
            // One link short of the chain's step, it falls apart.
            let (out, _) = run(&rows, k - 1);
            let of = |key: i64| out.iter().find(|r| r.0 == key).unwrap().1;
            assert_ne!(of(0), of(12), "k = {}", k - 1);
            check(&rows, &[k - 1, k]);
        }
    }

    #[test]
    fn hot_bucket_of_20000_sharing_band_0() {
        // 20,000 distinct values with identical band 0, plus near copies of
        // some of them. Comparing the hot bucket pair by pair would be 2e8
        // comparisons; the recursion must stay far below that.
        let mut s = 17;
        let mut fps: Vec<u64> = (0..20_000)
            .map(|_| 0xBEEF_0000_0000_0000 | (splitmix(&mut s) >> 16))
            .collect();
        for i in 0..2_000 {
            let d = 1 + (splitmix(&mut s) % 7) as u32;
            let v = flip(&mut s, fps[i * 10], d, 0x0000_FFFF_FFFF_FFFF);
            fps.push(v);
        }
        let rows = keyed(&fps, 3);
        for (k, last) in [3, 7].into_iter().zip(check(&rows, &[3, 7])) {
            let all_pairs = (rows.len() * (rows.len() - 1) / 2) as u64;
            // Measured: 238,571 at k = 3 and 3,076,691 at k = 7.
            assert!(
                last.pairs < all_pairs / 50,
                "k = {k}: {} pairs compared of {all_pairs}",
                last.pairs
            );
        }
    }

    #[test]
    fn two_hot_buckets_one_bit_apart() {
        // Band 0 takes two values one bit apart, 1,500 values each, with
        // copies across them: the neighbouring buckets (k >= 4) are both
        // hot, and their pairs are searched by the two-sided recursion.
        let mut s = 23;
        let mut fps = Vec::new();
        for i in 0..3_000u64 {
            let band0 = if i % 2 == 0 { 0x1234 } else { 0x1235 };
            fps.push(band0 << 48 | (splitmix(&mut s) >> 16));
        }
        for i in 0..600 {
            let v = fps[i * 5] ^ 1 << 48;
            let d = (splitmix(&mut s) % 6) as u32;
            fps.push(flip(&mut s, v, d, 0x0000_FFFF_FFFF_FFFF));
        }
        let rows = keyed(&fps, 4);
        check(&rows, &[1, 3, 4, 5, 7, 8, 11]);
    }

    #[test]
    fn dense_ball_stays_exact_and_cheap() {
        // 4,000 rows within 1 or 2 bits of one centre (pairwise within 4
        // bits, 2,080 possible values): one cluster from k = 2 on, and
        // the search must not compare all their pairs.
        let mut s = 29;
        let centre = splitmix(&mut s);
        let mut fps = Vec::new();
        for _ in 0..4_000 {
            let d = 1 + (splitmix(&mut s) % 2) as u32;
            fps.push(flip(&mut s, centre, d, u64::MAX));
        }
        fps.extend((0..1_000).map(|_| splitmix(&mut s)));
        let rows = keyed(&fps, 5);
        let ks = [1, 2, 3, 4, 6, 9, 11];
        for (k, last) in ks.into_iter().zip(check(&rows, &ks)) {
            let all_pairs = (rows.len() * (rows.len() - 1) / 2) as u64;
            // Measured: 13,468 at k = 1 up to 1,118,987 at k = 11.
            assert!(last.pairs < all_pairs / 8, "k = {k}: {} pairs", last.pairs);
            if k >= 2 {
                let (out, _) = run(&rows, k);
                let ball_keys: Vec<i64> = rows[..4_000].iter().map(|r| r.0).collect();
                let ball: Vec<i64> = out
                    .iter()
                    .filter(|o| ball_keys.contains(&o.0))
                    .map(|o| o.1)
                    .collect();
                assert_eq!(ball.len(), 4_000);
                assert!(ball.iter().all(|&c| c == ball[0]), "k = {k}");
            }
        }
    }

    #[test]
    fn planted_groups_among_random_rows() {
        let mut s = 31;
        for k in [2, 3, 5, 7, 10, 11] {
            let mut fps: Vec<u64> = (0..1_500).map(|_| splitmix(&mut s)).collect();
            let mut planted = Vec::new();
            for g in 0..100 {
                let base = fps[g * 15];
                for _ in 0..2 + splitmix(&mut s) % 4 {
                    let d = 1 + (splitmix(&mut s) % u64::from(k)) as u32;
                    planted.push((g * 15, fps.len()));
                    fps.push(flip(&mut s, base, d, u64::MAX));
                }
            }
            let rows: Vec<(i64, u64)> = fps
                .iter()
                .enumerate()
                .map(|(i, &f)| (i as i64, f))
                .collect();
            let (out, _) = run(&rows, k);
            let mut cluster_of = vec![0i64; rows.len()];
            for &(key, c) in &out {
                cluster_of[key as usize] = c;
            }
            for &(b, c) in &planted {
                assert_eq!(cluster_of[b], cluster_of[c], "k = {k}: copy {c} of {b}");
            }
            check(&rows, &[k]);
        }
    }

    #[test]
    fn k_zero_joins_exact_duplicates_only() {
        let rows = [
            (10, 0b1011u64),
            (4, 0b1010),
            (7, 0b1011),
            (2, 0b1010),
            (9, 0b0000),
        ];
        let (out, _) = run(&rows, 0);
        assert_eq!(out, vec![(2, 2), (4, 2), (7, 7), (10, 7), (9, 9)]);
        // 1011 ~ 1010; 0000 is 2 bits from 1010.
        let (out, _) = run(&rows, 1);
        assert_eq!(out, vec![(2, 2), (4, 2), (7, 2), (10, 2), (9, 9)]);
        let (out, _) = run(&rows, 2);
        assert_eq!(out, vec![(2, 2), (4, 2), (7, 2), (9, 2), (10, 2)]);
    }

    #[test]
    fn every_row_once_even_with_duplicate_keys() {
        // Key 5 twice, on values far apart: two entries, two clusters.
        let rows = [(5, 0u64), (5, u64::MAX), (6, 1), (3, u64::MAX - 1)];
        let (out, _) = run(&rows, 1);
        assert_eq!(out, vec![(3, 3), (5, 3), (5, 5), (6, 5)]);
    }

    #[test]
    fn singletons_can_be_left_out() {
        let rows = [
            (1, 0u64),     // alone
            (2, u64::MAX), // with 3 (same value)
            (3, u64::MAX),
            (4, 0xF0F0), // with 5 (one bit apart)
            (5, 0xF0F1),
            (6, 0x0F0F_0000_0000), // alone
        ];
        let mut r = rows.to_vec();
        let out = Clustering::new(1)
            .singletons(false)
            .run(&mut r, &mut |_| true)
            .unwrap();
        assert_eq!(out, vec![(2, 2), (3, 2), (4, 4), (5, 4)]);
        let mut r = rows.to_vec();
        let all = Clustering::new(1).run(&mut r, &mut |_| true).unwrap();
        assert_eq!(all.len(), 6);
        assert!(all.contains(&(1, 1)) && all.contains(&(6, 6)));
        // Rows are left sorted by (fingerprint, key).
        assert!(r.windows(2).all(|w| (w[0].1, w[0].0) <= (w[1].1, w[1].0)));
    }

    #[test]
    fn empty_and_single_rows() {
        let (out, _) = run(&[], 3);
        assert!(out.is_empty());
        let (out, _) = run(&[(42, 9)], 11);
        assert_eq!(out, vec![(42, 42)]);
    }

    #[test]
    fn distance_above_the_limit_is_refused() {
        let mut rows = vec![(1, 0u64), (2, 1)];
        assert_eq!(
            cluster(&mut rows, MAX_K + 1, &mut |_| true),
            Err(ClusterError::DistanceTooLarge { k: 12, max: 11 })
        );
        assert!(cluster(&mut rows, MAX_K, &mut |_| true).is_ok());
    }

    #[test]
    fn progress_reports_and_can_stop() {
        let mut s = 37;
        let mut rows: Vec<(i64, u64)> = (0..200_000).map(|i| (i, splitmix(&mut s))).collect();
        let mut seen = Vec::new();
        let out = cluster(&mut rows, 7, &mut |p| {
            seen.push(p);
            true
        })
        .unwrap();
        assert_eq!(out.len(), 200_000);
        let phases: Vec<Phase> = seen.iter().map(|p| p.phase).collect();
        assert_eq!(phases.first(), Some(&Phase::Sort));
        assert_eq!(phases.last(), Some(&Phase::Label));
        let search: Vec<&Progress> = seen.iter().filter(|p| p.phase == Phase::Search).collect();
        assert!(search.len() > 100, "called often: {} times", search.len());
        // The four bands in order, buckets and pairs only growing.
        assert_eq!(search.last().unwrap().passes, 4);
        assert_eq!(search.last().unwrap().pass, 3);
        assert!(search.windows(2).all(|w| w[0].pairs <= w[1].pairs));
        assert!(search
            .iter()
            .all(|p| p.buckets_done <= p.buckets && p.distinct == 200_000));

        // Stop at the 50th call.
        let mut calls = 0;
        let r = cluster(&mut rows, 7, &mut |_| {
            calls += 1;
            calls < 50
        });
        assert_eq!(r, Err(ClusterError::Interrupted));
        assert_eq!(calls, 50);
        // Stop before anything is done.
        let r = cluster(&mut rows, 3, &mut |_| false);
        assert_eq!(r, Err(ClusterError::Interrupted));
    }

    #[test]
    fn split_cuts_disjoint_balanced_parts() {
        let bands = vec![0xFFFF << 48, 0xFFFF << 32, 0xFFFF << 16, 0xFFFF];
        assert_eq!(split(u64::MAX, 4), bands);
        assert_eq!(split(u64::MAX, 2), vec![u64::MAX << 32, u64::MAX >> 32]);
        let bits = 0xF0F0_0000_1234_00FFu64;
        for p in 1..=bits.count_ones() {
            let parts = split(bits, p);
            assert_eq!(parts.len(), p as usize);
            assert_eq!(parts.iter().fold(0, |m, p| m | p), bits);
            let sizes: Vec<u32> = parts.iter().map(|p| p.count_ones()).collect();
            assert_eq!(sizes.iter().sum::<u32>(), bits.count_ones());
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            assert!(
                parts.windows(2).all(|w| w[0] > w[1]),
                "most significant first"
            );
        }
    }

    #[test]
    fn plan_is_the_band_index_on_a_million_random_rows() {
        let bands = vec![0xFFFF << 48, 0xFFFF << 32, 0xFFFF << 16, 0xFFFF];
        for k in (3..=MAX_K).filter(|&k| k != 4) {
            let plan = plan(u64::MAX, k, 1_000_000, None);
            assert_eq!(
                plan,
                (bands.clone(), crate::probe::probe_radius(k)),
                "k = {k}"
            );
        }
        // k = 4: five exact parts of 12 and 13 bits (measured as fast as
        // the bands with radius 1, 0.64 s each).
        let (parts, r) = plan(u64::MAX, 4, 1_000_000, None);
        assert_eq!((parts.len(), r), (5, 0));
        // k = 1: two exact halves.
        assert_eq!(
            plan(u64::MAX, 1, 1_000_000, None),
            (vec![u64::MAX << 32, u64::MAX >> 32], 0)
        );
        // A hot bucket of a million sharing band 0, at k = 7: the other 48
        // bits in three 16-bit parts, radius 2.
        let low = u64::MAX >> 16;
        assert_eq!(
            plan(low, 7, 1_000_000, None),
            (vec![0xFFFF << 32, 0xFFFF << 16, 0xFFFF], 2)
        );
    }

    #[test]
    fn every_plan_satisfies_the_pigeonhole() {
        // p parts of radius r find every pair within b when (r + 1) p > b.
        let mut s = 41;
        for _ in 0..300 {
            let bits = splitmix(&mut s) & splitmix(&mut s) | 1;
            let budget = (splitmix(&mut s) % 12) as u32;
            if bits.count_ones() <= budget {
                continue;
            }
            let n = 1 + (splitmix(&mut s) % 2_000_000) as usize;
            let m = splitmix(&mut s).is_multiple_of(3).then(|| 1 + n / 3);
            let (parts, r) = plan(bits, budget, n, m);
            assert_eq!(parts.iter().fold(0, |x, p| x | p), bits);
            assert!(
                (r + 1) * parts.len() as u32 > budget,
                "{bits:x} b = {budget}"
            );
        }
    }

    /// A search over `n` distinct values with ids `0..n`, and a fresh
    /// union-find.
    fn searcher<'p, P: FnMut(Progress) -> bool>(
        k: u32,
        n: usize,
        planner: Planner,
        progress: &'p mut P,
    ) -> Search<'p, P> {
        Search {
            k,
            uf: UnionFind::new(n),
            plan: planner,
            progress,
            state: Progress {
                phase: Phase::Search,
                rows: n,
                distinct: n,
                pass: 0,
                passes: 0,
                buckets_done: 0,
                buckets: 0,
                pairs: 0,
                joins: 0,
            },
            work: 0,
        }
    }

    /// Each id's component, named by its smallest id.
    fn partition(uf: &mut UnionFind) -> Vec<u32> {
        let n = uf.parent.len();
        let mut smallest = vec![u32::MAX; n];
        for i in 0..n as u32 {
            let r = uf.find(i) as usize;
            smallest[r] = smallest[r].min(i);
        }
        (0..n as u32)
            .map(|i| smallest[uf.find(i) as usize])
            .collect()
    }

    #[test]
    fn two_sided_search_joins_exactly_the_cross_pairs_within_k() {
        // Two big sets that differ in `f` fixed bits outside the 24 bits
        // they vary in, with copies across. Called directly, the two-sided
        // search has no other route to a pair: each one it misses, or joins
        // wrongly, shows in the partition.
        let mut s = 43;
        let mask = 0x0000_00FF_FFFF_0000u64;
        for (k, f) in [(3, 0), (3, 2), (5, 1), (7, 2), (8, 0), (11, 3), (11, 6)] {
            let base_a = splitmix(&mut s);
            let base_b = flip(&mut s, base_a, f, !mask);
            let mut a: Vec<u64> = (0..150)
                .map(|_| base_a ^ (splitmix(&mut s) & mask))
                .collect();
            let mut b: Vec<u64> = (0..100)
                .map(|_| base_b ^ (splitmix(&mut s) & mask))
                .collect();
            for &x in &a[..100] {
                let d = (splitmix(&mut s) % u64::from(k + 2)) as u32;
                b.push(flip(&mut s, x ^ base_a ^ base_b, d, mask));
            }
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            let mut want = UnionFind::new(a.len() + b.len());
            for (i, &x) in a.iter().enumerate() {
                for (j, &y) in b.iter().enumerate() {
                    if hamming(x, y) <= k {
                        want.union(i as u32, (a.len() + j) as u32);
                    }
                }
            }
            let want = partition(&mut want);
            assert!(
                want.iter().enumerate().any(|(i, &c)| c as usize != i),
                "k = {k}: pairs exist"
            );
            for (name, planner) in PLANNERS {
                let mut yes = |_| true;
                let mut search = searcher(k, a.len() + b.len(), planner, &mut yes);
                let mut items_a: Vec<Item> = a
                    .iter()
                    .enumerate()
                    .map(|(i, &fp)| Item { fp, id: i as u32 })
                    .collect();
                let mut items_b: Vec<Item> = b
                    .iter()
                    .enumerate()
                    .map(|(j, &fp)| Item {
                        fp,
                        id: (a.len() + j) as u32,
                    })
                    .collect();
                search.pair(&mut items_a, &mut items_b).unwrap();
                assert_eq!(partition(&mut search.uf), want, "k = {k}, f = {f}, {name}");
            }
        }
    }

    #[test]
    fn two_sided_search_spends_the_fixed_bits_of_the_budget() {
        // A: the 67 values within 2 bits of 0 in 11 bits; B: the 67 within
        // 2 bits of all ones there, and 5 more bits apart outside them.
        // Every cross pair is at least 7 + 5 = 12 apart: nothing joins at
        // k = 11, although the sets vary in only 11 bits.
        let v = 0x7FFu64 << 20;
        let low: Vec<u64> = (0..1u64 << 11)
            .map(|x| x << 20)
            .filter(|x| x.count_ones() <= 2)
            .collect();
        let a: Vec<Item> = low
            .iter()
            .enumerate()
            .map(|(i, &fp)| Item { fp, id: i as u32 })
            .collect();
        let b: Vec<Item> = low
            .iter()
            .enumerate()
            .map(|(j, &fp)| Item {
                fp: (fp ^ v) | 0b11111,
                id: (low.len() + j) as u32,
            })
            .collect();
        assert_eq!(a.len(), 67);
        for (name, planner) in PLANNERS {
            let mut yes = |_| true;
            let mut search = searcher(11, 134, planner, &mut yes);
            search.pair(&mut a.clone(), &mut b.clone()).unwrap();
            assert_eq!(search.state.joins, 0, "{name}");
            // One bit fewer apart outside: the pairs of two disjoint bits
            // in A and B (7 + 4 = 11 apart) join, and nothing else.
            let mut b4 = b.clone();
            b4.iter_mut().for_each(|it| it.fp &= !1);
            let mut want = UnionFind::new(134);
            for x in &a {
                for y in &b4 {
                    if hamming(x.fp, y.fp) <= 11 {
                        want.union(x.id, y.id);
                    }
                }
            }
            let want = partition(&mut want);
            let mut search = searcher(11, 134, planner, &mut yes);
            search.pair(&mut a.clone(), &mut b4).unwrap();
            assert!(search.state.joins > 0, "{name}");
            assert_eq!(partition(&mut search.uf), want, "{name}");
        }
    }

    #[test]
    fn a_set_varying_in_at_most_k_bits_is_joined_without_comparing() {
        // All 128 values of a 7-bit cube: at k = 7 every pair is within k,
        // so the set is joined in one pass; at k = 6 it is searched.
        let cube: Vec<Item> = (0..128u32)
            .map(|x| Item {
                fp: 0xABCD_0000_0000_0000 | u64::from(x) << 9,
                id: x,
            })
            .collect();
        for (k, compared) in [(7, false), (6, true)] {
            let mut yes = |_| true;
            let mut search = searcher(k, 128, plan, &mut yes);
            search.set(&mut cube.clone(), 1).unwrap();
            assert_eq!(search.state.joins, 127);
            assert_eq!(search.state.pairs > 0, compared, "k = {k}");
        }
    }

    #[test]
    fn patterns_are_the_submasks_within_the_radius() {
        let mask = 0xFFFF << 16;
        assert!(patterns(mask, 0).is_empty());
        assert_eq!(patterns(mask, 1).len(), 16);
        assert_eq!(patterns(mask, 2).len(), 136);
        let mut p = patterns(0b1011_0000, 2);
        p.sort_unstable();
        assert_eq!(
            p,
            vec![
                0b1_0000,
                0b10_0000,
                0b11_0000,
                0b1000_0000,
                0b1001_0000,
                0b1010_0000
            ]
        );
    }
}
