//! Definition version 1 (and the tokens of version 2): jieba's tokens,
//! each weighed by its IDF once per occurrence. The definitions are
//! described in [`super`].

use xxhash_rust::xxh3::xxh3_64;

use super::{Fingerprinter, Interrupted, Version, HAN_BATCH_BYTES, HASH_BATCH};
use crate::accumulate::Accumulator;
use crate::text::{for_each_piece_mapped, Piece, MAX_PIECE_CHARS};

impl Fingerprinter {
    /// Version 1: each token as it comes, its IDF added once per
    /// occurrence, a batch of hashes at a time ([`Self::add_all`]).
    pub(super) fn fingerprint_v1(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        let mut acc = Accumulator::new();
        let mut hashes = Vec::with_capacity(HASH_BATCH);
        self.for_each_token(text, go_on, |token| {
            hashes.push(xxh3_64(token.as_bytes()));
            if hashes.len() == HASH_BATCH {
                self.add_all(&mut acc, &hashes);
                hashes.clear();
            }
        })?;
        self.add_all(&mut acc, &hashes);
        Ok(acc.finish())
    }

    pub(super) fn tokens_mapped(
        &self,
        text: &str,
        map: impl Fn(char) -> char,
        mut go_on: impl FnMut() -> bool,
        mut emit: impl FnMut(&str),
    ) -> Result<(), Interrupted> {
        let mut batch = String::with_capacity(HAN_BATCH_BYTES + 4 * MAX_PIECE_CHARS);
        let cut = |batch: &mut String, emit: &mut dyn FnMut(&str)| {
            for token in self.jieba.cut(batch, true) {
                if token.word != "\n" {
                    emit(token.word);
                }
            }
            batch.clear();
        };
        let finished = for_each_piece_mapped(text, map, |piece: Piece<'_>| {
            if piece.has_han {
                if !batch.is_empty() {
                    batch.push('\n');
                }
                batch.push_str(piece.text);
                if batch.len() < HAN_BATCH_BYTES {
                    return true;
                }
                cut(&mut batch, &mut emit);
            } else {
                // Keep text order: what is batched goes first.
                if !batch.is_empty() {
                    cut(&mut batch, &mut emit);
                }
                emit(piece.text);
            }
            go_on()
        });
        if !finished {
            return Err(Interrupted);
        }
        if !batch.is_empty() {
            cut(&mut batch, &mut emit);
        }
        Ok(())
    }

    /// The fixed-point weight of one occurrence of a token under `version`
    /// (versions 1 and 2; version 3 weighs a feature by [`Self::weight_v3`]).
    #[inline]
    pub(super) fn weight(&self, version: Version, hash: u64) -> i64 {
        match version {
            Version::V1 => self.idf.weight(hash),
            Version::V2 | Version::V3 => self.idf.get(hash).unwrap_or(self.oov_weight),
        }
    }

    /// Looks up the weights of a batch of feature hashes, then adds them.
    /// Apart from segmentation, which evicts the IDF table from the caches
    /// between tokens, the lookups are independent loads the CPU overlaps:
    /// measured 2.4 times faster than looking each one up as it is cut.
    pub(super) fn add_all(&self, acc: &mut Accumulator, hashes: &[u64]) {
        let mut weights = [0i64; HASH_BATCH];
        for (w, &h) in weights.iter_mut().zip(hashes) {
            *w = self.idf.weight(h);
        }
        for (&h, &w) in hashes.iter().zip(&weights) {
            acc.add(h, w);
        }
    }
}
