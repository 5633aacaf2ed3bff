//! The scan's tables, made once per process: the class of each
//! character of U+2000..U+FFFF (from NFKC itself), and what a run of
//! ideographs does with each code point below U+10000 (the run table that
//! [`super::scan`] reads a character at a time and [`super::wide`]
//! sixteen at a time).

use unicode_normalization::UnicodeNormalization;

use super::table::{han_index, FROM, TO};
use crate::fold::Fold;
use crate::text::{is_han, is_unified_ideograph};

/// Classes of the three-byte characters U+2000..U+FFFF. Any other byte
/// value of the class table is the full-width form of an ASCII byte, plus
/// [`WIDE`].
pub(super) const SLOW: u8 = 0;
/// Not a word character under NFKC and lower case: ends the piece.
pub(super) const MARK: u8 = 1;
/// A unified ideograph (U+3400..U+4DBF, U+4E00..U+9FFF).
pub(super) const IDEOGRAPH: u8 = 2;
/// Added to an ASCII byte: the character NFKC turns into that byte.
pub(super) const WIDE: u8 = 0x80;

/// The first code point of the class table.
pub(super) const CLASS_FROM: u32 = 0x2000;

/// In [`ScanTables::run`], for a unified ideograph whose folded form is
/// not a Han character of the dense table (a fold out of the table's range
/// or to a character that is not Han), and for any character that leaves
/// a run of ideographs.
pub(super) const GENERAL: u16 = u16::MAX;

/// The length of [`ScanTables::run`]: every code point U+0000..U+FFFF, and
/// one more entry, [`GENERAL`], so that reading two entries from any
/// code point's stays within it.
pub(super) const RUN_TABLE: usize = 0x1_0001;

/// The scan's tables: the class of each character of U+2000..U+FFFF, and
/// what a run of ideographs does with each.
#[derive(Debug, Clone)]
pub(crate) struct ScanTables {
    pub(super) class: Vec<u8>,
    /// What a run of ideographs does with each code point below U+10000
    /// (by code point): for a unified ideograph whose folded form is a
    /// Han character of the dense table, that character's index;
    /// [`RUN_MARK`] for a character of U+2000..U+FFFF that only ends the
    /// piece; [`GENERAL`] otherwise, below U+2000 too.
    pub(super) run: Box<[u16; RUN_TABLE]>,
}

/// In [`ScanTables::run`]: a character that only ends the piece (a
/// [`MARK`], or the full-width form of ASCII punctuation).
pub(super) const RUN_MARK: u16 = u16::MAX - 1;

impl ScanTables {
    pub(crate) fn new(fold: &Fold) -> Self {
        let class: Vec<u8> = (CLASS_FROM..0x1_0000).map(class_of).collect();
        let run = (0..RUN_TABLE as u32)
            .map(|u| {
                if !(CLASS_FROM..0x1_0000).contains(&u) {
                    return GENERAL;
                }
                match class[(u - CLASS_FROM) as usize] {
                    IDEOGRAPH => folded_index(fold, u),
                    MARK => RUN_MARK,
                    wide if wide & WIDE != 0 && !(wide & !WIDE).is_ascii_alphanumeric() => RUN_MARK,
                    _ => GENERAL,
                }
            })
            .collect::<Vec<u16>>()
            .into_boxed_slice()
            .try_into()
            .expect("RUN_TABLE entries");
        ScanTables { class, run }
    }

    /// The dense index of what unified ideograph `u` folds to, or
    /// [`GENERAL`].
    #[inline(always)]
    pub(super) fn folded(&self, u: u32) -> u16 {
        self.run[u as usize]
    }

    /// What a run of ideographs does with the character at `bytes[i..]`
    /// ([`Self::run`]), `None` to leave the run: at the end, for any
    /// character but one of three bytes, and for those the table says
    /// [`GENERAL`] of (all below U+2000, so too long a form of a smaller
    /// code point too, and the surrogates).
    #[inline(always)]
    pub(super) fn run_at(&self, bytes: &[u8], i: usize) -> Option<u16> {
        let [b0, b1, b2] = *bytes.get(i..i + 3)? else {
            return None;
        };
        if (b0 & 0xF0) != 0xE0 || (b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80 {
            return None;
        }
        let u = (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
        let code = self.run[u as usize];
        (code != GENERAL).then_some(code)
    }

    /// The class of the three-byte character at `bytes[i..]`, and its
    /// code point; [`SLOW`] for any other character, and for bytes that
    /// are not UTF-8 (the NFKC stretch checks those). A class other than
    /// [`SLOW`] is only ever given to a well-formed character: a lead byte
    /// E2..EF and two continuation bytes make a code point U+2000..U+FFFF,
    /// never too long a form, and the surrogates are [`SLOW`].
    #[inline(always)]
    pub(super) fn class_at(&self, bytes: &[u8], i: usize) -> (u8, u32) {
        let (Some(&b0), Some(&b1), Some(&b2)) = (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2))
        else {
            return (SLOW, 0);
        };
        if !(0xE2..=0xEF).contains(&b0) || (b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80 {
            return (SLOW, 0);
        }
        let u = (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
        (self.class[(u - CLASS_FROM) as usize], u)
    }

    /// Whether the character at `bytes[i..]` (or the end) lets an ASCII
    /// character or a table character before it skip NFKC.
    #[inline(always)]
    pub(super) fn fast_at(&self, bytes: &[u8], i: usize) -> bool {
        match bytes.get(i) {
            None => true,
            Some(&b) if b < 0x80 => true,
            Some(_) => self.class_at(bytes, i).0 != SLOW,
        }
    }
}

/// The dense index of the Han character unified ideograph `u` folds to,
/// or [`GENERAL`] when it folds to anything else.
fn folded_index(fold: &Fold, u: u32) -> u16 {
    let Some(c) = char::from_u32(u) else {
        return GENERAL;
    };
    let m = fold.char(c);
    let mu = m as u32;
    if is_han(m) && (FROM..TO).contains(&mu) {
        han_index(mu)
    } else {
        GENERAL
    }
}

/// The class of code point `u` (U+2000..U+FFFF), from NFKC itself.
fn class_of(u: u32) -> u8 {
    use unicode_normalization::char::canonical_combining_class as ccc;
    let Some(c) = char::from_u32(u) else {
        return SLOW;
    };
    if is_unified_ideograph(c) {
        return IDEOGRAPH;
    }
    if ccc(c) != 0 {
        return SLOW;
    }
    let nfkc: Vec<char> = std::iter::once(c).nfkc().collect();
    if let [a] = nfkc[..] {
        if a.is_ascii() {
            return WIDE | a as u8;
        }
    }
    // Every character of the decomposition a starter that cannot compose
    // with one before it: ASCII, or U+2000..U+FFFF, where none does.
    let starters = std::iter::once(c)
        .nfkd()
        .all(|d| ccc(d) == 0 && (d.is_ascii() || (CLASS_FROM..0x1_0000).contains(&(d as u32))));
    let word = nfkc
        .iter()
        .flat_map(|n| n.to_lowercase())
        .any(char::is_alphanumeric);
    if starters && !word {
        MARK
    } else {
        SLOW
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::han_char;
    use super::*;
    use crate::fingerprint::tests::shared;

    #[test]
    fn a_run_takes_what_the_class_table_says() {
        let tables = &shared().fast;
        for u in 0x80..0x1_0000u32 {
            let Some(c) = char::from_u32(u) else {
                continue;
            };
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            let class = if bytes.len() == 3 {
                tables.class_at(bytes, 0).0
            } else {
                SLOW
            };
            assert_eq!(class == IDEOGRAPH, is_unified_ideograph(c), "U+{u:04X}");
            // An ideograph folded into the table, or a character that only
            // ends the piece, as one at a time takes them; nothing else.
            let expected = match class {
                IDEOGRAPH => {
                    let m = shared().fold.char(c);
                    let han = is_han(m) && (FROM..TO).contains(&(m as u32));
                    han.then(|| han_index(m as u32))
                }
                MARK => Some(RUN_MARK),
                wide if wide & WIDE != 0 && !(wide & !WIDE).is_ascii_alphanumeric() => {
                    Some(RUN_MARK)
                }
                _ => None,
            };
            assert_eq!(tables.run_at(bytes, 0), expected, "U+{u:04X}");
            if expected == Some(RUN_MARK) {
                let word = std::iter::once(c)
                    .nfkc()
                    .flat_map(char::to_lowercase)
                    .any(char::is_alphanumeric);
                assert!(!word, "U+{u:04X}");
            }
        }
        // Cut short, a continuation byte missing, a bad one, a surrogate.
        for bad in [
            &b"\xE4\xB8"[..],
            b"\xE4\xB8A",
            b"\xE4A\xAD",
            b"\xED\xA0\x80",
            b"\xE0\xA0\x80",
        ] {
            assert_eq!(tables.run_at(bad, 0), None, "{bad:?}");
        }
    }

    #[test]
    fn no_table_character_composes_backwards() {
        use unicode_normalization::char::{canonical_combining_class, decompose_canonical};
        // The starters that compose with a character before them: the
        // last character of a canonical decomposition, when it is a
        // starter; and the Hangul vowels and finals.
        let mut second = std::collections::HashSet::new();
        for u in 0..0x11_0000u32 {
            let Some(c) = char::from_u32(u) else { continue };
            let mut d = Vec::new();
            decompose_canonical(c, |x| d.push(x));
            if d.len() >= 2 && canonical_combining_class(d[d.len() - 1]) == 0 {
                second.insert(d[d.len() - 1]);
            }
        }
        second.extend(('\u{1161}'..='\u{1175}').chain('\u{11A8}'..='\u{11C2}'));
        assert!(second.contains(&'\u{9BE}') && second.contains(&'\u{1B35}'));
        let fp = shared();
        let mut marks = 0;
        let mut wide = 0;
        for u in CLASS_FROM..0x1_0000 {
            let class = fp.fast.class[(u - CLASS_FROM) as usize];
            if class == SLOW || class == IDEOGRAPH {
                continue;
            }
            let c = char::from_u32(u).unwrap();
            let nfkc: String = std::iter::once(c).nfkc().collect();
            for d in std::iter::once(c).nfkd() {
                assert!(!second.contains(&d), "{c:?} decomposes to {d:?}");
                assert_eq!(canonical_combining_class(d), 0, "{c:?}");
            }
            if class == MARK {
                marks += 1;
                let mut lowered = nfkc.chars().flat_map(char::to_lowercase);
                assert!(!lowered.any(char::is_alphanumeric), "{c:?}");
            } else {
                wide += 1;
                assert_eq!(nfkc, char::from(class & !WIDE).to_string(), "{c:?}");
            }
        }
        // The punctuation of Chinese text is in the table, full-width
        // ASCII too; a half-width voiced sound mark (a combining mark
        // under NFKC) and letters are not.
        let class = |c: char| fp.fast.class[(c as u32 - CLASS_FROM) as usize];
        for c in "，。、“”《》：；！？…—（）【】".chars() {
            assert_ne!(class(c), SLOW, "{c:?}");
        }
        assert_eq!(class('１'), WIDE | b'1');
        assert_eq!(class('Ａ'), WIDE | b'A');
        for c in ['\u{FF9E}', 'ｶ', '①', 'ⅷ', '℃', '\u{3099}', 'ㄅ', '〇', '々'] {
            assert!(class(c) == SLOW || class(c) & WIDE != 0, "{c:?}");
        }
        assert!(marks > 5000 && wide > 90, "{marks} marks, {wide} wide");
    }

    #[test]
    fn the_fold_table_agrees_with_the_fold() {
        let fp = shared();
        for u in (0x3400..=0x4DBF).chain(0x4E00..=0x9FFF) {
            let c = char::from_u32(u).unwrap();
            let m = fp.fold.char(c);
            let i = fp.fast.folded(u);
            if i == GENERAL {
                assert!(!is_han(m) || !(FROM..TO).contains(&(m as u32)), "{c}");
            } else {
                assert_eq!(han_char(usize::from(i)), m as u32, "{c}");
            }
        }
        // ASCII letters and digits are never folded.
        for b in (b'0'..=b'9').chain(b'a'..=b'z') {
            assert_eq!(fp.fold.char(char::from(b)), char::from(b));
        }
    }
}
