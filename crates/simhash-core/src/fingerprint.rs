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
//! [`Fingerprinter::fingerprint_as`], [`Fingerprinter::features_as`] and
//! [`Fingerprinter::for_each_token_as`] take the version; one
//! [`Fingerprinter`] serves both (the jieba dictionary, the IDF table and
//! the fold table are built once). The methods without `_as` are version 1.

use jieba_rs::Jieba;
use xxhash_rust::xxh3::xxh3_64;

use crate::accumulate::Accumulator;
use crate::fold::Fold;
use crate::idf::{from_fixed, to_fixed, IdfTable};
use crate::text::{for_each_piece_mapped, Piece, MAX_PIECE_CHARS};

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

    /// The fixed-point weight of one occurrence of a token under `version`.
    #[inline]
    fn weight(&self, version: Version, hash: u64) -> i64 {
        match version {
            Version::V1 => self.idf.weight(hash),
            Version::V2 => self.idf.get(hash).unwrap_or(self.oov_weight),
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
        if version == Version::V2 {
            return self.fingerprint_v2(text, go_on);
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
            Version::V2 => V2_TF_CAP,
        };
        for f in &mut out {
            f.weight = from_fixed(self.weight(version, f.hash)) * f.tf.min(cap) as f64;
        }
        Ok(out)
    }
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
