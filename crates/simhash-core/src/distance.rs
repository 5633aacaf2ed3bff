//! Comparing fingerprints: Hamming distance and the 16-bit bands.

/// How many bands a fingerprint has.
pub const BANDS: u32 = 4;
/// How many bits each band has.
pub const BAND_BITS: u32 = 16;

/// The number of bits in which `a` and `b` differ: the popcount of their XOR.
///
/// Uses the CPU's `popcnt` instruction where it has one. The check is made
/// at run time (and cached by the standard library), not at compile time,
/// so one build runs on every x86-64, with or without the instruction.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            #[allow(unsafe_code)]
            // SAFETY: the CPU has just been seen to support `popcnt`.
            return unsafe { popcnt_hw(a ^ b) };
        }
    }
    (a ^ b).count_ones()
}

/// `count_ones` compiled with `popcnt` enabled: one instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn popcnt_hw(x: u64) -> u32 {
    x.count_ones()
}

/// Band `n` of `fp`: bits `63 - 16n` down to `48 - 16n`. Band 0 is the most
/// significant 16 bits, the first four hex digits of the text form, as the
/// 64-bit string is split from the left. `None` when `n` is not 0 to 3.
#[inline]
pub fn band(fp: u64, n: i64) -> Option<u16> {
    if !(0..i64::from(BANDS)).contains(&n) {
        return None;
    }
    let shift = BAND_BITS * (BANDS - 1 - n as u32);
    Some((fp >> shift) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hamming_counts_differing_bits() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
        assert_eq!(hamming(1 << 63, 0), 1);
        let (a, b) = (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210);
        assert_eq!(hamming(a, b), hamming(b, a));
        assert_eq!(hamming(a, b), 64);
    }

    #[test]
    fn hardware_and_portable_popcount_agree() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x = x.rotate_left(13).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ 0x94D0_49BB;
            assert_eq!(hamming(x, 0), x.count_ones());
        }
    }

    #[test]
    fn bands_split_from_the_left() {
        let fp = 0x0123_4567_89AB_CDEF;
        assert_eq!(band(fp, 0), Some(0x0123));
        assert_eq!(band(fp, 1), Some(0x4567));
        assert_eq!(band(fp, 2), Some(0x89AB));
        assert_eq!(band(fp, 3), Some(0xCDEF));
        assert_eq!(band(fp, 4), None);
        assert_eq!(band(fp, -1), None);
        assert_eq!(band(fp, i64::MAX), None);
        assert_eq!(band(u64::MAX, 0), Some(0xFFFF));
    }

    #[test]
    fn close_fingerprints_share_a_band() {
        // The pigeonhole property the band index relies on: three flipped
        // bits touch at most three of the four bands.
        let fp = 0xA5A5_5A5A_0F0F_F0F0u64;
        for i in 0..64 {
            for j in 0..64 {
                for k in 0..64 {
                    let other = fp ^ (1 << i) ^ (1 << j) ^ (1 << k);
                    assert!((0..4).any(|n| band(fp, n) == band(other, n)));
                }
            }
        }
    }
}
