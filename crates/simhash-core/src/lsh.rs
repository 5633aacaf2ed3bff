//! A second candidate source beside the fingerprint's bands: MinHash
//! locality-sensitive hashing of the character 5-grams of the verifier's
//! normalized stream ([`crate::similarity`]).
//!
//! A 64-bit SimHash moves past distance 11 when about 5% of an English
//! text's characters change at scattered places, or when a footer doubles
//! a short text; the sets of 5-grams of such copies still overlap a lot.
//! MinHash estimates that overlap (Jaccard similarity): for each of
//! [`HASHES`] hash functions, the smallest hash over the text's distinct
//! grams. Grouped in [`BANDS`] bands of [`ROWS`], two texts share a band's
//! key with probability `J^ROWS`, so they share at least one of the
//! bands' keys with probability `1 - (1 - J^ROWS)^BANDS`: at 32 x 4, 0.5
//! for `J` = 0.30, 0.98 for `J` = 0.50. A shared key only makes a
//! candidate; the rule of record decides on the texts
//! (`simhash_similarity`).
//!
//! The keys are 32-bit integers (the band's number is hashed in, so keys
//! of different bands never meet): stored in an `integer[]` column, a GIN
//! index finds the rows that share one (`&&`). A collision of two keys
//! costs one verification, no wrong answer.

use xxhash_rust::xxh3::xxh3_64;

use crate::cpu::Simd;
use crate::similarity::{gram_keys_checked, GramOverlap, SimilarityError};

/// The characters of a gram.
pub const GRAM: usize = 5;
/// Bands, and hash functions per band.
pub const BANDS: usize = 32;
pub const ROWS: usize = 4;
/// Hash functions in all.
pub const HASHES: usize = BANDS * ROWS;

/// The hash functions: `h_i(x) = fmix32(x ^ s_i)`, MurmurHash3's 32-bit
/// finalizer (a bijection that mixes every input bit into every output
/// bit) of the gram's 32-bit hash XOR a seed of its own, the seeds from a
/// fixed state. All 32-bit integer work, so that the 128 functions of one
/// gram run 8 or 16 at a time in vector registers (AVX2, AVX-512); every
/// level gives the same minima.
struct Family {
    seeds: [u32; HASHES],
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn family() -> &'static Family {
    static FAMILY: std::sync::OnceLock<Family> = std::sync::OnceLock::new();
    FAMILY.get_or_init(|| {
        let mut state = 0x5349_4D48_4153_484C; // "SIMHASHL"
        let mut f = Family { seeds: [0; HASHES] };
        for seed in f.seeds.iter_mut() {
            *seed = splitmix(&mut state) as u32;
        }
        f
    })
}

#[inline(always)]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// The minima with one more gram, whose 32-bit hash is `x`.
#[inline(always)]
fn add_baseline(mins: &mut [u32; HASHES], seeds: &[u32; HASHES], x: u32) {
    for (min, &s) in mins.iter_mut().zip(seeds) {
        *min = (*min).min(fmix32(x ^ s));
    }
}

/// The same, compiled for AVX2.
///
/// # Safety
/// The processor has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code)]
unsafe fn add_avx2(mins: &mut [u32; HASHES], seeds: &[u32; HASHES], x: u32) {
    add_baseline(mins, seeds, x)
}

/// The same, compiled for AVX-512.
///
/// # Safety
/// The processor has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f")]
#[allow(unsafe_code)]
unsafe fn add_avx512(mins: &mut [u32; HASHES], seeds: &[u32; HASHES], x: u32) {
    add_baseline(mins, seeds, x)
}

/// Takes the gram `key` into the minima of every hash function, with the
/// instructions of `simd` when the processor has them.
#[inline]
#[allow(unsafe_code)]
fn add(mins: &mut [u32; HASHES], key: u64, simd: Simd) {
    let seeds = &family().seeds;
    // The gram's key mixed once, so that keys of up to three characters
    // (exact code points) spread over 32 bits.
    let x = xxh3_64(&key.to_le_bytes()) as u32;
    match simd {
        // SAFETY: the processor has the instructions (`available`).
        #[cfg(target_arch = "x86_64")]
        _ if simd.is_avx512() && simd.available() => unsafe { add_avx512(mins, seeds, x) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 if simd.available() => unsafe { add_avx2(mins, seeds, x) },
        _ => add_baseline(mins, seeds, x),
    }
}

/// The minimum of each hash function over the distinct grams of `keys`
/// (the gram keys, repeats allowed), or `None` when there are none.
#[cfg(test)]
fn signature(keys: impl IntoIterator<Item = u64>) -> Option<[u32; HASHES]> {
    let mut mins = [u32::MAX; HASHES];
    let mut any = false;
    for key in keys {
        any = true;
        add(&mut mins, key, Simd::Baseline);
    }
    any.then_some(mins)
}

/// The band keys of a signature: band `b`'s [`ROWS`] minima and `b`
/// hashed together, as an `i32`.
fn band_keys(mins: &[u32; HASHES]) -> [i32; BANDS] {
    let mut out = [0i32; BANDS];
    for (b, key) in out.iter_mut().enumerate() {
        let mut bytes = [0u8; 4 * ROWS + 4];
        for r in 0..ROWS {
            bytes[4 * r..4 * r + 4].copy_from_slice(&mins[b * ROWS + r].to_le_bytes());
        }
        bytes[4 * ROWS..].copy_from_slice(&(b as u32).to_le_bytes());
        *key = xxh3_64(&bytes) as i32;
    }
    out
}

/// The [`BANDS`] candidate keys of a text (raw bytes, checked to be
/// UTF-8), or `None` for a text without a word character (a stream
/// shorter than [`GRAM`] characters is one gram of its own, as the
/// similarity takes it). `go_on` is called as the similarity calls it. Memory: a
/// few hundred bytes whatever the text.
pub fn keys_checked(
    text: &[u8],
    go_on: impl FnMut() -> bool,
) -> Result<Option<[i32; BANDS]>, SimilarityError> {
    keys_checked_as(Simd::detected(), text, go_on)
}

/// [`keys_checked`] with the instructions of `simd` (the baseline's when
/// the processor does not have them): the same keys.
pub fn keys_checked_as(
    simd: Simd,
    text: &[u8],
    go_on: impl FnMut() -> bool,
) -> Result<Option<[i32; BANDS]>, SimilarityError> {
    let mut mins = [u32::MAX; HASHES];
    let mut any = false;
    gram_keys_checked(text, GRAM, go_on, |key| {
        any = true;
        add(&mut mins, key, simd);
    })?;
    Ok(any.then(|| band_keys(&mins)))
}

/// [`keys_checked`] of a string, never stopped.
pub fn keys(text: &str) -> Option<[i32; BANDS]> {
    keys_checked(text.as_bytes(), || true).expect("UTF-8, never stopped")
}

/// The bands two texts must share to be a candidate of this source.
pub const MIN_SHARED_BANDS: usize = 1;

/// The Jaccard similarity of 5-grams
/// ([`crate::similarity::jaccard_bytes_checked`]) a candidate that only
/// this source found must reach, besides the similarity threshold: long
/// texts on one subject (two State of the Union addresses: 5-gram Jaccard
/// 0.28 to 0.49) share a key now and then, and their trigram containment
/// passes any threshold. `bench/quality` (`lsh_variants.py`): English hard
/// negatives 6.9% at 1 band and containment alone, 1.7% with 2 bands, 0
/// with this.
pub const MIN_JACCARD: f64 = 0.5;

/// The containment of 5-grams
/// ([`crate::similarity::GramOverlap::containment`]: the distinct grams of
/// the text with fewer that the other has too) that lets a candidate only
/// this source found pass in place of [`MIN_JACCARD`]: a short text with a
/// footer appended that doubles it keeps every gram of the original but a
/// Jaccard of about 0.5 or less. The hard negatives that share a key
/// reach 0.67 at most on `bench/quality` (long texts on one subject: State
/// of the Union addresses), 0.48 on its second set; a copy with a footer,
/// 1.
pub const MIN_CONTAINMENT: f64 = 0.85;

/// The second test of a candidate that only this source found, besides
/// the similarity threshold: a Jaccard of 5-grams of at least
/// [`MIN_JACCARD`], or a containment of at least [`MIN_CONTAINMENT`].
pub fn second_test(overlap: &GramOverlap) -> bool {
    overlap.jaccard() >= MIN_JACCARD || overlap.containment() >= MIN_CONTAINMENT
}

/// How many bands two texts' keys share: a candidate of this source when
/// at least [`MIN_SHARED_BANDS`]. Keys are compared band by band (a band's
/// key is at its place), so a key that turns up in another band does not
/// count.
pub fn shared_bands(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

/// Whether two texts' keys, `shared` bands of which are the same
/// ([`shared_bands`]), make a candidate of this source: at least
/// [`MIN_SHARED_BANDS`].
pub fn is_candidate(shared: usize) -> bool {
    shared >= MIN_SHARED_BANDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix as next;
    use std::collections::HashSet;

    fn grams(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        gram_keys_checked(text.as_bytes(), GRAM, || true, |k| out.push(k)).unwrap();
        out
    }

    fn jaccard(a: &str, b: &str) -> f64 {
        let (ga, gb): (HashSet<u64>, HashSet<u64>) = (
            grams(a).into_iter().collect(),
            grams(b).into_iter().collect(),
        );
        ga.intersection(&gb).count() as f64 / ga.union(&gb).count() as f64
    }

    #[test]
    fn every_instruction_set_gives_the_same_keys() {
        let mut seed = 7;
        for len in [0usize, 3, 5, 17, 200, 3000] {
            let text: String = (0..len)
                .map(|_| {
                    let v = next(&mut seed) % 40;
                    if v < 6 {
                        ' '
                    } else {
                        (b'a' + (v % 26) as u8) as char
                    }
                })
                .collect();
            let base = keys_checked_as(Simd::Baseline, text.as_bytes(), || true).unwrap();
            for simd in Simd::ALL {
                assert_eq!(
                    keys_checked_as(simd, text.as_bytes(), || true).unwrap(),
                    base,
                    "{simd:?} {len}"
                );
            }
        }
    }

    #[test]
    fn shared_bands_count_same_band_keys_only() {
        let a =
            keys("The harbour master counted the boats that came back before the storm.").unwrap();
        assert_eq!(shared_bands(&a, &a), BANDS);
        let other = keys("A completely different sentence about apples and tea.").unwrap();
        assert_eq!(shared_bands(&a, &other), 0);
        // A key moved to another band is no shared band.
        let mut rotated = a;
        rotated.rotate_left(1);
        assert_eq!(shared_bands(&a, &rotated), 0);
        let mut one = other;
        one[7] = a[7];
        assert_eq!(shared_bands(&a, &one), 1);
    }

    #[test]
    fn the_keys_are_the_signature_of_the_distinct_grams() {
        let text = "The harbour master counted the boats that came back before the storm.";
        let by_set = band_keys(&signature(grams(text)).unwrap());
        assert_eq!(keys(text), Some(by_set));
        // Repeats do not count: a set, not a bag.
        let twice = format!("{text} {text}");
        let distinct: HashSet<u64> = grams(&twice).into_iter().collect();
        assert_eq!(
            band_keys(&signature(distinct).unwrap()),
            keys(&twice).unwrap()
        );
        // Normalized as the verifier normalizes: case, width, punctuation.
        assert_eq!(keys("Hello, World!"), keys("hello   ＷＯＲＬＤ"));
        // No word character, no keys; a stream shorter than a gram is one
        // gram of its own (as the similarity takes it).
        assert_eq!(keys("!!"), None);
        assert_eq!(keys(""), None);
        assert_eq!(keys("abcd"), keys("ABCD."));
        assert_ne!(keys("abcd"), keys("abce"));
    }

    #[test]
    fn bands_share_keys_about_as_often_as_the_theory_says() {
        // Texts made of random words, and copies with a share of their
        // words replaced: the fraction of band keys two texts share
        // estimates J^ROWS, within sampling error.
        let words: Vec<String> = (0..2000)
            .map(|i| {
                let mut s = i as u64 * 7919;
                (0..(3 + next(&mut s) % 6))
                    .map(|_| (b'a' + (next(&mut s) % 26) as u8) as char)
                    .collect()
            })
            .collect();
        let mut seed = 42;
        let (mut expected, mut seen, mut n) = (0.0, 0.0, 0.0);
        for _ in 0..60 {
            let len = 150;
            let a: Vec<usize> = (0..len)
                .map(|_| (next(&mut seed) % 2000) as usize)
                .collect();
            let b: Vec<usize> = a
                .iter()
                .map(|&w| {
                    if next(&mut seed) % 10 < 2 {
                        (next(&mut seed) % 2000) as usize
                    } else {
                        w
                    }
                })
                .collect();
            let ta: String = a
                .iter()
                .map(|&w| words[w].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let tb: String = b
                .iter()
                .map(|&w| words[w].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let j = jaccard(&ta, &tb);
            let (ka, kb) = (keys(&ta).unwrap(), keys(&tb).unwrap());
            let shared = ka.iter().zip(kb.iter()).filter(|(x, y)| x == y).count();
            expected += j.powi(ROWS as i32);
            seen += shared as f64 / BANDS as f64;
            n += 1.0;
        }
        let (expected, seen) = (expected / n, seen / n);
        assert!(
            (seen - expected).abs() < 0.05,
            "shared band fraction {seen:.3}, J^4 {expected:.3}"
        );
    }

    #[test]
    fn different_texts_share_no_key_and_copies_share_most() {
        let a = "A long report on the harbour, the boats that sail from it at dawn, and the storms of the winter past.";
        let b = "Notes on mountain weather: snow that fell all season, the passes it closed and the villages it cut off.";
        let (ka, kb) = (keys(a).unwrap(), keys(b).unwrap());
        assert_eq!(ka.iter().zip(kb.iter()).filter(|(x, y)| x == y).count(), 0);
        let copy = format!("{a} Read more at our site.");
        let kc = keys(&copy).unwrap();
        assert!(ka.iter().zip(kc.iter()).filter(|(x, y)| x == y).count() > 0);
    }

    #[test]
    fn the_second_test_takes_a_footer_that_doubles_a_short_text() {
        use crate::similarity::overlap_bytes_checked;
        let overlap =
            |a: &str, b: &str| overlap_bytes_checked(a.as_bytes(), b.as_bytes(), || true).unwrap();
        let text = "The harbour master counted the boats that came back before the storm.";
        let footer = format!(
            "{text}\nThis message was sent to the harbour list; write to the list owner to leave it, or read the archive online."
        );
        let o = overlap(text, &footer);
        // Every 5-gram of the text is in the copy: contained, but the
        // Jaccard is under 0.5, so the Jaccard alone would turn it away.
        assert_eq!(o.containment(), 1.0);
        assert!(o.jaccard() < MIN_JACCARD, "{}", o.jaccard());
        assert!(second_test(&o));
        assert_eq!(overlap(&footer, text).containment(), 1.0, "symmetric");
        // Counts of distinct grams, against the sets.
        let distinct = |t: &str| grams(t).into_iter().collect::<HashSet<u64>>();
        let (sa, sb) = (distinct(text), distinct(&footer));
        assert_eq!(
            (o.a, o.b, o.both),
            (
                sa.len() as u64,
                sb.len() as u64,
                sa.intersection(&sb).count() as u64
            )
        );
        // A copy with a word changed passes by its Jaccard.
        let edited = text.replace("boats", "ships");
        assert!(
            overlap(text, &edited).jaccard() >= MIN_JACCARD && second_test(&overlap(text, &edited))
        );
        // Two texts on one subject that share some phrases pass neither.
        let other =
            "The harbour master counted the ships that sailed out after the storm had passed.";
        let o = overlap(text, other);
        assert!(
            o.jaccard() < MIN_JACCARD && o.containment() < MIN_CONTAINMENT,
            "{o:?}"
        );
        assert!(!second_test(&o));
        // No grams on a side: as the Jaccard takes it.
        assert_eq!(overlap("", "!!").containment(), 1.0);
        assert_eq!(overlap("", text).containment(), 0.0);
        assert!(!second_test(&overlap("", text)));
    }

    #[test]
    fn stops_when_told() {
        let long = "word ".repeat(100_000);
        let mut calls = 0;
        assert_eq!(
            keys_checked(long.as_bytes(), || {
                calls += 1;
                calls < 2
            }),
            Err(SimilarityError::Interrupted)
        );
        assert_eq!(
            keys_checked(b"\xff\xfe abcdef", || true),
            Err(SimilarityError::NotUtf8)
        );
    }
}
