//! Step 1 of the fingerprint: normalize the text and cut it into pieces.
//!
//! The text goes through Unicode NFKC (full-width letters and digits become
//! ASCII, compatibility ideographs become unified ones, ligatures split),
//! then each character through its Unicode lower-case mapping, one
//! character at a time with no context rule. What is left is cut into
//! *pieces*: maximal runs of word characters (`char::is_alphanumeric`, which
//! covers Han characters as well as letters and digits of every script).
//! Everything else (white space, punctuation, symbols, emoji) only separates
//! pieces and never becomes a feature, so a copy whose punctuation or
//! spacing changed keeps its fingerprint.
//!
//! A run longer than [`MAX_PIECE_CHARS`] characters is cut every
//! [`MAX_PIECE_CHARS`] characters. Real prose never has such runs (Chinese
//! sentences are broken by punctuation far sooner), but a 100 MB text
//! without punctuation must not become one 100 MB segmentation call: the
//! caller checks for cancellation between pieces, and memory stays at one
//! piece.
//!
//! The whole pass streams: nothing the size of the input is allocated.

use unicode_normalization::UnicodeNormalization;

/// The longest piece handed on, in characters. Part of the fingerprint
/// definition: changing it changes fingerprints of texts with longer runs.
pub const MAX_PIECE_CHARS: usize = 512;

/// True for the Han characters that jieba segments: the CJK Unified
/// Ideographs, their extensions A to F and the compatibility block (which
/// NFKC has already mapped to unified ideographs by the time we ask).
pub fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FA1F}')
}

/// A piece of normalized text: a run of word characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece<'a> {
    /// The characters of the piece, already normalized and lower-cased.
    pub text: &'a str,
    /// Whether any character is Han, so that the piece needs segmenting.
    pub has_han: bool,
}

/// Normalizes `text` and hands each piece to `emit`, in text order.
///
/// `emit` returns `true` to go on and `false` to stop early; the return
/// value is `false` when it stopped early.
pub fn for_each_piece(text: &str, mut emit: impl FnMut(Piece<'_>) -> bool) -> bool {
    let mut buf = String::with_capacity(MAX_PIECE_CHARS * 4);
    let mut chars = 0usize;
    let mut has_han = false;
    let mut flush = |buf: &mut String, chars: &mut usize, has_han: &mut bool| -> bool {
        let go_on = buf.is_empty()
            || emit(Piece {
                text: buf,
                has_han: *has_han,
            });
        buf.clear();
        *chars = 0;
        *has_han = false;
        go_on
    };
    for c in text.nfkc() {
        for lc in c.to_lowercase() {
            if lc.is_alphanumeric() {
                buf.push(lc);
                chars += 1;
                has_han |= is_han(lc);
                if chars == MAX_PIECE_CHARS && !flush(&mut buf, &mut chars, &mut has_han) {
                    return false;
                }
            } else if !buf.is_empty() && !flush(&mut buf, &mut chars, &mut has_han) {
                return false;
            }
        }
    }
    flush(&mut buf, &mut chars, &mut has_han)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for_each_piece(text, |p| {
            out.push((p.text.to_owned(), p.has_han));
            true
        });
        out
    }

    #[test]
    fn splits_on_everything_but_word_characters() {
        assert_eq!(
            pieces("Hello, World!  新闻 报道。2024年"),
            vec![
                ("hello".into(), false),
                ("world".into(), false),
                ("新闻".into(), true),
                ("报道".into(), true),
                ("2024年".into(), true),
            ]
        );
    }

    #[test]
    fn nfkc_folds_full_width_and_compatibility_forms() {
        // Full-width letters, digits and punctuation; the "ﬁ" ligature.
        assert_eq!(
            pieces("ＡＢＣ１２３，ﬁne"),
            vec![("abc123".into(), false), ("fine".into(), false)]
        );
        // U+F900 is a compatibility ideograph; NFKC maps it to U+8C48.
        assert_eq!(pieces("\u{F900}"), vec![("\u{8C48}".into(), true)]);
    }

    #[test]
    fn case_folds_beyond_ascii() {
        assert_eq!(pieces("ÉCOLE Straße ΣΑΣ"), pieces("école straße σασ"));
    }

    #[test]
    fn decomposed_and_composed_accents_give_the_same_piece() {
        assert_eq!(pieces("cafe\u{301}"), pieces("caf\u{e9}"));
        assert_eq!(pieces("cafe\u{301}"), vec![("caf\u{e9}".into(), false)]);
    }

    #[test]
    fn text_without_word_characters_has_no_pieces() {
        for t in [
            "",
            " ",
            "\t\n\r",
            "，。！？、",
            "!@#$%^&*()",
            "😀🎉",
            "\u{3000}\u{200b}",
        ] {
            assert!(pieces(t).is_empty(), "{t:?}");
        }
    }

    #[test]
    fn long_runs_are_cut_every_max_piece_chars() {
        let long = "字".repeat(MAX_PIECE_CHARS * 2 + 3);
        let got = pieces(&long);
        let lens: Vec<usize> = got.iter().map(|(p, _)| p.chars().count()).collect();
        assert_eq!(lens, vec![MAX_PIECE_CHARS, MAX_PIECE_CHARS, 3]);
        assert!(got.iter().all(|(_, han)| *han));
    }

    #[test]
    fn stops_when_told() {
        let mut seen = 0;
        let finished = for_each_piece("a b c d", |_| {
            seen += 1;
            seen < 2
        });
        assert!(!finished);
        assert_eq!(seen, 2);
    }

    #[test]
    fn han_detection_covers_the_extensions() {
        assert!(is_han('中'));
        assert!(is_han('\u{3400}'));
        assert!(is_han('\u{20000}'));
        assert!(!is_han('a'));
        assert!(!is_han('あ'));
        assert!(!is_han('한'));
    }
}
