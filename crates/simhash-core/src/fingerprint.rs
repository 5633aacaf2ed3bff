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

use crate::cpu::Simd;
use crate::fold::Fold;
use crate::idf::{from_fixed, to_fixed, IdfTable, PassThrough};

mod dense;
mod scan;
mod scan_tables;
mod settings;
mod table;
mod v1;
mod v2;
mod v3;
mod weigh;
#[cfg(target_arch = "x86_64")]
mod wide;
#[cfg(target_arch = "x86_64")]
mod wide_weights;

pub use settings::{
    Kind, V3Options, GRAM_WEIGHTS_TXT, HAN_WEIGHTS_TXT, V3_GRAM, V3_GRAM_UNKNOWN,
    V3_GRAM_UNKNOWN_FACTOR, V3_HAN, V3_HAN_UNKNOWN,
};

/// How many bytes of Han pieces go to jieba in one call.
pub const HAN_BATCH_BYTES: usize = 4096;

/// How many feature hashes are looked up together.
const HASH_BATCH: usize = 256;

/// Version 3 counts at most this many distinct features at once:
/// 917,503, so that the hash table (16-byte entries of hash, count and
/// kind, plus one control byte a bucket, filled to at most 7/8 of its
/// buckets) never has more than 2^20 buckets. A text with more distinct
/// features is counted a part of the hash space at a time, in more walks
/// over the text ([`crate::part`]); natural text has a few thousand.
pub const V3_MAX_COUNTED: usize = (1 << 20) / 8 * 7 - 1;

/// The most bytes version 3's counting table takes: 2^20 buckets of 17
/// bytes, and while it grows (or shrinks after a cut) the table of half
/// the size beside it: 26,738,688 bytes (25.5 MiB).
pub const V3_MAX_BYTES: usize = (1 << 20) * 17 + (1 << 19) * 17;

/// Version 2 holds at most this many token hashes at once (8 bytes each,
/// 16 MiB); past it they are sorted and each kept at most
/// [`V2_TF_CAP`] times, and a text with more distinct tokens is counted
/// a part of the hash space at a time. A power of two, so that the vector
/// growing by doubling ends exactly at it.
pub const V2_MAX_HASHES: usize = 1 << 21;

/// The most bytes version 2's hashes take: [`V2_MAX_HASHES`] of 8 bytes,
/// and while the vector grows the one of half the size beside it:
/// 25,165,824 bytes (24 MiB).
pub const V2_MAX_BYTES: usize = V2_MAX_HASHES * 8 + V2_MAX_HASHES / 2 * 8;

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

/// The cutting and weighting state: jieba's dictionary and the IDF table.
/// Building one takes about a second and tens of megabytes, so a process
/// builds one and shares it; fingerprinting only reads it.
pub struct Fingerprinter {
    jieba: Jieba,
    idf: IdfTable,
    fold: Fold,
    oov_weight: i64,
    /// Version 3's self-information of each feature, by kind.
    self_info: weigh::SelfInfos,
    /// Version 3's common features (Han characters, ASCII trigrams) in a
    /// table by index.
    dense: table::DenseHan,
    /// The scan's tables: folded ideographs, and classes of characters.
    fast: scan_tables::ScanTables,
    /// The vector instructions of version 3's weights and counters.
    simd: Simd,
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

/// Why [`Fingerprinter::fingerprint_bytes_checked_as`] gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesError {
    /// `go_on` said stop.
    Interrupted,
    /// The bytes are not UTF-8.
    NotUtf8,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprinter {
    /// Loads jieba's default dictionary and the shipped IDF table.
    pub fn new() -> Self {
        let self_info = weigh::SelfInfos::shipped();
        let fold = Fold::t2s();
        // Built here, so that a preloaded library builds it once in the
        // postmaster, not in every backend.
        crate::weights::prepare();
        Fingerprinter {
            jieba: Jieba::new(),
            idf: IdfTable::jieba(),
            fast: scan_tables::ScanTables::new(&fold),
            fold,
            oov_weight: to_fixed(V2_OOV_IDF),
            dense: table::DenseHan::new(&self_info.han, &self_info.grams),
            self_info,
            simd: Simd::detected(),
        }
    }

    /// The same fingerprinter with the weights and counters of version 3
    /// computed with the vector instructions of `simd`, or the widest this
    /// processor has below them (the same bits either way: for tests and
    /// benchmarks).
    pub fn with_simd(mut self, simd: Simd) -> Self {
        self.simd = simd.min(Simd::detected());
        self
    }

    /// The vector instructions of version 3's weights and counters.
    pub fn simd(&self) -> Simd {
        self.simd
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
    ///
    /// Memory does not grow with the text: version 1 adds each token as it
    /// comes; versions 2 and 3 count the distinct features, at most
    /// [`V2_MAX_HASHES`] token hashes or [`V3_MAX_COUNTED`] distinct
    /// features at once ([`V2_MAX_BYTES`], [`V3_MAX_BYTES`]), and a text
    /// with more is counted a part of the hash space at a time, in more
    /// walks over the text, to the same fingerprint. `go_on` is called
    /// between pieces in every walk.
    pub fn fingerprint_checked_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, Interrupted> {
        let bound = match version {
            Version::V1 => 0,
            Version::V2 => V2_MAX_HASHES,
            Version::V3 => V3_MAX_COUNTED,
        };
        self.fingerprint_bounded_as(version, text, go_on, bound)
    }

    /// [`Self::fingerprint_checked_as`] with `bound` in place of
    /// [`V2_MAX_HASHES`] (version 2) or [`V3_MAX_COUNTED`] (version 3);
    /// version 1 holds no features and ignores it. The fingerprint is the
    /// same whatever the bound: a smaller one takes less memory and more
    /// walks over a text with many distinct features.
    pub fn fingerprint_bounded_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
        bound: usize,
    ) -> Result<Option<u64>, Interrupted> {
        match version {
            Version::V1 => self.fingerprint_v1(text, go_on),
            Version::V2 => self.fingerprint_v2(text, go_on, bound),
            Version::V3 => self.fingerprint_v3(text, go_on, bound),
        }
    }

    /// [`Self::fingerprint_checked_as`] of raw bytes, which must be UTF-8:
    /// [`BytesError::NotUtf8`] when they are not. Version 3 checks the
    /// bytes while it reads them (no pass of its own over the text, which
    /// was a tenth of its time on Chinese text in a profile); the others check
    /// first.
    pub fn fingerprint_bytes_checked_as(
        &self,
        version: Version,
        bytes: &[u8],
        go_on: impl FnMut() -> bool,
    ) -> Result<Option<u64>, BytesError> {
        if version == Version::V3 {
            return self.fingerprint_bytes_v3(bytes, go_on);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| BytesError::NotUtf8)?;
        self.fingerprint_checked_as(version, text, go_on)
            .map_err(|Interrupted| BytesError::Interrupted)
    }

    /// The distinct tokens of `text` in order of first occurrence, with what
    /// each contributes to the fingerprint. `go_on` is called between pieces,
    /// as for [`Self::fingerprint_checked`]. At most [`MAX_FEATURES`]
    /// distinct tokens of at most [`MAX_FEATURE_BYTES`] bytes in all: past
    /// either, [`FeaturesError::TooMany`] or [`FeaturesError::TooLong`].
    pub fn features(
        &self,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<Feature>, FeaturesError> {
        self.features_as(Version::V1, text, go_on)
    }

    /// [`Self::features`] under the given definition: under version 2 the
    /// tokens are those of the folded text, `idf` is [`V2_OOV_IDF`] for a
    /// token not in the table, and `weight` is `min(tf, 3) * idf`; under
    /// version 3 the features are Han characters and trigrams, `idf` is the
    /// self-information and `weight` what the fingerprint adds for the
    /// feature (negative when the text holds it less often than chance).
    pub fn features_as(
        &self,
        version: Version,
        text: &str,
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<Feature>, FeaturesError> {
        self.features_limited(version, text, go_on, FeatureLimits::DEFAULT)
    }

    /// [`Self::features_as`] with other limits.
    fn features_limited(
        &self,
        version: Version,
        text: &str,
        mut go_on: impl FnMut() -> bool,
        limits: FeatureLimits,
    ) -> Result<Vec<Feature>, FeaturesError> {
        let mut list = FeatureList::new(limits);
        // Set when the list is full: stops the walk at the next piece.
        let full = std::cell::Cell::new(false);
        let go_on = || !full.get() && go_on();
        let mut kinds: Vec<Kind> = Vec::new();
        let mut totals = [0u64; 2];
        let walked = if version == Version::V3 {
            self.features_v3(text, go_on, |kind, f| {
                totals[kind as usize] += 1;
                match list.add(f) {
                    Added::New => kinds.push(kind),
                    Added::Seen => {}
                    Added::Full => full.set(true),
                }
            })
        } else {
            self.for_each_token_as(version, text, go_on, |token| {
                if list.add(token) == Added::Full {
                    full.set(true);
                }
            })
        };
        let mut out = list.finish()?;
        walked?;
        match version {
            Version::V1 | Version::V2 => {
                let cap = match version {
                    Version::V1 => u64::MAX,
                    _ => V2_TF_CAP,
                };
                for f in &mut out {
                    let idf = from_fixed(self.weight(version, f.hash));
                    f.idf = idf;
                    f.weight = idf * f.tf.min(cap) as f64;
                }
            }
            Version::V3 => {
                let opts = &V3Options::DEFINITION;
                let mut positive = false;
                for (f, &kind) in out.iter_mut().zip(&kinds) {
                    let (s, w) = self.self_info.weigh(opts, kind, f.hash, f.tf, totals);
                    f.idf = s;
                    f.weight = from_fixed(w);
                    positive |= w > 0;
                }
                if !positive {
                    for (f, &kind) in out.iter_mut().zip(&kinds) {
                        let info = self.self_info.look_up(kind, f.hash);
                        let w = weigh::weigh_fixed(opts, kind, info, f.tf, totals, true);
                        f.weight = from_fixed(w);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// How many distinct features [`Fingerprinter::features_as`] (SQL
/// `simhash_features`) lists at most; past it the listing fails with
/// [`FeaturesError::TooMany`]. Natural text has a few thousand. At the
/// limit the list takes about 122 MB of heap (measured with
/// `examples/peak_memory.rs`): the [`Feature`]s (56 bytes each, in a vector
/// grown to 2^20 of them), the index by hash (2^21 buckets of 17 bytes)
/// and each token's own allocation.
pub const MAX_FEATURES: usize = 1_000_000;

/// How many bytes of feature text [`Fingerprinter::features_as`] lists at
/// most, all distinct features together (16 MiB); past it the listing
/// fails with [`FeaturesError::TooLong`]. A version 1 or 2 token of a
/// script without segmentation can be 512 characters long, so the count
/// alone would not bound the memory.
pub const MAX_FEATURE_BYTES: usize = 16 << 20;

/// Why [`Fingerprinter::features_as`] gave no list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeaturesError {
    /// `go_on` said stop.
    Interrupted,
    /// The text has more than `limit` distinct features ([`MAX_FEATURES`]).
    TooMany {
        /// The most listed.
        limit: usize,
    },
    /// The text of the distinct features is more than `limit` bytes in all
    /// ([`MAX_FEATURE_BYTES`]).
    TooLong {
        /// The most bytes listed.
        limit: usize,
    },
}

impl From<Interrupted> for FeaturesError {
    fn from(_: Interrupted) -> Self {
        FeaturesError::Interrupted
    }
}

impl std::fmt::Display for FeaturesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeaturesError::Interrupted => write!(f, "feature listing interrupted"),
            FeaturesError::TooMany { limit } => {
                write!(f, "text has more than {limit} distinct features")
            }
            FeaturesError::TooLong { limit } => {
                write!(
                    f,
                    "the distinct features of the text are more than {limit} bytes"
                )
            }
        }
    }
}

impl std::error::Error for FeaturesError {}

/// The limits of one feature listing.
#[derive(Debug, Clone, Copy)]
struct FeatureLimits {
    features: usize,
    bytes: usize,
}

impl FeatureLimits {
    const DEFAULT: FeatureLimits = FeatureLimits {
        features: MAX_FEATURES,
        bytes: MAX_FEATURE_BYTES,
    };
}

/// What [`FeatureList::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Added {
    /// A feature not seen before, now last in the list.
    New,
    /// One more occurrence of a listed feature.
    Seen,
    /// Nothing: the list is full.
    Full,
}

/// The distinct features of a text in order of first occurrence, with
/// their counts, within [`FeatureLimits`].
struct FeatureList {
    out: Vec<Feature>,
    /// Index in `out` by hash: 16 bytes an entry, no second copy of the
    /// text.
    by_hash: HashMap<u64, usize, BuildHasherDefault<PassThrough>>,
    /// Index in `out` of a feature whose hash is another's (a 64-bit
    /// collision), by its text: listed apart, as different tokens are.
    collided: HashMap<String, usize>,
    bytes: usize,
    limits: FeatureLimits,
    error: Option<FeaturesError>,
}

impl FeatureList {
    fn new(limits: FeatureLimits) -> Self {
        FeatureList {
            out: Vec::new(),
            by_hash: HashMap::default(),
            collided: HashMap::new(),
            bytes: 0,
            limits,
            error: None,
        }
    }

    /// Counts one occurrence of `token`.
    fn add(&mut self, token: &str) -> Added {
        self.add_hashed(token, xxh3_64(token.as_bytes()))
    }

    /// [`Self::add`] with the token's hash given.
    fn add_hashed(&mut self, token: &str, hash: u64) -> Added {
        if self.error.is_some() {
            return Added::Full;
        }
        let listed = match self.by_hash.get(&hash) {
            Some(&i) if self.out[i].token == token => Some(i),
            Some(_) => self.collided.get(token).copied(),
            None => None,
        };
        if let Some(i) = listed {
            self.out[i].tf += 1;
            return Added::Seen;
        }
        let collision = self.by_hash.contains_key(&hash);
        // A collided token is held twice (list and index).
        let bytes = token.len() * if collision { 2 } else { 1 };
        if self.out.len() >= self.limits.features {
            self.error = Some(FeaturesError::TooMany {
                limit: self.limits.features,
            });
            return Added::Full;
        }
        if bytes > self.limits.bytes - self.bytes {
            self.error = Some(FeaturesError::TooLong {
                limit: self.limits.bytes,
            });
            return Added::Full;
        }
        self.bytes += bytes;
        let i = self.out.len();
        if collision {
            self.collided.insert(token.to_owned(), i);
        } else {
            self.by_hash.insert(hash, i);
        }
        self.out.push(Feature {
            token: token.to_owned(),
            tf: 1,
            idf: 0.0,
            weight: 0.0,
            hash,
        });
        Added::New
    }

    /// The list, or why there is none.
    fn finish(self) -> Result<Vec<Feature>, FeaturesError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::accumulate::Accumulator;
    use crate::distance::hamming;
    use crate::testutil::splitmix;

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

    /// Random Hangul syllables without a space: version 3 makes about one
    /// distinct trigram per character.
    fn random_hangul(chars: usize, seed: u64) -> String {
        let mut s = seed;
        (0..chars)
            .map(|_| char::from_u32(0xAC00 + (splitmix(&mut s) % 11_172) as u32).unwrap())
            .collect()
    }

    /// Random CJK ideographs without a space (jieba makes tokens of one
    /// and two characters) and random ASCII words, mixed.
    fn random_mixed(tokens: usize, seed: u64) -> String {
        let mut s = seed;
        let mut text = String::new();
        for _ in 0..tokens {
            let r = splitmix(&mut s);
            if r.is_multiple_of(3) {
                for i in 0..=(r >> 8) % 6 {
                    text.push(char::from(b'a' + ((r >> (12 + 5 * i)) % 26) as u8));
                }
                text.push(' ');
            } else {
                let c = 0x4E00 + ((r >> 8) % 20_902) as u32;
                text.push(char::from_u32(c).unwrap());
            }
        }
        text
    }

    /// The fingerprint under `bound`, and how many times `go_on` was
    /// called (once a piece, in every walk over the text).
    /// The fingerprint under `bound`, and how many times the walk asked
    /// to go on. Version 3 takes the general path, whose parts these tests
    /// are about (the table of `dense` is checked against it there).
    fn bounded(version: Version, text: &str, bound: usize) -> (Option<u64>, usize) {
        let mut calls = 0;
        let go_on = || {
            calls += 1;
            true
        };
        let fp = if version == Version::V3 {
            shared().fingerprint_v3_general(&V3Options::DEFINITION, text, go_on, bound.max(2))
        } else {
            shared().fingerprint_bounded_as(version, text, go_on, bound)
        }
        .unwrap();
        (fp, calls)
    }

    /// The version 3 fingerprint with nothing subtracted for chance: what
    /// the fallback gives.
    fn v3_regardless(text: &str) -> Option<u64> {
        let opts = V3Options {
            chance: false,
            ..V3Options::DEFINITION
        };
        shared().fingerprint_v3_with(&opts, text, || true).unwrap()
    }

    #[test]
    fn version_3_counted_in_parts_gives_the_same_bits() {
        let natural = "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。\
                       The quick brown fox jumps over the lazy dog. 北京天气晴朗 the the the";
        // (text, bounds): the small bounds only for small texts, where
        // each walk counts a feature or two.
        let cases = [
            (random_hangul(500, 1), &[40, 200, 1000][..]),
            (random_mixed(500, 2), &[40, 200, 1000][..]),
            (natural.to_owned(), &[2, 3, 7, 64][..]),
            (
                format!("{natural}{}", random_hangul(300, 3)),
                &[7, 64, 200][..],
            ),
        ];
        for (text, bounds) in &cases {
            let (whole, one_walk) = bounded(Version::V3, text, V3_MAX_COUNTED);
            assert_eq!(whole, shared().fingerprint_as(Version::V3, text));
            assert!(whole.is_some());
            let distinct = shared()
                .features_as(Version::V3, text, || true)
                .unwrap()
                .len();
            for &bound in *bounds {
                let (fp, calls) = bounded(Version::V3, text, bound);
                assert_eq!(fp, whole, "bound {bound}, {:?}", &text[..30]);
                // A bound below the text's distinct features takes more
                // walks: the parts were counted apart.
                if distinct > bound {
                    assert!(calls >= 2 * one_walk, "bound {bound}: {calls} calls");
                } else {
                    assert_eq!(calls, one_walk);
                }
            }
        }
    }

    #[test]
    fn version_3_fallback_is_decided_over_all_parts() {
        // Every feature of this text is at or below chance: the fallback
        // weighs them regardless of chance, in one walk or in many.
        let flat = "the ".repeat(3000);
        let f = shared().features_as(Version::V3, &flat, || true).unwrap();
        assert_eq!(f.len(), 3);
        let (whole, _) = bounded(Version::V3, &flat, V3_MAX_COUNTED);
        assert_eq!(whole, v3_regardless(&flat));
        assert!(whole.is_some());
        // Many features, none above chance: common words repeated far
        // beyond what chance needs to reach the cap of 6.
        let many = "the and of to in for is on that ".repeat(1000);
        let f = shared().features_as(Version::V3, &many, || true).unwrap();
        assert!(f.len() > 20, "{} features", f.len());
        let (whole_many, _) = bounded(Version::V3, &many, V3_MAX_COUNTED);
        assert_eq!(whole_many, v3_regardless(&many), "the fallback applies");
        for bound in [2, 3, 5] {
            assert_eq!(bounded(Version::V3, &flat, bound).0, whole, "{bound}");
            assert_eq!(bounded(Version::V3, &many, bound).0, whole_many, "{bound}");
        }
        // One feature above chance among them: no fallback, whichever
        // part it is counted in.
        let one_above = format!("{many} qzx");
        let (with_one, _) = bounded(Version::V3, &one_above, V3_MAX_COUNTED);
        assert_ne!(with_one, v3_regardless(&one_above), "no fallback");
        let f = shared()
            .features_as(Version::V3, &one_above, || true)
            .unwrap();
        assert_eq!(f.iter().filter(|f| f.weight > 0.0).count(), 3);
        for bound in [2, 3, 5, 8] {
            let (fp, calls) = bounded(Version::V3, &one_above, bound);
            assert_eq!(fp, with_one, "bound {bound}");
            assert!(calls > 2, "bound {bound}: in more than one walk");
        }
    }

    #[test]
    fn version_2_counted_in_parts_gives_the_same_bits() {
        let rest = "中国人民银行今天宣布下调存款准备金率 iPhone iPhone iPhone iPhone";
        let cases = [
            (random_mixed(800, 5), &[40, 100, 1000][..]),
            (format!("{rest}{}", " 利率".repeat(10)), &[1, 8, 9, 16][..]),
            (
                format!("{}{}", " 利率 银行".repeat(50), random_mixed(60, 6)),
                &[8, 16, 100][..],
            ),
            (random_hangul(600, 7).repeat(3), &[8, 9][..]),
        ];
        for (text, bounds) in &cases {
            let (whole, one_walk) = bounded(Version::V2, text, V2_MAX_HASHES);
            assert_eq!(whole, shared().fingerprint_as(Version::V2, text));
            assert!(whole.is_some());
            let distinct = shared()
                .features_as(Version::V2, text, || true)
                .unwrap()
                .len();
            for &bound in *bounds {
                let (fp, calls) = bounded(Version::V2, text, bound);
                assert_eq!(fp, whole, "bound {bound}");
                // More distinct tokens than the bound take more walks.
                if distinct > bound.max(8) {
                    assert!(calls > one_walk, "bound {bound}: {calls} calls");
                }
            }
        }
    }

    #[test]
    fn counting_in_parts_can_be_interrupted_in_any_walk() {
        let text = random_hangul(1000, 8);
        let (_, one_walk) = bounded(Version::V3, &text, V3_MAX_COUNTED);
        let (_, all) = bounded(Version::V3, &text, 64);
        assert!(all > 3 * one_walk);
        for stop_at in [1, one_walk + 1, all - 1, all] {
            let mut calls = 0;
            let r = shared().fingerprint_bounded_as(
                Version::V3,
                &text,
                || {
                    calls += 1;
                    calls < stop_at
                },
                64,
            );
            assert_eq!(r, Err(Interrupted), "stopped at {stop_at}");
            assert_eq!(calls, stop_at);
        }
        let mixed = random_mixed(1000, 9);
        let mut calls = 0;
        let r = shared().fingerprint_bounded_as(
            Version::V2,
            &mixed,
            || {
                calls += 1;
                calls < 400
            },
            8,
        );
        assert_eq!(r, Err(Interrupted));
        assert_eq!(calls, 400);
    }

    fn limited(
        version: Version,
        text: &str,
        features: usize,
        bytes: usize,
    ) -> Result<usize, FeaturesError> {
        shared()
            .features_limited(version, text, || true, FeatureLimits { features, bytes })
            .map(|f| f.len())
    }

    #[test]
    fn feature_listing_stops_past_its_limits() {
        // Five distinct tokens of 3 + 4 + 2 + 1 + 3 = 13 bytes.
        let text = "abc defg hi j abc klm defg";
        for version in [Version::V1, Version::V2] {
            assert_eq!(limited(version, text, 5, 13), Ok(5));
            assert_eq!(
                limited(version, text, 4, 13),
                Err(FeaturesError::TooMany { limit: 4 })
            );
            assert_eq!(
                limited(version, text, 5, 12),
                Err(FeaturesError::TooLong { limit: 12 })
            );
        }
        // Version 3: 今 天 and the trigrams ^ab abc bc$.
        let v3 = "今天 abc 今天 abc";
        assert_eq!(limited(Version::V3, v3, 5, 100), Ok(5));
        assert_eq!(
            limited(Version::V3, v3, 4, 100),
            Err(FeaturesError::TooMany { limit: 4 })
        );
        assert_eq!(
            limited(Version::V3, v3, 5, 14),
            Err(FeaturesError::TooLong { limit: 14 })
        );
        assert_eq!(limited(Version::V3, v3, 5, 15), Ok(5));
        // The walk stops at the piece after the limit is passed.
        let long = random_hangul(20_000, 10);
        let mut calls = 0;
        let r = shared().features_limited(
            Version::V3,
            &long,
            || {
                calls += 1;
                true
            },
            FeatureLimits {
                features: 100,
                bytes: usize::MAX,
            },
        );
        assert_eq!(r, Err(FeaturesError::TooMany { limit: 100 }));
        assert!(calls <= 1, "{calls} pieces after the limit");
        // The public listing has the documented limits.
        assert_eq!(
            FeatureLimits::DEFAULT.features,
            MAX_FEATURES,
            "the default is the documented limit"
        );
        assert_eq!(FeatureLimits::DEFAULT.bytes, MAX_FEATURE_BYTES);
        let interrupted = shared().features_as(Version::V1, text, || false);
        assert_eq!(interrupted, Err(FeaturesError::Interrupted));
    }

    #[test]
    fn feature_listing_past_a_million_distinct_tokens_is_an_error() {
        let words = MAX_FEATURES + 1;
        let mut text = String::with_capacity(8 * words);
        for i in 0..words {
            text.push_str(&i.to_string());
            text.push(' ');
        }
        assert_eq!(
            shared()
                .features_as(Version::V1, &text, || true)
                .map(|f| f.len()),
            Err(FeaturesError::TooMany {
                limit: MAX_FEATURES
            })
        );
        let cut = text.rfind(|c: char| c.is_ascii_digit()).unwrap();
        let last = text[..=cut].rfind(' ').unwrap();
        assert_eq!(
            shared()
                .features_as(Version::V1, &text[..last], || true)
                .map(|f| f.len()),
            Ok(MAX_FEATURES)
        );
    }

    #[test]
    fn tokens_with_the_same_hash_are_listed_apart() {
        let mut list = FeatureList::new(FeatureLimits {
            features: 10,
            bytes: 100,
        });
        assert_eq!(list.add_hashed("ab", 7), Added::New);
        assert_eq!(list.add_hashed("cd", 7), Added::New);
        assert_eq!(list.add_hashed("ab", 7), Added::Seen);
        assert_eq!(list.add_hashed("cd", 7), Added::Seen);
        assert_eq!(list.add_hashed("cd", 7), Added::Seen);
        assert_eq!(list.add_hashed("ef", 8), Added::New);
        let out = list.finish().unwrap();
        let got: Vec<(&str, u64)> = out.iter().map(|f| (f.token.as_str(), f.tf)).collect();
        assert_eq!(got, [("ab", 2), ("cd", 3), ("ef", 1)]);
        // The collided token counts twice against the byte limit.
        let mut list = FeatureList::new(FeatureLimits {
            features: 10,
            bytes: 5,
        });
        assert_eq!(list.add_hashed("ab", 7), Added::New);
        assert_eq!(list.add_hashed("cd", 7), Added::Full);
        assert_eq!(list.finish(), Err(FeaturesError::TooLong { limit: 5 }));
    }

    #[test]
    fn raw_bytes_give_the_fingerprint_of_their_text_or_say_they_are_not_utf8() {
        let texts = [
            "",
            "，。",
            "中文新闻，２０２４年 abc",
            "Ｆｕｌｌ-width ﬁne café",
            "國語 ﾃｽﾄ",
        ];
        for version in [Version::V1, Version::V2, Version::V3] {
            for t in texts {
                assert_eq!(
                    shared().fingerprint_bytes_checked_as(version, t.as_bytes(), || true),
                    Ok(shared().fingerprint_as(version, t)),
                    "{version:?} {t:?}"
                );
            }
            for bad in [
                &b"abc\xff"[..],
                b"\xe4\xb8",
                "中文".as_bytes().split_at(4).0,
            ] {
                assert_eq!(
                    shared().fingerprint_bytes_checked_as(version, bad, || true),
                    Err(BytesError::NotUtf8),
                    "{version:?} {bad:x?}"
                );
            }
        }
        let long = "一段，很长，的文字，".repeat(20_000);
        assert_eq!(
            shared().fingerprint_bytes_checked_as(Version::V3, long.as_bytes(), || false),
            Err(BytesError::Interrupted)
        );
    }

    #[test]
    fn version_3_interrupted_walk_says_so() {
        // Version 3 asks every 16,384 characters: 200,000 ask 13 times.
        let text = "一段，很长，的文字，".repeat(20_000);
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
