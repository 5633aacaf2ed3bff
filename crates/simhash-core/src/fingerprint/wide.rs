//! Sixteen characters of a run of ideographs at a time, with AVX-512.
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
//! It says what [`super::scan_tables::ScanTables::run_at`] says of each of the
//! sixteen characters, taken in order up to the first that leaves the
//! run: the tests run whole scans with it and without it, and compare.
//!
//! The only unsafe code: a vector load, a vector store and a gather, each
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

/// What [`ideographs16`] made of its sixteen characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    /// The characters taken, in order, before the first that leaves the
    /// run (16 when none does).
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
    let one = _mm512_set1_epi32;
    let bytes = load(chunk);
    let w = _mm512_maskz_permutexvar_epi8(SPREAD_BYTES, load(&SPREAD), bytes);
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
