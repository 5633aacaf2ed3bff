//! The weights of a batch of the table's features, eight at a time with
//! AVX-512 (four with AVX2), straight from the prepared weighing of each
//! entry.
//!
//! The lane-by-lane kernel of [`crate::weights`] is plain Rust that the
//! compiler vectorizes: each feature's inputs are gathered one at a time
//! into lane arrays (about thirty instructions a feature, with a bounds
//! check for each table), the table of e^-j/64 is looked up lane by lane,
//! and the weights are written back lane by lane. Here the chance term
//! is computed by the same IEEE operations, in the same order, on vectors
//! of eight features from the start: each prepared entry is one 32-byte
//! load, eight of them turned from rows into columns by unpacks and
//! permutes (gathering the entries' fields instead, one `vgatherdpd` a
//! field, was slower on the processor it was measured on, an AMD EPYC
//! with AVX-512). The weight is computed once and certified by its
//! distance from the nearest half ([`NEAR`]) rather than at both ends of
//! the chance term's interval; only a lane it does not certify leaves the
//! vectors, for the 24-term series as everywhere else, so the weights
//! have the bits of the other kernels. The tests compare it with the
//! baseline's kernel, lane by lane (with weights made to fall near a
//! half among them), and whole fingerprints at every level.
//!
//! [`weigh_prepared_avx2`] is the same kernel with AVX2, four features a
//! vector: the same operations, with what AVX2 lacks done another way
//! (floor and the nearest whole number by `vroundpd`, the conversion of a
//! whole double to an integer by adding 1.5 * 2^52, the lookups of the
//! table of e^-j/64 lane by lane). `wide`'s `f64x4` cannot stand in for
//! the intrinsics: it picks its instructions by the features the crate is
//! compiled with, so in a build for the x86-64 baseline it is two SSE2
//! halves even inside an AVX2 function, with no `vroundpd`.
//!
//! The only unsafe code: vector loads and stores of arrays of eight, and
//! the load of an entry by reference.

use std::arch::x86_64::*;

use super::table::Prepared;
use crate::weights::{
    expected_capped, ToWeigh, EXP_SERIES, EXP_STEPS, FAST_CAP, FAST_MEAN_LIMIT, FAST_STEPS,
    FIXED_ONE, WEIGH_BATCH,
};

/// Features a vector holds.
const LANES: usize = 8;

/// Features a vector holds with AVX2.
const LANES4: usize = 4;

/// How far the weight of a bounded entry (`table::bounded`: scale `s`
/// and factor `f` not negative, `f s <= 64`) against the fast chance term
/// `c` may be from its weight against the exact term `E`, `|c - E| <=
/// CHANCE_ERROR` (`crate::weights`): 2^-16.
///
/// The weight is `fl(fl(f * fl(s * fl(C - x))) * 2^16)` for the chance
/// term `x`, with `C` the capped count (0 to 6) and `x` in [-1e-12, 6]
/// (E in [0, 6]; `c` is 6, or 6 less the rounded product of e^-m and the
/// polynomial, which comes to E[(6 - X)+] <= 6), so `|C - x| <= 6.01`. With u = 2^-53: `fl(C - x)` is within
/// 2^-51 of `C - x` (an ulp below 8 is at most 2^-50), so the two
/// differences are within `CHANCE_ERROR + 2^-50` of each other; each
/// product by `s`, then `f`, adds at most u times the sum of the two
/// products' magnitudes, at most `2 * 6.02 u s` and `2 * 6.03 u f s`; the
/// product by 2^16 is exact. In all, at most `2^16 f s (CHANCE_ERROR +
/// 2^-50 + 24.1 u) <= 2^16 * 64 * 2.004e-12 = 8.5e-6`, below 2^-16 =
/// 1.5e-5 by almost a factor of two.
const NEAR: f64 = 1.0 / 65536.0;

/// The weights of the features at the indexes `batch` (at most
/// [`WEIGH_BATCH`], each below `prepared.len()`) into `out`, and their
/// hashes into `hashes`: for entry `i`, what the kernels of
/// [`crate::weights`] make of `ToWeigh { scale, capped: min(tf[i], 6),
/// factor, mean: counted[kind] * p }`, the kind being 1 for an index from
/// `first_gram` on. `tf` holds a count for each entry: each count read is
/// moved into `kept` (by the feature's place in `batch`), and its entry in
/// `tf` set to 0, while the line is at hand, so that the counts need no
/// pass of their own to clear them for the next text (the entries of a
/// text are distinct).
///
/// Every entry must be bounded as `table::bounded` says (scale and factor
/// not negative, their product at most 64), or the weights may differ
/// from the other kernels'.
///
/// # Panics
/// If an index is not below `prepared.len()` and `tf.len()`.
#[target_feature(enable = "avx2,avx512f,avx512dq")]
pub(super) fn weigh_prepared(
    prepared: &[Prepared],
    (tf, kept): (&mut [u8], &mut [u8]),
    batch: &[u32],
    counted: [f64; 2],
    first_gram: u32,
    hashes: &mut [u64; WEIGH_BATCH],
    out: &mut [i64; WEIGH_BATCH],
) {
    let n = batch.len();
    assert!(n <= WEIGH_BATCH && kept.len() == n);
    // The batch padded with entry 0 (weighed, never written out) to whole
    // vectors.
    let mut indexes = [0u32; WEIGH_BATCH];
    indexes[..n].copy_from_slice(batch);
    let steps: &[f64] = &EXP_STEPS;
    let splat = _mm512_set1_pd;
    let gram_from = _mm512_set1_epi64(i64::from(first_gram));
    let last_step = _mm512_set1_epi64(steps.len() as i64 - 1);
    for start in (0..n).step_by(LANES) {
        let idx = load_u32(indexes[start..start + LANES].try_into().expect("eight"));
        let ix: &[u32; LANES] = indexes[start..start + LANES].try_into().expect("eight");
        let [hash, scale, factor, p] = entries(prepared, ix);
        let hash = _mm512_castpd_si512(hash);
        let live = (n - start).min(LANES);
        let mut counts = [0u8; LANES];
        for (l, count) in counts.iter_mut().enumerate() {
            *count = tf[ix[l] as usize];
        }
        for (l, &count) in counts.iter().enumerate().take(live) {
            kept[start + l] = count;
            tf[ix[l] as usize] = 0;
        }
        let count = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(i64::from_le_bytes(counts)));
        let capped = _mm512_min_pd(_mm512_cvtepi32_pd(count), splat(f64::from(FAST_CAP)));
        let is_gram = _mm512_cmpge_epu64_mask(_mm512_cvtepu32_epi64(idx), gram_from);
        let per_kind = _mm512_mask_blend_pd(is_gram, splat(counted[0]), splat(counted[1]));
        let mean = _mm512_mul_pd(per_kind, p);

        // The chance term: what `weigh_lanes` computes, lane for lane.
        // `0 <= mean < 50` or `50 <= mean < inf`, as the lanes say it.
        let fast = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(mean, splat(0.0))
            & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(mean, splat(f64::INFINITY));
        let served = fast & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(mean, splat(FAST_MEAN_LIMIT));
        let m = _mm512_maskz_mov_pd(served, mean);
        let v = _mm512_mul_pd(m, splat(FAST_STEPS));
        // floor(v), in one instruction: what the lanes get from v rounded
        // to the nearest whole number (2^52 added and taken away) less one
        // where that is above v. A whole number below 3,200, converted
        // exactly.
        let j = _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(v);
        let step = _mm512_cvtpd_epi64(j);
        let step = _mm512_min_epu64(step, last_step);
        let mut at = [0u64; LANES];
        store_i64(&mut at, step);
        let t = _mm512_maskz_mov_pd(served, from_array(at.map(|s| steps[s as usize])));
        // j / 64, exact either way: j is a whole number below 3,200.
        let x = _mm512_sub_pd(_mm512_mul_pd(j, splat(1.0 / FAST_STEPS)), m);
        let mut series = splat(EXP_SERIES[6]);
        for c in EXP_SERIES[..6].iter().rev() {
            series = _mm512_add_pd(_mm512_mul_pd(series, x), splat(*c));
        }
        let mut poly = splat(1.0 / 120.0);
        for c in [1.0 / 12.0, 0.5, 2.0, 5.0, 6.0] {
            poly = _mm512_add_pd(splat(c), _mm512_mul_pd(m, poly));
        }
        let chance = _mm512_sub_pd(splat(6.0), _mm512_mul_pd(_mm512_mul_pd(t, series), poly));

        // The weight against this chance term, rounded to the nearest
        // whole number. The exact term E (the 24-term series whose weight
        // the definition rounds) is within CHANCE_ERROR of `chance`, so
        // its weight is within NEAR of this one (`NEAR` says why); a
        // weight further than NEAR from the nearest half (`w - r` is
        // exact: r is a whole number within a factor of two of w, or 0)
        // rounds as E's does, halves away from zero or to even alike.
        // The others take the series: a fraction of about 2 * NEAR of the
        // lanes where the weights' fractions are spread evenly.
        let above_chance = _mm512_sub_pd(capped, chance);
        let scaled = _mm512_mul_pd(factor, _mm512_mul_pd(scale, above_chance));
        let w = _mm512_mul_pd(scaled, splat(FIXED_ONE));
        let r = _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(w);
        let off_half =
            _mm512_cmp_pd_mask::<_CMP_LT_OQ>(abs(_mm512_sub_pd(w, r)), splat(0.5 - NEAR));
        let certified = fast & off_half;
        // A whole number below 2^51 in magnitude where certified:
        // converted exactly.
        let fixed = _mm512_cvtpd_epi64(r);
        let lanes: &mut [i64; LANES] = (&mut out[start..start + LANES]).try_into().expect("eight");
        store_i64(lanes, fixed);
        store_i64(
            (&mut hashes[start..start + LANES])
                .try_into()
                .expect("eight"),
            hash,
        );
        let live_mask = ((1u16 << live) - 1) as u8;
        let slow = !certified & live_mask;
        if slow != 0 {
            // A weight within NEAR of a half, or a mean the shortcut does
            // not serve: the 24-term series, as every kernel does.
            let [mean, scale, capped, factor] = [mean, scale, capped, factor].map(|v| to_array(v));
            for l in (0..LANES).filter(|l| slow >> l & 1 == 1) {
                let f = ToWeigh {
                    mean: mean[l],
                    scale: scale[l],
                    capped: capped[l],
                    factor: factor[l],
                };
                lanes[l] = f.fixed(expected_capped(f.mean, FAST_CAP));
            }
        }
    }
}

/// [`weigh_prepared`] with AVX2, four features a vector: the same
/// weights, hashes and moved counts, under the same conditions (every
/// entry bounded as `table::bounded` says).
///
/// # Panics
/// If an index is not below `prepared.len()` and `tf.len()`.
#[target_feature(enable = "avx2")]
pub(super) fn weigh_prepared_avx2(
    prepared: &[Prepared],
    (tf, kept): (&mut [u8], &mut [u8]),
    batch: &[u32],
    counted: [f64; 2],
    first_gram: u32,
    hashes: &mut [u64; WEIGH_BATCH],
    out: &mut [i64; WEIGH_BATCH],
) {
    let n = batch.len();
    assert!(n <= WEIGH_BATCH && kept.len() == n);
    // The batch padded with entry 0 (weighed, never written out) to whole
    // vectors.
    let mut indexes = [0u32; WEIGH_BATCH];
    indexes[..n].copy_from_slice(batch);
    let steps: &[f64] = &EXP_STEPS;
    let splat = _mm256_set1_pd;
    // 1.5 * 2^52: a whole number below 2^51 in magnitude added to it is
    // exact, and its bits less this one's are that number.
    let magic = splat(6_755_399_441_055_744.0);
    for start in (0..n).step_by(LANES4) {
        let ix: &[u32; LANES4] = indexes[start..start + LANES4].try_into().expect("four");
        let [hash, scale, factor, p] = entries4(prepared, ix);
        let live = (n - start).min(LANES4);
        let mut counts = [0i32; LANES4];
        let mut per_kind = [0.0f64; LANES4];
        for l in 0..LANES4 {
            counts[l] = i32::from(tf[ix[l] as usize]);
            per_kind[l] = counted[usize::from(ix[l] >= first_gram)];
        }
        for (l, &count) in counts.iter().enumerate().take(live) {
            kept[start + l] = count as u8;
            tf[ix[l] as usize] = 0;
        }
        let count = _mm256_cvtepi32_pd(load_i32x4(&counts));
        let capped = _mm256_min_pd(count, splat(f64::from(FAST_CAP)));
        let mean = _mm256_mul_pd(from_array4(per_kind), p);

        // The chance term, as in `weigh_prepared`.
        let fast = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(mean, splat(0.0)),
            _mm256_cmp_pd::<_CMP_LT_OQ>(mean, splat(f64::INFINITY)),
        );
        let served = _mm256_and_pd(
            fast,
            _mm256_cmp_pd::<_CMP_LT_OQ>(mean, splat(FAST_MEAN_LIMIT)),
        );
        let m = _mm256_and_pd(served, mean);
        let v = _mm256_mul_pd(m, splat(FAST_STEPS));
        let j = _mm256_round_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(v);
        // A whole number below 3,200: converted exactly.
        let mut at = [0i32; LANES4];
        store_i32x4(&mut at, _mm256_cvtpd_epi32(j));
        let t = _mm256_and_pd(
            served,
            from_array4(at.map(|s| steps[(s as usize).min(steps.len() - 1)])),
        );
        let x = _mm256_sub_pd(_mm256_mul_pd(j, splat(1.0 / FAST_STEPS)), m);
        let mut series = splat(EXP_SERIES[6]);
        for c in EXP_SERIES[..6].iter().rev() {
            series = _mm256_add_pd(_mm256_mul_pd(series, x), splat(*c));
        }
        let mut poly = splat(1.0 / 120.0);
        for c in [1.0 / 12.0, 0.5, 2.0, 5.0, 6.0] {
            poly = _mm256_add_pd(splat(c), _mm256_mul_pd(m, poly));
        }
        let chance = _mm256_sub_pd(splat(6.0), _mm256_mul_pd(_mm256_mul_pd(t, series), poly));

        // The weight, certified as in `weigh_prepared`.
        let above_chance = _mm256_sub_pd(capped, chance);
        let scaled = _mm256_mul_pd(factor, _mm256_mul_pd(scale, above_chance));
        let w = _mm256_mul_pd(scaled, splat(FIXED_ONE));
        let r = _mm256_round_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(w);
        let off = _mm256_andnot_pd(splat(-0.0), _mm256_sub_pd(w, r));
        let off_half = _mm256_cmp_pd::<_CMP_LT_OQ>(off, splat(0.5 - NEAR));
        let certified = _mm256_movemask_pd(_mm256_and_pd(fast, off_half)) as u8;
        // A whole number below 2^51 in magnitude where certified.
        let fixed = _mm256_sub_epi64(
            _mm256_castpd_si256(_mm256_add_pd(r, magic)),
            _mm256_castpd_si256(magic),
        );
        let lanes: &mut [i64; LANES4] = (&mut out[start..start + LANES4]).try_into().expect("four");
        store_i64x4(lanes, fixed);
        store_i64x4(
            (&mut hashes[start..start + LANES4])
                .try_into()
                .expect("four"),
            _mm256_castpd_si256(hash),
        );
        let live_mask = ((1u16 << live) - 1) as u8;
        let slow = !certified & live_mask;
        if slow != 0 {
            // The 24-term series, as every kernel does.
            let [mean, scale, capped, factor] = [mean, scale, capped, factor].map(|v| to_array4(v));
            for l in (0..LANES4).filter(|l| slow >> l & 1 == 1) {
                let f = ToWeigh {
                    mean: mean[l],
                    scale: scale[l],
                    capped: capped[l],
                    factor: factor[l],
                };
                lanes[l] = f.fixed(expected_capped(f.mean, FAST_CAP));
            }
        }
    }
}

/// Four counts.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn load_i32x4(lanes: &[i32; LANES4]) -> __m128i {
    // SAFETY: `lanes` is 16 bytes to read, and the load takes any alignment.
    unsafe { _mm_loadu_si128(lanes.as_ptr().cast()) }
}

/// The vector `v` into `out`.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn store_i32x4(out: &mut [i32; LANES4], v: __m128i) {
    // SAFETY: `out` is 16 bytes to write, and the store takes any alignment.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
}

/// The vector `v` into `out`.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn store_i64x4<T>(out: &mut [T; LANES4], v: __m256i) {
    const { assert!(std::mem::size_of::<T>() == 8) };
    // SAFETY: `out` is 32 bytes to write, and the store takes any alignment.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) }
}

/// A vector of the lanes `lanes`.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn from_array4(lanes: [f64; LANES4]) -> __m256d {
    // SAFETY: `lanes` is 32 bytes to read, and the load takes any alignment.
    unsafe { _mm256_loadu_pd(lanes.as_ptr()) }
}

/// The lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn to_array4(v: __m256d) -> [f64; LANES4] {
    let mut out = [0.0; LANES4];
    // SAFETY: `out` is 32 bytes to write, and the store takes any alignment.
    unsafe { _mm256_storeu_pd(out.as_mut_ptr(), v) };
    out
}

/// The entries at the four indexes `ix` of `prepared` (each checked
/// against its length), field by field, as [`entries`] gives them: one
/// 32-byte load an entry, then two unpacks and two permutes of halves
/// turn the rows into columns.
#[target_feature(enable = "avx2")]
#[inline]
#[allow(unsafe_code)]
fn entries4(prepared: &[Prepared], ix: &[u32; LANES4]) -> [__m256d; 4] {
    let row = |k: usize| {
        let e: *const Prepared = &prepared[ix[k] as usize];
        // SAFETY: an entry is four doubles' worth of bytes (`Prepared`,
        // `repr(C)`, 32 bytes) and the load takes any alignment.
        unsafe { _mm256_loadu_pd(e.cast()) }
    };
    let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
    // [h0 h1 f0 f1], [s0 s1 p0 p1], and the same of entries 2 and 3.
    let (hf01, sp01) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
    let (hf23, sp23) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
    [
        _mm256_permute2f128_pd::<0x20>(hf01, hf23),
        _mm256_permute2f128_pd::<0x20>(sp01, sp23),
        _mm256_permute2f128_pd::<0x31>(hf01, hf23),
        _mm256_permute2f128_pd::<0x31>(sp01, sp23),
    ]
}

/// `|y|`, lane by lane.
#[target_feature(enable = "avx512f")]
#[inline]
fn abs(y: __m512d) -> __m512d {
    _mm512_castsi512_pd(_mm512_and_si512(
        _mm512_castpd_si512(y),
        _mm512_set1_epi64(i64::MAX),
    ))
}

/// Eight indexes.
#[target_feature(enable = "avx")]
#[inline]
#[allow(unsafe_code)]
fn load_u32(lanes: &[u32; LANES]) -> __m256i {
    // SAFETY: `lanes` is 32 bytes to read, and the load takes any alignment.
    unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
}

/// The vector `v` into `out`.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn store_i64<T>(out: &mut [T; LANES], v: __m512i) {
    const { assert!(std::mem::size_of::<T>() == 8) };
    // SAFETY: `out` is 64 bytes to write, and the store takes any alignment.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) }
}

/// The lanes of `v`.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn to_array(v: __m512d) -> [f64; LANES] {
    let mut out = [0.0; LANES];
    // SAFETY: `out` is 64 bytes to write, and the store takes any alignment.
    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), v) };
    out
}

/// The entries at the eight indexes `ix` of `prepared` (each checked
/// against its length), field by field: their hashes (as bits), scales,
/// factors and probabilities. Each entry is one 32-byte load; two of them
/// make a vector, and four unpacks and four permutes turn rows into
/// columns (gathers, one per field, measured slower).
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn entries(prepared: &[Prepared], ix: &[u32; LANES]) -> [__m512d; 4] {
    let row = |k: usize| {
        let e: *const Prepared = &prepared[ix[k] as usize];
        // SAFETY: an entry is four doubles' worth of bytes (`Prepared`,
        // `repr(C)`, 32 bytes) and the load takes any alignment.
        unsafe { _mm256_loadu_pd(e.cast()) }
    };
    let pair = |a: usize, b: usize| _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(row(a)), row(b));
    let (r01, r23, r45, r67) = (pair(0, 1), pair(2, 3), pair(4, 5), pair(6, 7));
    // [h0 h2 f0 f2 h1 h3 f1 f3] and [s0 s2 p0 p2 s1 s3 p1 p3], and the
    // same of entries 4 to 7.
    let (hf_lo, sp_lo) = (_mm512_unpacklo_pd(r01, r23), _mm512_unpackhi_pd(r01, r23));
    let (hf_hi, sp_hi) = (_mm512_unpacklo_pd(r45, r67), _mm512_unpackhi_pd(r45, r67));
    let first = _mm512_setr_epi64(0, 4, 1, 5, 8, 12, 9, 13);
    let second = _mm512_setr_epi64(2, 6, 3, 7, 10, 14, 11, 15);
    [
        _mm512_permutex2var_pd(hf_lo, first, hf_hi),
        _mm512_permutex2var_pd(sp_lo, first, sp_hi),
        _mm512_permutex2var_pd(hf_lo, second, hf_hi),
        _mm512_permutex2var_pd(sp_lo, second, sp_hi),
    ]
}

/// A vector of the lanes `lanes`.
#[target_feature(enable = "avx512f")]
#[inline]
#[allow(unsafe_code)]
fn from_array(lanes: [f64; LANES]) -> __m512d {
    // SAFETY: `lanes` is 64 bytes to read, and the load takes any alignment.
    unsafe { _mm512_loadu_pd(lanes.as_ptr()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Simd;
    use crate::testutil::splitmix;
    use crate::weights::fixed_weights6_by;

    /// The kernels this processor has: AVX-512's, AVX2's.
    fn levels() -> Vec<Simd> {
        [Simd::Avx2, Simd::Avx512NoVbmi, Simd::Avx512]
            .into_iter()
            .filter(|s| s.available())
            .collect()
    }

    /// One batch through each kernel this processor has and through the
    /// baseline's, from the same entries and counts: each weight and hash
    /// the same, each count read kept and cleared where it was, no other
    /// count moved. The counts are as they were before the kernels ran,
    /// in `tf`.
    fn check(
        prepared: &[Prepared],
        tf: &mut [u8],
        batch: &[u32],
        counted: [f64; 2],
        first_gram: u32,
        what: &str,
    ) {
        let before = tf.to_vec();
        for simd in levels() {
            tf.copy_from_slice(&before);
            check_at(simd, prepared, tf, batch, counted, first_gram, what);
        }
    }

    /// [`check`] of the kernel of `simd`.
    fn check_at(
        simd: Simd,
        prepared: &[Prepared],
        tf: &mut [u8],
        batch: &[u32],
        counted: [f64; 2],
        first_gram: u32,
        what: &str,
    ) {
        let what = &format!("{simd:?}, {what}");
        let n = batch.len();
        let before = tf.to_vec();
        let mut hashes = [0u64; WEIGH_BATCH];
        let mut out = [0i64; WEIGH_BATCH];
        let mut kept = vec![0u8; n];
        let kernel = match simd {
            _ if simd.is_avx512() => weigh_prepared,
            _ => weigh_prepared_avx2,
        };
        // SAFETY: `levels` gives only the levels the processor has.
        #[allow(unsafe_code)]
        unsafe {
            kernel(
                prepared,
                (tf, &mut kept),
                batch,
                counted,
                first_gram,
                &mut hashes,
                &mut out,
            )
        };
        let mut expected = [0i64; WEIGH_BATCH];
        let feature = |k: usize| {
            let i = batch[k] as usize;
            let e = &prepared[i];
            ToWeigh {
                scale: e.scale,
                capped: f64::from(before[i].min(6)),
                factor: e.factor,
                mean: counted[usize::from(batch[k] >= first_gram)] * e.p,
            }
        };
        fixed_weights6_by(Simd::Baseline, n, feature, &mut expected);
        assert_eq!(out[..n], expected[..n], "{what}");
        for (k, &i) in batch.iter().enumerate() {
            assert_eq!(hashes[k], prepared[i as usize].hash, "{what}");
            assert_eq!(kept[k], before[i as usize], "{what}");
            assert_eq!(tf[i as usize], 0, "{what}");
        }
        for (i, (&now, &was)) in tf.iter().zip(&before).enumerate() {
            if !batch.contains(&(i as u32)) {
                assert_eq!(now, was, "{what}: entry {i}");
            }
        }
    }

    /// Entries made so that their weights fall near a half, on either
    /// side, from a hair to well past `NEAR`: the weights the kernel
    /// certifies and those it leaves to the series are the baseline's.
    #[test]
    fn weights_near_a_half_give_the_bits_of_the_baseline() {
        if levels().is_empty() {
            return;
        }
        let mut state = 17u64;
        let mut next = || splitmix(&mut state);
        let counted = [700.0, 4000.0];
        let size = 4096u32;
        let first_gram = size / 2;
        let nudges = [
            0.0, 1e-12, -1e-12, 1e-9, -1e-9, 4e-6, -4e-6, 1e-5, -1e-5, 2e-5, -2e-5, 1e-3,
        ];
        let mut tf = vec![0u8; size as usize];
        let mut prepared = Vec::new();
        for i in 0..size {
            let r = next();
            let p = (r >> 11) as f64 / (1u64 << 53) as f64 * 0.004;
            let count = 1 + (next() % 8) as u8;
            let factor = [1.0, 0.3][(r & 1) as usize];
            let mean = counted[usize::from(i >= first_gram)] * p;
            let above = f64::from(count.min(6)) - expected_capped(mean, FAST_CAP);
            // The scale that puts the weight at a half plus a nudge.
            let rough = 0.5 + (next() % 16_000) as f64 / 1000.0;
            let half = (rough * factor * above * 65536.0).floor() + 0.5;
            let nudge = nudges[(next() % nudges.len() as u64) as usize];
            let scale = (half + nudge) / (factor * above * 65536.0);
            let entry = Prepared {
                hash: next(),
                scale,
                factor,
                p,
            };
            let near = above > 1e-3 && super::super::table::bounded(&entry);
            tf[i as usize] = if near { count } else { 0 };
            prepared.push(if near {
                entry
            } else {
                Prepared {
                    hash: 0,
                    scale: 1.0,
                    factor: 1.0,
                    p: 0.0,
                }
            });
        }
        assert!(tf.iter().filter(|&&c| c > 0).count() > 2000);
        for start in (0..size).step_by(WEIGH_BATCH) {
            let batch: Vec<u32> = (start..start + WEIGH_BATCH as u32).collect();
            check(
                &prepared,
                &mut tf,
                &batch,
                counted,
                first_gram,
                &format!("batch at {start}"),
            );
        }
    }

    /// Random entries, counts and batches, the edges among them: each
    /// weight and hash as the baseline's kernel gives it.
    #[test]
    fn eight_at_a_time_gives_the_bits_of_the_baseline() {
        if levels().is_empty() {
            return;
        }
        let mut state = 18u64;
        let mut next = || splitmix(&mut state);
        let size = 4096;
        let prepared: Vec<Prepared> = (0..size)
            .map(|i| {
                let r = next();
                // Past the shortcut (a mean of 50 or more, infinite, not
                // a number) and below it: the lanes it does not serve take
                // the series.
                let p = match r % 9 {
                    0 => 0.0,
                    1 => 1.0,
                    7 => f64::INFINITY,
                    8 => 0.02,
                    2 => (-(r as f64 / u64::MAX as f64) * 18.0).exp(),
                    _ => (r >> 11) as f64 / (1u64 << 53) as f64 * 0.01,
                };
                Prepared {
                    hash: next(),
                    scale: [1.0, 17.73, (r >> 40) as f64 / 1e6, 5.5, 0.0][i % 5],
                    factor: [1.0, 0.3][(r >> 3) as usize % 2],
                    p,
                }
            })
            .collect();
        assert!(prepared.iter().all(super::super::table::bounded));
        let mut tf: Vec<u8> = (0..size).map(|_| (next() % 12) as u8).collect();
        for round in 0..3000 {
            let n = (next() % (WEIGH_BATCH as u64 + 1)) as usize;
            // Distinct entries, as a text's are.
            let mut batch: Vec<u32> = Vec::new();
            while batch.len() < n {
                let i = (next() % size as u64) as u32;
                if !batch.contains(&i) {
                    batch.push(i);
                }
            }
            let counted = [(next() % 20_000) as f64, (next() % 5_000_000) as f64];
            let first_gram = (next() % size as u64) as u32;
            check(
                &prepared,
                &mut tf,
                &batch,
                counted,
                first_gram,
                &format!("round {round}"),
            );
            // Counts for the next round.
            for &i in &batch {
                tf[i as usize] = (next() % 12) as u8;
            }
        }
    }
}
