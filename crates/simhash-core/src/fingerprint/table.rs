//! Version 3's table of common features, the layout of the hot path
//! ([`super::dense`]): which features it holds and at which index (the
//! Han characters of U+3400..U+9FFF most frequent first, then the ASCII
//! trigrams by their three symbols), each one's hash and table values,
//! and what the definition's weighing makes of each, worked out once per
//! process. The scan hands on these indexes, and the kernels read these
//! entries.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use xxhash_rust::xxh3::xxh3_64;

use super::settings::{Kind, V3Options, HAN_WEIGHTS_TXT, V3_HAN_UNKNOWN};
use crate::idf::PassThrough;
use crate::weights::SelfInfo;

pub(super) const FROM: u32 = 0x3400;
pub(super) const TO: u32 = 0xA000;
pub(super) const HAN: usize = (TO - FROM) as usize;
/// `0-9`, `a-z`, `^`, `$`.
pub(super) const SYMBOLS: usize = 38;
pub(super) const SIZE: usize = HAN + SYMBOLS * SYMBOLS * SYMBOLS;
/// The table index of the first trigram (`000`): the trigram of symbols
/// `a`, `b`, `c` is at `HAN_GRAMS + (a * SYMBOLS + b) * SYMBOLS + c`, as
/// [`gram_index`] computes it.
pub(super) const HAN_GRAMS: u32 = HAN as u32;

/// The symbol number of a byte of an ASCII trigram, or `SYMBOLS` for any
/// other byte.
pub(super) const SYMBOL: [u8; 256] = {
    let mut table = [SYMBOLS as u8; 256];
    let mut b = 0;
    while b < 10 {
        table[b'0' as usize + b] = b as u8;
        b += 1;
    }
    let mut b = 0;
    while b < 26 {
        table[b'a' as usize + b] = 10 + b as u8;
        b += 1;
    }
    table[b'^' as usize] = 36;
    table[b'$' as usize] = 37;
    table
};

/// The symbols in order, the inverse of [`SYMBOL`].
const SYMBOL_BYTES: &[u8; SYMBOLS] = b"0123456789abcdefghijklmnopqrstuvwxyz^$";

/// The table index of the trigram of symbols `a`, `b`, `c`, when all three
/// are symbols.
#[inline(always)]
pub(super) fn gram_index(a: u8, b: u8, c: u8) -> Option<usize> {
    let s = SYMBOLS as u8;
    (a < s && b < s && c < s)
        .then(|| HAN + (usize::from(a) * SYMBOLS + usize::from(b)) * SYMBOLS + usize::from(c))
}

/// The character of symbol `s` (below `SYMBOLS`).
#[inline(always)]
pub(super) fn symbol_char(s: u8) -> char {
    char::from(SYMBOL_BYTES[usize::from(s)])
}

/// The feature at table index `i`, as text.
pub(super) fn feature_text(i: usize) -> String {
    if i < HAN {
        char::from_u32(han_char(i))
            .expect("no surrogate in U+3400..U+9FFF")
            .to_string()
    } else {
        let i = i - HAN;
        [
            SYMBOL_BYTES[i / (SYMBOLS * SYMBOLS)],
            SYMBOL_BYTES[i / SYMBOLS % SYMBOLS],
            SYMBOL_BYTES[i % SYMBOLS],
        ]
        .iter()
        .map(|&b| char::from(b))
        .collect()
    }
}

/// The Han characters of the table in their order in it: the most
/// frequent first (by their probability in the shipped table of version
/// 3, the characters it does not list last, ties by code point), so that
/// what a Chinese text touches of the per-entry tables (the counts, the
/// prepared weighing) lies close together, in a few hundred kB at the
/// front, rather than spread over the whole range of code points. The
/// order changes no fingerprint: the index only says where a feature's
/// count and weighing are kept.
struct HanOrder {
    /// Each character's index, by code point less [`FROM`].
    index: Box<[u16]>,
    /// Each index's character (its code point).
    char_at: Box<[u32]>,
}

static HAN_ORDER: std::sync::LazyLock<HanOrder> = std::sync::LazyLock::new(|| {
    let table = SelfInfo::parse(HAN_WEIGHTS_TXT, V3_HAN_UNKNOWN);
    let mut buf = [0u8; 4];
    let mut by_frequency: Vec<(f64, u32)> = (FROM..TO)
        .map(|u| {
            let c = char::from_u32(u).expect("no surrogate in U+3400..U+9FFF");
            let (_, p, known) = table.get(xxh3_64(c.encode_utf8(&mut buf).as_bytes()));
            (if known { p } else { -1.0 }, u)
        })
        .collect();
    by_frequency.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut index = vec![0u16; HAN].into_boxed_slice();
    let char_at: Box<[u32]> = by_frequency.iter().map(|&(_, u)| u).collect();
    for (i, &u) in char_at.iter().enumerate() {
        index[(u - FROM) as usize] = i as u16;
    }
    HanOrder { index, char_at }
});

/// The table's index of the Han character `u` (U+3400..U+9FFF).
#[inline]
pub(super) fn han_index(u: u32) -> u16 {
    HAN_ORDER.index[(u - FROM) as usize]
}

/// The Han character (its code point) at index `i` of the table, below
/// [`HAN_GRAMS`].
pub(super) fn han_char(i: usize) -> u32 {
    HAN_ORDER.char_at[i]
}

/// The kind of the feature at table index `i`.
#[inline]
pub(super) fn kind_of(i: usize) -> Kind {
    if i < HAN {
        Kind::Han
    } else {
        Kind::Gram
    }
}

/// One feature of the table: its hash and what its kind's table gives it
/// (self-information, probability, listed).
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) hash: u64,
    pub(super) info: (f64, f64, bool),
}

/// What the weights of [`V3Options::DEFINITION`] need of a feature of
/// the table, worked out once: its hash, the weighing's scale times its
/// self-information as [`Weighing::to_weigh`](crate::weights::Weighing::to_weigh)
/// multiplies them, the factor of a feature the weights' table does not
/// list, and its probability. Four doubles in one half of a cache line:
/// the batch of weights gathers them for each distinct feature of a text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C, align(32))]
pub(super) struct Prepared {
    pub(super) hash: u64,
    pub(super) scale: f64,
    pub(super) factor: f64,
    pub(super) p: f64,
}

/// The table, and each hash's place in it.
#[derive(Debug, Clone)]
pub(crate) struct DenseHan {
    pub(super) entries: Vec<Entry>,
    /// Each entry under [`V3Options::DEFINITION`].
    pub(super) prepared: Vec<Prepared>,
    pub(super) by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    /// Whether every feature of the table has a hash of its own (all do):
    /// otherwise two of them would be one feature, and every text takes
    /// the general path.
    pub(super) all_alone: bool,
    /// Whether every prepared entry is [`bounded`]: what the weights of
    /// [`super::wide_weights`] need.
    pub(super) bounded: bool,
}

impl DenseHan {
    pub(crate) fn new(han: &SelfInfo, grams: &SelfInfo) -> Self {
        let entries: Vec<Entry> = (0..SIZE)
            .map(|i| {
                let hash = xxh3_64(feature_text(i).as_bytes());
                let info = match kind_of(i) {
                    Kind::Han => han.get(hash),
                    Kind::Gram => grams.get(hash),
                };
                Entry { hash, info }
            })
            .collect();
        let mut by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>> =
            HashMap::with_capacity_and_hasher(SIZE, BuildHasherDefault::default());
        for (i, e) in entries.iter().enumerate() {
            by_hash.insert(e.hash, i as u32);
        }
        let prepared: Vec<Prepared> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| prepare(&V3Options::DEFINITION, i, e))
            .collect();
        DenseHan {
            bounded: prepared.iter().all(bounded),
            all_alone: by_hash.len() == entries.len(),
            entries,
            prepared,
            by_hash,
        }
    }
}

/// Whether the entry's scale and factor are not negative and their
/// product at most 64: every entry of the shipped tables is (17.73 at
/// most). [`super::wide_weights`] rounds the weights of such entries with
/// one weight per feature, for which it proves a bound (`NEAR` there), and
/// leaves out the checks of the scale, the factor and the weights' size
/// that the other kernels make (their weights are below 2^25 in
/// magnitude).
pub(super) fn bounded(e: &Prepared) -> bool {
    const MOST: f64 = 64.0;
    (0.0..=MOST).contains(&e.scale)
        && (0.0..=MOST).contains(&e.factor)
        && e.scale * e.factor <= MOST
}

/// Entry `i`, `e`, under `opts`: the same operations as the weighing's
/// [`Weighing::to_weigh`](crate::weights::Weighing::to_weigh) of it.
fn prepare(opts: &V3Options, i: usize, e: &Entry) -> Prepared {
    let weighing = match kind_of(i) {
        Kind::Han => opts.han,
        Kind::Gram => opts.gram,
    };
    let (s, p, known) = e.info;
    let factor = if known { 1.0 } else { weighing.unknown };
    Prepared {
        hash: e.hash,
        scale: weighing.to_weigh(s, factor, 0, 0.0).scale,
        factor,
        p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::tests::shared;

    #[test]
    fn the_shipped_tables_are_bounded_for_the_wide_weights() {
        assert!(shared().dense.bounded);
        let entry = |scale: f64, factor: f64| Prepared {
            hash: 0,
            scale,
            factor,
            p: 0.5,
        };
        assert!(bounded(&entry(17.73, 1.0)));
        assert!(!bounded(&entry(-1.0, 1.0)));
        assert!(!bounded(&entry(1.0, f64::NAN)));
        assert!(!bounded(&entry(f64::INFINITY, 0.0)));
        assert!(!bounded(&entry(16.0, 8.0)));
        assert!(bounded(&entry(64.0, 1.0)));
    }

    #[test]
    fn every_feature_of_the_table_has_its_own_hash() {
        let fp = shared();
        assert_eq!(fp.dense.entries.len(), SIZE);
        assert!(fp.dense.all_alone);
        assert_eq!(fp.dense.by_hash.len(), SIZE);
    }

    #[test]
    fn the_han_characters_go_most_frequent_first() {
        let fp = shared();
        let mut seen = vec![false; HAN];
        for u in FROM..TO {
            let i = usize::from(han_index(u));
            assert!(!seen[i], "two characters at {i}");
            seen[i] = true;
            assert_eq!(han_char(i), u);
        }
        for i in 1..HAN {
            let (_, p0, known0) = fp.dense.entries[i - 1].info;
            let (_, p1, known1) = fp.dense.entries[i].info;
            assert!(
                known0 || !known1,
                "a listed character after one not listed, at {i}"
            );
            assert!(!(known0 && known1) || p0 >= p1, "rising at {i}");
        }
        // The commonest character of Chinese text is near the front.
        assert!(han_index('的' as u32) < 100, "{}", han_index('的' as u32));
    }

    #[test]
    fn the_table_holds_what_the_walk_hands_on() {
        let fp = shared();
        let mut buf = [0u8; 4];
        for c in ['㐀', '一', '的', '鿿'] {
            let i = usize::from(han_index(c as u32));
            assert_eq!(feature_text(i), c.to_string());
            let hash = xxh3_64(c.encode_utf8(&mut buf).as_bytes());
            assert_eq!(fp.dense.entries[i].hash, hash);
            assert_eq!(kind_of(i), Kind::Han);
            assert_eq!(
                fp.dense.entries[i].info,
                fp.self_info.look_up(Kind::Han, hash)
            );
        }
        for g in ["^ab", "abc", "z9$", "^x$", "000"] {
            let [a, b, c] = [0, 1, 2].map(|k| SYMBOL[g.as_bytes()[k] as usize]);
            let i = gram_index(a, b, c).unwrap();
            assert_eq!(feature_text(i), g);
            assert_eq!(fp.dense.entries[i].hash, xxh3_64(g.as_bytes()));
            assert_eq!(kind_of(i), Kind::Gram);
            let info = fp.self_info.look_up(Kind::Gram, xxh3_64(g.as_bytes()));
            assert_eq!(fp.dense.entries[i].info, info);
        }
        for g in ["A^b", "a b", "é12"] {
            let [a, b, c] = [0, 1, 2].map(|k| SYMBOL[g.as_bytes()[k] as usize]);
            assert_eq!(gram_index(a, b, c), None, "{g:?}");
        }
    }
}
