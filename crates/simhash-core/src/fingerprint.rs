//! Steps 2 to 4 put together: text in, 64-bit fingerprint out.
//!
//! A piece (see [`crate::text`]) with a Han character in it is segmented by
//! jieba (its default dictionary, precise mode, HMM on for unknown words).
//! Any other piece (a Latin word, a number, a word of another script) is one
//! token as it is. Every token is a feature: hash = xxh3-64 of its UTF-8
//! bytes, weight = IDF (fixed point, see [`crate::idf`]), added once per
//! occurrence, which makes the total weight of a token `tf * idf`.
//!
//! That is definition version 1. Version 2 ([`Version::V2`]) changes three
//! things, each chosen on the detection-quality yardstick
//! (`bench/quality`):
//!
//! * after NFKC and the lower case, each traditional Chinese character
//!   is folded to its simplified form, one character to one
//!   ([`crate::fold`], [`crate::text::for_each_piece_mapped`]), before
//!   the text is cut into pieces and tokens;
//! * a token not in the IDF table weighs [`V2_OOV_IDF`] instead of the
//!   table's median (11.95, which made every unknown name, number and
//!   English word weigh as much as a rare Chinese word);
//! * a token counts at most [`V2_TF_CAP`] times: `min(tf, 3) * idf`, so
//!   that a repeated word cannot decide the bits on its own.
//!
//! Version 2 in full, step by step:
//!
//! 1. NFKC, then each character to its lower case (as version 1);
//! 2. each character listed in `data/t2s.txt` (4,105 traditional
//!    characters) replaced by its simplified form, in one pass (a
//!    replacement is not looked up again);
//! 3. pieces and tokens as version 1 (runs of word characters cut every
//!    512 characters; jieba for pieces with a Han character, one token
//!    for any other piece);
//! 4. per distinct token: hash = xxh3-64 of its UTF-8 bytes; `tf` = its
//!    number of occurrences (tokens are told apart by hash); weight =
//!    `min(tf, 3) * round(idf * 65536)`, with idf the token's value in
//!    jieba's `idf.txt`, or 4.0 for a token not in it;
//! 5. accumulate and sign as version 1: 64 signed counters, bit `i` is 1
//!    when counter `i` is above zero; no token gives no fingerprint.
//!
//! Version 3 ([`Version::V3`], the extension's `simhash()` from 0.3) keeps
//! steps 1 and 2 and replaces the rest: no jieba, but every Han character
//! is a feature, and every run of other word characters gives its
//! character trigrams (`^th`, `the`, `he$`); each feature is weighed by its
//! self-information times its count above what chance gives a text of this
//! length ([`crate::weights`], [`Fingerprinter::features_v3`]). A changed
//! character then changes one feature instead of one or two words. The
//! README's "Fingerprint definition" states it step by step.
//!
//! [`Fingerprinter::fingerprint_as`], [`Fingerprinter::features_as`] and
//! [`Fingerprinter::for_each_token_as`] take the version; one
//! [`Fingerprinter`] serves both (the jieba dictionary, the IDF table and
//! the fold table are built once). The methods without `_as` are version 1.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use jieba_rs::Jieba;
use xxhash_rust::xxh3::xxh3_64;

use crate::accumulate::Accumulator;
use crate::fold::Fold;
use crate::idf::{from_fixed, to_fixed, IdfTable, PassThrough};
use crate::text::{for_each_piece_mapped, is_han, Piece, MAX_PIECE_CHARS};
use crate::weights::{Power, SelfInfo, Weighing};

/// Version 3's Han character table: `character self-information` lines.
pub const HAN_WEIGHTS_TXT: &str = include_str!("../data/han_weights.txt");

/// Version 3's trigram table: `trigram self-information` lines.
pub const GRAM_WEIGHTS_TXT: &str = include_str!("../data/gram_weights.txt");

/// How many bytes of Han pieces go to jieba in one call.
pub const HAN_BATCH_BYTES: usize = 4096;

/// How many feature hashes are looked up together.
const HASH_BATCH: usize = 256;

/// Which fingerprint definition: stored fingerprints keep meaning what they
/// meant, so a definition never changes once released; a new one is a new
/// version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// The first definition (extension 0.1): NFKC, jieba, IDF with the
    /// table's median for unknown tokens, weight `tf * idf`.
    #[default]
    V1,
    /// Version 1 plus traditional-to-simplified folding, IDF
    /// [`V2_OOV_IDF`] for unknown tokens, and tf capped at [`V2_TF_CAP`].
    V2,
    /// Version 2's normalization and folding, then characters instead of
    /// words: each Han character is a feature, each other word gives its
    /// character trigrams; weights by [`crate::weights`] (extension 0.3).
    V3,
}

/// Version 2's IDF for a token that is not in the table.
pub const V2_OOV_IDF: f64 = 4.0;

/// Version 2 counts a token at most this many times.
pub const V2_TF_CAP: u64 = 3;

/// Version 3: how Han characters are weighed: the self-information times
/// the count above chance, counted up to 6 times. A character (5 to 17)
/// outweighs a trigram (1), as a character says more than a Latin letter;
/// scaling characters down to a quarter lost copies whose appended footer
/// holds a URL or a date (`bench/quality`, variant "v3 han scale 0.25":
/// short Chinese footers 42% instead of 49% at k = 7).
pub const V3_HAN: Weighing = Weighing {
    scale: 1.0,
    cap: 6,
    unknown: 1.0,
    power: Power::One,
};

/// Version 3: how the character trigrams of other words are weighed: the
/// count above chance, counted up to 6 times, every trigram alike (the
/// trigram table only says what chance gives: weighing by it let the
/// rare trigrams that edits make up outweigh the real ones).
pub const V3_GRAM: Weighing = Weighing {
    scale: 1.0,
    cap: 6,
    unknown: V3_GRAM_UNKNOWN_FACTOR,
    power: Power::Zero,
};

/// The settings of version 3's weighing. [`V3Options::DEFINITION`] is the
/// definition; anything else is an experiment
/// ([`Fingerprinter::fingerprint_v3_with`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct V3Options {
    /// How Han characters are weighed.
    pub han: Weighing,
    /// How trigrams are weighed.
    pub gram: Weighing,
    /// Whether what chance gives is subtracted.
    pub chance: bool,
}

impl V3Options {
    /// Version 3 as defined.
    pub const DEFINITION: V3Options = V3Options {
        han: V3_HAN,
        gram: V3_GRAM,
        chance: true,
    };
}

/// Version 3: the self-information of a Han character missing from
/// `data/han_weights.txt` (the table's largest is 17.73).
pub const V3_HAN_UNKNOWN: f64 = 17.73;

/// Version 3: the self-information of a trigram missing from
/// `data/gram_weights.txt`.
pub const V3_GRAM_UNKNOWN: f64 = 12.0;

/// Version 3: what a trigram missing from `data/gram_weights.txt` weighs
/// against one the table lists. A typo in an English word makes up
/// trigrams no English text has (`qxe`); at full weight they pushed an
/// edited copy away as much as the real trigrams it lost.
pub const V3_GRAM_UNKNOWN_FACTOR: f64 = 0.3;

/// The cutting and weighting state: jieba's dictionary and the IDF table.
/// Building one takes about a second and tens of megabytes, so a process
/// builds one and shares it; fingerprinting only reads it.
pub struct Fingerprinter {
    jieba: Jieba,
    idf: IdfTable,
    fold: Fold,
    oov_weight: i64,
    han: SelfInfo,
    grams: SelfInfo,
}

impl std::fmt::Debug for Fingerprinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprinter")
            .field("idf_words", &self.idf.len())
            .finish_non_exhaustive()
    }
}

/// One distinct token of a text and what it contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    /// The token, normalized.
    pub token: String,
    /// How many times it occurs.
    pub tf: u64,
    /// Its IDF as the fingerprint uses it: the table's value to the nearest
    /// 2^-16; for a word not in the table, the table's median (version 1)
    /// or [`V2_OOV_IDF`] (version 2).
    pub idf: f64,
    /// What the fingerprint adds for this token: `tf * idf` (version 1),
    /// `min(tf, 3) * idf` (version 2), as the fixed-point sum.
    pub weight: f64,
    /// xxh3-64 of the token's UTF-8 bytes.
    pub hash: u64,
}

/// What stopped a fingerprint before the end of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl Default for Fingerprinter {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprinter {
    /// Loads jieba's default dictionary and the shipped IDF table.
    pub fn new() -> Self {
        Fingerprinter {
            jieba: Jieba::new(),
            idf: IdfTable::jieba(),
            fold: Fold::t2s(),
            oov_weight: to_fixed(V2_OOV_IDF),
            han: SelfInfo::parse(HAN_WEIGHTS_TXT, V3_HAN_UNKNOWN),
            grams: SelfInfo::parse(GRAM_WEIGHTS_TXT, V3_GRAM_UNKNOWN),
        }
    }

    /// The IDF table in use.
    pub fn idf_table(&self) -> &IdfTable {
        &self.idf
    }

    /// Hands each token of `text` to `emit`, in text order. Between
    /// batches of pieces it calls `go_on`, which stops the walk by
    /// returning `false`.
    ///
    /// Consecutive Han pieces are segmented by one jieba call, joined by
    /// `\n`: jieba cuts a text into blocks at every character that is not
    /// Han or ASCII alphanumeric before it segments anything, so the tokens
    /// are the same as one call per piece (the golden vectors hold this),
    /// while the per-call set-up is paid once per [`HAN_BATCH_BYTES`].
    pub fn for_each_token(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
        emit: impl FnMut(&str),
    ) -> Result<(), Interrupted> {
        self.for_each_token_as(Version::V1, text, go_on, emit)
    }

    /// [`Self::for_each_token`] under the given definition: under version
    /// 2 the tokens are those of the folded text.
    pub fn for_each_token_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
        emit: impl FnMut(&str),
    ) -> Result<(), Interrupted> {
        // Two instances, so that version 1 pays nothing for the map.
        match version {
            Version::V1 => self.tokens_mapped(text, |c| c, go_on, emit),
            Version::V2 => self.tokens_mapped(text, |c| self.fold.char(c), go_on, emit),
            Version::V3 => {
                let mut emit = emit;
                self.features_v3(text, go_on, |_, f| emit(f))
            }
        }
    }

    fn tokens_mapped(
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

    /// The fingerprint of `text`, or `None` when it has no feature at all
    /// (empty, or only white space, punctuation and symbols).
    pub fn fingerprint(&self, text: &str) -> Option<u64> {
        self.fingerprint_as(Version::V1, text)
    }

    /// [`Self::fingerprint`] under the given definition.
    pub fn fingerprint_as(&self, version: Version, text: &str) -> Option<u64> {
        match self.fingerprint_checked_as(version, text, || true) {
            Ok(fp) => fp,
            Err(Interrupted) => unreachable!("nothing interrupts this walk"),
        }
    }

    /// The fixed-point weight of one occurrence of a token under `version`
    /// (versions 1 and 2; version 3 weighs a feature by [`Self::weight_v3`]).
    #[inline]
    fn weight(&self, version: Version, hash: u64) -> i64 {
        match version {
            Version::V1 => self.idf.weight(hash),
            Version::V2 | Version::V3 => self.idf.get(hash).unwrap_or(self.oov_weight),
        }
    }

    /// [`Self::fingerprint`], calling `go_on` between pieces so that a long
    /// text can be abandoned: `Err(Interrupted)` when `go_on` said stop.
    pub fn fingerprint_checked(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        self.fingerprint_checked_as(Version::V1, text, go_on)
    }

    /// [`Self::fingerprint_checked`] under the given definition.
    pub fn fingerprint_checked_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        match version {
            Version::V1 => {}
            Version::V2 => return self.fingerprint_v2(text, go_on),
            Version::V3 => return self.fingerprint_v3(text, go_on),
        }
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

    /// Version 2: fold, count each feature, then add `min(tf, 3)` times
    /// its weight.
    fn fingerprint_v2(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        let mut hashes: Vec<u64> = Vec::new();
        self.for_each_token_as(Version::V2, text, go_on, |token| {
            hashes.push(xxh3_64(token.as_bytes()))
        })?;
        // Equal hashes side by side: one lookup and one add per distinct
        // feature (a sort of a few hundred values costs less than a hash
        // map, and integer sums do not depend on the order).
        hashes.sort_unstable();
        // Distinct hashes with their capped counts, then the weights looked
        // up in one pass of independent loads (as `add_all` does), then
        // the adds.
        let mut distinct: Vec<(u64, i64)> = Vec::with_capacity(hashes.len());
        for &h in &hashes {
            match distinct.last_mut() {
                Some((last, tf)) if *last == h => *tf = (*tf + 1).min(V2_TF_CAP as i64),
                _ => distinct.push((h, 1)),
            }
        }
        let weights: Vec<i64> = distinct
            .iter()
            .map(|&(h, _)| self.weight(Version::V2, h))
            .collect();
        let mut acc = Accumulator::new();
        for (&(h, tf), &w) in distinct.iter().zip(&weights) {
            acc.add(h, w * tf);
        }
        Ok(acc.finish())
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
        mut go_on: impl FnMut() -> bool,
        mut emit: impl FnMut(Kind, &str),
    ) -> Result<(), Interrupted> {
        let mut word: Vec<char> = Vec::with_capacity(MAX_PIECE_CHARS + 2);
        let mut gram = String::with_capacity(16);
        // `word` holds `^` and the run so far: with `$` it is at least
        // three characters long, so a run of one character is the one
        // trigram `^a$`.
        let mut flush = |word: &mut Vec<char>, emit: &mut dyn FnMut(Kind, &str)| {
            if word.is_empty() {
                return;
            }
            word.push('$');
            for g in word.windows(3) {
                gram.clear();
                gram.extend(g);
                emit(Kind::Gram, &gram);
            }
            word.clear();
        };
        let mut buf = [0u8; 4];
        let finished = for_each_piece_mapped(
            text,
            |c| self.fold.char(c),
            |piece: Piece<'_>| {
                for c in piece.text.chars() {
                    if is_han(c) {
                        flush(&mut word, &mut emit);
                        emit(Kind::Han, c.encode_utf8(&mut buf));
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

    /// Version 3's distinct features with their counts, (kind, hash, tf),
    /// in no particular order, and how many features of each kind the text
    /// has. Counted in a map, so memory follows the distinct features (a
    /// few thousand even for a book), not the length of the text.
    #[allow(clippy::type_complexity)]
    fn counts_v3(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<(Vec<(Kind, u64, u64)>, [u64; 2]), Interrupted> {
        // Keyed by the xxh3 hash alone: a Han character and a trigram with
        // the same 64-bit hash would add up as one feature either way.
        let mut counts: HashMap<u64, (Kind, u64), BuildHasherDefault<PassThrough>> =
            HashMap::default();
        let mut totals = [0u64; 2];
        self.features_v3(text, go_on, |kind, f| {
            totals[kind as usize] += 1;
            counts.entry(xxh3_64(f.as_bytes())).or_insert((kind, 0)).1 += 1;
        })?;
        let distinct = counts
            .into_iter()
            .map(|(h, (kind, tf))| (kind, h, tf))
            .collect();
        Ok((distinct, totals))
    }

    /// (self-information, fixed-point weight) of each version 3 feature,
    /// in the order given. When no feature is above chance, which only a
    /// text of a few characters repeated over and over achieves, the
    /// weights are taken regardless of chance instead (see
    /// [`Weighing::weight_regardless_of_chance`]).
    fn weights_v3(
        &self,
        opts: &V3Options,
        features: &[(Kind, u64, u64)],
        totals: [u64; 2],
    ) -> Vec<(f64, i64)> {
        let table = |kind| match kind {
            Kind::Han => (&self.han, opts.han),
            Kind::Gram => (&self.grams, opts.gram),
        };
        // One table lookup per feature: (s, factor, fixed-point weight).
        let mut out: Vec<(f64, f64, i64)> = features
            .iter()
            .map(|&(kind, h, tf)| {
                let (t, weighing) = table(kind);
                let (s, p, known) = t.get(h);
                let factor = if known { 1.0 } else { weighing.unknown };
                let w = if opts.chance {
                    weighing.weight(s, p, tf, totals[kind as usize])
                } else {
                    weighing.weight_regardless_of_chance(s, tf)
                };
                (s, factor, to_fixed(factor * w))
            })
            .collect();
        if out.iter().all(|&(_, _, w)| w <= 0) {
            for (o, &(kind, _, tf)) in out.iter_mut().zip(features) {
                let weighing = table(kind).1;
                o.2 = to_fixed(o.1 * weighing.weight_regardless_of_chance(o.0, tf));
            }
        }
        out.into_iter().map(|(s, _, w)| (s, w)).collect()
    }

    /// Version 3: count each feature, weigh it against chance, add it once.
    fn fingerprint_v3(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        self.fingerprint_v3_with(&V3Options::DEFINITION, text, go_on)
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
        let (distinct, totals) = self.counts_v3(text, go_on)?;
        if distinct.is_empty() {
            return Ok(None);
        }
        let weights = self.weights_v3(opts, &distinct, totals);
        let mut acc = Accumulator::new();
        for (&(_, h, _), &(_, w)) in distinct.iter().zip(&weights) {
            acc.add(h, w);
        }
        Ok(acc.finish())
    }

    /// Looks up the weights of a batch of feature hashes, then adds them.
    /// Apart from segmentation, which evicts the IDF table from the caches
    /// between tokens, the lookups are independent loads the CPU overlaps:
    /// measured 2.4 times faster than looking each one up as it is cut.
    fn add_all(&self, acc: &mut Accumulator, hashes: &[u64]) {
        let mut weights = [0i64; HASH_BATCH];
        for (w, &h) in weights.iter_mut().zip(hashes) {
            *w = self.idf.weight(h);
        }
        for (&h, &w) in hashes.iter().zip(&weights) {
            acc.add(h, w);
        }
    }

    /// The distinct tokens of `text` in order of first occurrence, with what
    /// each contributes to the fingerprint. `go_on` is called between pieces,
    /// as for [`Self::fingerprint_checked`].
    pub fn features(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<Feature>, Interrupted> {
        self.features_as(Version::V1, text, go_on)
    }

    /// [`Self::features`] under the given definition: under version 2 the
    /// tokens are those of the folded text, `idf` is [`V2_OOV_IDF`] for a
    /// token not in the table, and `weight` is `min(tf, 3) * idf`.
    pub fn features_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<Feature>, Interrupted> {
        if version == Version::V3 {
            return self.features_as_v3(text, go_on);
        }
        let mut index = std::collections::HashMap::<String, usize>::new();
        let mut out: Vec<Feature> = Vec::new();
        self.for_each_token_as(version, text, go_on, |token| match index.get(token) {
            Some(&i) => out[i].tf += 1,
            None => {
                index.insert(token.to_owned(), out.len());
                let hash = xxh3_64(token.as_bytes());
                out.push(Feature {
                    token: token.to_owned(),
                    tf: 1,
                    idf: from_fixed(self.weight(version, hash)),
                    weight: 0.0,
                    hash,
                });
            }
        })?;
        let cap = match version {
            Version::V1 => u64::MAX,
            Version::V2 | Version::V3 => V2_TF_CAP,
        };
        for f in &mut out {
            f.weight = from_fixed(self.weight(version, f.hash)) * f.tf.min(cap) as f64;
        }
        Ok(out)
    }
}

impl Fingerprinter {
    /// [`Self::features_as`] for version 3: `idf` is the feature's
    /// self-information and `weight` what the fingerprint adds for it
    /// (negative when the text holds it less often than chance).
    fn features_as_v3(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<Feature>, Interrupted> {
        let mut index = std::collections::HashMap::<String, usize>::new();
        let mut out: Vec<(Kind, Feature)> = Vec::new();
        let mut totals = [0u64; 2];
        self.features_v3(text, go_on, |kind, f| {
            totals[kind as usize] += 1;
            match index.get(f) {
                Some(&i) => out[i].1.tf += 1,
                None => {
                    index.insert(f.to_owned(), out.len());
                    out.push((
                        kind,
                        Feature {
                            token: f.to_owned(),
                            tf: 1,
                            idf: 0.0,
                            weight: 0.0,
                            hash: xxh3_64(f.as_bytes()),
                        },
                    ));
                }
            }
        })?;
        let keys: Vec<(Kind, u64, u64)> = out.iter().map(|(k, f)| (*k, f.hash, f.tf)).collect();
        let weights = self.weights_v3(&V3Options::DEFINITION, &keys, totals);
        Ok(out
            .into_iter()
            .zip(weights)
            .map(|((_, mut f), (s, w))| {
                f.idf = s;
                f.weight = from_fixed(w);
                f
            })
            .collect())
    }
}

/// The two kinds of version 3 features, counted apart: how many features
/// of its kind a text has decides what chance gives a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A Han character.
    Han = 0,
    /// A character trigram of a word in another script.
    Gram = 1,
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::accumulate::Accumulator;
    use crate::distance::hamming;

    pub(crate) fn shared() -> &'static Fingerprinter {
        static FP: OnceLock<Fingerprinter> = OnceLock::new();
        FP.get_or_init(Fingerprinter::new)
    }

    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        shared()
            .for_each_token(text, || true, |t| out.push(t.to_owned()))
            .unwrap();
        out
    }

    #[test]
    fn segments_chinese_and_keeps_latin_words_and_numbers_whole() {
        assert_eq!(
            tokens("我来到北京清华大学，iPhone 15 发布会！"),
            ["我", "来到", "北京", "清华大学", "iphone", "15", "发布会"]
        );
    }

    #[test]
    fn no_token_is_white_space_or_punctuation() {
        let text = "「新华社」北京１月１日电（记者 张三）—— 今天……天气 晴，温度 -3℃~5℃。Hello, world! e-mail: a@b.c";
        let toks = tokens(text);
        assert!(!toks.is_empty());
        for t in &toks {
            assert!(t.chars().all(char::is_alphanumeric), "{t:?}");
        }
    }

    #[test]
    fn featureless_text_has_no_fingerprint() {
        for t in ["", "   ", "\n\t", "，。！？……", "!!! ??? ...", "😀 🎉 ★"] {
            assert_eq!(shared().fingerprint(t), None, "{t:?}");
        }
        assert!(shared().fingerprint("a").is_some());
    }

    #[test]
    fn punctuation_spacing_width_and_case_do_not_change_the_fingerprint() {
        let a = "今天，北京市政府发布了新的交通管理规定。Beijing Traffic Rules 2024";
        let b = "今天 北京市政府发布了新的交通管理规定！！ＢＥＩＪＩＮＧ  traffic  rules  ２０２４";
        assert_eq!(shared().fingerprint(a), shared().fingerprint(b));
    }

    #[test]
    fn fingerprint_is_the_weighted_sum_of_the_features() {
        let text = "中国人民银行今天宣布，中国人民银行将下调存款准备金率。银行 银行 bank";
        let feats = shared().features(text, || true).unwrap();
        let mut acc = Accumulator::new();
        for f in &feats {
            for _ in 0..f.tf {
                acc.add(f.hash, shared().idf_table().weight(f.hash));
            }
        }
        assert_eq!(acc.finish(), shared().fingerprint(text));
        let yinhang = feats.iter().find(|f| f.token == "银行").unwrap();
        assert_eq!(yinhang.tf, 2);
        assert_eq!(yinhang.hash, xxh3_64("银行".as_bytes()));
        assert!((yinhang.weight - 2.0 * yinhang.idf).abs() < 1e-4);
        let bank = feats.iter().find(|f| f.token == "bank").unwrap();
        assert!((bank.idf - shared().idf_table().median()).abs() < 1e-5);
    }

    #[test]
    fn a_small_edit_moves_a_long_text_less_than_a_different_text() {
        let base = "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。\
                    李鹏说，中国政府高度重视同日本的关系，愿同日方一道努力，推动两国关系健康稳定地向前发展。\
                    日本客人表示，日本经济界愿意积极参与中国的经济建设，为两国的友好合作作出贡献。";
        let edited = base.replacen("交换了意见", "交换了看法", 1);
        let other = "昨天下午，北京市民在天安门广场参加了迎新年长跑活动，数千名运动员和群众冒着严寒跑完全程。\
                     活动由北京市体育局主办，旨在推动全民健身运动的开展，增强人民体质。";
        let (a, b, c) = (
            shared().fingerprint(base).unwrap(),
            shared().fingerprint(&edited).unwrap(),
            shared().fingerprint(other).unwrap(),
        );
        assert!(hamming(a, b) <= 6, "edited copy at {}", hamming(a, b));
        assert!(hamming(a, c) > 12, "unrelated text at {}", hamming(a, c));
    }

    #[test]
    fn version_2_folds_traditional_characters() {
        let trad = "臺灣銀行今天宣佈，將調整對外匯率。";
        let simp = "台湾银行今天宣布，将调整对外汇率。";
        let (t1, s1) = (shared().fingerprint(trad), shared().fingerprint(simp));
        assert_ne!(t1, s1);
        assert_eq!(
            shared().fingerprint_as(Version::V2, trad),
            shared().fingerprint_as(Version::V2, simp)
        );
        // Folding happens before segmentation: the tokens are the same.
        let words = |t| -> Vec<String> {
            shared()
                .features_as(Version::V2, t, || true)
                .unwrap()
                .into_iter()
                .map(|f| f.token)
                .collect()
        };
        assert_eq!(words(trad), words(simp));
    }

    #[test]
    fn version_2_folds_what_nfkc_makes_traditional() {
        // U+2F9E is the Kangxi radical 車 and U+F902 a compatibility
        // ideograph for it: NFKC gives the traditional 車, which version 2
        // then folds to 车 (the fold comes after NFKC).
        let simp = "北京火车站今天开通了新的车道";
        for odd in [
            "北京火\u{2F9E}站今天开通了新的\u{F902}道",
            "北京火車站今天開通了新的車道",
        ] {
            assert_eq!(
                shared().fingerprint_as(Version::V2, odd),
                shared().fingerprint_as(Version::V2, simp),
                "{odd:?}"
            );
            assert_ne!(shared().fingerprint(odd), shared().fingerprint(simp));
        }
    }

    #[test]
    fn version_2_caps_term_frequency_at_3() {
        let rest = "中国人民银行今天宣布下调存款准备金率";
        let three = format!("{rest} 利率 利率 利率");
        let ten = format!("{rest}{}", " 利率".repeat(10));
        assert_eq!(
            shared().fingerprint_as(Version::V2, &three),
            shared().fingerprint_as(Version::V2, &ten)
        );
        assert_ne!(shared().fingerprint(&three), shared().fingerprint(&ten));
        let f = shared().features_as(Version::V2, &ten, || true).unwrap();
        let lilv = f.iter().find(|f| f.token == "利率").unwrap();
        assert_eq!(lilv.tf, 10);
        assert!((lilv.weight - 3.0 * lilv.idf).abs() < 1e-9);
    }

    #[test]
    fn version_2_gives_unknown_tokens_idf_4() {
        let f = shared()
            .features_as(Version::V2, "银行 zyxwvq 银行", || true)
            .unwrap();
        let unknown = f.iter().find(|f| f.token == "zyxwvq").unwrap();
        assert_eq!(unknown.idf, V2_OOV_IDF);
        let known = f.iter().find(|f| f.token == "银行").unwrap();
        assert!((known.idf - shared().idf_table().idf(known.hash)).abs() < 1e-12);
        let v1 = shared().features("zyxwvq", || true).unwrap();
        assert!((v1[0].idf - shared().idf_table().median()).abs() < 1e-5);
    }

    #[test]
    fn version_2_fingerprint_is_the_weighted_sum_of_its_features() {
        let text = "國務院 今天 今天 今天 今天 会见 iPhone iPhone 2024年 客人";
        let feats = shared().features_as(Version::V2, text, || true).unwrap();
        let mut acc = Accumulator::new();
        for f in &feats {
            acc.add(f.hash, crate::idf::to_fixed(f.weight));
        }
        assert_eq!(acc.finish(), shared().fingerprint_as(Version::V2, text));
    }

    fn v3_features(text: &str) -> Vec<(Kind, String)> {
        let mut out = Vec::new();
        shared()
            .features_v3(text, || true, |k, f| out.push((k, f.to_owned())))
            .unwrap();
        out
    }

    #[test]
    fn version_3_features_are_han_characters_and_trigrams_of_other_words() {
        let got = v3_features("我来到北京，iPhone 15！a");
        let want: Vec<(Kind, String)> = [
            (Kind::Han, "我"),
            (Kind::Han, "来"),
            (Kind::Han, "到"),
            (Kind::Han, "北"),
            (Kind::Han, "京"),
            (Kind::Gram, "^ip"),
            (Kind::Gram, "iph"),
            (Kind::Gram, "pho"),
            (Kind::Gram, "hon"),
            (Kind::Gram, "one"),
            (Kind::Gram, "ne$"),
            (Kind::Gram, "^15"),
            (Kind::Gram, "15$"),
            (Kind::Gram, "^a$"),
        ]
        .iter()
        .map(|&(k, f)| (k, f.to_owned()))
        .collect();
        assert_eq!(got, want);
        // A word inside a run of Han characters ends where the Han begins.
        assert_eq!(
            v3_features("北京abc上海"),
            v3_features("北京 abc 上海"),
            "a Han character ends a word as a space does"
        );
    }

    #[test]
    fn version_3_ignores_punctuation_spacing_width_case_and_script_variant() {
        let v3 = |t| shared().fingerprint_as(Version::V3, t);
        let a = "今天，北京市政府发布了新的交通管理规定。Beijing Traffic Rules 2024";
        let b = "今天 北京市政府發佈了新的交通管理規定！！ＢＥＩＪＩＮＧ  traffic  rules  ２０２４";
        assert!(v3(a).is_some());
        assert_eq!(v3(a), v3(b));
        for t in ["", "   ", "，。！？……", "😀 🎉 ★"] {
            assert_eq!(v3(t), None, "{t:?}");
        }
    }

    #[test]
    fn version_3_fingerprint_is_the_weighted_sum_of_its_features() {
        let text = "國務院 今天 今天 今天 今天 会见 iPhone iPhone 2024年 客人 the the the";
        let feats = shared().features_as(Version::V3, text, || true).unwrap();
        let mut acc = Accumulator::new();
        for f in &feats {
            acc.add(f.hash, crate::idf::to_fixed(f.weight));
        }
        assert_eq!(acc.finish(), shared().fingerprint_as(Version::V3, text));
        let jin = feats.iter().find(|f| f.token == "今").unwrap();
        assert_eq!(jin.tf, 4);
        assert_eq!(jin.hash, xxh3_64("今".as_bytes()));
        let the = feats.iter().find(|f| f.token == "the").unwrap();
        assert_eq!(
            the.tf, 3,
            "one trigram `the` in each of the three words `the`"
        );
        // Folded before counting: 國 counts as 国.
        assert!(feats.iter().any(|f| f.token == "国"));
        assert!(!feats.iter().any(|f| f.token == "國"));
    }

    #[test]
    fn version_3_weighs_common_characters_of_a_long_text_against_chance() {
        let base = "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。";
        let short = shared().features_as(Version::V3, base, || true).unwrap();
        let long = shared()
            .features_as(Version::V3, &base.repeat(200), || true)
            .unwrap();
        let weight = |fs: &[Feature], t: &str| fs.iter().find(|f| f.token == t).unwrap().weight;
        // 的 is common (self-information 5.6, one character in 270): in
        // the short text its two count nearly fully, in a text of 9,400
        // characters (35 expected by chance) six say nothing.
        assert!(weight(&short, "的") > 1.8 * 5.6);
        assert!(weight(&long, "的").abs() < 0.01, "{}", weight(&long, "的"));
        // 鹏 is rare: six occurrences stay well above chance.
        assert!(weight(&long, "鹏") > 5.5 * 10.0);
        // A common character seen less often than chance weighs below zero.
        let sparse = format!("{}是", "鹏".repeat(3000));
        let f = shared().features_as(Version::V3, &sparse, || true).unwrap();
        assert!(weight(&f, "是") < 0.0);
    }

    #[test]
    fn version_3_trigrams_no_english_text_has_weigh_less() {
        let f = shared()
            .features_as(Version::V3, "the qzxv", || true)
            .unwrap();
        let weight = |t: &str| f.iter().find(|f| f.token == t).unwrap().weight;
        // `the` and `^th` are in the trigram table (and common: chance
        // gives each about a sixth of an occurrence in 8 trigrams), `qzx`
        // and `zxv` are not.
        for known in ["the", "^th"] {
            let w = weight(known);
            assert!(w > 0.8 && w < 0.9, "{known}: {w}");
        }
        for made_up in ["^qz", "qzx", "zxv", "xv$"] {
            let w = weight(made_up);
            assert!((w - V3_GRAM_UNKNOWN_FACTOR).abs() < 1e-4, "{made_up}: {w}");
        }
    }

    #[test]
    fn version_3_text_with_nothing_above_chance_still_has_its_own_fingerprint() {
        let v3 = |t: &str| shared().fingerprint_as(Version::V3, t).unwrap();
        // Every character of these is common and repeated far beyond what
        // chance needs to reach the cap: weighed against chance they would
        // all weigh 0, and both texts would get the fingerprint 0.
        let a = "北京天气晴朗".repeat(200_000);
        let b = "上海下雨了吗".repeat(200_000);
        let fa = shared().features_as(Version::V3, &a, || true).unwrap();
        assert!(fa.iter().all(|f| f.weight > 0.0));
        assert_ne!(v3(&a), 0);
        assert!(hamming(v3(&a), v3(&b)) > 12);
        // The weighted sum still holds.
        let mut acc = Accumulator::new();
        for f in &fa {
            acc.add(f.hash, crate::idf::to_fixed(f.weight));
        }
        assert_eq!(acc.finish(), Some(v3(&a)));
    }

    #[test]
    fn version_3_moves_little_under_character_edits() {
        let base = "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。\
                    李鹏说，中国政府高度重视同日本的关系，愿同日方一道努力，推动两国关系健康稳定地向前发展。\
                    日本客人表示，日本经济界愿意积极参与中国的经济建设，为两国的友好合作作出贡献。";
        // Three characters of 130 changed, inserted or deleted.
        let edited = base
            .replacen("交换了意见", "交换了看见", 1)
            .replacen("健康稳定", "健康和稳定", 1)
            .replacen("积极参与", "积参与", 1);
        let other = "昨天下午，北京市民在天安门广场参加了迎新年长跑活动，数千名运动员和群众冒着严寒跑完全程。\
                     活动由北京市体育局主办，旨在推动全民健身运动的开展，增强人民体质。";
        let v3 = |t| shared().fingerprint_as(Version::V3, t).unwrap();
        let (a, b, c) = (v3(base), v3(&edited), v3(other));
        assert!(hamming(a, b) <= 6, "edited copy at {}", hamming(a, b));
        assert!(hamming(a, c) > 14, "unrelated text at {}", hamming(a, c));
        // Version 2 moved further for the same edits.
        let v2 = |t| shared().fingerprint_as(Version::V2, t).unwrap();
        assert!(hamming(a, b) < hamming(v2(base), v2(&edited)));
    }

    #[test]
    fn version_3_interrupted_walk_says_so() {
        let text = "一段，很长，的文字，".repeat(2000);
        let mut calls = 0;
        let r = shared().fingerprint_checked_as(Version::V3, &text, || {
            calls += 1;
            calls < 10
        });
        assert_eq!(r, Err(Interrupted));
        assert_eq!(calls, 10);
        assert_eq!(
            shared().fingerprint_checked_as(Version::V3, &text, || true),
            Ok(shared().fingerprint_as(Version::V3, &text))
        );
    }

    #[test]
    fn an_interrupted_walk_says_so() {
        // Long enough for many batches of Han pieces.
        let text = "一段，很长，的文字，".repeat(2000);
        let mut calls = 0;
        let r = shared().fingerprint_checked(&text, || {
            calls += 1;
            calls < 10
        });
        assert_eq!(r, Err(Interrupted));
        assert_eq!(calls, 10);
        assert_eq!(
            shared().fingerprint_checked(&text, || true),
            Ok(shared().fingerprint(&text))
        );
    }
}
