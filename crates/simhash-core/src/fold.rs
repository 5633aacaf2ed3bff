//! Traditional to simplified Chinese folding, one character to one
//! (fingerprint definition version 2).
//!
//! The table is `data/t2s.txt`: 4,105 `traditional simplified` lines, the
//! single-character entries of OpenCC's `TSCharacters.txt` (Apache License
//! 2.0), first candidate of each; its header says where it came from and
//! how to regenerate it. Lines starting with `#` are comments.
//!
//! The fingerprint folds each word character after NFKC and the lower case
//! ([`crate::text::for_each_piece_mapped`]), so a traditional character
//! that NFKC produces (from one of the compatibility ideographs, Kangxi
//! radicals or enclosed ideographs) is folded too. Each character is looked
//! up once (a character the table maps to is not looked up again).
//! Every source and every target of the table is a word character, so
//! folding only word characters is the same as folding the whole
//! normalized text.

use std::borrow::Cow;

/// The vendored table.
pub const T2S_TXT: &str = include_str!("../data/t2s.txt");

/// The range of the direct table: CJK Extension A and the URO, where all
/// but a few hundred listed characters lie.
const DIRECT_FROM: u32 = 0x3400;
const DIRECT_TO: u32 = 0xA000;

/// The fold table: direct lookup for U+3400..U+9FFF, binary search above.
#[derive(Debug, Clone)]
pub struct Fold {
    /// `direct[c - DIRECT_FROM]` is the folded character, or 0 when `c` is
    /// not in the table.
    direct: Vec<u32>,
    /// One bit per character of the direct range: listed or not. 3.4 KB,
    /// so the common case (a Han character that is not traditional) is
    /// answered from the L1 cache.
    listed: Vec<u64>,
    /// The other entries, sorted by source character.
    rest: Vec<(char, char)>,
    /// The smallest listed character: everything below (ASCII, Latin,
    /// punctuation) returns at once.
    min: u32,
}

impl Fold {
    /// Parses `from to` lines of single characters; `#` lines and lines
    /// that are not two single characters are skipped.
    pub fn parse(table: &str) -> Self {
        let mut direct = vec![0u32; (DIRECT_TO - DIRECT_FROM) as usize];
        let mut rest = Vec::new();
        for line in table.lines() {
            if line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(from), Some(to), None) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let (mut f, mut t) = (from.chars(), to.chars());
            let (Some(from), None, Some(to), None) = (f.next(), f.next(), t.next(), t.next())
            else {
                continue;
            };
            let c = from as u32;
            if (DIRECT_FROM..DIRECT_TO).contains(&c) {
                direct[(c - DIRECT_FROM) as usize] = to as u32;
            } else {
                rest.push((from, to));
            }
        }
        rest.sort_unstable();
        rest.dedup_by_key(|e| e.0);
        let first_direct = direct.iter().position(|&t| t != 0);
        let min = rest
            .first()
            .map(|e| e.0 as u32)
            .into_iter()
            .chain(first_direct.map(|i| i as u32 + DIRECT_FROM))
            .min()
            .unwrap_or(u32::MAX);
        let mut listed = vec![0u64; direct.len().div_ceil(64)];
        for (i, &t) in direct.iter().enumerate() {
            if t != 0 {
                listed[i / 64] |= 1 << (i % 64);
            }
        }
        Fold {
            direct,
            listed,
            rest,
            min,
        }
    }

    /// The table that ships with the crate.
    pub fn t2s() -> Self {
        Self::parse(T2S_TXT)
    }

    /// The folded form of one character (itself when it is not listed).
    #[inline]
    pub fn char(&self, c: char) -> char {
        let u = c as u32;
        if u < self.min {
            return c;
        }
        if (DIRECT_FROM..DIRECT_TO).contains(&u) {
            let i = (u - DIRECT_FROM) as usize;
            if self.listed[i / 64] >> (i % 64) & 1 == 0 {
                return c;
            }
            let t = self.direct[i];
            return if t == 0 {
                c
            } else {
                char::from_u32(t).unwrap_or(c)
            };
        }
        match self.rest.binary_search_by_key(&c, |e| e.0) {
            Ok(i) => self.rest[i].1,
            Err(_) => c,
        }
    }

    /// `text` with every listed character folded; borrowed when nothing
    /// changes. (The fingerprint does not use this: it folds after NFKC,
    /// character by character, see [`crate::text::for_each_piece_mapped`].)
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some((at, _)) = text.char_indices().find(|&(_, c)| self.char(c) != c) else {
            return Cow::Borrowed(text);
        };
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..at]);
        out.extend(text[at..].chars().map(|c| self.char(c)));
        Cow::Owned(out)
    }

    /// How many characters the table folds.
    pub fn len(&self) -> usize {
        self.direct.iter().filter(|&&t| t != 0).count() + self.rest.len()
    }

    /// Whether the table folds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_has_every_line() {
        let lines = T2S_TXT
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count();
        assert_eq!(Fold::t2s().len(), lines);
        assert_eq!(lines, 4105);
    }

    #[test]
    fn folds_traditional_characters_in_both_ranges_and_leaves_the_rest() {
        let f = Fold::t2s();
        assert_eq!(
            f.text("國務院總理會見來訪的日本客人"),
            "国务院总理会见来访的日本客人"
        );
        assert!(matches!(f.text("国务院 abc 123"), Cow::Borrowed(_)));
        // Every entry, including those above U+9FFF, maps as listed.
        for line in T2S_TXT.lines().filter(|l| !l.starts_with('#')) {
            let mut cs = line.chars().filter(|c| !c.is_whitespace());
            let (from, to) = (cs.next().unwrap(), cs.next().unwrap());
            assert_eq!(f.char(from), to, "{line}");
        }
        assert_eq!(f.char('a'), 'a');
        assert_eq!(f.char('\u{10FFFF}'), '\u{10FFFF}');
    }

    #[test]
    fn every_entry_is_a_word_character_nfkc_leaves_alone() {
        // What lets the fingerprint fold word characters only, after NFKC:
        // folding cannot make or break a piece, and NFKC would not change
        // a folded character back.
        use unicode_normalization::UnicodeNormalization;
        for line in T2S_TXT.lines().filter(|l| !l.starts_with('#')) {
            for c in line.chars().filter(|c| !c.is_whitespace()) {
                assert!(c.is_alphanumeric(), "{line}");
                assert_eq!(c.to_string().nfkc().collect::<String>(), c.to_string());
                assert_eq!(c.to_lowercase().collect::<String>(), c.to_string());
            }
        }
    }

    #[test]
    fn folding_is_one_pass() {
        let f = Fold::parse("# a chain\nA B\nB C\n");
        assert_eq!(f.text("AB"), "BC");
        let f = Fold::parse("丟 丢\n丢 X\n");
        assert_eq!(f.text("丟"), "丢");
        assert_eq!(f.text("丢"), "X");
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let f = Fold::parse("國\n國 国 x\n國國 国\n國 国\n");
        assert_eq!(f.len(), 1);
        assert_eq!(f.char('國'), '国');
    }
}
