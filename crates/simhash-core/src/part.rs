//! Parts of the 64-bit feature hash space, for counting the distinct
//! features of a text in bounded memory.
//!
//! A fingerprint of version 2 or 3 weighs each distinct feature by its own
//! count and the text's totals alone, and sums integer weights, which do
//! not depend on the order of the adds. So the distinct features can be
//! counted a part of the hash space at a time: one walk over the text
//! counts only the features whose hash falls in one [`Part`], and the
//! weights of those are added before the next walk counts the next part.
//!
//! The parts are consecutive ranges of `hash * MIX` (a bijection of
//! `u64`), together 0 to `u64::MAX`. The first walk takes all of it. When a walk's
//! table grows past the bound, its part is cut ([`Part::first_half`]): the
//! walk drops the features of the second half and keeps counting the
//! first; a feature it keeps was in the part all along, so it was counted
//! from its first occurrence on. The next walk starts where the last one's
//! part ended, sized by how many features the last one held in how wide a
//! range ([`Part::next`]): hashes spread features evenly over the space
//! whatever the text, so the walks after the first fill the table to about
//! the size asked for. Natural text (a few thousand distinct features)
//! never reaches the bound and takes one walk, as before; text made to
//! have `d` distinct features takes about `d / size + 1` walks.

/// Odd, so multiplying by it is a bijection of `u64`; its top bits mix
/// every bit of the hash. Parts are ranges of `hash * MIX` rather than of
/// the hash itself, which the counting tables take their bucket (low bits)
/// and tag (top seven bits) from: a part then still spreads over every
/// bucket and tag.
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// The feature hashes `h` whose key `h * MIX` (wrapping product) is one of
/// `lo ..= lo + span`; `lo + span` is at most `u64::MAX`, so a part is
/// never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    lo: u64,
    span: u64,
}

impl Part {
    /// Every hash.
    pub(crate) const ALL: Part = Part {
        lo: 0,
        span: u64::MAX,
    };

    /// Whether `hash` is in this part: a multiply, a subtract and a
    /// compare, for every feature of every walk.
    #[inline]
    pub(crate) fn contains(self, hash: u64) -> bool {
        hash.wrapping_mul(MIX).wrapping_sub(self.lo) <= self.span
    }

    /// Whether the part holds more than one hash, so that it can be cut.
    pub(crate) fn can_split(self) -> bool {
        self.span > 0
    }

    /// The first half of the part (rounded down, never empty when the part
    /// [can be cut](Self::can_split)).
    pub(crate) fn first_half(self) -> Part {
        debug_assert!(self.can_split());
        Part {
            lo: self.lo,
            span: (self.span - 1) / 2,
        }
    }

    /// Whether the part reaches the end of the key space: no walk is left
    /// after it.
    pub(crate) fn is_last(self) -> bool {
        self.lo + self.span == u64::MAX
    }

    /// The part right after this one (which must not be the last), as wide
    /// as should hold about `size` features if they are as dense as the
    /// `held` features this part held; twice as wide as that would be for
    /// one feature when it held none, so that a run of empty parts widens
    /// quickly whatever `size` is.
    pub(crate) fn next(self, held: usize, size: usize) -> Part {
        debug_assert!(!self.is_last());
        let width = u128::from(self.span) + 1;
        let size = size.max(1) as u128;
        let next = if held == 0 {
            width.saturating_mul(2 * size)
        } else {
            width.saturating_mul(size) / held as u128
        };
        let lo = self.lo + self.span + 1;
        let span = (next.max(1) - 1).min(u128::from(u64::MAX - lo)) as u64;
        Part { lo, span }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix;

    #[test]
    fn a_cut_keeps_about_half_and_only_what_was_in() {
        let mut s = 1;
        let hashes: Vec<u64> = (0..4000).map(|_| splitmix(&mut s)).collect();
        let mut part = Part::ALL;
        assert!(hashes.iter().all(|&h| part.contains(h)));
        for _ in 0..5 {
            let half = part.first_half();
            let inside = hashes.iter().filter(|&&h| part.contains(h)).count();
            let kept = hashes.iter().filter(|&&h| half.contains(h)).count();
            assert!(hashes
                .iter()
                .all(|&h| !half.contains(h) || part.contains(h)));
            assert!(
                kept * 3 > inside && kept * 3 < 2 * inside,
                "{kept} of {inside}"
            );
            part = half;
        }
    }

    #[test]
    fn consecutive_parts_hold_every_hash_once() {
        let mut s = 2;
        let hashes: Vec<u64> = (0..5000).map(|_| splitmix(&mut s)).collect();
        let mut seen = vec![0u32; hashes.len()];
        // Walks sized for 300 features, the first cut twice.
        let mut part = Part::ALL.first_half().first_half();
        let mut walks = 1;
        loop {
            let mut held = 0;
            for (n, &h) in seen.iter_mut().zip(&hashes) {
                if part.contains(h) {
                    *n += 1;
                    held += 1;
                }
            }
            if part.is_last() {
                break;
            }
            if walks > 1 {
                // Sized by the density so far: near what was asked.
                assert!(held < 450, "walk {walks} held {held}");
            }
            part = part.next(held, 300);
            walks += 1;
        }
        assert!(seen.iter().all(|&n| n == 1));
        assert!((12..=17).contains(&walks), "{walks} walks");
    }

    #[test]
    fn parts_sized_for_one_feature_still_cover_the_space_in_few_walks() {
        let mut s = 3;
        let hashes: Vec<u64> = (0..2000).map(|_| splitmix(&mut s)).collect();
        for size in [0, 1, 2] {
            let mut part = Part::ALL.first_half();
            let mut walks = 1;
            let mut seen = 0;
            loop {
                let held = hashes.iter().filter(|&&h| part.contains(h)).count();
                seen += held;
                if part.is_last() {
                    break;
                }
                part = part.next(held, size);
                walks += 1;
                assert!(walks < 50_000, "size {size}: the parts stopped widening");
            }
            assert_eq!(seen, hashes.len());
            assert!(walks < 8000, "size {size}: {walks} walks");
        }
    }

    #[test]
    fn a_part_of_one_key_holds_one_hash() {
        let h = 0x0123_4567_89AB_CDEF_u64;
        let mut part = Part::ALL;
        while part.can_split() {
            let half = part.first_half();
            part = if half.contains(h) {
                half
            } else {
                Part {
                    lo: half.lo + half.span + 1,
                    span: part.span - half.span - 1,
                }
            };
        }
        assert!(part.contains(h));
        assert!(!part.contains(h + 1) && !part.contains(h - 1));
        assert_eq!(part.span, 0);
        // A part that held nothing is followed by a wider one, even when
        // parts are sized for one feature.
        let after = part.next(0, 10);
        assert_eq!(after.lo, part.lo + 1);
        assert_eq!(after.span, 19);
        assert_eq!(part.next(0, 1).span, 1);
        assert_eq!(part.next(0, 0).span, 1);
        // The last part ends the walks, however wide it was asked to be.
        let near_end = Part {
            lo: u64::MAX - 100,
            span: 10,
        };
        let last = near_end.next(1, 1000);
        assert!(last.is_last() && !near_end.is_last());
        assert_eq!(last.lo, u64::MAX - 89);
    }
}
