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
//!
//! Definition version 2 adds one step after the lower case: each word
//! character is mapped to another one (its simplified form, see
//! [`crate::fold`]) before it joins a piece; [`for_each_piece_mapped`].

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

/// Collects word characters into pieces and hands them on.
struct Pieces<F, M> {
    buf: String,
    chars: usize,
    has_han: bool,
    emit: F,
    /// Applied to each word character, after NFKC and the lower case.
    map: M,
}

impl<F: FnMut(Piece<'_>) -> bool, M: Fn(char) -> char> Pieces<F, M> {
    /// Ends the current piece; `false` when `emit` said stop.
    #[inline]
    fn flush(&mut self) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let go_on = (self.emit)(Piece {
            text: &self.buf,
            has_han: self.has_han,
        });
        self.buf.clear();
        self.chars = 0;
        self.has_han = false;
        go_on
    }

    /// Adds a normalized, lower-cased word character (`han`: whether it
    /// is Han), mapped by `map`.
    #[inline]
    fn word(&mut self, c: char, han: bool) -> bool {
        let m = (self.map)(c);
        let han = if m == c { han } else { is_han(m) };
        self.buf.push(m);
        self.chars += 1;
        self.has_han |= han;
        self.chars < MAX_PIECE_CHARS || self.flush()
    }

    /// Adds any normalized character.
    #[inline]
    fn any(&mut self, c: char) -> bool {
        for lc in c.to_lowercase() {
            let go_on = if lc.is_alphanumeric() {
                self.word(lc, is_han(lc))
            } else {
                self.flush()
            };
            if !go_on {
                return false;
            }
        }
        true
    }
}

/// Characters that NFKC leaves as they are whatever surrounds them, and
/// whose lower case and class are known without tables: ASCII, and the
/// unified ideographs of the BMP. (An ASCII letter can still compose with a
/// combining mark after it, so [`for_each_piece`] only takes the fast path
/// for one when the next character is fast too.)
#[inline]
fn is_fast(c: char) -> bool {
    c.is_ascii() || is_unified_ideograph(c)
}

/// The unified ideographs of the BMP (CJK Extension A and the URO, without
/// the Yijing hexagrams between them): NFKC leaves them alone whatever
/// surrounds them.
#[inline]
pub(crate) fn is_unified_ideograph(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

/// NFKC of `s` as every definition normalizes it: in the Stream-Safe Text
/// Format of UAX #15, where a U+034F COMBINING GRAPHEME JOINER goes in
/// after 30 non-starters in a row, so that normalizing holds a few dozen
/// characters whatever the text (plain NFKC holds a whole run of combining
/// marks: a 200 MB run took a backend past 1 GB). The joiner is not a word
/// character, so it separates, as the marks around it do unless they are
/// letters. A text without such a run (any natural text) normalizes as
/// under plain NFKC; each piece of a text may be normalized on its own
/// (the count starts again at every starter).
pub fn nfkc(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().stream_safe().nfkc()
}

/// Normalizes `text` and hands each piece to `emit`, in text order.
///
/// `emit` returns `true` to go on and `false` to stop early; the return
/// value is `false` when it stopped early.
///
/// Most of a Chinese or English text is ASCII and unified ideographs,
/// which NFKC never changes and which never compose with a neighbour (an
/// ASCII letter can take a combining mark after it, so it is only fast when
/// the next character is fast too). Those go straight into pieces; NFKC
/// runs only over the stretches between them. This is the same function as
/// normalizing the whole text first (`tests::matches_the_plain_definition`),
/// about four times faster on Chinese news.
pub fn for_each_piece(text: &str, emit: impl FnMut(Piece<'_>) -> bool) -> bool {
    for_each_piece_mapped(text, |c| c, emit)
}

/// [`for_each_piece`] with `map` applied to every word character after NFKC
/// and the lower case, before it joins a piece (and before the piece is
/// known to hold Han or not): definition version 2 folds traditional
/// characters this way, so that a traditional character NFKC makes (from a
/// compatibility ideograph or a Kangxi radical) is folded too, and the fast
/// path, which skips NFKC, still maps.
///
/// This is the same as mapping every character of the normalized text as
/// long as `map` takes word characters to word characters and leaves the
/// others alone (true of the shipped fold table, which is all Han; tested
/// in [`crate::fold`]). Each character is mapped once: what `map` returns
/// is not mapped again.
pub fn for_each_piece_mapped(
    text: &str,
    map: impl Fn(char) -> char,
    emit: impl FnMut(Piece<'_>) -> bool,
) -> bool {
    let mut out = Pieces {
        buf: String::with_capacity(MAX_PIECE_CHARS * 4),
        chars: 0,
        has_han: false,
        emit,
        map,
    };
    let mut slow_from: Option<usize> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let fast =
            is_fast(c) && (!c.is_ascii() || chars.peek().is_none_or(|&(_, next)| is_fast(next)));
        if !fast {
            slow_from.get_or_insert(i);
            continue;
        }
        if let Some(from) = slow_from.take() {
            for n in nfkc(&text[from..i]) {
                if !out.any(n) {
                    return false;
                }
            }
        }
        let go_on = if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                out.word(c.to_ascii_lowercase(), false)
            } else {
                out.flush()
            }
        } else {
            out.word(c, true)
        };
        if !go_on {
            return false;
        }
    }
    if let Some(from) = slow_from {
        for n in nfkc(&text[from..]) {
            if !out.any(n) {
                return false;
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, written plainly: NFKC over the whole text, lower
    /// case, then runs of word characters cut every MAX_PIECE_CHARS.
    fn reference(text: &str) -> Vec<(String, bool)> {
        reference_mapped(text, |c| c)
    }

    /// The same with a character map after the lower case (version 2).
    fn reference_mapped(text: &str, map: impl Fn(char) -> char) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        let mut buf = String::new();
        let mut n = 0;
        let mut han = false;
        let mut flush = |buf: &mut String, n: &mut usize, han: &mut bool| {
            if !buf.is_empty() {
                out.push((std::mem::take(buf), *han));
            }
            *n = 0;
            *han = false;
        };
        for c in nfkc(text).flat_map(char::to_lowercase).map(map) {
            if c.is_alphanumeric() {
                buf.push(c);
                n += 1;
                han |= is_han(c);
                if n == MAX_PIECE_CHARS {
                    flush(&mut buf, &mut n, &mut han);
                }
            } else {
                flush(&mut buf, &mut n, &mut han);
            }
        }
        flush(&mut buf, &mut n, &mut han);
        out
    }

    #[test]
    fn matches_the_plain_definition() {
        // Hand-picked traps for the fast path: ASCII or Han next to
        // combining marks, compatibility ideographs, full-width forms,
        // ligatures, Hangul jamo, final sigma, long runs.
        let cases = [
            "cafe\u{301} e\u{301}\u{302}e",
            "a\u{301}",
            "中\u{301}文",
            "中\u{3099}",
            "\u{F900}\u{F901}中",
            "ＡＢＣ中文ａｂｃ１２３",
            "ﬁﬂ ﬃ",
            "\u{1100}\u{1161}\u{11A8}",
            "ΟΔΟΣ Σ",
            "A\u{30A}\u{327}x",
            "x\u{0}y\u{7f}z",
            "Ǆ ǅ ǆ İ",
            "《人民日报》１９９８年１月１日：新年献词。",
        ];
        for t in cases {
            assert_eq!(pieces(t), reference(t), "{t:?}");
        }
        let long = format!("{}e\u{301}{}", "字".repeat(700), "ab".repeat(400));
        assert_eq!(pieces(&long), reference(&long));
        // Random strings over a pool mixing fast and slow characters.
        let pool: Vec<char> = "aZ9 ,.中文字\u{301}\u{308}\u{327}é\u{F900}ＡＢ１，。\u{3000}Σσς\u{1100}\u{1161}İﬁ😀\u{200B}\u{FF9E}ｶ"
            .chars()
            .collect();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
            let len = (state % 12) as usize;
            let t: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    pool[(state % pool.len() as u64) as usize]
                })
                .collect();
            assert_eq!(pieces(&t), reference(&t), "{t:?}");
        }
    }

    fn pieces(text: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for_each_piece(text, |p| {
            out.push((p.text.to_owned(), p.has_han));
            true
        });
        out
    }

    fn pieces_folded(text: &str) -> Vec<(String, bool)> {
        let fold = crate::fold::Fold::t2s();
        let mut out = Vec::new();
        for_each_piece_mapped(
            text,
            |c| fold.char(c),
            |p| {
                out.push((p.text.to_owned(), p.has_han));
                true
            },
        );
        out
    }

    #[test]
    fn folding_matches_the_plain_definition_on_the_fast_and_slow_paths() {
        let fold = crate::fold::Fold::t2s();
        let reference = |t: &str| reference_mapped(t, |c| fold.char(c));
        // Traditional characters on the fast path (pure Han, Han beside
        // ASCII) and on the slow one (beside combining marks, full-width
        // forms); compatibility ideographs and Kangxi radicals that NFKC
        // turns into traditional characters; a fold into CJK Extension G
        // (not Han to `is_han`: the piece is then not segmented).
        let cases = [
            "國務院總理",
            "abc國def",
            "國\u{301}語",
            "ＡＢＣ國語１２３",
            "\u{F901}\u{F902} \u{2FA8}\u{2F9F}",
            "\u{3236}",
            "繐",
        ];
        for t in cases {
            assert_eq!(pieces_folded(t), reference(t), "{t:?}");
        }
        assert_eq!(pieces_folded("國語"), pieces("国语"));
        // U+F902 is a compatibility ideograph NFKC maps to U+8ECA 車,
        // which folds to 车; U+2FA8 is the Kangxi radical 門 (门).
        assert_eq!(pieces_folded("\u{F902}"), vec![("车".into(), true)]);
        assert_eq!(pieces_folded("\u{2FA8}"), vec![("门".into(), true)]);
        assert_eq!(pieces_folded("繐"), vec![("\u{30B38}".into(), false)]);
        let pool: Vec<char> =
            "aZ9 ,.中文國語車門\u{301}\u{F902}\u{2FA8}\u{2F9F}ＡＢ１，。\u{3000}Σς繐😀"
                .chars()
                .collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let len = (state % 12) as usize;
            let t: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    pool[(state % pool.len() as u64) as usize]
                })
                .collect();
            assert_eq!(pieces_folded(&t), reference(&t), "{t:?}");
        }
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
    fn long_runs_of_non_starters_are_normalized_stream_safe() {
        // Up to 30 non-starters in a row: plain NFKC.
        let short = format!("a{}", "\u{0301}\u{0316}".repeat(15));
        assert_eq!(
            nfkc(&short).collect::<String>(),
            short.nfkc().collect::<String>()
        );
        // More: a joiner after every 30, so the marks past it are ordered
        // (and composed) apart from the first 30.
        let long = format!("a{}\u{0316}", "\u{0301}".repeat(40));
        let got: String = nfkc(&long).collect();
        assert_eq!(got.matches('\u{034F}').count(), 1);
        assert_ne!(got, long.nfkc().collect::<String>());
        // Pieces of a text normalize as the whole does: the count starts
        // again at every starter.
        let text = format!("x{}y {}", "\u{0345}".repeat(70), long);
        let whole: String = nfkc(&text).collect();
        let split: String = nfkc(&text[..1]).chain(nfkc(&text[1..])).collect();
        assert_eq!(whole, split);
        assert_eq!(pieces(&text), reference(&text));
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
