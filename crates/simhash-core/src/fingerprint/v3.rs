//! Definition version 3: Han characters and the character trigrams of
//! other words, each distinct one weighed against chance. The plain walk
//! ([`Fingerprinter::walk_v3`]) and the general path (a hash map, parts of
//! the hash space) are the definition as written; the table's hot path
//! ([`super::dense`]) gives the same bits, and is tried first. The
//! definitions are described in [`super`].

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use xxhash_rust::xxh3::xxh3_64;

use super::dense;
use super::scan::Stop;
use super::settings::{Kind, V3Options};
use super::{BytesError, Fingerprinter, Interrupted, V3_MAX_COUNTED};
use crate::accumulate::Accumulator;
use crate::idf::PassThrough;
use crate::part::Part;
use crate::text::{for_each_piece_mapped, is_han, Piece, MAX_PIECE_CHARS};

/// A version 3 feature as [`Fingerprinter::walk_v3`] hands it on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum V3Feature<'a> {
    /// A Han character.
    Han(char),
    /// A trigram of a run of other word characters.
    Gram(&'a str),
}

impl Fingerprinter {
    /// What version 3's hot path ([`dense`]) reads of this fingerprinter.
    pub(super) fn dense_parts(&self) -> dense::Parts<'_> {
        dense::Parts {
            fold: &self.fold,
            fast: &self.fast,
            dense: &self.dense,
            self_info: &self.self_info,
            simd: self.simd,
        }
    }

    /// Version 3's features of `text`, in text order, each with its kind:
    /// after version 2's normalization and fold, every Han character, and
    /// the character trigrams of every run of other word characters with
    /// `^` before it and `$` after it (a run of one character gives the one
    /// feature `^x$`, `ab` gives `^ab` and `ab$`). `go_on` is called
    /// between pieces.
    pub fn features_v3(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
        mut emit: impl FnMut(Kind, &str),
    ) -> Result<(), Interrupted> {
        let mut buf = [0u8; 4];
        self.walk_v3(text, go_on, |feature| match feature {
            V3Feature::Han(c) => emit(Kind::Han, c.encode_utf8(&mut buf)),
            V3Feature::Gram(g) => emit(Kind::Gram, g),
        })
    }

    /// [`Self::features_v3`] with each Han character handed on as a
    /// `char`, so that a caller can count it without hashing it.
    pub(crate) fn walk_v3(
        &self,
        text: &str,
        mut go_on: impl FnMut() -> bool,
        mut emit: impl FnMut(V3Feature<'_>),
    ) -> Result<(), Interrupted> {
        let mut word: Vec<char> = Vec::with_capacity(MAX_PIECE_CHARS + 2);
        let mut gram = String::with_capacity(16);
        // `word` holds `^` and the run so far: with `$` it is at least
        // three characters long, so a run of one character is the one
        // trigram `^a$`.
        let mut flush = |word: &mut Vec<char>, emit: &mut dyn FnMut(V3Feature<'_>)| {
            if word.is_empty() {
                return;
            }
            word.push('$');
            for g in word.windows(3) {
                gram.clear();
                for &c in g {
                    gram.push(c);
                }
                emit(V3Feature::Gram(&gram));
            }
            word.clear();
        };
        let finished = for_each_piece_mapped(
            text,
            |c| self.fold.char(c),
            |piece: Piece<'_>| {
                for c in piece.text.chars() {
                    if is_han(c) {
                        flush(&mut word, &mut emit);
                        emit(V3Feature::Han(c));
                    } else {
                        if word.is_empty() {
                            word.push('^');
                        }
                        word.push(c);
                    }
                }
                flush(&mut word, &mut emit);
                go_on()
            },
        );
        if finished {
            Ok(())
        } else {
            Err(Interrupted)
        }
    }

    /// Version 3: count each feature, weigh it against chance, add it once.
    pub(super) fn fingerprint_v3(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
        bound: usize,
    ) -> Result<Option<u64>, Interrupted> {
        self.fingerprint_v3_bounded(&V3Options::DEFINITION, text, go_on, bound)
    }

    /// Version 3's method with other settings: for measuring a candidate
    /// change on the detection-quality yardstick (`bench/quality`), never
    /// for stored fingerprints. [`V3Options::DEFINITION`] is version 3.
    pub fn fingerprint_v3_with(
        &self,
        opts: &V3Options,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        self.fingerprint_v3_bounded(opts, text, go_on, V3_MAX_COUNTED)
    }

    /// Version 3 with at most `bound` distinct features counted at once.
    ///
    /// Each distinct feature is counted in a hash table, (count, kind) by
    /// hash (a Han character and a trigram with the same 64-bit hash add
    /// up as one feature, of the kind seen first), with how many features
    /// of each kind the text has. Its weight depends only on its own count
    /// and those totals, and the fixed-point weights add up to the same
    /// sum in any order, so a part of the hash space can be counted and
    /// weighed at a time ([`crate::part`]): when the table holds more than
    /// `bound` features, the part being counted is halved until at most
    /// half the bound is left, and what was cut off is counted by later
    /// walks over the text, each over the part after the last one, sized
    /// to fill nine tenths of the bound. Natural text takes one walk.
    ///
    /// When no feature weighs above zero, the weights are taken
    /// regardless of chance instead ([`Self::weigh_v3_regardless`]): those
    /// are added up beside the others until a feature weighs above zero,
    /// and used if none does.
    pub(super) fn fingerprint_v3_bounded(
        &self,
        opts: &V3Options,
        text: &str,
        mut go_on: impl FnMut() -> bool,
        bound: usize,
    ) -> Result<Option<u64>, Interrupted> {
        let bound = bound.max(2);
        match dense::fingerprint_v3(self.dense_parts(), opts, text.as_bytes(), &mut go_on, bound) {
            Ok(Some(fp)) => Ok(fp),
            Ok(None) => self.fingerprint_v3_general(opts, text, go_on, bound),
            Err(Stop::Interrupted) => Err(Interrupted),
            Err(Stop::NotUtf8) => unreachable!("a str is UTF-8"),
        }
    }

    /// Version 3 of `text` through its hot path up to a stage, for the
    /// stage profile (`bench/src/bin/fingerprint_stages.rs`): 0 the scan
    /// and the counts, 1 and the weights, 2 and the counters. What it
    /// returns is only something to keep alive (the fingerprint at 2);
    /// `None` for a text the hot path does not take.
    #[doc(hidden)]
    pub fn profile_v3(&self, text: &str, stage: u8) -> Option<u64> {
        let stage = match stage {
            0 => dense::Stage::Scan,
            1 => dense::Stage::Weigh,
            _ => dense::Stage::All,
        };
        let opts = &V3Options::DEFINITION;
        dense::fingerprint_v3_to(
            self.dense_parts(),
            opts,
            text.as_bytes(),
            &mut || true,
            V3_MAX_COUNTED,
            stage,
            self.simd,
        )
        .ok()
        .flatten()
        .flatten()
    }

    /// Version 3 of `text` by the definition's plain path alone: every
    /// feature walked as a string, hashed and counted in a hash map, with
    /// scalar weights and counters; none of the dense table, the byte scan,
    /// the vector instructions of [`Self::with_simd`] or any per-thread
    /// state. The same bits as [`Self::fingerprint_as`] with
    /// [`Version::V3`]: the oracle that the fuzz targets (`fuzz/`) and the
    /// property tests hold every fast path to, not for production use.
    #[doc(hidden)]
    pub fn fingerprint_v3_reference(&self, text: &str) -> Option<u64> {
        match self.fingerprint_v3_general(&V3Options::DEFINITION, text, || true, V3_MAX_COUNTED) {
            Ok(fp) => fp,
            Err(Interrupted) => unreachable!("nothing interrupts this walk"),
        }
    }

    /// [`Self::fingerprint_v3_bounded`] without the table of
    /// [`dense`]: every feature counted in a hash map, the hash space
    /// split into parts when there are too many.
    pub(super) fn fingerprint_v3_general(
        &self,
        opts: &V3Options,
        text: &str,
        mut go_on: impl FnMut() -> bool,
        bound: usize,
    ) -> Result<Option<u64>, Interrupted> {
        // Counts saturate, which changes nothing: a weighing counts at
        // most `Weighing::cap`, a `u32`, occurrences.
        let mut counts: HashMap<u64, (u32, Kind), BuildHasherDefault<PassThrough>> =
            HashMap::default();
        let mut acc = Accumulator::new();
        let mut fallback = Accumulator::new();
        let mut positive = false;
        let mut part = Part::ALL;
        loop {
            counts.clear();
            let mut totals = [0u64; 2];
            self.features_v3(text, &mut go_on, |kind, f| {
                totals[kind as usize] += 1;
                let h = xxh3_64(f.as_bytes());
                if !part.contains(h) {
                    return;
                }
                let tf = &mut counts.entry(h).or_insert((0, kind)).0;
                *tf = tf.saturating_add(1);
                if counts.len() > bound {
                    while counts.len() > bound / 2 && part.can_split() {
                        part = part.first_half();
                        counts.retain(|&h, _| part.contains(h));
                    }
                    // Into a smaller table: the deleted entries would stay
                    // as tombstones, and the table grow past the bound.
                    counts.shrink_to_fit();
                }
            })?;
            self.self_info.add_counted(
                opts,
                &counts,
                totals,
                &mut acc,
                &mut fallback,
                &mut positive,
            );
            if part.is_last() {
                break;
            }
            // The next walks fill the table to nine tenths of the bound.
            part = part.next(counts.len(), bound / 10 * 9);
        }
        // No feature at all: both are empty, and `finish` says None.
        Ok(if positive {
            acc.finish()
        } else {
            fallback.finish()
        })
    }

    /// [`Self::fingerprint_bytes_checked_as`] under version 3: the table's
    /// path checks the bytes while it reads them; when it says no (more
    /// features than it counts at once, or a collision), straight to the
    /// map, not a second scan.
    pub(super) fn fingerprint_bytes_v3(
        &self,
        bytes: &[u8],
        mut go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, BytesError> {
        let opts = &V3Options::DEFINITION;
        match dense::fingerprint_v3(self.dense_parts(), opts, bytes, &mut go_on, V3_MAX_COUNTED) {
            Ok(Some(fp)) => return Ok(fp),
            Err(Stop::Interrupted) => return Err(BytesError::Interrupted),
            Err(Stop::NotUtf8) => return Err(BytesError::NotUtf8),
            Ok(None) => {}
        }
        let text = std::str::from_utf8(bytes).map_err(|_| BytesError::NotUtf8)?;
        self.fingerprint_v3_general(&V3Options::DEFINITION, text, go_on, V3_MAX_COUNTED)
            .map_err(|Interrupted| BytesError::Interrupted)
    }
}
