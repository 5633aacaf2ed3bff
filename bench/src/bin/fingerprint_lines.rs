//! Fingerprints for the detection-quality yardstick (`bench/quality/`):
//! reads JSON lines `{"text": ...}` (other fields are ignored) on standard
//! input and prints one line per input line: the fingerprint as 16 hex
//! digits, or `NULL` when the text is null or has no feature.
//!
//! Without options it prints exactly what SQL `simhash_v1(text)` returns
//! (definition version 1); with `--definition v2`, what SQL `simhash(text)`
//! returns (version 2, the default since extension 0.2). So the yardstick
//! measures the extension without a PostgreSQL server.
//!
//! The other options are experiments, not the definition: each changes one thing
//! about how the tokens of version 1 are weighted, so that the yardstick
//! can measure a candidate change to the fingerprint before anyone proposes
//! it as a new definition version. They combine freely.
//!
//! * `--tf linear|log|once`: a token that occurs `tf` times weighs
//!   `tf × idf` (version 1), `(1 + ln tf) × idf`, or `idf`.
//! * `--tf-cap N`: counts at most `N` occurrences of a token.
//! * `--stopwords FILE`: tokens listed in FILE (one a line, lower case) are
//!   left out, unless a text has no other token.
//! * `--idf FILE`: `word idf` lines that give words missing from jieba's
//!   table (English words, mostly) an IDF of their own instead of the
//!   table's median.
//! * `--oov-idf X`: the IDF of a word in neither table, instead of the
//!   median of jieba's table (11.95, which is more than nine in ten of the
//!   word occurrences of Chinese news weigh).
//! * `--shingles`: each pair of adjacent tokens (after stop words are left
//!   out) is a feature too, weighing the mean of its two tokens' weights.
//! * `--v3-han-cap N`, `--v3-gram-cap N`, `--v3-han-power 0|1`,
//!   `--v3-gram-power 0|1`, `--v3-han-scale X`, `--v3-gram-unknown X`,
//!   `--v3-chance on|off`: version 3 with one of its settings changed (see
//!   `simhash_core::weights`): occurrences counted at most, whether the
//!   self-information multiplies the weight, a factor on every character's
//!   weight (against trigrams), what a trigram missing from the table
//!   weighs against a listed one, whether what chance gives is subtracted. They combine with each other only.
//! * `--charmap FILE`: `from to` lines of single characters, applied to the
//!   text before anything else (a traditional-to-simplified table, say).
//!   Version 2 folds after NFKC instead, so `--charmap` with its table
//!   differs from it only on the few hundred compatibility ideographs,
//!   Kangxi radicals and enclosed ideographs that NFKC turns into
//!   traditional characters.
//!
//! ```text
//! zcat texts.jsonl.gz | fingerprint-lines [OPTIONS] > fingerprints.txt
//! ```

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;
use std::sync::OnceLock;

use serde::Deserialize;
use simhash_core::accumulate::Accumulator;
use simhash_core::fingerprint::V3Options;
use simhash_core::idf::{to_fixed, IDF_TXT};
use simhash_core::weights::Power;
use simhash_core::{Fingerprinter, Version};

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

/// How the occurrences of one token add up.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tf {
    Linear,
    Log,
    Once,
}

/// A weighting of the version-1 tokens. The default value is version 1.
#[derive(Debug, Default)]
struct Weighting {
    definition: Version,
    tf: Option<Tf>,
    tf_cap: Option<u64>,
    stopwords: HashSet<String>,
    idf: HashMap<String, i64>,
    oov_idf: Option<i64>,
    shingles: bool,
    charmap: HashMap<char, char>,
    /// Version 3 with other settings (the `--v3-*` options).
    v3: Option<V3Options>,
}

impl Weighting {
    fn is_version_1(&self) -> bool {
        matches!(self.tf, None | Some(Tf::Linear))
            && self.tf_cap.is_none()
            && self.stopwords.is_empty()
            && self.idf.is_empty()
            && self.oov_idf.is_none()
            && !self.shingles
            && self.charmap.is_empty()
    }

    fn fingerprint(&self, fp: &Fingerprinter, text: &str) -> Option<u64> {
        if let Some(opts) = &self.v3 {
            return fp
                .fingerprint_v3_with(opts, text, || true)
                .expect("never interrupted");
        }
        if self.is_version_1() {
            return fp.fingerprint_as(self.definition, text);
        }
        let mapped: String;
        let text = if self.charmap.is_empty() {
            text
        } else {
            mapped = text
                .chars()
                .map(|c| *self.charmap.get(&c).unwrap_or(&c))
                .collect();
            &mapped
        };

        // The core's hash and weight of each distinct token (this crate
        // does not depend on the hash function itself, so it asks).
        let idf = fp.idf_table();
        let mut known: HashMap<String, (u64, i64)> = HashMap::new();
        for f in fp.features(text, || true).unwrap_or_default() {
            let mut w = idf.weight(f.hash);
            if (!self.idf.is_empty() || self.oov_idf.is_some()) && !in_jieba_table(&f.token) {
                w = *self
                    .idf
                    .get(&f.token)
                    .or(self.oov_idf.as_ref())
                    .unwrap_or(&w);
            }
            known.insert(f.token, (f.hash, w));
        }
        // (hash, weight of one occurrence) of each token, in text order.
        let mut tokens: Vec<(u64, i64)> = Vec::new();
        let mut stopped: Vec<(u64, i64)> = Vec::new();
        let _ = fp.for_each_token(
            text,
            || true,
            |token| {
                let hw = known[token];
                if self.stopwords.contains(token) {
                    stopped.push(hw);
                } else {
                    tokens.push(hw);
                }
            },
        );
        // A text made of stop words only still deserves a fingerprint of
        // its own rather than NULL.
        if tokens.is_empty() {
            tokens = stopped;
        }
        if tokens.is_empty() {
            return None;
        }

        // Distinct features: hash -> (occurrences, weight of one).
        let mut features: HashMap<u64, (u64, i64)> = HashMap::new();
        for &(h, w) in &tokens {
            features.entry(h).or_insert((0, w)).0 += 1;
        }
        if self.shingles {
            for pair in tokens.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                features
                    .entry(pair_hash(a.0, b.0))
                    .or_insert((0, (a.1 + b.1) / 2))
                    .0 += 1;
            }
        }

        let mut acc = Accumulator::new();
        for (&h, &(tf, w)) in &features {
            let tf = self.tf_cap.map_or(tf, |cap| tf.min(cap)) as f64;
            let factor = match self.tf.unwrap_or(Tf::Linear) {
                Tf::Linear => tf,
                Tf::Log => 1.0 + tf.ln(),
                Tf::Once => 1.0,
            };
            acc.add(h, (w as f64 * factor).round() as i64);
        }
        acc.finish()
    }
}

/// Whether jieba's table has `word`. Its weight cannot tell: 8,578 words
/// of the table have exactly the median IDF that a missing word gets.
fn in_jieba_table(word: &str) -> bool {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS
        .get_or_init(|| {
            IDF_TXT
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .collect()
        })
        .contains(word)
}

/// The feature hash of an ordered pair of tokens: a 64-bit mix (the
/// finalizer of splitmix64) of the tokens' own hashes, so that `a b` and
/// `b a` differ and neither equals a token's hash.
fn pair_hash(a: u64, b: u64) -> u64 {
    let mut z = a.rotate_left(21) ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn usage() -> String {
    "usage: fingerprint-lines [--definition v1|v2|v3] [--tf linear|log|once] [--tf-cap N] [--stopwords FILE] \
     [--idf FILE] [--oov-idf X] [--shingles] [--charmap FILE] \
     [--v3-han-cap N] [--v3-gram-cap N] [--v3-han-power 0|1] [--v3-gram-power 0|1] \
     [--v3-han-scale X] [--v3-gram-unknown X] [--v3-chance on|off] < texts.jsonl"
        .to_owned()
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Weighting, String> {
    let mut w = Weighting::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} wants a value\n{}", usage()))
        };
        match arg.as_str() {
            "--tf" => {
                w.tf = Some(match value()?.as_str() {
                    "linear" => Tf::Linear,
                    "log" => Tf::Log,
                    "once" => Tf::Once,
                    other => return Err(format!("--tf is linear, log or once, not {other:?}")),
                })
            }
            "--tf-cap" => {
                let v = value()?;
                w.tf_cap = match v.parse() {
                    Ok(n) if n > 0 => Some(n),
                    _ => return Err(format!("--tf-cap wants a positive number, not {v:?}")),
                };
            }
            "--stopwords" => {
                w.stopwords = read(&value()?)?
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_lowercase)
                    .collect();
            }
            "--idf" => {
                let path = value()?;
                for (i, line) in read(&path)?.lines().enumerate() {
                    let mut fields = line.split_whitespace();
                    let (Some(word), Some(idf), None) =
                        (fields.next(), fields.next(), fields.next())
                    else {
                        return Err(format!("{path}:{}: not a `word idf` line", i + 1));
                    };
                    let idf: f64 = idf
                        .parse()
                        .map_err(|_| format!("{path}:{}: {idf:?} is not a number", i + 1))?;
                    w.idf.insert(word.to_owned(), to_fixed(idf));
                }
            }
            "--oov-idf" => {
                let v = value()?;
                w.oov_idf = match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x >= 0.0 => Some(to_fixed(x)),
                    _ => return Err(format!("--oov-idf wants a number >= 0, not {v:?}")),
                };
            }
            "--shingles" => w.shingles = true,
            "--v3-han-cap" | "--v3-gram-cap" => {
                let v = value()?;
                let cap: u32 = match v.parse() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(format!("{arg} wants a positive number, not {v:?}")),
                };
                let o = w.v3.get_or_insert(V3Options::DEFINITION);
                if arg == "--v3-han-cap" {
                    o.han.cap = cap;
                } else {
                    o.gram.cap = cap;
                }
            }
            "--v3-han-power" | "--v3-gram-power" => {
                let power = match value()?.as_str() {
                    "0" => Power::Zero,
                    "1" => Power::One,
                    other => return Err(format!("{arg} is 0 or 1, not {other:?}")),
                };
                let o = w.v3.get_or_insert(V3Options::DEFINITION);
                if arg == "--v3-han-power" {
                    o.han.power = power;
                } else {
                    o.gram.power = power;
                }
            }
            "--v3-han-scale" => {
                let v = value()?;
                w.v3.get_or_insert(V3Options::DEFINITION).han.scale = match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 => x,
                    _ => return Err(format!("--v3-han-scale wants a number > 0, not {v:?}")),
                };
            }
            "--v3-gram-unknown" => {
                let v = value()?;
                w.v3.get_or_insert(V3Options::DEFINITION).gram.unknown = match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 => x,
                    _ => return Err(format!("--v3-gram-unknown wants a number > 0, not {v:?}")),
                };
            }
            "--v3-chance" => {
                let chance = match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("--v3-chance is on or off, not {other:?}")),
                };
                w.v3.get_or_insert(V3Options::DEFINITION).chance = chance;
            }
            "--charmap" => {
                let path = value()?;
                for (i, line) in read(&path)?.lines().enumerate() {
                    let mut chars = line.split_whitespace().map(|f| {
                        let mut cs = f.chars();
                        match (cs.next(), cs.next()) {
                            (Some(c), None) => Some(c),
                            _ => None,
                        }
                    });
                    match (chars.next(), chars.next(), chars.next()) {
                        (Some(Some(from)), Some(Some(to)), None) => {
                            w.charmap.insert(from, to);
                        }
                        _ => return Err(format!("{path}:{}: not a `from to` line", i + 1)),
                    }
                }
            }
            "--definition" => {
                w.definition = match value()?.as_str() {
                    "v1" => Version::V1,
                    "v2" => Version::V2,
                    "v3" => Version::V3,
                    other => return Err(format!("--definition is v1, v2 or v3, not {other:?}")),
                }
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    if w.v3.is_some() && (w.definition == Version::V2 || !w.is_version_1()) {
        return Err(
            "the --v3-* options apply to version 3 and combine with no other option".into(),
        );
    }
    if w.v3.is_none() && w.definition != Version::V1 && !w.is_version_1() {
        return Err(
            "the experiments apply to version 1: --definition v2 takes no other option".into(),
        );
    }
    Ok(w)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fingerprint-lines: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let weighting = parse_args(std::env::args().skip(1))?;
    let fp = Fingerprinter::new();
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    for (i, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("reading standard input: {e}"))?;
        let doc: Doc = serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let result = doc.text.and_then(|t| weighting.fingerprint(&fp, &t));
        match result {
            Some(v) => writeln!(out, "{}", simhash_core::hex::format(v)),
            None => writeln!(out, "NULL"),
        }
        .map_err(|e| format!("writing standard output: {e}"))?;
    }
    out.flush()
        .map_err(|e| format!("writing standard output: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Weighting {
        parse_args(a.iter().map(|s| s.to_string())).unwrap()
    }

    /// The slow path with nothing changed must be version 1 itself, or the
    /// experiments would not be measured against the real baseline.
    #[test]
    fn explicit_linear_weighting_is_version_1() {
        let fp = Fingerprinter::new();
        let mut linear = args(&["--tf", "linear"]);
        // Force the general path with a table that changes no token.
        linear.idf.insert("\u{1}".to_owned(), 0);
        assert!(!linear.is_version_1());
        for text in [
            "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，日本客人表示感谢。",
            "The quick brown fox jumps over the lazy dog; the dog sleeps.",
            "银行 银行 bank bank bank 2024",
            "",
            "，。！",
        ] {
            assert_eq!(
                linear.fingerprint(&fp, text),
                fp.fingerprint(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn oov_idf_touches_only_words_missing_from_the_table() {
        let fp = Fingerprinter::new();
        // The median itself: the same weights, so version 1 again.
        let median = args(&["--oov-idf", "11.9547675029"]);
        let low = args(&["--oov-idf", "1"]);
        for text in [
            "北京银行今天开业，银行行长讲话。",
            "the bank and the river bank",
        ] {
            assert_eq!(
                median.fingerprint(&fp, text),
                fp.fingerprint(text),
                "{text:?}"
            );
        }
        // All of these words are in the table.
        let han = "北京银行今天开业，银行行长讲话。";
        assert_eq!(low.fingerprint(&fp, han), fp.fingerprint(han));
        assert!(in_jieba_table("银行") && !in_jieba_table("bank"));
    }

    #[test]
    fn once_ignores_repetition() {
        let fp = Fingerprinter::new();
        let once = args(&["--tf", "once"]);
        assert_eq!(
            once.fingerprint(&fp, "北京 上海 上海 上海 广州"),
            once.fingerprint(&fp, "北京 上海 广州")
        );
    }

    #[test]
    fn rejects_bad_arguments() {
        for a in [
            &["--tf", "square"][..],
            &["--tf-cap", "0"],
            &["--tf-cap"],
            &["--bogus"],
        ] {
            assert!(
                parse_args(a.iter().map(|s| s.to_string())).is_err(),
                "{a:?}"
            );
        }
    }
}
