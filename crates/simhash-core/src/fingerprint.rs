//! Steps 2 to 4 put together: text in, 64-bit fingerprint out.
//!
//! A piece (see [`crate::text`]) with a Han character in it is segmented by
//! jieba (its default dictionary, precise mode, HMM on for unknown words).
//! Any other piece (a Latin word, a number, a word of another script) is one
//! token as it is. Every token is a feature: hash = xxh3-64 of its UTF-8
//! bytes, weight = IDF (fixed point, see [`crate::idf`]), added once per
//! occurrence, which makes the total weight of a token `tf * idf`.

use jieba_rs::Jieba;
use xxhash_rust::xxh3::xxh3_64;

use crate::accumulate::Accumulator;
use crate::idf::{from_fixed, IdfTable};
use crate::text::{for_each_piece, Piece, MAX_PIECE_CHARS};

/// How many bytes of Han pieces go to jieba in one call.
pub const HAN_BATCH_BYTES: usize = 4096;

/// How many feature hashes are looked up together.
const HASH_BATCH: usize = 256;

/// The cutting and weighting state: jieba's dictionary and the IDF table.
/// Building one takes about a second and tens of megabytes, so a process
/// builds one and shares it; fingerprinting only reads it.
pub struct Fingerprinter {
    jieba: Jieba,
    idf: IdfTable,
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
    /// Its IDF as the fingerprint uses it: the table's value (the median
    /// when the word is not in the table) to the nearest 2^-16.
    pub idf: f64,
    /// `tf * idf`, as the fixed-point sum the fingerprint really adds.
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
        let finished = for_each_piece(text, |piece: Piece<'_>| {
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
        match self.fingerprint_checked(text, || true) {
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
        let mut index = std::collections::HashMap::<String, usize>::new();
        let mut out: Vec<Feature> = Vec::new();
        self.for_each_token(text, go_on, |token| match index.get(token) {
            Some(&i) => out[i].tf += 1,
            None => {
                index.insert(token.to_owned(), out.len());
                let hash = xxh3_64(token.as_bytes());
                out.push(Feature {
                    token: token.to_owned(),
                    tf: 1,
                    idf: self.idf.idf(hash),
                    weight: 0.0,
                    hash,
                });
            }
        })?;
        for f in &mut out {
            f.weight = from_fixed(self.idf.weight(f.hash)) * f.tf as f64;
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
