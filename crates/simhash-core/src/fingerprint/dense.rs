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

use super::scan::{self, ScanWork, Sink, Stop};
use super::scan_tables::ScanTables;
use super::settings::{Kind, V3Options};
use super::table::{kind_of, DenseHan, Prepared, HAN, HAN_GRAMS, SIZE};
use super::weigh::{weigh_fixed, SelfInfos};
use crate::accumulate::Accumulator;
use crate::cpu::Simd;
use crate::fold::Fold;
use crate::idf::PassThrough;
use crate::weights::{fixed_weights6_by, ToWeigh, FAST_CAP, WEIGH_BATCH};

/// What the hot path reads of the fingerprinter, all made once per
/// process: the fold, the scan's tables, the table of common features and
/// the self-information of the others; and the vector instructions of the
/// weights and counters.
#[derive(Clone, Copy)]
pub(super) struct Parts<'a> {
    pub(super) fold: &'a Fold,
    pub(super) fast: &'a ScanTables,
    pub(super) dense: &'a DenseHan,
    pub(super) self_info: &'a SelfInfos,
    pub(super) simd: Simd,
}

/// `min(tf, 6)` as a double, for each count the table holds.
const CAPPED6: [f64; 256] = {
    let mut capped = [0.0; 256];
    let mut tf = 0;
    while tf < 256 {
        capped[tf] = if tf < FAST_CAP as usize {
            tf as f64
        } else {
            FAST_CAP as f64
        };
        tf += 1;
    }
    capped
};

/// Per-thread counts of the table's features (saturating at 255: a
/// weighing counts at most its cap, at most 255 here), and which entries a
/// text touched (so that only those are cleared), the first `touched` of
/// `order`. Each use clears what the last one touched first; the
/// weights of [`weigh_wide`] clear each count as they read it, and then
/// set `touched` to 0, so that nothing is left to clear.
///
/// A walk that stops half way (a cancel or a statement timeout unwinds
/// through the scan as a panic, the caller's `go_on` says stop, or the
/// bytes are not UTF-8) leaves counts that `touched` does not list: the
/// scan keeps its count of them in a local. So `dirty` is set before each
/// use and cleared only when the use returned normally; a use that finds
/// it set clears the whole table (a memset of `SIZE` bytes, only after
/// such a stop). Without it every later text of the thread would miss the
/// features the stopped walk had counted.
struct Counts {
    tf: Vec<u8>,
    order: Vec<u32>,
    /// The counts of the first `touched` of `order`, when the weights took
    /// them out of `tf` ([`weigh_wide`]).
    kept: Vec<u8>,
    touched: usize,
    /// Whether a use began and did not return normally (see above).
    dirty: bool,
    /// The scan's work arrays and a batch of weights, made with the
    /// counts, once per thread.
    work: Option<Box<(ScanWork, Weighed)>>,
}

/// A batch of distinct features on their way to the counters: the
/// weights and the hashes.
struct Weighed {
    weights: [i64; WEIGH_BATCH],
    hashes: [u64; WEIGH_BATCH],
}

thread_local! {
    static COUNTS: RefCell<Counts> = const {
        RefCell::new(Counts {
            tf: Vec::new(),
            order: Vec::new(),
            kept: Vec::new(),
            touched: 0,
            dirty: false,
            work: None,
        })
    };
}

/// What the scan counts: the table's features by index, the others by
/// hash in a map, and how many features of each kind the text has.
struct Counting<'a> {
    tf: &'a mut [u8],
    /// `SIZE` long: every entry of the table fits.
    order: &'a mut [u32],
    touched: usize,
    others: HashMap<u64, (u32, Kind), BuildHasherDefault<PassThrough>>,
    totals: [u64; 2],
    bound: usize,
    too_many: bool,
}

impl Counting<'_> {
    /// One more occurrence of entry `i`. Without a branch: whether a
    /// feature is new is a coin toss in Chinese text (half the characters
    /// of a news article are their first occurrence), and a mispredicted
    /// branch costs more than writing `i` down every time.
    #[inline(always)]
    fn bump(&mut self, i: usize) {
        self.bump_all(&[i as u32]);
    }

    /// One more occurrence of each entry, as [`Self::bump`] says, with the
    /// number touched in a local.
    #[inline(always)]
    fn bump_all(&mut self, indexes: &[u32]) {
        let mut touched = self.touched;
        for &i in indexes {
            let i = i as usize;
            let tf = self.tf[i];
            self.order[touched] = i as u32;
            touched += usize::from(tf == 0);
            self.tf[i] = tf + u8::from(tf != u8::MAX);
        }
        self.touched = touched;
    }

    fn other(&mut self, hash: u64, kind: Kind) {
        if self.too_many {
            return;
        }
        let tf = &mut self.others.entry(hash).or_insert((0, kind)).0;
        *tf = tf.saturating_add(1);
        if self.others.len() + self.touched > self.bound {
            self.too_many = true;
        }
    }
}

impl Sink for Counting<'_> {
    #[inline(always)]
    fn dense_han(&mut self, i: usize) {
        self.totals[Kind::Han as usize] += 1;
        self.bump(i);
    }

    #[inline(always)]
    fn dense_gram(&mut self, i: usize) {
        self.totals[Kind::Gram as usize] += 1;
        self.bump(i);
    }

    #[inline(always)]
    fn dense_grams(&mut self, indexes: &[u32]) {
        self.totals[Kind::Gram as usize] += indexes.len() as u64;
        self.bump_all(indexes);
    }

    #[inline(always)]
    fn dense_hans(&mut self, indexes: &[u32]) {
        self.totals[Kind::Han as usize] += indexes.len() as u64;
        self.bump_all(indexes);
    }

    fn han(&mut self, c: char) {
        self.totals[Kind::Han as usize] += 1;
        let mut buf = [0u8; 4];
        self.other(xxh3_64(c.encode_utf8(&mut buf).as_bytes()), Kind::Han);
    }

    fn gram(&mut self, g: [char; 3]) {
        self.totals[Kind::Gram as usize] += 1;
        let mut buf = [0u8; 12];
        let mut len = 0;
        for c in g {
            len += c.encode_utf8(&mut buf[len..]).len();
        }
        self.other(xxh3_64(&buf[..len]), Kind::Gram);
    }
}

/// Version 3 of the text `bytes` through the table: `Ok(Some(fingerprint))`,
/// or `Ok(None)` when the text must take the general path (a hash
/// collision with a counted character, more distinct features than
/// `bound`, or a cap the saturating counts cannot hold); when it says so
/// after the scan, the bytes are UTF-8.
pub(super) fn fingerprint_v3(
    fp: Parts<'_>,
    opts: &V3Options,
    bytes: &[u8],
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
) -> Result<Option<Option<u64>>, Stop> {
    fingerprint_v3_to(fp, opts, bytes, go_on, bound, Stage::All, fp.simd)
}

/// The weights and hashes of `batch` with AVX-512, eight features at a
/// time, or AVX2, four at a time, from their prepared entries
/// ([`super::wide_weights`]), when `simd` asks for one of them, the
/// processor has it and every entry is
/// [`bounded`]: whether it did. It moves each count out of `tf` into
/// `kept` (by the feature's place in `batch`) as it reads it.
#[cfg(target_arch = "x86_64")]
#[inline]
fn weigh_wide(
    simd: Simd,
    prepared: &[Prepared],
    (tf, kept, bounded): (&mut [u8], &mut [u8], bool),
    batch: &[u32],
    counted: [f64; 2],
    hashes: &mut [u64; WEIGH_BATCH],
    weights: &mut [i64; WEIGH_BATCH],
) -> bool {
    if simd < Simd::Avx2 || !simd.available() || !bounded {
        return false;
    }
    let kernel = match simd {
        _ if simd.is_avx512() => super::wide_weights::weigh_prepared,
        _ => super::wide_weights::weigh_prepared_avx2,
    };
    // SAFETY: the processor has the instructions of `simd` (`available`):
    // AVX-512's kernel for AVX-512, AVX2's for AVX2.
    #[allow(unsafe_code)]
    unsafe {
        kernel(
            prepared,
            (tf, kept),
            batch,
            counted,
            HAN_GRAMS,
            hashes,
            weights,
        )
    };
    true
}

/// Without x86-64's AVX2 or AVX-512: never.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn weigh_wide(
    _: Simd,
    _: &[Prepared],
    _: (&mut [u8], &mut [u8], bool),
    _: &[u32],
    _: [f64; 2],
    _: &mut [u64; WEIGH_BATCH],
    _: &mut [i64; WEIGH_BATCH],
) -> bool {
    false
}

/// How far [`fingerprint_v3_to`] goes: the stage profile of
/// `bench/src/bin/fingerprint_stages.rs` times each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The scan and the counts: the number of distinct features.
    Scan,
    /// And the weights: their sum.
    Weigh,
    /// And the 64 counters: the fingerprint.
    All,
}

/// [`fingerprint_v3`] up to `stage`, the weights and counters with the
/// vector instructions of `simd` (the same bits at every level); what it
/// returns before [`Stage::All`] is only something to keep alive.
pub(super) fn fingerprint_v3_to(
    fp: Parts<'_>,
    opts: &V3Options,
    bytes: &[u8],
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
    stage: Stage,
    simd: Simd,
) -> Result<Option<Option<u64>>, Stop> {
    if !fp.dense.all_alone || opts.han.cap > 255 || opts.gram.cap > 255 {
        return Ok(None);
    }
    COUNTS.with(|cell| {
        let Ok(mut counts) = cell.try_borrow_mut() else {
            // Re-entered (not done by any caller): the general path.
            return Ok(None);
        };
        let counts = &mut *counts;
        if counts.tf.len() != SIZE {
            counts.tf = vec![0; SIZE];
            counts.order = vec![0; SIZE];
            counts.kept = vec![0; SIZE];
            counts.touched = 0;
        }
        // Out of `counts` while it is used (dropped if a use unwinds: made
        // anew by the next).
        let mut boxed = counts.work.take().unwrap_or_else(|| {
            Box::new((
                ScanWork::new(),
                Weighed {
                    weights: [0; WEIGH_BATCH],
                    hashes: [0; WEIGH_BATCH],
                },
            ))
        });
        let (work, weighed) = &mut *boxed;
        if counts.dirty {
            counts.tf.fill(0);
        } else {
            for &i in &counts.order[..counts.touched] {
                counts.tf[i as usize] = 0;
            }
        }
        counts.touched = 0;
        counts.dirty = true;
        let done = counted_v3(
            fp, opts, bytes, go_on, bound, stage, simd, counts, work, weighed,
        );
        // Only a normal return leaves `touched` listing every count.
        counts.dirty = done.is_err();
        counts.work = Some(boxed);
        done
    })
}

/// The body of [`fingerprint_v3_to`] on the thread's clean counts.
#[allow(clippy::too_many_arguments)]
fn counted_v3(
    fp: Parts<'_>,
    opts: &V3Options,
    bytes: &[u8],
    go_on: &mut impl FnMut() -> bool,
    bound: usize,
    stage: Stage,
    simd: Simd,
    counts: &mut Counts,
    work: &mut ScanWork,
    weighed: &mut Weighed,
) -> Result<Option<Option<u64>>, Stop> {
    {
        let counting = Counting {
            tf: &mut counts.tf,
            order: &mut counts.order,
            touched: 0,
            others: HashMap::default(),
            totals: [0; 2],
            bound,
            too_many: false,
        };
        let counted = scan::scan(fp.fold, fp.fast, bytes, counting, &mut *go_on, work, simd)?;
        counts.touched = counted.touched;
        let (others, totals) = (counted.others, counted.totals);
        if counted.too_many {
            return Ok(None);
        }
        let touched = &counts.order[..counts.touched];
        if stage == Stage::Scan {
            return Ok(Some(Some(touched.len() as u64 + totals[0] + totals[1])));
        }
        // A feature of the map with the hash of a feature the table
        // counted: the definition would count them as one.
        if !touched.is_empty()
            && others.keys().any(|h| {
                fp.dense
                    .by_hash
                    .get(h)
                    .is_some_and(|&i| counts.tf[i as usize] > 0)
            })
        {
            return Ok(None);
        }

        // The table's features a batch at a time: their weights first,
        // then their adds, loops of independent work.
        let weigh = |tf: &[u8], i: u32, regardless: bool| {
            let i = i as usize;
            let tf = u64::from(tf[i]);
            let info = fp.dense.entries[i].info;
            weigh_fixed(opts, kind_of(i), info, tf, totals, regardless)
        };
        // The number of features of each kind as the definition
        // multiplies it (exact: far below 2^53), once per text.
        let counted = totals.map(|n| n as f64);
        let batched = opts.chance && opts.han.cap == FAST_CAP && opts.gram.cap == FAST_CAP;
        let prepared = (opts == &V3Options::DEFINITION).then_some(&fp.dense.prepared[..]);
        let by_kind = [opts.han, opts.gram];
        let Weighed { weights, hashes } = weighed;
        let mut acc = Accumulator::new();
        let mut positive = false;
        let mut weighed = 0u64;
        // Whether the weights moved the counts out of `tf` into `kept`.
        let mut moved = false;
        for (b, batch) in touched.chunks(WEIGH_BATCH).enumerate() {
            if let (true, Some(prepared)) = (batched, prepared) {
                let tf = &mut counts.tf[..];
                let kept = &mut counts.kept[b * WEIGH_BATCH..b * WEIGH_BATCH + batch.len()];
                let wide = (tf, kept, fp.dense.bounded);
                if weigh_wide(simd, prepared, wide, batch, counted, hashes, weights) {
                    // Done, eight (or four) features at a time.
                    moved = true;
                } else {
                    let tf = &counts.tf;
                    // Gathered straight into the kernel's lanes, each hash
                    // on the way, from what the definition's weighing
                    // worked out once for each entry.
                    let feature = |k: usize| {
                        let i = batch[k] as usize;
                        let e = &prepared[i];
                        hashes[k] = e.hash;
                        ToWeigh {
                            scale: e.scale,
                            capped: CAPPED6[usize::from(tf[i])],
                            factor: e.factor,
                            mean: counted[usize::from(i >= HAN)] * e.p,
                        }
                    };
                    fixed_weights6_by(simd, batch.len(), feature, weights);
                }
            } else if batched {
                // The same, from each entry's table values.
                let tf = &counts.tf;
                let feature = |k: usize| {
                    let i = batch[k] as usize;
                    let kind = kind_of(i);
                    let weighing = &by_kind[kind as usize];
                    let entry = &fp.dense.entries[i];
                    let (s, p, known) = entry.info;
                    let factor = if known { 1.0 } else { weighing.unknown };
                    let mean = counted[kind as usize] * p;
                    hashes[k] = entry.hash;
                    weighing.to_weigh(s, factor, u64::from(tf[i]), mean)
                };
                fixed_weights6_by(simd, batch.len(), feature, weights);
            } else {
                for ((w, h), &i) in weights.iter_mut().zip(hashes.iter_mut()).zip(batch) {
                    *w = weigh(&counts.tf, i, false);
                    *h = fp.dense.entries[i as usize].hash;
                }
            }
            if stage == Stage::Weigh {
                weighed = weights[..batch.len()]
                    .iter()
                    .fold(weighed, |a, &w| a ^ w as u64);
                continue;
            }
            let weights = &weights[..batch.len()];
            acc.add_all_as(simd, &hashes[..batch.len()], weights);
            positive |= weights.iter().any(|&w| w > 0);
        }
        if moved {
            // Every count was moved (all batches go the same way): none to
            // clear. They are put back for the weights regardless of
            // chance, and cleared by the next text as usual.
            if stage == Stage::All && !positive {
                for (&i, &tf) in touched.iter().zip(&counts.kept) {
                    counts.tf[i as usize] = tf;
                }
            } else {
                counts.touched = 0;
            }
        }
        if stage == Stage::Weigh {
            return Ok(Some(Some(weighed)));
        }
        if positive && others.is_empty() {
            return Ok(Some(acc.finish()));
        }
        let mut fallback = Accumulator::new();
        if !positive {
            for &i in touched {
                fallback.add(
                    fp.dense.entries[i as usize].hash,
                    weigh(&counts.tf, i, true),
                );
            }
        }
        if !others.is_empty() {
            fp.self_info.add_counted(
                opts,
                &others,
                totals,
                &mut acc,
                &mut fallback,
                &mut positive,
            );
        }
        Ok(Some(if positive {
            acc.finish()
        } else {
            fallback.finish()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::tests::shared;
    use crate::fingerprint::{Fingerprinter, Version, V3_MAX_COUNTED};
    use crate::testutil::splitmix;

    /// The general path alone: every feature counted in the hash map.
    fn general(fp: &Fingerprinter, text: &str) -> Option<u64> {
        fp.fingerprint_v3_general(&V3Options::DEFINITION, text, || true, V3_MAX_COUNTED)
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
        let fp = shared();
        let mut state = 15u64;
        for round in 0..3000 {
            let text = random_text(&mut state);
            let mut go_on = || true;
            let fast = fingerprint_v3(
                fp.dense_parts(),
                &V3Options::DEFINITION,
                text.as_bytes(),
                &mut go_on,
                usize::MAX,
            )
            .unwrap()
            .expect("no collision in these texts");
            assert_eq!(fast, general(fp, &text), "round {round}: {text:?}");
            // The public entry point takes the table.
            assert_eq!(fp.fingerprint_as(Version::V3, &text), fast);
        }
    }

    #[test]
    fn texts_weighed_regardless_of_chance_leave_the_counts_clear() {
        // The weights may move the counts out of the table as they read
        // them, and put them back for a text with nothing above chance:
        // at every level, such texts and others in turn on one thread
        // each give the bits of the hash map, and so does the stage
        // profile between them.
        let fp = shared();
        let nothing_above = "北京天气晴朗".repeat(200_000);
        let texts = [
            nothing_above.as_str(),
            "天地玄黄，宇宙洪荒。日月盈昃，辰宿列张。",
            nothing_above.as_str(),
            "北京天气晴朗 the weather in Beijing",
        ];
        for simd in Simd::ALL.into_iter().filter(|s| s.available()) {
            for round in 0..2 {
                for (k, text) in texts.iter().enumerate() {
                    let at = |stage: Stage| {
                        fingerprint_v3_to(
                            fp.dense_parts(),
                            &V3Options::DEFINITION,
                            text.as_bytes(),
                            &mut || true,
                            usize::MAX,
                            stage,
                            simd,
                        )
                        .unwrap()
                        .expect("no collision in these texts")
                    };
                    if round == 1 {
                        at(Stage::Weigh);
                    }
                    assert_eq!(at(Stage::All), general(fp, text), "{simd:?} text {k}");
                }
            }
        }
    }

    #[test]
    fn every_level_of_vector_instructions_gives_the_same_bits() {
        let fp = shared();
        let mut state = 16u64;
        for round in 0..2000 {
            let text = random_text(&mut state);
            let at = |simd: Simd| {
                let bytes = text.as_bytes();
                fingerprint_v3_to(
                    fp.dense_parts(),
                    &V3Options::DEFINITION,
                    bytes,
                    &mut || true,
                    usize::MAX,
                    Stage::All,
                    simd,
                )
                .unwrap()
                .expect("no collision in these texts")
            };
            let baseline = at(Simd::Baseline);
            for simd in Simd::ALL.into_iter().filter(|s| s.available()) {
                assert_eq!(at(simd), baseline, "{simd:?} round {round}: {text:?}");
            }
        }
    }

    #[test]
    fn too_many_features_take_the_general_path() {
        let fp = shared();
        // Trigrams of non-ASCII letters are counted in the map.
        let text = "天地玄黄 éèê àâä ñõö";
        let mut go_on = || true;
        assert_eq!(
            fingerprint_v3(
                fp.dense_parts(),
                &V3Options::DEFINITION,
                text.as_bytes(),
                &mut go_on,
                3
            )
            .unwrap(),
            None
        );
        let whole = fingerprint_v3(
            fp.dense_parts(),
            &V3Options::DEFINITION,
            text.as_bytes(),
            &mut go_on,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(whole, Some(general(fp, text)));
    }

    #[test]
    fn a_walk_cut_short_leaves_nothing_behind() {
        let fp = shared();
        let text = "天地玄黄宇宙洪荒".repeat(200);
        let mut stop = || false;
        assert!(fingerprint_v3(
            fp.dense_parts(),
            &V3Options::DEFINITION,
            text.as_bytes(),
            &mut stop,
            usize::MAX
        )
        .is_err());
        let mut go_on = || true;
        let after = fingerprint_v3(
            fp.dense_parts(),
            &V3Options::DEFINITION,
            "天地".as_bytes(),
            &mut go_on,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(after, Some(general(fp, "天地")));
    }

    #[test]
    fn what_is_prepared_is_what_the_weighing_gives() {
        let fp = shared();
        let opts = &V3Options::DEFINITION;
        assert_eq!(fp.dense.prepared.len(), SIZE);
        for (i, (e, p)) in fp.dense.entries.iter().zip(&fp.dense.prepared).enumerate() {
            let weighing = [opts.han, opts.gram][kind_of(i) as usize];
            let (s, prob, known) = e.info;
            let factor = if known { 1.0 } else { weighing.unknown };
            for tf in [1u8, 2, 6, 7, 255] {
                let mean = 3.0 * prob;
                let expected = weighing.to_weigh(s, factor, u64::from(tf), mean);
                let (capped, mean_here) = (CAPPED6[usize::from(tf)], 3.0 * p.p);
                assert_eq!(
                    (p.hash, p.scale, p.factor, capped, mean_here),
                    (
                        e.hash,
                        expected.scale,
                        expected.factor,
                        expected.capped,
                        expected.mean
                    ),
                    "entry {i}, tf {tf}"
                );
            }
        }
        // Both kinds, and features the weights' tables do and do not list.
        let unknown = fp.dense.entries.iter().filter(|e| !e.info.2).count();
        assert!(unknown > 0 && unknown < SIZE, "{unknown}");
    }
}
