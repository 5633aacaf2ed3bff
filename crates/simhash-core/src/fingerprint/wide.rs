//! Sixteen characters of a run of ideographs at a time, with AVX-512;
//! eight at a time with AVX2.
//!
//! A run of ideographs ([`super::scan`]) takes one character after
//! another: three bytes checked, a code point put together, a table
//! looked up, about thirty instructions a character. Here sixteen
//! characters (48 bytes) go through the same steps side by side: the
//! bytes spread into sixteen lanes of 32 bits (`vpermb`, AVX-512 VBMI),
//! checked and put together in the lanes, the run table gathered for all
//! sixteen, and the features among them (the characters that are not
//! marks) packed into the run's buffer (`vpcompressd`).
//!
//! With AVX2 ([`ideographs8`]) the same steps take eight characters (24
//! bytes): AVX2 has no byte permute across its two halves, so the bytes
//! of characters 4 to 7 are first moved into the upper half by a permute
//! of 32-bit words, then spread within each half (`vpshufb`); and it has
//! no compress, so the features are packed by a permute of 32-bit words
//! whose indexes come from a table of the 256 masks.
//!
//! With AVX-512 but without VBMI ([`ideographs16bw`], Intel's Skylake-SP
//! and Cascade Lake) the sixteen characters go together all the same:
//! the bytes of each four characters are first moved into their own
//! 128-bit quarter by a permute of 32-bit words (`vpermd`), then spread
//! within each quarter (`vpshufb`), as AVX2 does with two halves; the
//! rest is [`ideographs16`]'s.
//!
//! Why intrinsics and not `wide`: `wide` picks its instructions by the
//! features the crate is compiled with (`cfg(target_feature)`), not by
//! the `#[target_feature]` of the function that calls it, so in a build
//! for the x86-64 baseline its `u32x8` is two SSE2 halves even inside an
//! AVX2 function; and it has no gather, no byte permute across a
//! vector's halves and no compress, which are the kernel.
//!
//! Each says what [`super::scan_tables::ScanTables::run_at`] says of each
//! of its characters, taken in order up to the first that leaves the run:
//! the tests run whole scans with them and without them, and compare.
//!
//! The only unsafe code: vector loads, vector stores and gathers, each
//! within an array it is given by reference.

use std::arch::x86_64::*;

use super::scan_tables::{GENERAL, RUN_MARK, RUN_TABLE};
use crate::cpu::Simd;

/// Whether [`ideographs16`] may run: AVX-512 was asked for, and the
/// processor has it and VBMI's byte permutes (Intel since Ice Lake, AMD
/// since Zen 4), and the bit instructions that come with them; found once
/// per process.
pub(super) fn available(simd: Simd) -> bool {
    static MORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let more = || {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512vbmi") && has!("popcnt") && has!("lzcnt") && has!("bmi1") && has!("bmi2")
    };
    simd == Simd::Avx512 && simd.available() && *MORE.get_or_init(more)
}

/// Whether [`ideographs16bw`] may run: AVX-512 was asked for (with or
/// without VBMI), and the processor has it and the bit instructions that
/// come with it (every processor with AVX-512 that is made has them);
/// found once per process.
pub(super) fn available16bw(simd: Simd) -> bool {
    static MORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let more = || {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f")
            && has!("avx512bw")
            && has!("popcnt")
            && has!("lzcnt")
            && has!("bmi1")
            && has!("bmi2")
    };
    simd.is_avx512() && simd.available() && *MORE.get_or_init(more)
}

/// Whether [`ideographs8`] may run: AVX2 or more was asked for, and the
/// processor has it and the bit instructions that come with it (every
/// processor with AVX2 that is made has them); found once per process.
pub(super) fn available8(simd: Simd) -> bool {
    static MORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let more = || {
        use std::arch::is_x86_feature_detected as has;
        has!("avx2") && has!("popcnt") && has!("lzcnt") && has!("bmi1") && has!("bmi2")
    };
    simd >= Simd::Avx2 && simd.available() && *MORE.get_or_init(more)
}

/// What [`ideographs16`] or [`ideographs8`] made of its characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    /// The characters taken, in order, before the first that leaves the
    /// run (all 16, or 8, when none does).
    pub taken: usize,
    /// How many of them are features, packed at the start of `out`.
    pub kept: usize,
    /// How many characters, from the first, go up to and including the
    /// last mark taken; 0 for none.
    pub through_mark: usize,
}

/// For `vpermb`: the bytes of character `l` (bytes `3l`, `3l + 1`,
/// `3l + 2`) into the low three bytes of lane `l`.
const SPREAD: [u8; 64] = {
    let mut index = [0u8; 64];
    let mut p = 0;
    while p < 64 {
        let (lane, k) = (p / 4, p % 4);
        index[p] = if k < 3 { (3 * lane + k) as u8 } else { 0 };
        p += 1;
    }
    index
};

/// The bytes of [`SPREAD`] that hold a character's byte; the fourth byte
/// of each lane is zeroed.
const SPREAD_BYTES: u64 = 0x7777_7777_7777_7777;

/// For `vpshufb`, in each half: the bytes of character `l` (bytes `3l`,
/// `3l + 1`, `3l + 2` of the half) into the low three bytes of lane `l`
/// (of four), the fourth byte zeroed (an index with the high bit set).
const SPREAD8: [u8; 32] = {
    let mut index = [0u8; 32];
    let mut p = 0;
    while p < 32 {
        let (lane, k) = ((p % 16) / 4, p % 4);
        index[p] = if k < 3 { (3 * lane + k) as u8 } else { 0x80 };
        p += 1;
    }
    index
};

/// For each mask of eight lanes, the lanes it sets, lowest first, three
/// bits an index (lane `k`'s at bits `3k`), for the permute that packs
/// them at the start of a vector.
const PACK8: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut lane, mut k, mut packed) = (0, 0, 0u32);
        while lane < 8 {
            if mask & (1 << lane) != 0 {
                packed |= (lane as u32) << (3 * k);
                k += 1;
            }
            lane += 1;
        }
        table[mask] = packed;
        mask += 1;
    }
    table
};

/// The sixteen three-byte characters at the start of `chunk` (the 16
/// bytes after them are not read), as a run of ideographs takes them:
/// each feature's table code into `out`, in order, and how far the run
/// goes ([`Block`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,popcnt,lzcnt,bmi1,bmi2")]
#[inline]
pub(super) fn ideographs16(
    table: &[u16; RUN_TABLE],
    chunk: &[u8; 64],
    out: &mut [u32; 16],
) -> Block {
    let w = _mm512_maskz_permutexvar_epi8(SPREAD_BYTES, load(&SPREAD), load(chunk));
    lanes16(table, w, out)
}

/// The sixteen three-byte characters at the start of `chunk` (the 16
/// bytes after them are not read): [`ideographs16`] without VBMI.
#[target_feature(enable = "avx512f,avx512bw,popcnt,lzcnt,bmi1,bmi2")]
#[inline]
pub(super) fn ideographs16bw(
    table: &[u16; RUN_TABLE],
    chunk: &[u8; 64],
    out: &mut [u32; 16],
) -> Block {
    // Characters 4k to 4k + 3 are bytes 12k to 12k + 11, words 3k to
    // 3k + 2: into quarter k.
    let quarters = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0),
        load(chunk),
    );
    let w = _mm512_shuffle_epi8(quarters, load(&SPREAD_QUARTERS));
    lanes16(table, w, out)
}

/// For `vpshufb` over 64 bytes: in each 128-bit quarter, the bytes of
/// character `l` into the low three bytes of lane `l` (of four), the
/// fourth byte zeroed ([`SPREAD8`]'s quarters, four times).
const SPREAD_QUARTERS: [u8; 64] = {
    let mut index = [0u8; 64];
    let mut p = 0;
    while p < 64 {
        index[p] = SPREAD8[p % 16];
        p += 1;
    }
    index
};

/// [`ideographs16`] and [`ideographs16bw`] from the bytes of each
/// character in the low three bytes of its lane of `w`.
#[target_feature(enable = "avx512f,popcnt,lzcnt,bmi1,bmi2")]
#[inline]
fn lanes16(table: &[u16; RUN_TABLE], w: __m512i, out: &mut [u32; 16]) -> Block {
    let one = _mm512_set1_epi32;
    // A lead byte 1110xxxx and two continuation bytes 10xxxxxx.
    let well_formed =
        _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, one(0x00C0_C0F0)), one(0x0080_80E0));
    let u = _mm512_or_si512(
        _mm512_or_si512(
            _mm512_slli_epi32::<12>(_mm512_and_si512(w, one(0x0F))),
            _mm512_srli_epi32::<2>(_mm512_and_si512(w, one(0x3F00))),
        ),
        _mm512_and_si512(_mm512_srli_epi32::<16>(w), one(0x3F)),
    );
    let codes = _mm512_and_si512(gather(table, well_formed, u), one(0xFFFF));
    let leaves = !well_formed | _mm512_cmpeq_epi32_mask(codes, one(i32::from(GENERAL)));
    let taken = (u32::from(leaves) | 0x1_0000).trailing_zeros() as usize;
    let in_run = ((1u32 << taken) - 1) as u16;
    let marks = _mm512_mask_cmpeq_epi32_mask(in_run, codes, one(i32::from(RUN_MARK)));
    let features = in_run & !marks;
    store(out, _mm512_maskz_compress_epi32(features, codes));
    Block {
        taken,
        kept: features.count_ones() as usize,
        through_mark: 16 - marks.leading_zeros() as usize,
    }
}

/// The eight three-byte characters at the start of `chunk` (the 8 bytes
/// after them are not read), as a run of ideographs takes them: each
/// feature's table code into `out`, in order, and how far the run goes
/// ([`Block`]). [`ideographs16`]'s steps with AVX2.
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1,bmi2")]
#[inline]
pub(super) fn ideographs8(table: &[u16; RUN_TABLE], chunk: &[u8; 32], out: &mut [u32; 8]) -> Block {
    let one = _mm256_set1_epi32;
    // Characters 0 to 3 are bytes 0 to 11, in words 0 to 2; characters 4
    // to 7 bytes 12 to 23, words 3 to 5: into the upper half.
    let halves =
        _mm256_permutevar8x32_epi32(load32(chunk), _mm256_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0));
    let w = _mm256_shuffle_epi8(halves, load32(&SPREAD8));
    // A lead byte 1110xxxx and two continuation bytes 10xxxxxx.
    let well_formed = mask8(_mm256_cmpeq_epi32(
        _mm256_and_si256(w, one(0x00C0_C0F0)),
        one(0x0080_80E0),
    ));
    let u = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_slli_epi32::<12>(_mm256_and_si256(w, one(0x0F))),
            _mm256_srli_epi32::<2>(_mm256_and_si256(w, one(0x3F00))),
        ),
        _mm256_and_si256(_mm256_srli_epi32::<16>(w), one(0x3F)),
    );
    let codes = _mm256_and_si256(gather8(table, u), one(0xFFFF));
    let general = mask8(_mm256_cmpeq_epi32(codes, one(i32::from(GENERAL))));
    let leaves = !well_formed | general;
    let taken = ((leaves & 0xFF) | 0x100).trailing_zeros() as usize;
    let in_run = (1u32 << taken) - 1;
    let marks = mask8(_mm256_cmpeq_epi32(codes, one(i32::from(RUN_MARK)))) & in_run;
    let features = in_run & !marks;
    let lanes = _mm256_srlv_epi32(
        _mm256_set1_epi32(PACK8[features as usize] as i32),
        _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21),
    );
    let packed = _mm256_permutevar8x32_epi32(codes, _mm256_and_si256(lanes, one(7)));
    store8(out, packed);
    Block {
        taken,
        kept: features.count_ones() as usize,
        through_mark: 32 - marks.leading_zeros() as usize,
    }
}

/// The lanes of `v` that are all ones, as bits (lane `l` at bit `l`).
#[target_feature(enable = "avx2")]
#[inline]
fn mask8(v: __m256i) -> u32 {
    _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u32
}

/// The 32 bytes of `bytes` in a vector.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn load32(bytes: &[u8; 32]) -> __m256i {
    // SAFETY: `bytes` is 32 bytes to read, and the load takes any alignment.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// The vector `v` into `out`.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn store8(out: &mut [u32; 8], v: __m256i) {
    // SAFETY: `out` is 32 bytes to write, and the store takes any alignment.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// Entry `u` of `table` in the low half of each lane (the high half is
/// entry `u + 1`'s), for every lane: an index of 16 bits reads within
/// the table, so no lane needs leaving out.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn gather8(table: &[u16; RUN_TABLE], u: __m256i) -> __m256i {
    let u = _mm256_and_si256(u, _mm256_set1_epi32(0xFFFF));
    // SAFETY: each lane reads the four bytes at `table + 2u` for a `u` of
    // at most 0xFFFF: entries `u` and `u + 1`, both within the table's
    // 0x10001.
    unsafe { _mm256_i32gather_epi32::<2>(table.as_ptr().cast(), u) }
}

/// The 64 bytes of `bytes` in a vector.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn load(bytes: &[u8; 64]) -> __m512i {
    // SAFETY: `bytes` is 64 bytes to read, and the load takes any alignment.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// The vector `v` into `out`.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn store(out: &mut [u32; 16], v: __m512i) {
    // SAFETY: `out` is 64 bytes to write, and the store takes any alignment.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
}

/// Entry `u` of `table` in the low half of each lane of `k` (the high
/// half is entry `u + 1`'s), 0 in the others.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn gather(table: &[u16; RUN_TABLE], k: __mmask16, u: __m512i) -> __m512i {
    let u = _mm512_and_si512(u, _mm512_set1_epi32(0xFFFF));
    // SAFETY: each lane reads the four bytes at `table + 2u` for a `u` of
    // at most 0xFFFF: entries `u` and `u + 1`, both within the table's
    // 0x10001.
    unsafe { _mm512_mask_i32gather_epi32::<2>(_mm512_setzero_si512(), k, u, table.as_ptr().cast()) }
}

#[cfg(test)]
mod tests {
    use super::super::scan_tables::ScanTables;
    use super::*;
    use crate::fingerprint::tests::shared;
    use crate::testutil::splitmix;

    /// What one character at a time makes of the first `n` three-byte
    /// characters of `chunk`: [`ScanTables::run_at`] of each, in order.
    fn one_at_a_time(tables: &ScanTables, chunk: &[u8], n: usize) -> (Block, Vec<u32>) {
        let (mut taken, mut through_mark, mut codes) = (0, 0, Vec::new());
        while taken < n {
            let Some(code) = tables.run_at(&chunk[..3 * n], 3 * taken) else {
                break;
            };
            taken += 1;
            if code == RUN_MARK {
                through_mark = taken;
            } else {
                codes.push(u32::from(code));
            }
        }
        let kept = codes.len();
        let block = Block {
            taken,
            kept,
            through_mark,
        };
        (block, codes)
    }

    /// Chunks of ideographs, marks, characters that leave the run and
    /// bytes that are not UTF-8, at every place, and at every shift of
    /// three-byte characters against the chunk: each kernel the processor
    /// has says what one at a time does.
    #[test]
    fn blocks_say_what_one_at_a_time_says() {
        let tables = &shared().fast;
        let (has16, has8) = (available(Simd::Avx512), available8(Simd::Avx2));
        let has16bw = available16bw(Simd::Avx512NoVbmi);
        if !has16 && !has8 && !has16bw {
            return;
        }
        let pieces: Vec<&[u8]> = vec![
            "字".as_bytes(),
            "國".as_bytes(),
            "㐀".as_bytes(),
            "鿿".as_bytes(),
            "\u{F900}".as_bytes(),
            "，".as_bytes(),
            "。".as_bytes(),
            "“".as_bytes(),
            "１".as_bytes(),
            "Ａ".as_bytes(),
            "！".as_bytes(),
            "é".as_bytes(),
            "😀".as_bytes(),
            b"a",
            b" ",
            b"\xE4\xB8",
            b"\xE0\xA0\x80",
            b"\xE0\x80\xAF",
            b"\xED\xA0\x80",
            b"\xE4\xB8\xC0",
            b"\xE4A\xAD",
            b"\x80",
            b"\xFF",
        ];
        let mut state = 0x000B_10C8_u64;
        for round in 0..200_000 {
            // Mostly ideographs, with a few other pieces: long runs and
            // every way out of them.
            let others = [0, 1, 4, 16, 64][(splitmix(&mut state) % 5) as usize];
            let mut bytes = Vec::new();
            while bytes.len() < 66 {
                let r = splitmix(&mut state);
                let piece = if r % 100 < others {
                    pieces[((r >> 8) % pieces.len() as u64) as usize]
                } else {
                    pieces[((r >> 8) % 5) as usize]
                };
                bytes.extend_from_slice(piece);
            }
            let shift = (splitmix(&mut state) % 3) as usize;
            let chunk: [u8; 64] = bytes[shift..shift + 64].try_into().unwrap();
            if has16 {
                let mut out = [0u32; 16];
                // SAFETY: the processor has the instructions (`available`).
                #[allow(unsafe_code)]
                let block = unsafe { ideographs16(&tables.run, &chunk, &mut out) };
                let (expected, codes) = one_at_a_time(tables, &chunk, 16);
                assert_eq!(block, expected, "16, round {round}: {chunk:x?}");
                assert_eq!(
                    out[..block.kept],
                    codes[..],
                    "16, round {round}: {chunk:x?}"
                );
            }
            if has16bw {
                let mut out = [0u32; 16];
                // SAFETY: the processor has the instructions (`available16bw`).
                #[allow(unsafe_code)]
                let block = unsafe { ideographs16bw(&tables.run, &chunk, &mut out) };
                let (expected, codes) = one_at_a_time(tables, &chunk, 16);
                assert_eq!(block, expected, "16bw, round {round}: {chunk:x?}");
                assert_eq!(
                    out[..block.kept],
                    codes[..],
                    "16bw, round {round}: {chunk:x?}"
                );
            }
            if has8 {
                let mut out = [0u32; 8];
                let chunk: &[u8; 32] = chunk[..32].try_into().unwrap();
                // SAFETY: the processor has the instructions (`available8`).
                #[allow(unsafe_code)]
                let block = unsafe { ideographs8(&tables.run, chunk, &mut out) };
                let (expected, codes) = one_at_a_time(tables, chunk, 8);
                assert_eq!(block, expected, "8, round {round}: {chunk:x?}");
                assert_eq!(out[..block.kept], codes[..], "8, round {round}: {chunk:x?}");
            }
        }
    }
}
