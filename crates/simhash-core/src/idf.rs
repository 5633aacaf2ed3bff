//! Step 3 of the fingerprint: each token's IDF weight.
//!
//! The table is jieba's `idf.txt` (270,132 words, one `word idf` pair a
//! line), kept in this crate's `data/` so that the weights are pinned with
//! the code rather than with whatever a dependency ships next. A word that
//! is not in the table (English words, numbers, names) gets the table's
//! median IDF, as jieba's own keyword extractor does.
//!
//! Lookups are keyed by the token's xxh3-64 hash, which the accumulator
//! needs anyway, so a token is hashed once and its weight is found without
//! hashing its string a second time. `tests::no_two_words_share_a_hash`
//! checks that no two words of the table collide.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::xxh3_64;

/// The IDF table, as shipped.
pub const IDF_TXT: &str = include_str!("../data/idf.txt");

/// Weights are fixed point with this many fractional bits: a token's
/// weight is `round(idf * 2^16)`. Integer counters make the sum exact, so
/// the fingerprint cannot depend on the order in which tokens are added or
/// on the platform's floating point.
pub const WEIGHT_FRACTION_BITS: u32 = 16;

/// A `u64` key that is already a good hash (xxh3) needs no more hashing.
#[derive(Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is ever used; fold anything else in anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// IDF per word, keyed by the word's xxh3-64 hash, held as the fixed-point
/// weight the fingerprint adds (converting once here, not per token, is
/// measurably faster).
#[derive(Debug, Clone)]
pub struct IdfTable {
    by_hash: HashMap<u64, i64, BuildHasherDefault<PassThrough>>,
    median: f64,
    median_weight: i64,
}

impl IdfTable {
    /// Parses a table of `word idf` lines. Lines that are not two fields
    /// with a number second are skipped; a word given twice keeps its last
    /// value. The median is the lower median of the words' values.
    pub fn parse(table: &str) -> Self {
        let mut by_hash = HashMap::with_capacity_and_hasher(
            table.len() / 20,
            BuildHasherDefault::<PassThrough>::default(),
        );
        for line in table.lines() {
            let mut fields = line.split_whitespace();
            let (Some(word), Some(idf), None) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let Ok(idf) = idf.parse::<f64>() {
                if idf.is_finite() {
                    by_hash.insert(xxh3_64(word.as_bytes()), idf);
                }
            }
        }
        let mut values: Vec<f64> = by_hash.values().copied().collect();
        values.sort_by(f64::total_cmp);
        let median = values
            .get(values.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(1.0);
        let by_hash = by_hash
            .into_iter()
            .map(|(hash, idf)| (hash, to_fixed(idf)))
            .collect();
        IdfTable {
            by_hash,
            median,
            median_weight: to_fixed(median),
        }
    }

    /// The table that ships with the crate.
    pub fn jieba() -> Self {
        Self::parse(IDF_TXT)
    }

    /// The fixed-point weight of one occurrence of the word with `hash`:
    /// `round(idf * 2^16)`, the median's for a word not in the table.
    #[inline]
    pub fn weight(&self, hash: u64) -> i64 {
        self.by_hash
            .get(&hash)
            .copied()
            .unwrap_or(self.median_weight)
    }

    /// The fixed-point weight of the word with `hash`, when the table has
    /// the word.
    #[inline]
    pub fn get(&self, hash: u64) -> Option<i64> {
        self.by_hash.get(&hash).copied()
    }

    /// The IDF of the word with `hash` as the fingerprint uses it: the
    /// table's value to the nearest 2^-16.
    #[inline]
    pub fn idf(&self, hash: u64) -> f64 {
        from_fixed(self.weight(hash))
    }

    /// The IDF given to words that are not in the table, as the table
    /// states it (before rounding to 2^-16).
    pub fn median(&self) -> f64 {
        self.median
    }

    /// How many words the table holds.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the table holds no word at all.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// `round(x * 2^16)` (halves away from zero), the fixed-point form of a
/// weight.
///
/// The same value as `(x * 2^16).round() as i64`, without `f64::round`,
/// which on x86-64 below SSE4.1 (the baseline every package is built
/// for) is a call into the C library: version 3 rounds two or three times
/// per feature, and the call was 8% of its time on Chinese news in a
/// profile (`perf record`, not a benchmark). Below
/// 2^52 the part after the point, `y - trunc(y)`, is exact; from 2^52 on
/// every double is a whole number; NaN gives 0 and the infinities
/// saturate, as the cast does (`tests::to_fixed_rounds_as_round_does`).
#[inline]
pub fn to_fixed(x: f64) -> i64 {
    let y = x * f64::from(1u32 << WEIGHT_FRACTION_BITS);
    if y.is_nan() || y.abs() >= 4_503_599_627_370_496.0 {
        return y as i64;
    }
    let whole = y as i64;
    let frac = y - whole as f64;
    // Without branches: which way a weight rounds is a coin toss, and a
    // mispredicted branch costs more than the rest of this function.
    whole + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)
}

/// The weight a fixed-point value stands for.
#[inline]
pub fn from_fixed(q: i64) -> f64 {
    q as f64 / f64::from(1u32 << WEIGHT_FRACTION_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_loads_whole() {
        let t = IdfTable::jieba();
        assert_eq!(t.len(), 270_132);
        // The lower median of the shipped values (checked independently
        // against the file when it was vendored).
        assert_eq!(t.median(), 11.9547675029);
        assert_eq!(
            t.weight(xxh3_64("劳动防护".as_bytes())),
            to_fixed(13.900677652)
        );
        assert_eq!(
            t.weight(xxh3_64("岗上".as_bytes())),
            to_fixed(11.5027823792)
        );
        assert!((t.idf(xxh3_64("岗上".as_bytes())) - 11.5027823792).abs() < 1e-5);
    }

    #[test]
    fn no_two_words_share_a_hash() {
        let lines = IDF_TXT.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(IdfTable::jieba().len(), lines);
    }

    #[test]
    fn common_words_weigh_less_than_rare_ones() {
        let t = IdfTable::jieba();
        let de = t.idf(xxh3_64("的".as_bytes()));
        let rare = t.idf(xxh3_64("劳动防护".as_bytes()));
        assert!(de < 3.0, "的 has idf {de}");
        assert!(de < t.median() && t.median() < rare);
    }

    #[test]
    fn unknown_words_get_the_median() {
        let t = IdfTable::jieba();
        assert_eq!(t.weight(xxh3_64(b"zzqxj-not-a-word")), to_fixed(t.median()));
    }

    #[test]
    fn malformed_lines_are_skipped_and_duplicates_keep_the_last() {
        let t = IdfTable::parse("a 1.0\nb\nc x\nd 1 2\ne inf\na 3.0\n\nf 2.0\n");
        assert_eq!(t.len(), 2);
        assert_eq!(t.idf(xxh3_64(b"a")), 3.0);
        assert_eq!(t.weight(xxh3_64(b"f")), 2 << 16);
        assert_eq!(t.median(), 2.0);
    }

    #[test]
    fn to_fixed_rounds_as_round_does() {
        let reference = |x: f64| (x * 65536.0).round() as i64;
        let mut values = vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            2f64.powi(36),
            -(2f64.powi(36)),
            2f64.powi(47) - 0.5 / 65536.0,
        ];
        // Every half way point, and the doubles on either side of it.
        for k in [0i64, 1, 2, 3, 1000, 123_456_789, 1 << 40, (1 << 52) - 1] {
            for sign in [1.0, -1.0] {
                let half = sign * (k as f64 + 0.5) / 65536.0;
                let whole = sign * k as f64 / 65536.0;
                values.extend([
                    half,
                    half.next_up(),
                    half.next_down(),
                    whole,
                    whole.next_up(),
                ]);
                values.extend([whole.next_down()]);
            }
        }
        let mut state = 3u64;
        for _ in 0..200_000 {
            let bits = crate::testutil::splitmix(&mut state);
            values.push(f64::from_bits(bits));
            values.push(((bits >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1e3);
        }
        for x in values {
            assert_eq!(to_fixed(x), reference(x), "{x:e}");
        }
    }

    #[test]
    fn fixed_point_round_trips_to_the_resolution() {
        assert_eq!(to_fixed(1.0), 65_536);
        assert_eq!(to_fixed(0.5 / 65_536.0), 1);
        let x = 11.9547675029;
        assert!((from_fixed(to_fixed(x)) - x).abs() <= 0.5 / 65_536.0);
    }
}
