//! Version 3's hot path: the features most text is made of counted in a
//! table by index, with each one's feature hash and table values worked
//! out once for the process, instead of hashing every occurrence and
//! counting it in a hash map:
//!
//! - the Han characters of U+3400..U+9FFF (CJK Extension A and the Unified
//!   Ideographs, every common character), by code point;
//! - the trigrams of ASCII letters and digits with the `^` and `$` that
//!   mark a word's ends (38^3 of them), by their three symbols.
//!
//! The definition counts features by hash: a Han character and a trigram
//! with the same 64-bit hash are one feature. The table counts characters
//! by code point, so a text in which such a collision happens (none is
//! known; the chance is about 2^-64 per pair) takes the general path
//! (`Fingerprinter::fingerprint_v3_general`'s hash map), as does a text
//! with more distinct features than the bound allows at once: same bits
//! either way, which the tests check against the general path.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use xxhash_rust::xxh3::xxh3_64;

use super::{Distinct, Fingerprinter, Interrupted, Kind, V3Feature, V3Options};
use crate::accumulate::Accumulator;
use crate::idf::PassThrough;
use crate::weights::SelfInfo;

const FROM: u32 = 0x3400;
const TO: u32 = 0xA000;
const HAN: usize = (TO - FROM) as usize;
/// `0-9`, `a-z`, `^`, `$`.
const SYMBOLS: usize = 38;
const SIZE: usize = HAN + SYMBOLS * SYMBOLS * SYMBOLS;

/// The symbol number of a byte of an ASCII trigram, or `SYMBOLS` for any
/// other byte.
const SYMBOL: [u8; 256] = {
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

/// One feature of the table: its hash, kind and what its kind's table
/// gives it. `alone` is false for a feature whose hash another one of the
/// table shares (none does), which then takes the hash map.
#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u64,
    kind: Kind,
    info: (f64, f64, bool),
    alone: bool,
}

/// The table, and each hash's place in it.
#[derive(Debug, Clone)]
pub(crate) struct DenseHan {
    entries: Vec<Entry>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
}

impl DenseHan {
    pub(crate) fn new(han: &SelfInfo, grams: &SelfInfo) -> Self {
        let mut entries = Vec::with_capacity(SIZE);
        let mut buf = [0u8; 4];
        for u in FROM..TO {
            let c = char::from_u32(u).expect("no surrogate in U+3400..U+9FFF");
            let hash = xxh3_64(c.encode_utf8(&mut buf).as_bytes());
            entries.push(Entry {
                hash,
                kind: Kind::Han,
                info: han.get(hash),
                alone: true,
            });
        }
        for i in 0..SYMBOLS * SYMBOLS * SYMBOLS {
            let gram = [
                SYMBOL_BYTES[i / (SYMBOLS * SYMBOLS)],
                SYMBOL_BYTES[i / SYMBOLS % SYMBOLS],
                SYMBOL_BYTES[i % SYMBOLS],
            ];
            let hash = xxh3_64(&gram);
            entries.push(Entry {
                hash,
                kind: Kind::Gram,
                info: grams.get(hash),
                alone: true,
            });
        }
        let mut by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>> =
            HashMap::with_capacity_and_hasher(SIZE, BuildHasherDefault::default());
        for i in 0..entries.len() {
            if let Some(other) = by_hash.insert(entries[i].hash, i as u32) {
                entries[other as usize].alone = false;
                entries[i].alone = false;
            }
        }
        DenseHan { entries, by_hash }
    }

    /// The table index of Han character `c`, when it counts in the table.
    #[inline]
    fn han(&self, c: char) -> Option<usize> {
        let u = c as u32;
        if !(FROM..TO).contains(&u) {
            return None;
        }
        let i = (u - FROM) as usize;
        self.entries[i].alone.then_some(i)
    }

    /// The table index of trigram `g`, when it counts in the table.
    #[inline]
    fn gram(&self, g: &str) -> Option<usize> {
        let &[a, b, c] = g.as_bytes() else {
            return None;
        };
        let (a, b, c) = (
            SYMBOL[a as usize] as usize,
            SYMBOL[b as usize] as usize,
            SYMBOL[c as usize] as usize,
        );
        if a == SYMBOLS || b == SYMBOLS || c == SYMBOLS {
            return None;
        }
        let i = HAN + (a * SYMBOLS + b) * SYMBOLS + c;
        self.entries[i].alone.then_some(i)
    }
}

/// Per-thread counts of the range, and which entries a text touched (so
/// that only those are cleared). Left dirty by a walk that stopped half
/// way (a cancel unwinds through it), so each use clears what the last one
/// touched first.
struct Counts {
    tf: Vec<u32>,
    touched: Vec<u32>,
}

thread_local! {
    static COUNTS: RefCell<Counts> = const { RefCell::new(Counts { tf: Vec::new(), touched: Vec::new() }) };
}

/// Version 3 through the table: `Ok(Some(fingerprint))`, or `Ok(None)`
/// when the text must take the general path (a hash collision with a
/// counted character, or more distinct features than `bound`).
pub(super) fn fingerprint_v3(
    fp: &Fingerprinter,
    opts: &V3Options,
    text: &str,
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
) -> Result<Option<Option<u64>>, Interrupted> {
    COUNTS.with(|cell| {
        let Ok(mut counts) = cell.try_borrow_mut() else {
            // Re-entered (not done by any caller): the general path.
            return Ok(None);
        };
        let counts = &mut *counts;
        if counts.tf.len() != SIZE {
            counts.tf = vec![0; SIZE];
        }
        for &i in &counts.touched {
            counts.tf[i as usize] = 0;
        }
        counts.touched.clear();

        let mut others: HashMap<u64, (u32, Kind), BuildHasherDefault<PassThrough>> =
            HashMap::default();
        let mut totals = [0u64; 2];
        let mut too_many = false;
        let mut buf = [0u8; 4];
        fp.walk_v3(text, &mut *go_on, |feature| {
            let (kind, counted) = match feature {
                V3Feature::Han(c) => (Kind::Han, fp.dense.han(c)),
                V3Feature::Gram(g) => (Kind::Gram, fp.dense.gram(g)),
            };
            totals[kind as usize] += 1;
            if let Some(i) = counted {
                let tf = &mut counts.tf[i];
                if *tf == 0 {
                    counts.touched.push(i as u32);
                }
                *tf = tf.saturating_add(1);
                return;
            }
            let hash = match feature {
                V3Feature::Han(c) => xxh3_64(c.encode_utf8(&mut buf).as_bytes()),
                V3Feature::Gram(g) => xxh3_64(g.as_bytes()),
            };
            if too_many {
                return;
            }
            let tf = &mut others.entry(hash).or_insert((0, kind)).0;
            *tf = tf.saturating_add(1);
            if others.len() + counts.touched.len() > bound {
                too_many = true;
            }
        })?;
        if too_many {
            return Ok(None);
        }
        // A feature of the map with the hash of a feature the table
        // counted: the definition would count them as one.
        if !counts.touched.is_empty()
            && others.keys().any(|h| {
                fp.dense
                    .by_hash
                    .get(h)
                    .is_some_and(|&i| counts.tf[i as usize] > 0)
            })
        {
            return Ok(None);
        }

        let mut distinct: Vec<Distinct> = Vec::with_capacity(counts.touched.len() + others.len());
        for &i in &counts.touched {
            let e = &fp.dense.entries[i as usize];
            distinct.push((e.hash, e.kind, u64::from(counts.tf[i as usize]), e.info));
        }
        for (&h, &(tf, kind)) in &others {
            distinct.push((h, kind, u64::from(tf), fp.look_up_v3(kind, h)));
        }
        let mut acc = Accumulator::new();
        let mut fallback = Accumulator::new();
        let mut positive = false;
        fp.add_weighed_v3(
            opts,
            &distinct,
            totals,
            &mut acc,
            &mut fallback,
            &mut positive,
        );
        Ok(Some(if positive {
            acc.finish()
        } else {
            fallback.finish()
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix;

    /// The general path alone: every feature counted in the hash map.
    fn general(fp: &Fingerprinter, text: &str) -> Option<u64> {
        fp.fingerprint_v3_general(
            &V3Options::DEFINITION,
            text,
            || true,
            super::super::V3_MAX_COUNTED,
        )
        .unwrap()
    }

    fn random_text(state: &mut u64) -> String {
        let len = (splitmix(state) % 400) as usize;
        let pools: [&[char]; 4] = [
            &[
                '的', '一', '是', '在', '不', '了', '有', '和', '人', '这', '中', '大', '为', '上',
                '国',
            ],
            &['㐀', '㑈', '䶵', '丂', '龥', '鿿', '𠀀', '豈', '國', '們'],
            &['a', 'b', 'c', 'x', 'y', 'z', '1', '2', 'é', 'ß'],
            &[' ', '，', '。', '\n', '!', '-', 'Ａ', '①'],
        ];
        (0..len)
            .map(|_| {
                let r = splitmix(state);
                let pool = pools[(r % 4) as usize];
                pool[((r >> 8) % pool.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn the_table_gives_the_bits_of_the_hash_map() {
        let fp = super::super::tests::shared();
        let mut state = 15u64;
        for round in 0..3000 {
            let text = random_text(&mut state);
            let mut go_on = || true;
            let fast = fingerprint_v3(fp, &V3Options::DEFINITION, &text, &mut go_on, usize::MAX)
                .unwrap()
                .expect("no collision in these texts");
            assert_eq!(fast, general(fp, &text), "round {round}: {text:?}");
            // The public entry point takes the table.
            assert_eq!(fp.fingerprint_as(super::super::Version::V3, &text), fast);
        }
    }

    #[test]
    fn too_many_features_take_the_general_path() {
        let fp = super::super::tests::shared();
        // Trigrams of non-ASCII letters are counted in the map.
        let text = "天地玄黄 éèê àâä ñõö";
        let mut go_on = || true;
        assert_eq!(
            fingerprint_v3(fp, &V3Options::DEFINITION, text, &mut go_on, 3).unwrap(),
            None
        );
        let whole =
            fingerprint_v3(fp, &V3Options::DEFINITION, text, &mut go_on, usize::MAX).unwrap();
        assert_eq!(whole, Some(general(fp, text)));
    }

    #[test]
    fn a_walk_cut_short_leaves_nothing_behind() {
        let fp = super::super::tests::shared();
        let text = "天地玄黄宇宙洪荒".repeat(200);
        let mut stop = || false;
        assert!(fingerprint_v3(fp, &V3Options::DEFINITION, &text, &mut stop, usize::MAX).is_err());
        let mut go_on = || true;
        let after =
            fingerprint_v3(fp, &V3Options::DEFINITION, "天地", &mut go_on, usize::MAX).unwrap();
        assert_eq!(after, Some(general(fp, "天地")));
    }

    #[test]
    fn every_feature_of_the_table_has_its_own_hash() {
        let fp = super::super::tests::shared();
        assert_eq!(fp.dense.entries.len(), SIZE);
        assert!(fp.dense.entries.iter().all(|e| e.alone));
        assert_eq!(fp.dense.by_hash.len(), SIZE);
    }

    #[test]
    fn the_table_holds_what_the_walk_hands_on() {
        let fp = super::super::tests::shared();
        let mut buf = [0u8; 4];
        for c in ['㐀', '一', '的', '鿿'] {
            let i = fp.dense.han(c).unwrap();
            assert_eq!(
                fp.dense.entries[i].hash,
                xxh3_64(c.encode_utf8(&mut buf).as_bytes())
            );
            assert_eq!(fp.dense.entries[i].kind, Kind::Han);
        }
        for g in ["^ab", "abc", "z9$", "^x$", "000"] {
            let i = fp.dense.gram(g).unwrap();
            assert_eq!(fp.dense.entries[i].hash, xxh3_64(g.as_bytes()));
            assert_eq!(fp.dense.entries[i].kind, Kind::Gram);
        }
        for g in ["ab", "abcd", "^é$", "A^b", "a b"] {
            assert_eq!(fp.dense.gram(g), None, "{g:?}");
        }
        assert_eq!(fp.dense.han('𠀀'), None);
    }
}
