//! Definition version 2: version 1's tokens of the folded text, each
//! distinct one weighed `min(tf, 3)` times, counted in bounded memory.
//! The definitions are described in [`super`].

use xxhash_rust::xxh3::xxh3_64;

use super::{Fingerprinter, Interrupted, Version, HASH_BATCH, V2_TF_CAP};
use crate::accumulate::Accumulator;
use crate::part::Part;

impl Fingerprinter {
    /// Version 2: fold, count each feature, then add `min(tf, 3)` times
    /// its weight, with at most `bound` token hashes held at once: when
    /// `bound` are held they are sorted and each kept at most
    /// [`V2_TF_CAP`] times (all that it can count), and while more than
    /// half the bound is still held, the part of the hash space being
    /// counted is cut and the rest left for later walks over the text
    /// ([`crate::part`]). The fingerprint does not depend on the bound.
    pub(super) fn fingerprint_v2(
        &self,
        text: &str,
        mut go_on: impl FnMut() -> bool,
        bound: usize,
    ) -> Result<Option<u64>, Interrupted> {
        // A part of one hash holds it at most 3 times: a bound of 8 always
        // leaves room after a cut.
        let bound = bound.max(2 * (V2_TF_CAP as usize + 1));
        let mut acc = Accumulator::new();
        let mut hashes: Vec<u64> = Vec::new();
        let mut part = Part::ALL;
        loop {
            hashes.clear();
            self.for_each_token_as(Version::V2, text, &mut go_on, |token| {
                let h = xxh3_64(token.as_bytes());
                if !part.contains(h) {
                    return;
                }
                if hashes.len() >= bound {
                    keep_what_v2_counts(&mut hashes);
                    while hashes.len() > bound / 2 && part.can_split() {
                        part = part.first_half();
                        hashes.retain(|&h| part.contains(h));
                    }
                    if !part.contains(h) {
                        return;
                    }
                }
                hashes.push(h);
            })?;
            // Equal hashes side by side: one lookup and one add per
            // distinct feature (a sort of a few hundred values costs less
            // than a hash map, and integer sums do not depend on the
            // order, nor on which part a feature was counted in).
            if part.is_last() {
                hashes.sort_unstable();
                self.add_sorted_v2(&mut acc, &hashes);
                return Ok(acc.finish());
            }
            keep_what_v2_counts(&mut hashes);
            self.add_sorted_v2(&mut acc, &hashes);
            // The next walks hold what fits without a cut.
            part = part.next(hashes.len(), bound / 2 / 10 * 9);
        }
    }

    /// Adds sorted version 2 token hashes: each distinct hash once, with
    /// `min(tf, 3)` times its weight. The weights of a batch of distinct
    /// hashes are looked up in one pass of independent loads (as
    /// [`Self::add_all`] does), then added.
    fn add_sorted_v2(&self, acc: &mut Accumulator, sorted: &[u64]) {
        let mut runs = sorted.chunk_by(|a, b| a == b);
        let mut batch = [(0u64, 0i64); HASH_BATCH];
        let mut weights = [0i64; HASH_BATCH];
        loop {
            let mut n = 0;
            for (slot, run) in batch.iter_mut().zip(runs.by_ref()) {
                *slot = (run[0], (run.len() as u64).min(V2_TF_CAP) as i64);
                n += 1;
            }
            if n == 0 {
                return;
            }
            for (w, &(h, _)) in weights.iter_mut().zip(&batch[..n]) {
                *w = self.weight(Version::V2, h);
            }
            for (&(h, tf), &w) in batch[..n].iter().zip(&weights) {
                acc.add(h, w * tf);
            }
        }
    }
}

/// Sorts `hashes` and keeps each value at most [`V2_TF_CAP`] times: all
/// that version 2 counts of it.
fn keep_what_v2_counts(hashes: &mut Vec<u64>) {
    hashes.sort_unstable();
    let mut last = None;
    let mut run = 0;
    hashes.retain(|&h| {
        if last == Some(h) {
            run += 1;
        } else {
            last = Some(h);
            run = 1;
        }
        run <= V2_TF_CAP
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_2_keeps_a_hash_at_most_three_times() {
        let mut h = vec![5, 1, 5, 5, 2, 5, 1, 9, 5, 2, 2, 2, 2];
        keep_what_v2_counts(&mut h);
        assert_eq!(h, [1, 1, 2, 2, 2, 5, 5, 5, 9]);
    }
}
