//! An exact similarity of two texts, to verify what the fingerprint finds.
//!
//! A 64-bit fingerprint places a copy with 5% of its characters edited and
//! one with 10% edited at overlapping distances, so no Hamming threshold
//! tells them apart. The fingerprint finds candidates (distance at most
//! `k`); this module decides between them by comparing the texts
//! themselves.
//!
//! # Definition
//!
//! 1. Each text is normalized exactly as the fingerprint normalizes it
//!    (versions 2 and 3, [`crate::text`] and [`crate::fold`]): Unicode NFKC
//!    over the whole text, each character to its lower case with no
//!    context rule, and each word character (`char::is_alphanumeric`)
//!    folded from traditional to simplified by the shipped table.
//! 2. The *stream* is the normalized word characters in text order, each
//!    maximal run of other characters (white space, punctuation, symbols)
//!    replaced by one space, a run at the start or at the end dropped.
//!    Format characters (Unicode category Cf: zero-width spaces and
//!    joiners, the soft hyphen, bidirectional controls, the byte order
//!    mark, tags; [`is_format`]) are dropped before that: they neither
//!    join nor separate, so `co\u{200B}py` is `copy`. (The fingerprint's
//!    definition reads them as separators.) The
//!    fingerprint's cut of long pieces every
//!    [`crate::text::MAX_PIECE_CHARS`] characters is not part of it.
//! 3. The *grams* are the [`N`] = 3 consecutive characters at every
//!    position of the stream: `len - 2` of them. A stream of one or two
//!    characters is one gram, the whole stream (so it matches only an
//!    equal stream); an empty stream (a text without a word character)
//!    has no gram.
//! 4. The similarity is the weighted containment of the smaller text:
//!    `sum over grams g of min(count_a(g), count_b(g))` divided by
//!    `min(total_a, total_b)`, the number of grams of the text with fewer.
//!    Two texts without grams are 1.0 (they normalize to the same empty
//!    stream); one without grams and one with are 0.0.
//!
//! Both the sum of minima and the smaller total are symmetric, so
//! `similarity(a, b) == similarity(b, a)` exactly, whichever text the
//! computation happens to hold in memory. A copy with a footer appended
//! keeps a similarity near 1 (its original is all contained); a text
//! whose every tenth character changed falls to about 0.7, as each change
//! breaks the three grams around it.
//!
//! The rule this is measured for, a fingerprint distance of at most `k`
//! and a similarity of at least a threshold, is chosen in `bench/quality`
//! (`results.md`, "Verified by similarity"): k = 11 and 0.71 there, where
//! every edit up to 10% of the characters counts as a copy (10%
//! substitutions score about 0.73, 5% about 0.86, a footer, punctuation,
//! width or script changes 1.00).
//!
//! # Cost
//!
//! Each text is read once (twice or more only past [`MAX_COUNTED`]
//! distinct grams, see [`similarity_bytes_checked`]). A gram is three
//! code points of 21 bits packed into one `u64`, so grams are compared
//! exactly, with no hash collision, and nothing is allocated per gram;
//! one table of counts, reused by each thread, holds the grams of the
//! shorter text.
//!
//! Measured (bench `similarity-speed`: 2,000 pairs of neighbouring texts,
//! one core): 3.0 ns per byte of Chinese news and 8.1 of English
//! documents, against 1.5 and 1.8 for fingerprinting both texts of each
//! pair: 2.0 and 4.5 times the fingerprint's cost, which is tuned far
//! harder (table-driven scan of the bytes, dense counts). A table of our
//! own (linear probing, stamped slots) with a byte-level scan and a dense
//! table of ASCII trigrams measured slower, 5.3 and 9.6 ns per byte, so
//! the standard hash map stays.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::OnceLock;

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
use xxhash_rust::xxh3::xxh3_64;

use crate::fold::Fold;
use crate::idf::PassThrough;
use crate::part::Part;

/// The gram length of the definition: character trigrams. 4- and 5-grams
/// and 5-gram Jaccard were measured beside it ([`Measure`],
/// `bench/quality`).
pub const N: usize = 3;

/// At most this many distinct grams are counted at once: the same bound
/// as the fingerprint's ([`crate::fingerprint::V3_MAX_COUNTED`], 917,503),
/// so that the table (16-byte entries of gram and count, one control byte
/// a bucket) never has more than 2^20 buckets. A text with more distinct
/// grams is compared a part of the gram space at a time, in more walks
/// over both texts, to the same result. Natural text has a few thousand;
/// a megabyte of Chinese news about 300,000.
pub const MAX_COUNTED: usize = crate::fingerprint::V3_MAX_COUNTED;

/// The most bytes the table of counts takes: 2^20 buckets of 17 bytes,
/// and while it grows (or shrinks after a cut) the table of half the size
/// beside it: 26,738,688 bytes (25.5 MiB), as the fingerprint's.
pub const MAX_BYTES: usize = crate::fingerprint::V3_MAX_BYTES;

/// How many bytes of input are read between two calls of `go_on`: a few
/// thousand characters (8,192 of ASCII, 2,730 of Chinese).
const CHUNK: usize = 8192;

/// A table between calls keeps at most this capacity; a larger one (left
/// by a long text) is given back, so an idle session does not hold tens
/// of megabytes.
const KEEP: usize = 1 << 16;

/// Why [`similarity_bytes_checked`] gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimilarityError {
    /// `go_on` said stop.
    Interrupted,
    /// One of the texts is not UTF-8.
    NotUtf8,
    /// The allocator refused memory within the bound the function promises
    /// ([`overlap_bytes_checked`]).
    OutOfMemory,
}

/// A stretch of an original text, in characters (Unicode scalar values,
/// not bytes): `start..end`, 0-based, end excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

/// How similarity is counted: [`Measure::DEFINITION`] is the definition;
/// anything else is an experiment for `bench/quality`
/// ([`similarity_measured`]), not part of the extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Gram length, 1 to 6.
    pub n: usize,
    /// What is counted over the grams.
    pub kind: MeasureKind,
}

/// What [`Measure`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasureKind {
    /// Weighted containment of the text with fewer grams (the definition).
    Containment,
    /// Jaccard of the sets of distinct grams: shared over either. Holds
    /// the distinct grams of both texts (the bound applies to the
    /// shorter only): for measurement, not for a server.
    Jaccard,
}

impl Measure {
    /// The definition: containment of character trigrams.
    pub const DEFINITION: Measure = Measure {
        n: N,
        kind: MeasureKind::Containment,
    };
}

/// The similarity of two texts, in `[0, 1]`, as the module's definition
/// says.
pub fn similarity(a: &str, b: &str) -> f64 {
    similarity_measured(a, b, Measure::DEFINITION)
}

/// Calls `emit` with the key of every `n`-gram of the text's stream (the
/// normalized text the similarity compares: word characters, each run of
/// separators one space), in order, repeats included: keys of up to three
/// characters are exact, longer ones xxh3-64 hashes. The bytes are checked
/// to be UTF-8 and `go_on` is called as [`similarity_bytes_checked`]
/// calls it. For the candidate keys of [`crate::lsh`].
pub fn gram_keys_checked(
    text: &[u8],
    n: usize,
    mut go_on: impl FnMut() -> bool,
    emit: impl FnMut(u64),
) -> Result<(), SimilarityError> {
    walk_grams(Input::Bytes(text), tables(), n, &mut go_on, emit).map_err(|stop| match stop {
        Stop::Interrupted => SimilarityError::Interrupted,
        Stop::NotUtf8 => SimilarityError::NotUtf8,
    })
}

/// The gram size of [`jaccard_bytes_checked`] (the candidate keys' grams,
/// [`crate::lsh::GRAM`]).
pub const JACCARD_GRAM: usize = 5;

/// Gram keys held at a time by [`overlap_bytes_checked`] for one text (8
/// bytes each: 16 MiB, 32 MiB for the two); a text with more distinct
/// keys is compared a part of the key space at a time, to the same result.
const JACCARD_PART_KEYS: usize = 1 << 21;

/// How the sets of character [`JACCARD_GRAM`]-grams of two texts' streams
/// overlap: the distinct grams of each, and those both have. The measures
/// the rule takes for a candidate that only the keys found
/// ([`crate::lsh::second_test`]) are read off it: [`GramOverlap::jaccard`]
/// and [`GramOverlap::containment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GramOverlap {
    /// Distinct grams of the first text.
    pub a: u64,
    /// Distinct grams of the second text.
    pub b: u64,
    /// Distinct grams both have.
    pub both: u64,
}

impl GramOverlap {
    /// The Jaccard similarity: the grams both have over the grams either
    /// has. 1.0 for two texts without grams, 0.0 for one without and one
    /// with.
    pub fn jaccard(&self) -> f64 {
        match (self.a, self.b) {
            (0, 0) => 1.0,
            (0, _) | (_, 0) => 0.0,
            _ => self.both as f64 / (self.a + self.b - self.both) as f64,
        }
    }

    /// The containment of the smaller set in the larger: the grams both
    /// have over the grams of the text with fewer. 1.0 for a text whose
    /// every gram the other has (a copy with a footer appended), whatever
    /// the footer's length; 1.0 for two texts without grams, 0.0 for one
    /// without and one with.
    pub fn containment(&self) -> f64 {
        match (self.a, self.b) {
            (0, 0) => 1.0,
            (0, _) | (_, 0) => 0.0,
            (a, b) => self.both as f64 / a.min(b) as f64,
        }
    }
}

/// The Jaccard similarity of the sets of character [`JACCARD_GRAM`]-grams
/// of two texts' streams (step 2 of the definition above): the distinct
/// grams both have over the distinct grams either has. 1.0 for two texts
/// without grams, 0.0 for one without and one with. Unlike the weighted
/// containment of [`similarity`], a text is not near another because it
/// is contained in it or shares its vocabulary: two long texts on one
/// subject (two State of the Union addresses) have a containment of
/// trigrams of 0.80 to 0.94 and a Jaccard of 5-grams under 0.49, where a
/// copy with 5% of its characters edited keeps about 0.6. The rule
/// verifies with it the candidates that only the keys found.
///
/// Bytes checked to be UTF-8, `go_on` called as [`gram_keys_checked`]
/// calls it; memory as [`overlap_bytes_checked`]'s: at most 32 MiB
/// whatever the texts.
pub fn jaccard_bytes_checked(
    a: &[u8],
    b: &[u8],
    go_on: impl FnMut() -> bool,
) -> Result<f64, SimilarityError> {
    overlap_bytes_checked(a, b, go_on).map(|o| o.jaccard())
}

/// The [`GramOverlap`] of two texts' [`JACCARD_GRAM`]-grams: bytes checked
/// to be UTF-8, `go_on` called as [`gram_keys_checked`] calls it.
///
/// Memory: at most 2^21 keys of each text held at a time, 8 bytes each,
/// so 32 MiB for the two whatever the texts (a run of one repeated
/// character, every gram the same key, takes no more than distinct
/// grams); every allocation is fallible
/// ([`SimilarityError::OutOfMemory`]). A text with more distinct keys is
/// compared a part of the key space at a time, in more walks over both
/// texts (about one for each 1.2 million distinct keys of the text with
/// more), to the same result.
pub fn overlap_bytes_checked(
    a: &[u8],
    b: &[u8],
    mut go_on: impl FnMut() -> bool,
) -> Result<GramOverlap, SimilarityError> {
    overlap_bounded(a, b, &mut go_on, JACCARD_PART_KEYS)
}

/// [`overlap_bytes_checked`] with at most `bound` keys of each text held
/// at a time (4 at least).
///
/// Each walk gathers the keys of one [`Part`] of the key space, the first
/// text's, then the second's ([`Keys::gather`]); the parts together are
/// the whole space, so the distinct keys of the parts add up to the
/// texts'. The first walk takes the whole space and cuts it while it
/// holds too many keys; the next walks are sized by the density of the
/// last to fill three fifths of the bound.
fn overlap_bounded(
    a: &[u8],
    b: &[u8],
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
) -> Result<GramOverlap, SimilarityError> {
    let bound = bound.max(4);
    let t = tables();
    let mut part = Part::ALL;
    let (mut keys_a, mut keys_b) = (Keys::default(), Keys::default());
    let mut out = GramOverlap {
        a: 0,
        b: 0,
        both: 0,
    };
    loop {
        keys_a.keys.clear();
        keys_b.keys.clear();
        keys_a.gather(a, t, go_on, bound, &mut part, &mut Vec::new())?;
        keys_b.gather(b, t, go_on, bound, &mut part, &mut keys_a.keys)?;
        let (ka, kb) = (&keys_a.keys, &keys_b.keys);
        let (mut i, mut j) = (0, 0);
        while i < ka.len() && j < kb.len() {
            match ka[i].cmp(&kb[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    out.both += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        out.a += ka.len() as u64;
        out.b += kb.len() as u64;
        if part.is_last() {
            return Ok(out);
        }
        part = part.next(ka.len().max(kb.len()), bound / 5 * 3);
    }
}

/// The distinct keys of one text in a part of the key space, gathered in
/// a vector whose every growth is fallible.
#[derive(Default)]
struct Keys {
    /// Sorted and without repeats after [`Keys::gather`]; in between,
    /// keys as they come.
    keys: Vec<u64>,
    /// Keys held before the next compaction: never more than `keys` has
    /// room for, so a push never grows it.
    limit: usize,
}

impl Keys {
    /// Leaves in `keys` the distinct [`JACCARD_GRAM`]-gram keys of `text`
    /// that are in `part`, sorted; `keys` is empty before.
    ///
    /// A key is pushed as it comes. When `limit` keys are held they are
    /// sorted and their repeats dropped in place (a compaction); while
    /// more than three quarters of the limit are still held, the limit
    /// doubles, up to `bound`, and at `bound` the part is cut in halves
    /// ([`Part::first_half`]), the keys of the second half dropped here
    /// and from `other` (the first text's, complete for the part). A key
    /// kept was in the part from the start, so every occurrence of it was
    /// pushed. Each compaction leaves a quarter of the limit free for the
    /// keys that follow: `n log n` work in all, and at most `bound` keys
    /// held, whatever the repeats.
    fn gather(
        &mut self,
        text: &[u8],
        t: &Tables,
        go_on: &mut impl FnMut() -> bool,
        bound: usize,
        part: &mut Part,
        other: &mut Vec<u64>,
    ) -> Result<(), SimilarityError> {
        if self.limit == 0 {
            // Room for every gram of an ASCII text up to the bound: most
            // texts take no compaction.
            self.limit = text.len().clamp(4, bound);
            room(&mut self.keys, self.limit)?;
        }
        let failed = Cell::new(false);
        let walked = walk_grams(
            Input::Bytes(text),
            t,
            JACCARD_GRAM,
            &mut || !failed.get() && go_on(),
            |k| {
                if failed.get() || !part.contains(k) {
                    return;
                }
                if self.keys.len() == self.limit {
                    if self.compact(bound, part, other).is_err() {
                        failed.set(true);
                        return;
                    }
                    // The part may have been cut, this key's half dropped.
                    if !part.contains(k) {
                        return;
                    }
                }
                debug_assert!(self.keys.len() < self.keys.capacity());
                self.keys.push(k);
            },
        );
        match walked {
            _ if failed.get() => return Err(SimilarityError::OutOfMemory),
            Err(Stop::Interrupted) => return Err(SimilarityError::Interrupted),
            Err(Stop::NotUtf8) => return Err(SimilarityError::NotUtf8),
            Ok(()) => {}
        }
        self.keys.sort_unstable();
        self.keys.dedup();
        Ok(())
    }

    /// The compaction of [`Keys::gather`]: afterwards, fewer keys than the
    /// limit are held (a part of one key holds at most one, under a limit
    /// of 4 or more).
    fn compact(
        &mut self,
        bound: usize,
        part: &mut Part,
        other: &mut Vec<u64>,
    ) -> Result<(), SimilarityError> {
        self.keys.sort_unstable();
        self.keys.dedup();
        while self.keys.len() > self.limit - self.limit / 4 {
            if self.limit < bound {
                self.limit = self.limit.saturating_mul(2).min(bound);
                room(&mut self.keys, self.limit)?;
            } else if part.can_split() {
                *part = part.first_half();
                let inside = |k: &u64| part.contains(*k);
                self.keys.retain(inside);
                other.retain(inside);
            } else {
                break;
            }
        }
        debug_assert!(self.keys.len() < self.limit);
        Ok(())
    }
}

/// Room for `limit` keys in `keys` (which holds at most that many), or
/// [`SimilarityError::OutOfMemory`] when the allocator refuses it.
fn room(keys: &mut Vec<u64>, limit: usize) -> Result<(), SimilarityError> {
    keys.try_reserve_exact(limit.saturating_sub(keys.len()))
        .map_err(|_| SimilarityError::OutOfMemory)
}

/// [`jaccard_bytes_checked`] of two strings, never stopped.
pub fn jaccard(a: &str, b: &str) -> f64 {
    jaccard_bytes_checked(a.as_bytes(), b.as_bytes(), || true).expect("UTF-8, never stopped")
}

/// [`similarity`] of raw bytes, for the database: the bytes are checked
/// to be UTF-8 as they are read ([`SimilarityError::NotUtf8`]), `go_on`
/// is called before each few thousand characters of either text
/// ([`SimilarityError::Interrupted`] when it says stop), and memory stays
/// within [`MAX_BYTES`] plus a few kilobytes, whatever the texts.
pub fn similarity_bytes_checked(
    a: &[u8],
    b: &[u8],
    mut go_on: impl FnMut() -> bool,
) -> Result<f64, SimilarityError> {
    with_table(|table| {
        compare(
            Input::Bytes(a),
            Input::Bytes(b),
            Measure::DEFINITION,
            &mut go_on,
            MAX_COUNTED,
            table,
        )
    })
    .map_err(|stop| match stop {
        Stop::Interrupted => SimilarityError::Interrupted,
        Stop::NotUtf8 => SimilarityError::NotUtf8,
    })
}

/// The similarity under another [`Measure`]: an experiment, for measuring
/// the definition against its alternatives.
///
/// # Panics
///
/// When `measure.n` is not 1 to 6.
pub fn similarity_measured(a: &str, b: &str, measure: Measure) -> f64 {
    assert!((1..=6).contains(&measure.n), "gram length 1 to 6");
    with_table(|table| {
        compare(
            Input::Str(a),
            Input::Str(b),
            measure,
            &mut || true,
            MAX_COUNTED,
            table,
        )
    })
    .expect("text is UTF-8 and nothing interrupts")
}

/// Where two texts differ, for a person to see: for each text, the spans
/// of its original characters (see [`Span`]) that only it has, ascending,
/// adjacent and overlapping spans merged.
///
/// The grams of each text are matched against those of the other in text
/// order, each occurrence in the other used once (so a paragraph the
/// other text holds once and this one twice is marked the second time, as
/// the similarity counts it). Here each stream is taken as padded with
/// `N - 1` marks of its start before it and of its end after it, so that
/// the first and last characters are judged by as many grams as the
/// others (an edit near the end would otherwise mark the end too); the
/// similarity has no such grams. A character of the stream is marked when
/// every gram that covers it is unmatched; its span is that of the
/// original characters it came from (one character usually; a run of
/// punctuation for the space that stands for it; a whole cluster when
/// NFKC joined several, such as a letter and its combining accent). So an
/// inserted word is marked itself, not the two characters on each side
/// whose grams it also breaks, and a changed character is marked alone.
///
/// Memory grows with the texts (it keeps both streams, 12 bytes a
/// character, their grams, 8, and one text's gram counts): an explain
/// helper for texts a person reads, not for the verification of a large
/// table, which [`similarity_bytes_checked`] does.
pub fn differing_spans(a: &str, b: &str) -> (Vec<Span>, Vec<Span>) {
    differing_spans_checked(a, b, &mut || true).expect("never told to stop")
}

/// [`differing_spans`], calling `go_on` as it goes (before each few
/// thousand characters of the walk, every [`SPAN_CHECK`] characters after
/// it): `Err(())` when it says stop. Texts of at most 4 GB.
#[allow(clippy::result_unit_err)]
pub fn differing_spans_checked(
    a: &str,
    b: &str,
    go_on: &mut impl FnMut() -> bool,
) -> Result<(Vec<Span>, Vec<Span>), ()> {
    // One stream held at a time: the other text's grams are counted from
    // a walk of their own (each text is walked twice).
    let mut one_side = |mine: &str, other: &str| -> Result<Vec<Span>, ()> {
        let left = gram_counts(&stream(other, go_on)?, N);
        differing(&stream(mine, go_on)?, left, N, go_on)
    };
    let only_a = one_side(a, b)?;
    let only_b = one_side(b, a)?;
    Ok((only_a, only_b))
}

/// Characters between two calls of `go_on` after the walk of
/// [`differing_spans_checked`].
const SPAN_CHECK: usize = 1 << 20;

/// What stopped a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupted,
    NotUtf8,
}

/// A text to read: already UTF-8, or bytes to check on the way.
#[derive(Debug, Clone, Copy)]
enum Input<'a> {
    Str(&'a str),
    Bytes(&'a [u8]),
}

impl Input<'_> {
    fn len(&self) -> usize {
        match self {
            Input::Str(s) => s.len(),
            Input::Bytes(b) => b.len(),
        }
    }
}

type Table = HashMap<u64, u32, BuildHasherDefault<PassThrough>>;

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table::default());
}

/// Runs `f` with this thread's table, emptied first. The table is emptied
/// on the way in, never relied on being emptied on the way out, so a
/// panic or an early return anywhere in `f` leaves nothing that changes
/// the next answer. A nested use (a `go_on` that compares texts itself)
/// or a use while the thread ends gets a table of its own.
fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut f = Some(f);
    let shared = TABLE.try_with(|cell| {
        let mut table = cell.try_borrow_mut().ok()?;
        table.clear();
        let r = (f.take().expect("called once"))(&mut table);
        if table.capacity() > KEEP {
            *table = Table::default();
        }
        Some(r)
    });
    match shared {
        Ok(Some(r)) => r,
        _ => (f.take().expect("not called yet"))(&mut Table::default()),
    }
}

/// Both texts compared under `measure`, with at most `bound` distinct
/// grams of the shorter text counted at once.
///
/// The shorter text (by bytes: known before reading) is counted into
/// `table`, then the longer one is read against it, each occurrence it
/// finds with a count left taking one: the sum of minima. When the table
/// passes `bound`, the part of the gram space being counted is halved
/// until at most half the bound is left, as the fingerprint does
/// ([`crate::part`]): a gram kept was in the part from the start, so it
/// was counted from its first occurrence; the longer text is then read
/// against that part only, and further walks over both texts take the
/// rest, sized to fill nine tenths of the bound.
fn compare(
    a: Input<'_>,
    b: Input<'_>,
    measure: Measure,
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
    table: &mut Table,
) -> Result<f64, Stop> {
    let t = tables();
    let bound = bound.max(2);
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut part = Part::ALL;
    let (mut total_short, mut total_long) = (0u64, 0u64);
    // Containment: the sum of minima. Jaccard: shared distinct grams,
    // and the distinct grams of each text.
    let (mut shared, mut distinct_short, mut distinct_long) = (0u64, 0u64, 0u64);
    let mut first = true;
    loop {
        table.clear();
        let mut grams = 0u64;
        walk_grams(short, t, measure.n, go_on, |key| {
            grams += 1;
            if !part.contains(key) {
                return;
            }
            let count = table.entry(key).or_insert(0);
            *count = count.saturating_add(1);
            if table.len() > bound {
                while table.len() > bound / 2 && part.can_split() {
                    part = part.first_half();
                    table.retain(|&key, _| part.contains(key));
                }
                // Into a smaller table: deleted entries would stay as
                // tombstones, and the table grow past the bound.
                table.shrink_to_fit();
            }
        })?;
        if first {
            total_short = grams;
        }
        let held = table.len();
        distinct_short += held as u64;
        let mut grams = 0u64;
        match measure.kind {
            MeasureKind::Containment => walk_grams(long, t, measure.n, go_on, |key| {
                grams += 1;
                if let Some(count) = table.get_mut(&key) {
                    if *count > 0 {
                        *count -= 1;
                        shared += 1;
                    }
                }
            })?,
            MeasureKind::Jaccard => walk_grams(long, t, measure.n, go_on, |key| {
                grams += 1;
                if !part.contains(key) {
                    return;
                }
                // Bit 31: seen in the longer text; below it, the count in
                // the shorter one.
                let seen = table.entry(key).or_insert(0);
                if *seen & 1 << 31 == 0 {
                    distinct_long += 1;
                    shared += u64::from(*seen != 0);
                    *seen |= 1 << 31;
                }
            })?,
        }
        if first {
            total_long = grams;
            first = false;
        }
        if part.is_last() {
            break;
        }
        part = part.next(held, bound / 10 * 9);
    }
    Ok(match measure.kind {
        MeasureKind::Containment => ratio(
            shared,
            total_short.min(total_long),
            total_short.max(total_long),
        ),
        MeasureKind::Jaccard => ratio(
            shared,
            distinct_short + distinct_long - shared,
            distinct_short.max(distinct_long),
        ),
    })
}

/// `shared / of`, with 1.0 when neither text has a gram (`most` is 0) and
/// 0.0 when only one has none.
fn ratio(shared: u64, of: u64, most: u64) -> f64 {
    if most == 0 {
        1.0
    } else if of == 0 {
        0.0
    } else {
        shared as f64 / of as f64
    }
}

/// Hands the key of every gram of `input` to `emit`, in text order.
fn walk_grams(
    input: Input<'_>,
    t: &Tables,
    n: usize,
    go_on: &mut impl FnMut() -> bool,
    emit: impl FnMut(u64),
) -> Result<(), Stop> {
    let mut stream = Stream::new(Grams::new(n, emit));
    walk(input, t, go_on, &mut stream)?;
    stream.inner.finish();
    Ok(())
}

/// The normalization's tables: the fold, and for every character of the
/// basic multilingual plane what it becomes on its own.
struct Tables {
    fold: Fold,
    /// By code point below U+10000: [`BOUNDARY`], then [`SEP`],
    /// [`COMPLEX`] or the folded, lower-cased word character it stands
    /// for.
    bmp: Vec<u32>,
}

/// NFKC of a text splits before this character: it is a starter whose
/// decomposition begins with a starter that composes with nothing before
/// it, so nothing before it changes with it, and it changes with nothing
/// before it.
const BOUNDARY: u32 = 1 << 31;
/// On its own, the character normalizes to characters that are not word
/// characters: a separator.
const SEP: u32 = 1 << 30;
/// On its own, the character normalizes to more than one character, not
/// all separators (`½`, `ﬁ`): the general path.
const COMPLEX: u32 = 1 << 29;
/// A format character (see [`is_format`]): dropped.
const IGNORE: u32 = 1 << 28;
const CHAR_BITS: u32 = (1 << 21) - 1;

/// Whether `c` is a format character (Unicode general category Cf, as of
/// Unicode 15): invisible, it changes no word, so the stream drops it.
pub fn is_format(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
        | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let fold = Fold::t2s();
        let bmp = (0..0x1_0000u32)
            .map(|u| char::from_u32(u).map_or(COMPLEX, |c| entry_of(&fold, c)))
            .collect();
        Tables { fold, bmp }
    })
}

/// What [`Tables::bmp`] says of `c` (and of characters above it, computed
/// each time).
fn entry_of(fold: &Fold, c: char) -> u32 {
    let boundary = if is_boundary(c) { BOUNDARY } else { 0 };
    if is_format(c) && std::iter::once(c).nfkc().eq(std::iter::once(c)) {
        return boundary | IGNORE;
    }
    let mut out = None;
    let mut count = 0;
    let mut words = false;
    for n in std::iter::once(c).nfkc() {
        for l in n.to_lowercase() {
            count += 1;
            if l.is_alphanumeric() {
                words = true;
                out = Some(fold.char(l));
            }
        }
    }
    boundary
        | match (words, count, out) {
            (false, _, _) => SEP,
            (true, 1, Some(w)) => w as u32,
            _ => COMPLEX,
        }
}

/// Whether NFKC of a text splits before `c` (see [`BOUNDARY`]). A
/// character that may compose with one before it has NFKC quick check
/// "maybe"; a non-starter may be reordered with the marks before it.
fn is_boundary(c: char) -> bool {
    let stable = |c: char| {
        canonical_combining_class(c) == 0
            && is_nfkc_quick(std::iter::once(c)) != IsNormalized::Maybe
    };
    if !stable(c) {
        return false;
    }
    let mut first = None;
    decompose_compatible(c, |d| {
        first.get_or_insert(d);
    });
    first.is_none_or(stable)
}

impl Tables {
    #[inline(always)]
    fn entry(&self, c: char) -> u32 {
        match self.bmp.get(c as usize) {
            Some(&e) => e,
            None => {
                let b = if is_boundary(c) { BOUNDARY } else { 0 };
                b | COMPLEX
            }
        }
    }
}

/// Where the normalization hands each character: a word character, or a
/// character that only separates; with the span of original characters
/// it came from.
trait Out {
    fn word(&mut self, c: u32, start: usize, end: usize);
    fn sep(&mut self, start: usize, end: usize);
}

/// Reads `input` a chunk at a time and hands `out` its normalized
/// characters. A chunk ends just before a character NFKC splits before
/// ([`BOUNDARY`]), so normalizing chunk by chunk is normalizing the whole
/// text; `go_on` is called before each. A chunk with no such character
/// (megabytes of combining marks) grows until one comes.
fn walk(
    input: Input<'_>,
    t: &Tables,
    go_on: &mut impl FnMut() -> bool,
    out: &mut impl Out,
) -> Result<(), Stop> {
    let len = input.len();
    let mut pos = 0;
    let mut chars = 0;
    while pos < len {
        if !go_on() {
            return Err(Stop::Interrupted);
        }
        let mut size = CHUNK;
        let chunk = loop {
            let mut end = pos.saturating_add(size).min(len);
            let s = match input {
                Input::Str(s) => {
                    while !s.is_char_boundary(end) {
                        end -= 1;
                    }
                    &s[pos..end]
                }
                Input::Bytes(b) => {
                    // Back to the start of a character, so that the check
                    // sees whole characters (at most three steps).
                    let mut e = end;
                    while e < len && e > pos && b[e] & 0xC0 == 0x80 && end - e < 3 {
                        e -= 1;
                    }
                    if e > pos && e < len && b[e] & 0xC0 != 0x80 {
                        end = e;
                    }
                    std::str::from_utf8(&b[pos..end]).map_err(|_| Stop::NotUtf8)?
                }
            };
            if end == len {
                break s;
            }
            let cut = s
                .char_indices()
                .rev()
                .take_while(|&(i, _)| i > 0)
                .find(|&(_, c)| t.entry(c) & BOUNDARY != 0);
            match cut {
                Some((i, _)) => break &s[..i],
                None => size = size.saturating_mul(2),
            }
        };
        chars += normalize(chunk, chars, t, out, go_on)?;
        pos += chunk.len();
    }
    Ok(())
}

/// Characters normalized within one run between two calls of `go_on`.
const NORMALIZE_CHECK: u32 = 1 << 16;

/// Hands `out` the normalized characters of `s`, which starts a text or
/// starts at a [`BOUNDARY`] and ends before one or at the end of the
/// text; `base` is the offset of its first character in the text. Returns
/// how many characters `s` has.
///
/// A character whose table entry is simple (a separator or one word
/// character) and that is followed by a boundary is taken from the table;
/// any other run from a boundary to the next goes through NFKC, lower
/// case and the fold, as [`crate::text`] does.
#[inline]
fn normalize(
    s: &str,
    base: usize,
    t: &Tables,
    out: &mut impl Out,
    go_on: &mut impl FnMut() -> bool,
) -> Result<usize, Stop> {
    let mut it = s.char_indices();
    let mut at = base;
    let Some((mut i, c)) = it.next() else {
        return Ok(0);
    };
    // A run to normalize can be the whole chunk (megabytes of combining
    // marks, with no boundary to cut at): `go_on` every so many of its
    // characters.
    let mut steps: u32 = NORMALIZE_CHECK;
    let mut e = t.entry(c);
    loop {
        let mut next = it.next();
        let mut next_e = next.map(|(_, c)| t.entry(c));
        if e & COMPLEX == 0 && next_e.is_none_or(|ne| ne & BOUNDARY != 0) {
            if e & IGNORE != 0 {
                // A format character: nothing.
            } else if e & SEP != 0 {
                out.sep(at, at + 1);
            } else {
                out.word(e & CHAR_BITS, at, at + 1);
            }
            at += 1;
        } else {
            let mut count = 1;
            let end = loop {
                match (next, next_e) {
                    (Some((j, _)), Some(ne)) if ne & BOUNDARY != 0 => break j,
                    (Some(_), Some(_)) => {
                        count += 1;
                        next = it.next();
                        next_e = next.map(|(_, c)| t.entry(c));
                    }
                    _ => break s.len(),
                }
            };
            for n in crate::text::nfkc(&s[i..end]) {
                steps -= 1;
                if steps == 0 {
                    if !go_on() {
                        return Err(Stop::Interrupted);
                    }
                    steps = NORMALIZE_CHECK;
                }
                if is_format(n) {
                    continue;
                }
                for l in n.to_lowercase() {
                    if l.is_alphanumeric() {
                        out.word(t.fold.char(l) as u32, at, at + count);
                    } else {
                        out.sep(at, at + count);
                    }
                }
            }
            at += count;
        }
        match (next, next_e) {
            (Some((j, _)), Some(ne)) => {
                i = j;
                e = ne;
            }
            _ => return Ok(at - base),
        }
    }
}

/// Where [`Stream`] hands each character of the stream.
trait Push {
    fn push(&mut self, c: u32, start: usize, end: usize);
}

/// Step 2 of the definition: word characters as they come, each run of
/// separators as one space between two of them.
struct Stream<P> {
    started: bool,
    space: Option<(usize, usize)>,
    inner: P,
}

impl<P: Push> Stream<P> {
    fn new(inner: P) -> Self {
        Stream {
            started: false,
            space: None,
            inner,
        }
    }
}

impl<P: Push> Out for Stream<P> {
    #[inline(always)]
    fn word(&mut self, c: u32, start: usize, end: usize) {
        if let Some((s, e)) = self.space.take() {
            self.inner.push(' ' as u32, s, e);
        }
        self.started = true;
        self.inner.push(c, start, end);
    }

    #[inline(always)]
    fn sep(&mut self, start: usize, end: usize) {
        if self.started {
            match &mut self.space {
                Some((_, e)) => *e = end,
                None => self.space = Some((start, end)),
            }
        }
    }
}

/// Step 3: the key of every gram of the stream. Each character takes 21
/// bits of a rolling 128-bit value, the last `n` kept: up to 3 characters
/// fit a `u64` exactly and the key is a fixed bijection of it (so grams
/// never collide); longer grams (experiments only) are hashed by xxh3-64.
/// A stream character is never NUL (that is a separator), so a stream
/// shorter than `n`, whose leading places stay zero, never has the key
/// of a full gram.
struct Grams<F> {
    n: usize,
    len: usize,
    key: u128,
    mask: u128,
    emit: F,
}

impl<F: FnMut(u64)> Grams<F> {
    fn new(n: usize, emit: F) -> Self {
        Grams {
            n,
            len: 0,
            key: 0,
            mask: (1u128 << (21 * n)) - 1,
            emit,
        }
    }

    #[inline(always)]
    fn key(&self) -> u64 {
        if self.n <= 3 {
            mix(self.key as u64)
        } else {
            xxh3_64(&self.key.to_le_bytes())
        }
    }

    /// Hands on the whole stream as one gram when it is shorter than `n`.
    fn finish(&mut self) {
        if self.len > 0 && self.len < self.n {
            let key = self.key();
            (self.emit)(key);
        }
    }
}

impl<F: FnMut(u64)> Push for Grams<F> {
    #[inline(always)]
    fn push(&mut self, c: u32, _: usize, _: usize) {
        self.key = (self.key << 21 | u128::from(c)) & self.mask;
        self.len += 1;
        if self.len >= self.n {
            let key = self.key();
            (self.emit)(key);
        }
    }
}

/// SplitMix64's finalizer, a bijection of `u64`: packed grams differ in
/// a few low bits, and the table takes its buckets from the low bits and
/// the parts from the high ones.
#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The stream of `text` with the original span of each character.
/// A character of a stream and the span of original characters it came
/// from, in 12 bytes.
type Marked = (u32, u32, u32);

fn stream(text: &str, go_on: &mut impl FnMut() -> bool) -> Result<Vec<Marked>, ()> {
    struct Collect(Vec<Marked>);
    impl Push for Collect {
        fn push(&mut self, c: u32, start: usize, end: usize) {
            self.0.push((c, start as u32, end as u32));
        }
    }
    let mut s = Stream::new(Collect(Vec::new()));
    match walk(Input::Str(text), tables(), go_on, &mut s) {
        Ok(()) => Ok(s.inner.0),
        Err(_) => Err(()),
    }
}

/// Calls `key` with each gram key of a stream padded with `n - 1` marks
/// of its start before and of its end after (code points past U+10FFFF,
/// so no character of a text), in order; none for an empty stream.
fn padded_keys(stream: &[Marked], n: usize, key: impl FnMut(u64)) {
    const START: u32 = 0x11_0000;
    const END: u32 = 0x11_0001;
    if stream.is_empty() {
        return;
    }
    let mut g = Grams::new(n, key);
    let pad = |c, g: &mut Grams<_>| (1..n).for_each(|_| g.push(c, 0, 0));
    pad(START, &mut g);
    for &(c, _, _) in stream {
        g.push(c, 0, 0);
    }
    pad(END, &mut g);
}

/// How often each padded gram of a stream occurs.
fn gram_counts(stream: &[Marked], n: usize) -> HashMap<u64, u32> {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    padded_keys(stream, n, |k| *counts.entry(k).or_insert(0) += 1);
    counts
}

/// The merged spans of the characters of `stream` that every covering
/// padded gram leaves unmatched in the other text (`left`: its grams'
/// counts, each match taking one, in order).
fn differing(
    stream: &[Marked],
    mut left: HashMap<u64, u32>,
    n: usize,
    go_on: &mut impl FnMut() -> bool,
) -> Result<Vec<Span>, ()> {
    let mut matched: Vec<bool> = Vec::with_capacity(stream.len() + n);
    padded_keys(stream, n, |k| {
        matched.push(match left.get_mut(&k) {
            Some(c) if *c > 0 => {
                *c -= 1;
                true
            }
            _ => false,
        })
    });
    drop(left);
    let mut out: Vec<Span> = Vec::new();
    for (j, &(_, start, end)) in stream.iter().enumerate() {
        if j % SPAN_CHECK == SPAN_CHECK - 1 && !go_on() {
            return Err(());
        }
        let span = Span {
            start: start as usize,
            end: end as usize,
        };
        // Character j is at j + n - 1 of the padded stream: grams j to
        // j + n - 1 cover it.
        if matched[j..j + n].iter().any(|&m| m) {
            continue;
        }
        match out.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => out.push(span),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix;

    /// The definition written plainly: NFKC of the whole text, lower case,
    /// fold, runs of separators as one space, trimmed.
    fn reference_stream(text: &str) -> String {
        let fold = &tables().fold;
        let mut out = String::new();
        let mut space = false;
        for c in crate::text::nfkc(text)
            .filter(|&c| !is_format(c))
            .flat_map(char::to_lowercase)
        {
            if c.is_alphanumeric() {
                if space && !out.is_empty() {
                    out.push(' ');
                }
                space = false;
                out.push(fold.char(c));
            } else {
                space = true;
            }
        }
        out
    }

    #[test]
    fn jaccard_of_five_grams_counts_distinct_grams_of_both_over_either() {
        let set = |t: &str| -> std::collections::HashSet<Vec<char>> {
            let s: Vec<char> = reference_stream(t).chars().collect();
            if !s.is_empty() && s.len() < JACCARD_GRAM {
                return [s].into_iter().collect();
            }
            s.windows(JACCARD_GRAM).map(|w| w.to_vec()).collect()
        };
        let reference = |a: &str, b: &str| {
            let (sa, sb) = (set(a), set(b));
            sa.intersection(&sb).count() as f64 / sa.union(&sb).count() as f64
        };
        let a = "The harbour master counted the boats that came back before the storm.";
        let b = "The harbour master counted the ships that came back after the storm!";
        assert!((jaccard(a, b) - reference(a, b)).abs() < 1e-12);
        assert_eq!(jaccard(a, a), 1.0);
        assert_eq!(
            jaccard(a, &format!("{a} {a}")),
            reference(a, &format!("{a} {a}"))
        );
        assert_eq!(jaccard("", "!!"), 1.0);
        assert_eq!(jaccard("", a), 0.0);
        assert_eq!(jaccard("abc", "ABC."), 1.0);
        assert!(jaccard(a, b) == jaccard(b, a));
        // Containment is not Jaccard: a text inside a longer one.
        let long = format!(
            "{a} Other words followed about the weather in the valley, prices at the market, \
             the new bridge over the river and the school that opened in the old mill."
        );
        assert!(similarity(a, &long) > 0.99 && jaccard(a, &long) < 0.5);
        // Random texts, several parts of the key space: the same answer.
        let mut seed = 11;
        for len in [10usize, 300, 5000] {
            let t: String = (0..len)
                .map(|_| {
                    let v = splitmix(&mut seed) % 30;
                    if v < 4 {
                        ' '
                    } else {
                        (b'a' + (v % 26) as u8) as char
                    }
                })
                .collect();
            let u: String = t.chars().rev().collect();
            assert!((jaccard(&t, &u) - reference(&t, &u)).abs() < 1e-12);
        }
        assert_eq!(
            jaccard_bytes_checked(b"ok", b"\xff", || true),
            Err(SimilarityError::NotUtf8)
        );
    }

    /// The overlap written plainly: the sets of each text's gram keys.
    fn plain_overlap(a: &str, b: &str) -> GramOverlap {
        let set = |t: &str| {
            let mut s = std::collections::HashSet::new();
            gram_keys_checked(
                t.as_bytes(),
                JACCARD_GRAM,
                || true,
                |k| {
                    s.insert(k);
                },
            )
            .unwrap();
            s
        };
        let (sa, sb) = (set(a), set(b));
        GramOverlap {
            a: sa.len() as u64,
            b: sb.len() as u64,
            both: sa.intersection(&sb).count() as u64,
        }
    }

    #[test]
    fn a_small_bound_changes_nothing_but_the_walks() {
        // Texts of distinct grams, of one gram repeated, and of both, under
        // bounds that take many parts and many compactions.
        let pool: Vec<char> = "abcdefghij 中文字国".chars().collect();
        let mut state = 14;
        let mut texts = vec![
            String::new(),
            "!!".into(),
            "abc".into(),
            "a".repeat(3_000),
            "ab".repeat(2_000),
        ];
        for len in [20, 300, 1_500] {
            texts.push(random_text(&mut state, &pool, len));
        }
        let mixed = format!("{}{}", "x".repeat(2_000), texts[7]);
        texts.push(mixed);
        texts.push(format!("{}{}{}", texts[6], "z".repeat(1_000), texts[5]));
        for a in &texts {
            for b in &texts {
                let want = plain_overlap(a, b);
                for bound in [4, 5, 7, 16, 100, 1_000, JACCARD_PART_KEYS] {
                    // A walk for about every key under the smallest bounds.
                    if bound < 16 && want.a + want.b > 800 {
                        continue;
                    }
                    let got = overlap_bounded(a.as_bytes(), b.as_bytes(), &mut || true, bound);
                    assert_eq!(got, Ok(want), "{bound} {} {}", a.len(), b.len());
                }
            }
        }
        // Many distinct keys under a small bound: many walks, each calling
        // `go_on`.
        let (a, b) = (&texts[7], &texts[9]);
        let mut calls = 0;
        let got = overlap_bounded(
            a.as_bytes(),
            b.as_bytes(),
            &mut || {
                calls += 1;
                true
            },
            16,
        );
        assert_eq!(got, Ok(plain_overlap(a, b)));
        assert!(calls > 100, "{calls} walks");
    }

    #[test]
    fn the_keys_of_a_part_stay_within_the_bound() {
        let pool: Vec<char> = "abcdefghijklmnop ".chars().collect();
        let mut state = 15;
        let text = format!(
            "{}{}",
            random_text(&mut state, &pool, 20_000),
            "q".repeat(50_000)
        );
        for bound in [4, 64, 1_000] {
            let mut keys = Keys::default();
            let mut part = Part::ALL;
            let mut other = Vec::new();
            keys.gather(
                text.as_bytes(),
                tables(),
                &mut || true,
                bound,
                &mut part,
                &mut other,
            )
            .unwrap();
            assert!(keys.limit <= bound && keys.keys.len() <= bound, "{bound}");
            assert!(keys.keys.windows(2).all(|w| w[0] < w[1]));
            assert!(keys.keys.iter().all(|&k| part.contains(k)));
            // Every key of the text in the part it was cut to, once.
            let mut want = Vec::new();
            gram_keys_checked(
                text.as_bytes(),
                JACCARD_GRAM,
                || true,
                |k| {
                    if part.contains(k) {
                        want.push(k);
                    }
                },
            )
            .unwrap();
            want.sort_unstable();
            want.dedup();
            assert_eq!(keys.keys, want, "{bound}");
            assert!(part != Part::ALL, "{bound}: cut");
        }
    }

    #[test]
    fn a_refused_allocation_is_out_of_memory() {
        let mut keys = Vec::new();
        assert_eq!(
            room(&mut keys, usize::MAX / 8),
            Err(SimilarityError::OutOfMemory)
        );
        assert_eq!(room(&mut keys, 10), Ok(()));
        assert!(keys.capacity() >= 10);
    }

    #[test]
    fn the_overlap_stops_when_told_and_is_right_again() {
        let a = "the harbour master counted the boats ".repeat(2_000);
        let b = format!("{a} and the storm");
        let mut calls = 0;
        let got = overlap_bytes_checked(a.as_bytes(), b.as_bytes(), || {
            calls += 1;
            calls < 3
        });
        assert_eq!(got, Err(SimilarityError::Interrupted));
        assert_eq!(calls, 3);
        assert_eq!(
            overlap_bytes_checked(a.as_bytes(), b.as_bytes(), || true),
            Ok(plain_overlap(&a, &b))
        );
        assert_eq!(
            overlap_bytes_checked(a.as_bytes(), b"abc\xff", || true),
            Err(SimilarityError::NotUtf8)
        );
    }

    #[test]
    fn format_characters_are_dropped_not_separators() {
        let plain = "The committee met on Tuesday to review the proposal for a new library.";
        // One invisible character inside every word (zero-width space,
        // joiners, soft hyphen, word joiner, byte order mark, a tag).
        let marks = [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{00AD}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{E0041}',
        ];
        let hidden: String = plain
            .split(' ')
            .enumerate()
            .map(|(i, w)| {
                let mut cs: Vec<char> = w.chars().collect();
                cs.insert(cs.len().min(2), marks[i % marks.len()]);
                cs.into_iter().collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" ");
        assert_ne!(hidden, plain);
        assert_eq!(reference_stream(&hidden), reference_stream(plain));
        assert_eq!(similarity(&hidden, plain), 1.0);
        assert_eq!(crate::lsh::keys(&hidden), crate::lsh::keys(plain));
        // Only invisible characters: no word character, as an empty text.
        assert_eq!(similarity("\u{200B}\u{FEFF}", ""), 1.0);
        assert_eq!(crate::lsh::keys("\u{200B}\u{00AD}"), None);
        // A visible separator still separates.
        assert!(similarity("co py", "copy") < 1.0);
        for c in marks {
            assert!(is_format(c), "{c:?}");
        }
        assert!(!is_format('a') && !is_format(' ') && !is_format('\u{2065}'));
    }

    fn reference(a: &str, b: &str, n: usize) -> f64 {
        let grams = |t: &str| {
            let s: Vec<char> = reference_stream(t).chars().collect();
            let mut m: HashMap<Vec<char>, u64> = HashMap::new();
            if !s.is_empty() && s.len() < n {
                m.insert(s.clone(), 1);
            }
            for w in s.windows(n) {
                *m.entry(w.to_vec()).or_insert(0) += 1;
            }
            m
        };
        let (ga, gb) = (grams(a), grams(b));
        let (ta, tb): (u64, u64) = (ga.values().sum(), gb.values().sum());
        let shared: u64 = ga
            .iter()
            .map(|(g, &c)| c.min(*gb.get(g).unwrap_or(&0)))
            .sum();
        ratio(shared, ta.min(tb), ta.max(tb))
    }

    fn stream_text(text: &str) -> String {
        stream(text, &mut || true)
            .unwrap()
            .iter()
            .map(|&(c, _, _)| char::from_u32(c).unwrap())
            .collect()
    }

    fn random_text(state: &mut u64, pool: &[char], len: usize) -> String {
        (0..len)
            .map(|_| pool[(splitmix(state) % pool.len() as u64) as usize])
            .collect()
    }

    const POOL: &str = "aZ9 ,.中文國語車門字\u{301}\u{308}\u{327}é\u{F900}\u{F902}\u{2FA8}ＡＢ１，。\u{3000}Σσς\u{1100}\u{1161}\u{11A8}İﬁ½😀\u{200B}\u{FF9E}ｶ\u{AC00}\u{20000}";

    #[test]
    fn a_run_of_combining_marks_is_checked_as_it_is_normalized() {
        // A megabyte of marks after one letter: no boundary to cut the
        // walk at, so the checks come from inside the run's normalization.
        let marks = format!("a{}", "\u{0301}".repeat(500_000));
        let mut calls = 0;
        let stopped = similarity_bytes_checked(marks.as_bytes(), b"a", || {
            calls += 1;
            calls < 5
        });
        assert_eq!(stopped, Err(SimilarityError::Interrupted));
        assert_eq!(calls, 5);
        // Not stopped, it compares as the definition says.
        let done = similarity_bytes_checked(marks.as_bytes(), "á".as_bytes(), || true);
        assert_eq!(done, Ok(1.0));
    }

    #[test]
    fn the_stream_is_the_plain_definition() {
        let pool: Vec<char> = POOL.chars().collect();
        let mut state = 7;
        for _ in 0..20_000 {
            let len = (splitmix(&mut state) % 14) as usize;
            let t = random_text(&mut state, &pool, len);
            assert_eq!(stream_text(&t), reference_stream(&t), "{t:?}");
        }
        for t in [
            "cafe\u{301} e\u{301}\u{302}e",
            "ＡＢＣ中文ａｂｃ１２３",
            "ﬁﬂ ﬃ ½",
            "  Hello,   World!!  ",
            "ｶﾞｷﾞ",
            "\u{F900}\u{F901}中",
        ] {
            assert_eq!(stream_text(t), reference_stream(t), "{t:?}");
        }
    }

    #[test]
    fn the_stream_holds_the_fingerprints_pieces() {
        // The normalization is the fingerprint's: the stream without its
        // spaces is the pieces of `for_each_piece_mapped` put together.
        let fold = Fold::t2s();
        let pool: Vec<char> = POOL.chars().collect();
        let mut state = 8;
        for _ in 0..5_000 {
            let len = (splitmix(&mut state) % 40) as usize;
            let t = random_text(&mut state, &pool, len);
            let mut pieces = String::new();
            crate::text::for_each_piece_mapped(
                &t,
                |c| fold.char(c),
                |p| {
                    pieces.push_str(p.text);
                    true
                },
            );
            assert_eq!(stream_text(&t).replace(' ', ""), pieces, "{t:?}");
        }
    }

    #[test]
    fn chunks_cut_where_nfkc_allows() {
        // Texts longer than a chunk, with marks and compositions across
        // every chunk end.
        let pool: Vec<char> = POOL.chars().collect();
        let mut state = 9;
        for len in [CHUNK / 3, CHUNK, 3 * CHUNK + 17] {
            let t = random_text(&mut state, &pool, len);
            assert_eq!(stream_text(&t), reference_stream(&t));
            let u = random_text(&mut state, &pool, len / 2);
            for m in [
                Measure::DEFINITION,
                Measure {
                    n: 5,
                    kind: MeasureKind::Containment,
                },
            ] {
                let want = reference(&t, &u, m.n);
                assert!((similarity_measured(&t, &u, m) - want).abs() < 1e-12);
            }
            let marks = format!("a{}", "\u{301}".repeat(3 * CHUNK));
            assert_eq!(stream_text(&marks), reference_stream(&marks));
        }
    }

    #[test]
    fn the_table_agrees_with_nfkc() {
        let t = tables();
        // NFKC splits before every boundary, whatever comes before it.
        let before = [
            "a", "e", "中", "\u{1100}", "\u{AC00}", "ｶ", "\u{301}", "\u{F900}", "\u{0B47}",
        ];
        for c in (0..0x1_0000u32).filter_map(char::from_u32) {
            if t.entry(c) & BOUNDARY == 0 {
                continue;
            }
            let alone: String = c.to_string().nfkc().collect();
            for p in before {
                let both: String = format!("{p}{c}").nfkc().collect();
                let apart: String = p.nfkc().chain(alone.chars()).collect();
                assert_eq!(both, apart, "{p:?} U+{:04X}", c as u32);
            }
        }
    }

    #[test]
    fn identical_texts_are_one_and_disjoint_texts_zero() {
        let t = "The quick brown fox jumps over the lazy dog. 敏捷的棕色狐狸跳过了懒狗。";
        assert_eq!(similarity(t, t), 1.0);
        assert_eq!(similarity("abcdef ghij", "klmnop qrst"), 0.0);
        assert_eq!(similarity("今天天气很好", "明年经济增长"), 0.0);
    }

    #[test]
    fn agrees_with_the_plain_definition() {
        let pool: Vec<char> = "abc de 中文字，。国國".chars().collect();
        let mut state = 10;
        for _ in 0..3_000 {
            let (la, lb) = (splitmix(&mut state) % 30, splitmix(&mut state) % 30);
            let a = random_text(&mut state, &pool, la as usize);
            let b = random_text(&mut state, &pool, lb as usize);
            for n in [1, 2, 3, 4, 5] {
                let m = Measure {
                    n,
                    kind: MeasureKind::Containment,
                };
                let got = similarity_measured(&a, &b, m);
                assert!(
                    (got - reference(&a, &b, n)).abs() < 1e-12,
                    "{a:?} {b:?} {n}"
                );
            }
        }
    }

    #[test]
    fn a_footer_keeps_the_copy_contained() {
        let text = "The committee approved the budget on Tuesday after a long debate \
                    about school funding and road repairs in the northern districts.";
        let copy = format!("{text}\n\n-- \nSent from the mailing list. Unsubscribe at example.org");
        assert!(
            similarity(text, &copy) > 0.99,
            "{}",
            similarity(text, &copy)
        );
        let zh = "国务院常务会议今天在北京召开，会议研究部署了进一步扩大内需的政策措施。";
        let zh_copy = format!("{zh}（来源：新华社 编辑：张三）");
        assert!(similarity(zh, &zh_copy) > 0.99);
    }

    #[test]
    fn is_symmetric() {
        let pool: Vec<char> = "ab c中文，。".chars().collect();
        let mut state = 11;
        for _ in 0..2_000 {
            let (la, lb) = (splitmix(&mut state) % 40, splitmix(&mut state) % 40);
            let a = random_text(&mut state, &pool, la as usize);
            let b = random_text(&mut state, &pool, lb as usize);
            assert_eq!(similarity(&a, &b).to_bits(), similarity(&b, &a).to_bits());
            let j = Measure {
                n: 5,
                kind: MeasureKind::Jaccard,
            };
            assert_eq!(
                similarity_measured(&a, &b, j).to_bits(),
                similarity_measured(&b, &a, j).to_bits()
            );
        }
        // Equal byte lengths, different grams: the tie decides only which
        // text is held.
        assert_eq!(
            similarity("abcd abcd", "abcd xyzw"),
            similarity("abcd xyzw", "abcd abcd")
        );
    }

    #[test]
    fn case_width_and_script_variants_are_one() {
        assert_eq!(similarity("Hello World", "HELLO   world!!"), 1.0);
        assert_eq!(similarity("ＡＢＣ１２３ test", "abc123 TEST"), 1.0);
        assert_eq!(similarity("國務院總理發表講話", "国务院总理发表讲话"), 1.0);
        assert_eq!(
            similarity("caf\u{e9} cr\u{e8}me", "cafe\u{301} cre\u{300}me"),
            1.0
        );
    }

    #[test]
    fn empty_featureless_and_short_texts() {
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("!!! ...", "，。？"), 1.0);
        assert_eq!(similarity("", "abc"), 0.0);
        assert_eq!(similarity("...", "abc"), 0.0);
        // A stream of one or two characters is one gram, the whole stream.
        assert_eq!(similarity("ab", "AB!"), 1.0);
        assert_eq!(similarity("ab", "ab cd"), 0.0);
        assert_eq!(similarity("中", "中"), 1.0);
        assert_eq!(similarity("中", "中国"), 0.0);
        // The space between words is a character of the stream.
        assert_eq!(similarity("a b", "a, b"), 1.0);
        assert_eq!(similarity("a b", "ab"), 0.0);
    }

    #[test]
    fn not_utf8_is_an_error() {
        assert_eq!(
            similarity_bytes_checked(b"abc\xFFdef", b"abcdef", || true),
            Err(SimilarityError::NotUtf8)
        );
        assert_eq!(
            similarity_bytes_checked(b"abcdef", b"abc\xE4\xB8", || true),
            Err(SimilarityError::NotUtf8)
        );
        // A bad byte past the first chunk, and a character cut by a chunk
        // end that is fine.
        let mut long = "中".repeat(CHUNK).into_bytes();
        assert_eq!(similarity_bytes_checked(&long, &long, || true), Ok(1.0));
        long[2 * CHUNK + 1] = b'x';
        assert_eq!(
            similarity_bytes_checked(&long, b"x", || true),
            Err(SimilarityError::NotUtf8)
        );
        assert_eq!(
            similarity_bytes_checked("Straße".as_bytes(), "STRASSE".as_bytes(), || true),
            Ok(similarity("Straße", "STRASSE"))
        );
    }

    #[test]
    fn interrupted_and_then_right_again() {
        let a = "国务院常务会议".repeat(5_000);
        let b = format!("{a}附加");
        let mut calls = 0;
        let got = similarity_bytes_checked(a.as_bytes(), b.as_bytes(), || {
            calls += 1;
            calls < 3
        });
        assert_eq!(got, Err(SimilarityError::Interrupted));
        assert_eq!(calls, 3);
        // The thread's table was left half full; the next call starts clean.
        assert_eq!(similarity("abc def", "abc def"), 1.0);
        let want = reference("abc defg", "abc xyz", 3);
        assert_eq!(similarity("abc defg", "abc xyz"), want);
        // The same after a panic in the middle of a comparison.
        let panicked = std::panic::catch_unwind(|| {
            let mut calls = 0;
            let _ = similarity_bytes_checked(a.as_bytes(), b.as_bytes(), || {
                calls += 1;
                assert!(calls < 4, "give up");
                true
            });
        });
        assert!(panicked.is_err());
        assert_eq!(similarity("abc defg", "abc xyz"), want);
        // go_on is called every chunk of each text.
        let mut calls = 0;
        similarity_bytes_checked(a.as_bytes(), b.as_bytes(), || {
            calls += 1;
            true
        })
        .unwrap();
        assert!(calls >= 2 * a.len() / CHUNK, "{calls}");
    }

    #[test]
    fn a_nested_comparison_gets_its_own_table() {
        let got = similarity_bytes_checked(b"abc def ghi", b"abc def xyz", || {
            assert_eq!(similarity("xy", "xy"), 1.0);
            true
        });
        assert_eq!(got, Ok(reference("abc def ghi", "abc def xyz", 3)));
    }

    #[test]
    fn a_bound_changes_nothing_but_the_walks() {
        let pool: Vec<char> = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要"
            .chars()
            .collect();
        let mut state = 12;
        let a = random_text(&mut state, &pool, 4_000);
        let b = format!(
            "{}{}",
            &a[..a.len() / 2],
            random_text(&mut state, &pool, 1_500)
        );
        let want = reference(&a, &b, 3);
        for bound in [10, 50, 1_000, 50_000] {
            for m in [
                Measure::DEFINITION,
                Measure {
                    n: 5,
                    kind: MeasureKind::Jaccard,
                },
            ] {
                let got = compare(
                    Input::Str(&a),
                    Input::Str(&b),
                    m,
                    &mut || true,
                    bound,
                    &mut Table::default(),
                )
                .unwrap();
                let unbounded = similarity_measured(&a, &b, m);
                assert!((got - unbounded).abs() < 1e-12, "{bound} {m:?}");
            }
            let got = compare(
                Input::Str(&a),
                Input::Str(&b),
                Measure::DEFINITION,
                &mut || true,
                bound,
                &mut Table::default(),
            )
            .unwrap();
            assert!((got - want).abs() < 1e-12);
        }
    }

    #[test]
    fn megabytes_with_more_grams_than_the_bound() {
        // 1.2 million random Han characters: about as many distinct
        // trigrams, more than MAX_COUNTED, so it takes more than one walk
        // and the table stays within the bound.
        let pool: Vec<char> = (0x4E00u32..0x4E00 + 3000)
            .filter_map(char::from_u32)
            .collect();
        let mut state = 13;
        let a = random_text(&mut state, &pool, 1_200_000);
        let mut b = a.clone();
        b.push_str(&random_text(&mut state, &pool, 100_000));
        assert!(a.len() > 3_000_000);
        let mut walks = 0;
        let mut table = Table::default();
        let got = compare(
            Input::Bytes(a.as_bytes()),
            Input::Bytes(b.as_bytes()),
            Measure::DEFINITION,
            &mut || {
                walks += 1;
                true
            },
            MAX_COUNTED,
            &mut table,
        )
        .unwrap();
        assert_eq!(got, 1.0);
        // Two texts of about 440 chunks each, read at least twice.
        assert!(walks > 4 * a.len() / CHUNK, "{walks}");
        assert!(table.capacity() <= (1 << 20) / 8 * 7);
        let c = similarity_bytes_checked(b.as_bytes(), &a.as_bytes()[..a.len() / 6 * 3], || true);
        assert_eq!(c, Ok(1.0));
    }

    fn chars(text: &str, s: &[Span]) -> Vec<String> {
        let v: Vec<char> = text.chars().collect();
        s.iter()
            .map(|s| v[s.start..s.end].iter().collect())
            .collect()
    }

    #[test]
    fn spans_find_an_inserted_word() {
        let a = "The cat sat on the mat.";
        let b = "The cat sat quietly on the mat.";
        let (sa, sb) = differing_spans(a, b);
        assert_eq!(sa, vec![]);
        assert_eq!(sb, vec![Span { start: 12, end: 19 }]);
        assert_eq!(chars(b, &sb), ["quietly"]);
        let a = "今天天气很好，我们去公园散步。";
        let b = "今天天气真的很好，我们去公园散步。";
        let (sa, sb) = differing_spans(a, b);
        assert_eq!(sa, vec![]);
        assert_eq!(chars(b, &sb), ["真的"]);
        assert_eq!(sb, vec![Span { start: 4, end: 6 }]);
        // A replaced character is marked in the text it left, its
        // replacement in the other.
        let (sa, sb) = differing_spans("今天天气很好", "今天天气非常好");
        assert_eq!(
            (chars("今天天气很好", &sa), chars("今天天气非常好", &sb)),
            (vec!["很".into()], vec!["非常".into()])
        );
        // A substituted character is marked in both texts.
        let (sa, sb) = differing_spans("今天天气很好", "今天天汽很好");
        assert_eq!(
            (chars("今天天气很好", &sa), chars("今天天汽很好", &sb)),
            (vec!["气".into()], vec!["汽".into()])
        );
    }

    #[test]
    fn spans_are_in_original_characters() {
        // Full-width letters, a decomposed accent and traditional
        // characters before the change: offsets count the original's
        // characters, and the accent goes with its letter.
        let a = "ＡＢＣ café 國語 one two three";
        let b = "ABC cafe\u{301} 国语 one xxx two three";
        let (sa, sb) = differing_spans(a, b);
        assert_eq!(sa, vec![]);
        assert_eq!(chars(b, &sb), ["xxx"]);
        let start = b.chars().position(|c| c == 'x').unwrap();
        assert_eq!(
            sb,
            vec![Span {
                start,
                end: start + 3
            }]
        );
        // A repeated paragraph is marked where it repeats, with the
        // punctuation before it; its last two characters end both texts
        // alike, so they match the padded end.
        let p = "the same paragraph again";
        let twice = format!("{p}. {p}");
        let (sa, sb) = differing_spans(p, &twice);
        assert_eq!(sa, vec![]);
        assert_eq!(chars(&twice, &sb), [". the same paragraph aga"]);
        assert_eq!(differing_spans("", ""), (vec![], vec![]));
        assert_eq!(
            differing_spans("ab", "cd").0,
            vec![Span { start: 0, end: 2 }]
        );
    }
}
