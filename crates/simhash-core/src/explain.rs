//! Why two texts were, or were not, called near-duplicates: their
//! fingerprints' distance, their similarity, the stretches of each text the
//! other lacks, and the features that moved the differing bits.
//!
//! A differing bit `i` is one whose counter (the weighted sum over the
//! features of `±weight`, plus where the feature's hash has bit `i`, minus
//! where not) has one sign for one text and the other sign for the other.
//! A feature whose weight differs between the texts (present in one only,
//! or more often in one) moves that counter by the difference of its
//! weights, towards one side: [`Mover::pull`] adds up, over the differing
//! bits, how far it moved each towards the side the bit took, and
//! [`Mover::bits`] counts the bits it moved that way. The features with the
//! largest pull are those that made the fingerprints differ.

use std::collections::HashMap;

use crate::distance::hamming;
use crate::fingerprint::{Feature, FeaturesError, Fingerprinter, Version};
use crate::similarity::{differing_spans_checked, similarity_bytes_checked, Span};

/// A feature and how it moved the bits in which the two fingerprints differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Mover {
    /// The feature, normalized (a Han character or a character trigram).
    pub token: String,
    /// What it adds to the first text's fingerprint (0 when absent).
    pub weight_a: f64,
    /// What it adds to the second text's fingerprint (0 when absent).
    pub weight_b: f64,
    /// How many differing bits it moved towards the value they took.
    pub bits: u32,
    /// The sum, over those bits, of how far it moved each.
    pub pull: f64,
}

/// Everything [`explain`] finds about a pair of texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The two fingerprints (definition 3; `None` for a text without
    /// features).
    pub fingerprints: (Option<u64>, Option<u64>),
    /// Their Hamming distance, `None` when either is `None`.
    pub distance: Option<u32>,
    /// [`crate::similarity::similarity`] of the texts.
    pub similarity: f64,
    /// The stretches of the first text whose grams the second lacks.
    pub only_a: Vec<Span>,
    /// The stretches of the second text whose grams the first lacks.
    pub only_b: Vec<Span>,
    /// The features that moved the differing bits most, strongest first.
    pub movers: Vec<Mover>,
}

/// Explains the pair `a`, `b` under definition 3, with at most `top`
/// movers. `go_on` is called between pieces of each text, by every step
/// (fingerprints, feature listings, similarity):
/// [`FeaturesError::Interrupted`] when it says stop. The listing's bounds
/// apply to each text ([`FeaturesError::TooMany`],
/// [`FeaturesError::TooLong`]).
pub fn explain(
    fp: &Fingerprinter,
    a: &str,
    b: &str,
    top: usize,
    mut go_on: impl FnMut() -> bool,
) -> Result<Explanation, FeaturesError> {
    let fa = fp.fingerprint_checked_as(Version::V3, a, &mut go_on)?;
    let fb = fp.fingerprint_checked_as(Version::V3, b, &mut go_on)?;
    let distance = fa.zip(fb).map(|(x, y)| hamming(x, y));
    let features_a = fp.features_as(Version::V3, a, &mut go_on)?;
    let features_b = fp.features_as(Version::V3, b, &mut go_on)?;
    let movers = match (fa, fb) {
        (Some(x), Some(y)) if x != y => movers(x, y, &features_a, &features_b, top),
        _ => Vec::new(),
    };
    let similarity = similarity_bytes_checked(a.as_bytes(), b.as_bytes(), &mut go_on)
        .map_err(|_| FeaturesError::Interrupted)?;
    let (only_a, only_b) =
        differing_spans_checked(a, b, &mut go_on).map_err(|()| FeaturesError::Interrupted)?;
    Ok(Explanation {
        fingerprints: (fa, fb),
        distance,
        similarity,
        only_a,
        only_b,
        movers,
    })
}

/// The features ranked by how they moved the bits where `fa` and `fb`
/// differ (see the module's documentation).
fn movers(
    fa: u64,
    fb: u64,
    features_a: &[Feature],
    features_b: &[Feature],
    top: usize,
) -> Vec<Mover> {
    let mut weights: HashMap<&str, (f64, f64, u64)> = HashMap::new();
    for f in features_a {
        weights
            .entry(f.token.as_str())
            .or_insert((0.0, 0.0, f.hash))
            .0 = f.weight;
    }
    for f in features_b {
        weights
            .entry(f.token.as_str())
            .or_insert((0.0, 0.0, f.hash))
            .1 = f.weight;
    }
    let differing = fa ^ fb;
    let mut out: Vec<Mover> = weights
        .into_iter()
        .filter_map(|(token, (wa, wb, hash))| {
            let delta = wa - wb;
            if delta == 0.0 {
                return None;
            }
            let (mut bits, mut pull) = (0u32, 0.0f64);
            for i in (0..64).filter(|i| differing >> i & 1 == 1) {
                // The feature adds +w where its hash has the bit, -w where
                // not; the bit is 1 where the counter is positive. So it
                // pushes a's counter minus b's by `delta` times that sign,
                // towards a's value of the bit when the product agrees with
                // it (a's bit 1: a higher counter).
                let sign = if hash >> i & 1 == 1 { 1.0 } else { -1.0 };
                let towards_a = if fa >> i & 1 == 1 { 1.0 } else { -1.0 };
                let moved = delta * sign * towards_a;
                if moved > 0.0 {
                    bits += 1;
                    pull += moved;
                }
            }
            (bits > 0).then(|| Mover {
                token: token.to_string(),
                weight_a: wa,
                weight_b: wb,
                bits,
                pull,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        y.pull
            .total_cmp(&x.pull)
            .then_with(|| x.token.cmp(&y.token))
    });
    out.truncate(top);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    fn shared() -> &'static Fingerprinter {
        static FP: OnceLock<Fingerprinter> = OnceLock::new();
        FP.get_or_init(Fingerprinter::new)
    }

    #[test]
    fn the_same_text_has_nothing_to_explain() {
        let t = "The quick brown fox jumps over the lazy dog near the river.";
        let e = explain(shared(), t, t, 10, || true).unwrap();
        assert_eq!(e.distance, Some(0));
        assert_eq!(e.similarity, 1.0);
        assert!(e.only_a.is_empty() && e.only_b.is_empty());
        assert!(e.movers.is_empty());
    }

    #[test]
    fn an_inserted_word_is_found_and_moves_bits() {
        let a = "The quick brown fox jumps over the lazy dog near the river bank.";
        let b = "The quick brown fox jumps over the sleepy lazy dog near the river bank.";
        let e = explain(shared(), a, b, 5, || true).unwrap();
        assert!(e.distance.unwrap() > 0);
        assert!(e.similarity < 1.0 && e.similarity > 0.7, "{}", e.similarity);
        let inserted: String = e
            .only_b
            .iter()
            .map(|s| {
                b.chars()
                    .skip(s.start)
                    .take(s.end - s.start)
                    .collect::<String>()
            })
            .collect();
        assert!(inserted.contains("sleepy"), "{inserted:?}");
        assert!(!e.movers.is_empty() && e.movers.len() <= 5);
        // Strongest first, and every one moved a bit that differs.
        assert!(e.movers.windows(2).all(|w| w[0].pull >= w[1].pull));
        assert!(e
            .movers
            .iter()
            .all(|m| m.bits > 0 && m.weight_a != m.weight_b));
        // Some of them are features of b alone.
        assert!(e
            .movers
            .iter()
            .any(|m| m.weight_a == 0.0 && m.weight_b != 0.0));
    }

    #[test]
    fn movers_account_for_the_bits_that_differ() {
        // Every differing bit is moved by at least one feature towards the
        // value it took: otherwise the counters could not have crossed.
        let a = "银行今天宣布下调存款利率，市场反应平稳，专家认为影响有限。";
        let b = "银行今天宣布上调贷款利率，市场反应剧烈，专家认为影响很大。";
        let e = explain(shared(), a, b, usize::MAX, || true).unwrap();
        let (fa, fb) = (e.fingerprints.0.unwrap(), e.fingerprints.1.unwrap());
        assert_eq!(e.distance, Some(hamming(fa, fb)));
        let total: u32 = e.movers.iter().map(|m| m.bits).sum();
        assert!(total >= hamming(fa, fb), "{total} < {}", hamming(fa, fb));
    }

    #[test]
    fn a_text_without_features_has_no_distance() {
        let e = explain(shared(), "，。！", "some words here", 10, || true).unwrap();
        assert_eq!(e.distance, None);
        assert_eq!(e.similarity, 0.0);
        assert!(e.movers.is_empty());
    }
}
