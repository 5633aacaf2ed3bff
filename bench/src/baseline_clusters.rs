//! The first clustering of the extension (versions up to 0.1), kept here
//! only as the baseline `cluster-throughput --compare` measures the
//! current `simhash_core::cluster` against. Its tests went with it; the
//! bench checks that both give the same number of clusters.
//!
//! Connected components of the graph "Hamming distance <= k" over a set of
//! fingerprints: whole-table near-duplicate clustering.
//!
//! Candidate pairs come from buckets, never from all pairs. Equal
//! fingerprints are collapsed first (one sort). Then, for the distinct
//! values, split the 64 bits into `k + 1` chunks: two fingerprints within
//! `k` differ in at most `k` bits, so at least one chunk holds none of them
//! and they fall into the same bucket when grouped by that chunk. Inside a
//! bucket the chunk's bits are equal, so the same rule applies again to the
//! remaining bits, with `k + 1` smaller chunks; buckets are split this way
//! until they hold at most [`PAIRWISE`] values, whose pairs are then
//! compared. For `k = 3` the first split is the four 16-bit bands of the
//! band index. A hot bucket (thousands of values sharing one band) is thus
//! split further rather than compared pair by pair; what cannot be split is
//! a set of values that agree on all but a few bits, which is a dense
//! cluster, and pairs already in one component are not compared again.
//!
//! Memory: 8 bytes per input row for the sorted values, 4 for the mapping
//! back, 8 per distinct value for the union-find, plus one bucket's index
//! list per recursion level.

use simhash_core::hamming;

/// Buckets of at most this many values compare all their pairs.
pub const PAIRWISE: usize = 32;

/// The largest `k` clustered: beyond it every row has too many chunks
/// (`k + 1` per level) for the splitting to stay near linear.
pub const MAX_CLUSTER_K: u32 = 7;

/// Progress, handed to the caller's callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Distinct fingerprints.
    pub distinct: usize,
    /// Top-level chunks done, out of `k + 1`.
    pub chunks_done: u32,
    /// Pairs compared so far.
    pub pairs: u64,
}

/// The callback asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n as u32).collect(),
        }
    }
    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand; // path halving
            x = grand;
        }
        x
    }
    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        // The smaller index becomes the root: roots are the smallest values.
        if ra < rb {
            self.parent[rb as usize] = ra;
        } else if rb < ra {
            self.parent[ra as usize] = rb;
        }
    }
}

struct Search<'a, F> {
    values: &'a [u64],
    k: u32,
    uf: UnionFind,
    pairs: u64,
    ticks: u64,
    progress: F,
    chunks_done: u32,
}

/// The positions of the set bits of `mask`, cut into `parts` runs of about
/// equal size (fewer when there are fewer bits).
fn chunks(mask: u64, parts: u32) -> Vec<u64> {
    let bits: Vec<u32> = (0..64).filter(|b| mask >> b & 1 == 1).collect();
    let parts = (parts as usize).min(bits.len()).max(1);
    let mut out = Vec::with_capacity(parts);
    for p in 0..parts {
        let (from, to) = (p * bits.len() / parts, (p + 1) * bits.len() / parts);
        out.push(bits[from..to].iter().fold(0u64, |m, b| m | 1 << b));
    }
    out
}

impl<F: FnMut(Progress) -> bool> Search<'_, F> {
    fn tick(&mut self, work: u64) -> Result<(), Interrupted> {
        self.ticks += work;
        if self.ticks >= 1 << 16 {
            self.ticks = 0;
            let p = Progress {
                distinct: self.values.len(),
                chunks_done: self.chunks_done,
                pairs: self.pairs,
            };
            if !(self.progress)(p) {
                return Err(Interrupted);
            }
        }
        Ok(())
    }

    /// Unions every pair within `k` among `items`, which agree on every bit
    /// outside `free`.
    fn solve(&mut self, items: &mut [u32], free: u64, top: bool) -> Result<(), Interrupted> {
        if items.len() <= PAIRWISE || free.count_ones() <= self.k {
            return self.pairwise(items);
        }
        for chunk in chunks(free, self.k + 1) {
            let values = self.values;
            items.sort_unstable_by_key(|&i| values[i as usize] & chunk);
            let mut start = 0;
            while start < items.len() {
                let key = values[items[start] as usize] & chunk;
                let mut end = start + 1;
                while end < items.len() && values[items[end] as usize] & chunk == key {
                    end += 1;
                }
                if end - start > 1 {
                    let mut bucket = items[start..end].to_vec();
                    self.solve(&mut bucket, free & !chunk, false)?;
                }
                self.tick((end - start) as u64)?;
                start = end;
            }
            if top {
                self.chunks_done += 1;
            }
        }
        Ok(())
    }

    fn pairwise(&mut self, items: &[u32]) -> Result<(), Interrupted> {
        for (x, &a) in items.iter().enumerate() {
            for &b in &items[x + 1..] {
                if self.uf.find(a) != self.uf.find(b) {
                    self.pairs += 1;
                    if hamming(self.values[a as usize], self.values[b as usize]) <= self.k {
                        self.uf.union(a, b);
                    }
                }
            }
            self.tick(items.len() as u64)?;
        }
        Ok(())
    }
}

/// The component of each fingerprint: `labels[i] == labels[j]` exactly when
/// `fps[i]` and `fps[j]` are joined by a chain of pairs within distance
/// `k`. A label is the index of the first input row of the component, so
/// rows sorted by key give each cluster its smallest key as label when the
/// caller passes them in key order. `k` above [`MAX_CLUSTER_K`] is `None`.
/// `progress` is called every 65,536 units of work and stops the search by
/// returning `false`.
pub fn components(
    fps: &[u64],
    k: u32,
    progress: impl FnMut(Progress) -> bool,
) -> Option<Result<Vec<u32>, Interrupted>> {
    if k > MAX_CLUSTER_K {
        return None;
    }
    // Collapse equal fingerprints: sort positions by value.
    let mut order: Vec<u32> = (0..fps.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (fps[i as usize], i));
    let mut values: Vec<u64> = Vec::new();
    let mut value_of = vec![0u32; fps.len()];
    let mut first_row: Vec<u32> = Vec::new(); // smallest row index per value
    for &i in &order {
        let v = fps[i as usize];
        if values.last() != Some(&v) {
            values.push(v);
            first_row.push(i);
        }
        value_of[i as usize] = (values.len() - 1) as u32;
    }
    drop(order);
    let mut search = Search {
        values: &values,
        k,
        uf: UnionFind::new(values.len()),
        pairs: 0,
        ticks: 0,
        progress,
        chunks_done: 0,
    };
    let mut items: Vec<u32> = (0..values.len() as u32).collect();
    if let Err(e) = search.solve(&mut items, u64::MAX, true) {
        return Some(Err(e));
    }
    // Label each component by its smallest row index.
    let mut uf = search.uf;
    let mut label = vec![u32::MAX; values.len()];
    for v in 0..values.len() as u32 {
        let r = uf.find(v) as usize;
        label[r] = label[r].min(first_row[v as usize]);
    }
    Some(Ok(value_of
        .iter()
        .map(|&v| label[uf.find(v) as usize])
        .collect()))
}
