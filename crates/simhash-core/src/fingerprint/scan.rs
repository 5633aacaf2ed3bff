//! Version 3's features read straight off the UTF-8 bytes, in one pass.
//!
//! The definition's steps 1 to 3 ([`crate::text::for_each_piece_mapped`]:
//! NFKC, lower case, fold, pieces; then
//! [`Fingerprinter::walk_v3`](super::Fingerprinter::walk_v3): Han
//! characters and the trigrams of other words) build each piece in a
//! string, walk it again by `char`, keep each word in a vector and each
//! trigram in another string before it is hashed. This module hands on
//! the same features in the same order without any of that:
//!
//! - an ASCII byte (when the character after it is ASCII or a unified
//!   ideograph too, so that no combining mark can follow it) is lowered
//!   and given its symbol number at once; the trigram is the last three
//!   symbol numbers, an index into the dense table;
//! - a unified ideograph (U+3400..U+4DBF, U+4E00..U+9FFF) is decoded from
//!   its three bytes and folded through a table by code point that gives
//!   the dense index of its simplified form;
//! - the punctuation of Chinese text (`，。、“”《》`, U+2000..U+FFFF) and
//!   the full-width forms of ASCII (`１９９８`, `ＡＢＣ`) are looked up in a
//!   table by code point made at start-up from NFKC itself: a mark that
//!   only ends the piece, or the ASCII character it stands for; like an
//!   ASCII byte, only when the character after it is one of these too;
//! - anything else (and such a character before it) goes through NFKC
//!   and the general character path, as before.
//!
//! The two common cases go in runs. A run of ASCII (each byte followed by
//! another) is read in blocks ([`ascii_block`]): the trigram a byte closes
//! depends only on the two bytes before it and itself, so the symbols and
//! the trigram numbers are computed for the whole block in loops the
//! compiler vectorizes, and only which of them to keep (those after a
//! letter) goes a byte at a time, with no branch on where words start and
//! end. A run of ideographs keeps the scan's state in locals and takes
//! the punctuation between them (a mark ends the piece, and no word is
//! open in such a run) with no branch of its own, through one table of
//! U+2000..U+FFFF. Both hand the sink their features [`RUN`] at a time.
//!
//! Why skipping NFKC is exact: a character of the table is a starter
//! whose decomposition is all starters, none of which composes with a
//! character before it (no such starter lies in U+2000..U+FFFF or ASCII;
//! `scan_tables::tests::no_table_character_composes_backwards`), and the
//! character after it is one of the table's, an ASCII character or an
//! ideograph, none of which composes with one before it either. So NFKC of the text
//! is NFKC of the stretch before, then of the character, then of the
//! stretch after.
//!
//! What it hands on is checked against `walk_v3` feature by feature
//! (`tests::the_scan_hands_on_what_the_walk_does`).

use super::scan_tables::{ScanTables, GENERAL, IDEOGRAPH, MARK, RUN_MARK, SLOW, WIDE};
use super::table::{gram_index, han_index, symbol_char, FROM, HAN_GRAMS, SYMBOL, SYMBOLS, TO};
#[cfg(target_arch = "x86_64")]
use super::wide;
use crate::cpu::Simd;
use crate::fold::Fold;
use crate::text::{is_han, MAX_PIECE_CHARS};

/// What stopped a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `go_on` said stop.
    Interrupted,
    /// The bytes are not UTF-8.
    NotUtf8,
}

/// Where the scan hands each feature, in text order.
pub(crate) trait Sink {
    /// A Han character of the dense table, by its index.
    fn dense_han(&mut self, index: usize);
    /// A trigram of the dense table, by its index.
    fn dense_gram(&mut self, index: usize);
    /// [`Self::dense_gram`] of each index, in order.
    #[inline(always)]
    fn dense_grams(&mut self, indexes: &[u32]) {
        for &i in indexes {
            self.dense_gram(i as usize);
        }
    }
    /// [`Self::dense_han`] of each index, in order.
    #[inline(always)]
    fn dense_hans(&mut self, indexes: &[u32]) {
        for &i in indexes {
            self.dense_han(i as usize);
        }
    }
    /// A Han character outside the table.
    fn han(&mut self, c: char);
    /// A trigram outside the table.
    fn gram(&mut self, g: [char; 3]);
}

/// How many characters go by between two calls of `go_on` (a run of
/// ASCII or of ideographs counts its characters [`RUN`] at a time, so a
/// few more may).
const CHECK_EVERY: u32 = 16 * 1024;

/// How many features a run hands the sink at once.
const RUN: usize = 256;

/// Where a run writes its features down before the sink takes them: one
/// per [`ScanWork`], not one per run (Chinese text starts a run of
/// ideographs every few characters). A byte of ASCII closes one trigram,
/// and a cut adds one more.
type Buffer = [u32; RUN + 1];

/// The symbol number of `c` in the dense trigram table, or `SYMBOLS`.
#[inline(always)]
fn symbol(c: char) -> u8 {
    if c.is_ascii() {
        SYMBOL[c as usize]
    } else {
        SYMBOLS as u8
    }
}

/// The symbols of `^` and `$`, and how many symbols stand for letters and
/// digits (those below).
const CARET: u8 = SYMBOL[b'^' as usize];
const DOLLAR: u8 = SYMBOL[b'$' as usize];
const LETTERS: u8 = SYMBOLS as u8 - 2;

/// How many bytes `bytes` starts with that are ASCII, eight at a time.
#[inline(always)]
fn ascii_prefix(bytes: &[u8]) -> usize {
    let mut eights = bytes.chunks_exact(8);
    let mut k = 0;
    for chunk in &mut eights {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let high = word & 0x8080_8080_8080_8080;
        if high != 0 {
            return k + (high.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    k + eights
        .remainder()
        .iter()
        .take_while(|b| b.is_ascii())
        .count()
}

/// What a scan writes down as it goes, made once for many scans (a
/// thread's, for the hot path) rather than zeroed for each text: short
/// texts pay that on every call.
pub(crate) struct ScanWork {
    buffer: Buffer,
    scratch: Scratch,
}

impl ScanWork {
    pub(crate) fn new() -> Self {
        ScanWork {
            buffer: [0; RUN + 1],
            scratch: Scratch::new(),
        }
    }
}

/// The work arrays of [`ascii_block`].
struct Scratch {
    /// Per byte, two places on (the two before the block first): its
    /// symbol; 1 when it is a letter or digit; the symbol that stands
    /// before a trigram's next two (`^` for one that is no letter).
    symbol: [u8; RUN + 2],
    word: [u8; RUN + 2],
    first: [u8; RUN + 2],
    /// Per byte: the symbol that ends its trigram (`$` for no letter),
    /// and the trigram's number.
    last: [u8; RUN],
    number: [u16; RUN],
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            symbol: [0; RUN + 2],
            word: [0; RUN + 2],
            first: [0; RUN + 2],
            last: [0; RUN],
            number: [0; RUN],
        }
    }
}

/// What [`ascii_block`] did: how many trigrams it wrote down, the state
/// after it (the symbols before the next trigram, whether a word is
/// open), and how many letters end it when it holds a byte that is no
/// letter (`None` when all are: the piece goes on).
struct Block {
    kept: usize,
    state: (u8, u8, bool),
    trailing: Option<usize>,
}

/// The trigrams that ASCII bytes close, into `out`, in order, from the
/// state `(sa, sb, open)` of the scan before them (the first two symbols
/// of the next trigram, and whether a word is open), as the scan takes
/// them one at a time, when no word in them reaches the piece length.
///
/// Byte `t` closes the trigram of the symbols before the two before it
/// (`^` when that is no letter), before it, and its own (`$` when it is
/// no letter), when the byte before it is a letter: nothing carries from
/// one byte to the next but what the bytes themselves say, so the first
/// two passes are loops over arrays that the compiler turns into vector
/// code, and only the last (keep the trigram or not) goes a byte at a
/// time.
#[inline(always)]
fn ascii_block(
    block: &[u8],
    (sa, sb, open): (u8, u8, bool),
    scratch: &mut Scratch,
    out: &mut Buffer,
) -> Block {
    let n = block.len();
    assert!(n <= RUN);
    let Scratch {
        symbol,
        word,
        first,
        last,
        number,
    } = scratch;
    first[0] = sa;
    symbol[1] = sb;
    word[1] = u8::from(open);
    first[1] = if open { sb } else { CARET };
    for (t, &b) in block.iter().enumerate() {
        let digit = b.wrapping_sub(b'0');
        let letter = (b | 0x20).wrapping_sub(b'a');
        let sc = if digit < 10 {
            digit
        } else if letter < 26 {
            letter + 10
        } else {
            SYMBOLS as u8
        };
        let is_word = sc < LETTERS;
        symbol[t + 2] = sc;
        word[t + 2] = u8::from(is_word);
        first[t + 2] = if is_word { sc } else { CARET };
        last[t] = if is_word { sc } else { DOLLAR };
    }
    let s = SYMBOLS as u16;
    for t in 0..n {
        number[t] = (u16::from(first[t]) * s + u16::from(symbol[t + 1])) * s + u16::from(last[t]);
    }
    let mut kept = 0;
    for t in 0..n {
        out[kept] = HAN_GRAMS + u32::from(number[t]);
        kept += usize::from(word[t + 1]);
    }
    let words = word[2..n + 2].iter().rev().take_while(|&&w| w == 1).count();
    Block {
        kept,
        state: (first[n], symbol[n + 1], word[n + 1] == 1),
        trailing: (words < n).then_some(words),
    }
}

/// The state of one scan: the word being cut into trigrams, and the
/// length of the current piece.
struct Scan<'a, S> {
    fold: &'a Fold,
    fast: &'a ScanTables,
    sink: S,
    /// Whether a word is open (`^` and at least one character).
    open: bool,
    /// The last two characters of the open word, and their symbols.
    a: char,
    b: char,
    sa: u8,
    sb: u8,
    /// Word characters in the current piece.
    piece: usize,
}

impl<'a, S: Sink> Scan<'a, S> {
    /// At the start of a text: no word open, an empty piece.
    fn new(fold: &'a Fold, fast: &'a ScanTables, sink: S) -> Self {
        Scan {
            fold,
            fast,
            sink,
            open: false,
            a: '^',
            b: '^',
            sa: 0,
            sb: 0,
            piece: 0,
        }
    }

    #[inline(always)]
    fn trigram(&mut self, c: char, sc: u8) {
        if let Some(i) = gram_index(self.sa, self.sb, sc) {
            self.sink.dense_gram(i);
        } else {
            self.sink.gram([self.a, self.b, c]);
        }
    }

    /// A character of a word other than Han, with its symbol.
    #[inline(always)]
    fn push(&mut self, c: char, sc: u8) {
        if self.open {
            self.trigram(c, sc);
        } else {
            // `^` and the first character: the first trigram needs one
            // more (or the `$` of the end).
            self.open = true;
            self.b = '^';
            self.sb = SYMBOL[b'^' as usize];
        }
        self.a = self.b;
        self.sa = self.sb;
        self.b = c;
        self.sb = sc;
    }

    /// Ends the open word with `$`.
    #[inline(always)]
    fn end_word(&mut self) {
        if self.open {
            self.trigram('$', SYMBOL[b'$' as usize]);
            self.open = false;
        }
    }

    /// One more character in the piece: at [`MAX_PIECE_CHARS`] the piece
    /// is cut, which ends the word.
    #[inline(always)]
    fn count(&mut self) {
        self.piece += 1;
        if self.piece == MAX_PIECE_CHARS {
            self.end_piece();
        }
    }

    /// A character that is not a word character ends the piece.
    #[inline(always)]
    fn end_piece(&mut self) {
        self.end_word();
        self.piece = 0;
    }

    /// A word character, normalized, lowered and folded.
    #[inline]
    fn word(&mut self, m: char) {
        if is_han(m) {
            self.end_word();
            let u = m as u32;
            if (FROM..TO).contains(&u) {
                self.sink.dense_han(usize::from(han_index(u)));
            } else {
                self.sink.han(m);
            }
        } else {
            self.push(m, symbol(m));
        }
        self.count();
    }

    /// An ASCII byte (or a full-width form of it) whose character NFKC
    /// leaves alone.
    #[inline(always)]
    fn ascii(&mut self, b: u8) {
        if b.is_ascii_alphanumeric() {
            let l = b.to_ascii_lowercase();
            self.push(char::from(l), SYMBOL[l as usize]);
            self.count();
        } else {
            self.end_piece();
        }
    }

    /// The ASCII bytes from `bytes[i]` on while the byte after each is
    /// ASCII too (so that no combining mark follows any of them), as
    /// [`Self::ascii`] would take them one by one. The index of the first
    /// byte it leaves, at least `i + 1`; `bytes[i]` and `bytes[i + 1]`
    /// must be ASCII.
    ///
    /// With no branch on where a word starts or ends, and its state in
    /// locals rather than in `self`, so that no step waits for the one
    /// before to go through memory: the trigram an ASCII byte closes is
    /// the last two symbols and its own (or `$` when it ends the word),
    /// written down always and kept only when a word is open, and the
    /// sink takes them [`RUN`] at a time.
    #[inline(always)]
    fn ascii_run(
        &mut self,
        buffer: &mut Buffer,
        scratch: &mut Scratch,
        bytes: &[u8],
        mut i: usize,
        steps: &mut u32,
        go_on: &mut impl FnMut() -> bool,
    ) -> Result<usize, Stop> {
        // A word open on characters outside the table takes the way of
        // one byte at a time until it ends or holds two table symbols.
        while self.open && (self.sa >= SYMBOLS as u8 || self.sb >= SYMBOLS as u8) {
            match bytes.get(i..i + 2) {
                Some(&[b, next]) if b < 0x80 && next < 0x80 => {}
                _ => return Ok(i),
            }
            self.step(steps, go_on)?;
            self.ascii(bytes[i]);
            i += 1;
        }
        let (mut sa, mut sb, mut open, mut piece) = (self.sa, self.sb, self.open, self.piece);
        loop {
            let from = i;
            // Up to the byte before the first that is not ASCII (or the
            // last byte), at most `RUN` bytes.
            let window = &bytes[i..bytes.len().min(i + RUN + 1)];
            let end = i + ascii_prefix(window).saturating_sub(1);
            let kept = if piece + (end - i) < MAX_PIECE_CHARS {
                // No word reaches the piece length in this block.
                let block = ascii_block(&bytes[i..end], (sa, sb, open), scratch, buffer);
                (sa, sb, open) = block.state;
                piece = match block.trailing {
                    Some(word) => word,
                    None => piece + (end - i),
                };
                i = end;
                block.kept
            } else {
                // A word may reach the piece length: a byte at a time.
                self.set_table_state(sa, sb, open, piece);
                while i < end {
                    self.ascii(bytes[i]);
                    i += 1;
                }
                (sa, sb, open, piece) = (self.sa, self.sb, self.open, self.piece);
                0
            };
            self.sink.dense_grams(&buffer[..kept]);
            let run = (i - from) as u32;
            if run >= *steps {
                if !go_on() {
                    return Err(Stop::Interrupted);
                }
                *steps = CHECK_EVERY;
            } else {
                *steps -= run;
            }
            if end < from + RUN {
                break;
            }
        }
        self.set_table_state(sa, sb, open, piece);
        Ok(i)
    }

    /// The state a run of ASCII kept in locals, back in `self`: when a
    /// word is open, its last two symbols are the table's (`^` or a
    /// letter, then a letter), and so are its characters.
    #[inline(always)]
    fn set_table_state(&mut self, sa: u8, sb: u8, open: bool, piece: usize) {
        (self.sa, self.sb, self.open, self.piece) = (sa, sb, open, piece);
        if open {
            self.a = symbol_char(sa);
            self.b = symbol_char(sb);
        }
    }

    /// The unified ideographs from `bytes[i]` on, the first of which is
    /// `u`, and the punctuation between them, as [`Self::ideograph`] and
    /// [`Self::ascii`] would take them one by one, with the length of the
    /// piece in a local and the sink taking the features [`RUN`] at a
    /// time. The index of the first byte it leaves. The first one's step
    /// is the caller's.
    ///
    /// A mark (`，`, `。`, `“` ...) only ends the piece, which holds no
    /// open word in a run of ideographs; it is taken with no branch of its
    /// own, Chinese text having one every few characters. Like any table
    /// character it may skip NFKC only when the character after it is
    /// ASCII or one of the table's; when the run ends on a mark followed
    /// by some other character, the mark is given back to the caller.
    ///
    /// With `BLOCK` 16 (only ever in [`scan_avx512`], with `VBMI`, and
    /// [`scan_avx512bw`], without) the run goes sixteen characters at a
    /// time where 64 bytes are left to read ([`wide::ideographs16`] or
    /// [`wide::ideographs16bw`]), with `BLOCK` 8 (only ever in
    /// [`scan_avx2`]) eight at a time where 32 bytes are left
    /// ([`wide::ideographs8`]), one at a time near the end; with `BLOCK`
    /// 0, one at a time throughout.
    #[inline(always)]
    fn ideograph_run<const BLOCK: usize, const VBMI: bool>(
        &mut self,
        buffer: &mut Buffer,
        bytes: &[u8],
        mut i: usize,
        u: u32,
        steps: &mut u32,
        go_on: &mut impl FnMut() -> bool,
    ) -> Result<usize, Stop> {
        self.ideograph(u);
        i += 3;
        if self.open {
            // It folds to a character that is not Han, which opened a
            // word: the next one goes the way of one at a time.
            return Ok(i);
        }
        // The piece's length is worked out at the end from where the last
        // mark was, so that no step waits on the one before (a piece cut
        // at MAX_PIECE_CHARS starts again at 0, and no word is open after
        // a Han character: nothing else to end). Every character of the
        // run has three bytes.
        let from = i;
        // The index of the byte after the last mark, or `from` for none.
        let mut after_mark = from;
        let hans = &mut *buffer;
        loop {
            let mut kept = 0;
            let batch = i;
            let end = i + 3 * RUN;
            while i < end {
                #[cfg(target_arch = "x86_64")]
                if BLOCK == 16 && i + 48 <= end {
                    if let (Some(chunk), Some(out)) =
                        (bytes.get(i..i + 64), hans.get_mut(kept..kept + 16))
                    {
                        let chunk: &[u8; 64] = chunk.try_into().expect("64 bytes");
                        let out: &mut [u32; 16] = out.try_into().expect("16 entries");
                        // SAFETY: `BLOCK == 16` only in `scan_avx512`,
                        // called only when `wide::available`, with
                        // `VBMI`, and in `scan_avx512bw`, called only
                        // when `wide::available16bw`, without.
                        #[allow(unsafe_code)]
                        let block = unsafe {
                            if VBMI {
                                wide::ideographs16(&self.fast.run, chunk, out)
                            } else {
                                wide::ideographs16bw(&self.fast.run, chunk, out)
                            }
                        };
                        kept += block.kept;
                        if block.through_mark > 0 {
                            after_mark = i + 3 * block.through_mark;
                        }
                        if block.taken < 16 {
                            i += 3 * block.taken;
                            break;
                        }
                        // Not `i += 3 * block.taken`: the next block's
                        // load waits on the branch, which is predicted,
                        // and not on this block's gather.
                        i += 48;
                        continue;
                    }
                }
                #[cfg(target_arch = "x86_64")]
                if BLOCK == 8 && i + 24 <= end {
                    if let (Some(chunk), Some(out)) =
                        (bytes.get(i..i + 32), hans.get_mut(kept..kept + 8))
                    {
                        let chunk: &[u8; 32] = chunk.try_into().expect("32 bytes");
                        let out: &mut [u32; 8] = out.try_into().expect("8 entries");
                        // SAFETY: `BLOCK == 8` only in `scan_avx2`, called
                        // only when `wide::available8`.
                        #[allow(unsafe_code)]
                        let block = unsafe { wide::ideographs8(&self.fast.run, chunk, out) };
                        kept += block.kept;
                        if block.through_mark > 0 {
                            after_mark = i + 3 * block.through_mark;
                        }
                        if block.taken < 8 {
                            i += 3 * block.taken;
                            break;
                        }
                        i += 24;
                        continue;
                    }
                }
                let Some(code) = self.fast.run_at(bytes, i) else {
                    break;
                };
                let mark = code == RUN_MARK;
                hans[kept] = u32::from(code);
                kept += usize::from(!mark);
                i += 3;
                after_mark = if mark { i } else { after_mark };
            }
            self.sink.dense_hans(&hans[..kept]);
            let taken = ((i - batch) / 3) as u32;
            if taken >= *steps {
                if !go_on() {
                    return Err(Stop::Interrupted);
                }
                *steps = CHECK_EVERY;
            } else {
                *steps -= taken;
            }
            if i < end {
                break;
            }
        }
        if after_mark == i && i > from && !self.fast.fast_at(bytes, i) {
            // The run ends on a mark before a character that takes NFKC:
            // the mark goes back to the caller, with it, and the piece
            // ends at the mark before, if there is one in the run.
            i -= 3;
            after_mark = from;
            let mut k = i;
            while k > from {
                if self.fast.run_at(bytes, k - 3) == Some(RUN_MARK) {
                    after_mark = k;
                    break;
                }
                k -= 3;
            }
        }
        let since = if after_mark == from {
            self.piece + (i - from) / 3
        } else {
            (i - after_mark) / 3
        };
        self.piece = since % MAX_PIECE_CHARS;
        Ok(i)
    }

    /// One character's step: `go_on` every [`CHECK_EVERY`].
    #[inline(always)]
    fn step(&mut self, steps: &mut u32, go_on: &mut impl FnMut() -> bool) -> Result<(), Stop> {
        *steps -= 1;
        if *steps == 0 {
            if !go_on() {
                return Err(Stop::Interrupted);
            }
            *steps = CHECK_EVERY;
        }
        Ok(())
    }

    /// A unified ideograph `u`.
    #[inline(always)]
    fn ideograph(&mut self, u: u32) {
        let i = self.fast.folded(u);
        if i == GENERAL {
            let c = char::from_u32(u).expect("an ideograph");
            self.word(self.fold.char(c));
        } else {
            self.end_word();
            self.sink.dense_han(usize::from(i));
            self.count();
        }
    }

    /// A stretch of text that takes NFKC, checked to be UTF-8 first.
    fn slow(
        &mut self,
        bytes: &[u8],
        steps: &mut u32,
        go_on: &mut impl FnMut() -> bool,
    ) -> Result<(), Stop> {
        let text = std::str::from_utf8(bytes).map_err(|_| Stop::NotUtf8)?;
        for n in crate::text::nfkc(text) {
            for lc in n.to_lowercase() {
                if lc.is_alphanumeric() {
                    self.word(self.fold.char(lc));
                } else {
                    self.end_piece();
                }
            }
            *steps -= 1;
            if *steps == 0 {
                if !go_on() {
                    return Err(Stop::Interrupted);
                }
                *steps = CHECK_EVERY;
            }
        }
        Ok(())
    }
}

/// Hands each version 3 feature of the text `bytes` to `sink`, in text
/// order: the features of
/// [`Fingerprinter::walk_v3`](super::Fingerprinter::walk_v3), with the
/// table's features by index. `go_on` is called at the start and then
/// every [`CHECK_EVERY`] characters.
///
/// The bytes are checked to be UTF-8 on the way, with no pass of its own:
/// every character handled fast is well-formed by construction, and every
/// other byte is in an NFKC stretch, which is checked before it is
/// normalized. The text is the concatenation of the two, so it is UTF-8
/// exactly when every stretch is ([`Stop::NotUtf8`] otherwise).
///
/// With `simd` AVX-512 on a processor that has it and VBMI
/// ([`wide::available`]), runs of ideographs go sixteen characters at a
/// time; with AVX-512 without VBMI ([`wide::available16bw`]) sixteen at a
/// time too, their bytes spread another way; with AVX2
/// ([`wide::available8`]), eight at a time, and the whole scan is
/// compiled for AVX2 (the loops of [`ascii_block`] in 32-byte vectors):
/// the same features in the same order.
// The call of a function compiled for instructions the processor was
// found to have.
#[allow(unsafe_code)]
pub(crate) fn scan<S: Sink>(
    fold: &Fold,
    tables: &ScanTables,
    bytes: &[u8],
    sink: S,
    go_on: impl FnMut() -> bool,
    work: &mut ScanWork,
    simd: Simd,
) -> Result<S, Stop> {
    #[cfg(target_arch = "x86_64")]
    if wide::available(simd) {
        // SAFETY: the processor has the instructions (`wide::available`).
        return unsafe { scan_avx512(fold, tables, bytes, sink, go_on, work) };
    }
    #[cfg(target_arch = "x86_64")]
    if wide::available16bw(simd) {
        // SAFETY: the processor has the instructions (`wide::available16bw`).
        return unsafe { scan_avx512bw(fold, tables, bytes, sink, go_on, work) };
    }
    #[cfg(target_arch = "x86_64")]
    if wide::available8(simd) {
        // SAFETY: the processor has the instructions (`wide::available8`).
        return unsafe { scan_avx2(fold, tables, bytes, sink, go_on, work) };
    }
    let _ = simd;
    scan_as::<S, 0, false>(fold, tables, bytes, sink, go_on, work)
}

/// [`scan_as`] with runs of ideographs sixteen characters at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,popcnt,lzcnt,bmi1,bmi2")]
fn scan_avx512<S: Sink>(
    fold: &Fold,
    tables: &ScanTables,
    bytes: &[u8],
    sink: S,
    go_on: impl FnMut() -> bool,
    work: &mut ScanWork,
) -> Result<S, Stop> {
    scan_as::<S, 16, true>(fold, tables, bytes, sink, go_on, work)
}

/// [`scan_as`] with runs of ideographs sixteen characters at a time,
/// without VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512bw,popcnt,lzcnt,bmi1,bmi2")]
fn scan_avx512bw<S: Sink>(
    fold: &Fold,
    tables: &ScanTables,
    bytes: &[u8],
    sink: S,
    go_on: impl FnMut() -> bool,
    work: &mut ScanWork,
) -> Result<S, Stop> {
    scan_as::<S, 16, false>(fold, tables, bytes, sink, go_on, work)
}

/// [`scan_as`] with runs of ideographs eight characters at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1,bmi2")]
fn scan_avx2<S: Sink>(
    fold: &Fold,
    tables: &ScanTables,
    bytes: &[u8],
    sink: S,
    go_on: impl FnMut() -> bool,
    work: &mut ScanWork,
) -> Result<S, Stop> {
    scan_as::<S, 8, false>(fold, tables, bytes, sink, go_on, work)
}

/// [`scan`], runs of ideographs `BLOCK` (16, 8, or 0: one) characters at
/// a time ([`Scan::ideograph_run`]), sixteen with VBMI's byte permutes
/// or without.
#[inline(always)]
fn scan_as<S: Sink, const BLOCK: usize, const VBMI: bool>(
    fold: &Fold,
    tables: &ScanTables,
    bytes: &[u8],
    sink: S,
    mut go_on: impl FnMut() -> bool,
    work: &mut ScanWork,
) -> Result<S, Stop> {
    let mut s = Scan::new(fold, tables, sink);
    let n = bytes.len();
    let ScanWork { buffer, scratch } = work;
    // The start of the stretch that takes NFKC, if one is open.
    let mut slow_from: Option<usize> = None;
    let mut steps = 1u32;
    let mut i = 0;
    while i < n {
        let b = bytes[i];
        // A run of ASCII: the run counts its own steps.
        if b < 0x80 && bytes.get(i + 1).is_some_and(|&next| next < 0x80) {
            if let Some(from) = slow_from.take() {
                s.slow(&bytes[from..i], &mut steps, &mut go_on)?;
            }
            i = s.ascii_run(buffer, scratch, bytes, i, &mut steps, &mut go_on)?;
            continue;
        }
        steps -= 1;
        if steps == 0 {
            if !go_on() {
                return Err(Stop::Interrupted);
            }
            steps = CHECK_EVERY;
        }
        // How many bytes this character takes, and the ASCII byte it is
        // handled as, or `None` to add it to the NFKC stretch.
        let (len, fast) = if b < 0x80 {
            // Fast only when the next character is fast too: an ASCII
            // letter composes with a combining mark after it.
            (1, tables.fast_at(bytes, i + 1).then_some(b))
        } else {
            match tables.class_at(bytes, i) {
                (SLOW, _) => (
                    match b {
                        0xF0.. => 4,
                        0xE0.. => 3,
                        _ => 2,
                    },
                    None,
                ),
                (IDEOGRAPH, u) => {
                    if let Some(from) = slow_from.take() {
                        s.slow(&bytes[from..i], &mut steps, &mut go_on)?;
                    }
                    i = s.ideograph_run::<BLOCK, VBMI>(
                        buffer, bytes, i, u, &mut steps, &mut go_on,
                    )?;
                    continue;
                }
                // A mark ends the piece, as a space does.
                (MARK, _) => (3, tables.fast_at(bytes, i + 3).then_some(b' ')),
                (wide, _) => (3, tables.fast_at(bytes, i + 3).then_some(wide & !WIDE)),
            }
        };
        match fast {
            None => {
                slow_from.get_or_insert(i);
            }
            Some(ascii) => {
                if let Some(from) = slow_from.take() {
                    s.slow(&bytes[from..i], &mut steps, &mut go_on)?;
                }
                s.ascii(ascii);
            }
        }
        i += len;
    }
    if let Some(from) = slow_from {
        s.slow(&bytes[from..], &mut steps, &mut go_on)?;
    }
    s.end_piece();
    Ok(s.sink)
}

#[cfg(test)]
mod tests {
    use super::super::table::feature_text;
    use super::super::v3::V3Feature;
    use super::super::{tests::shared, Kind};
    use super::*;
    use crate::testutil::splitmix;

    /// Writes down what the scan hands on, as `walk_v3` would name it.
    #[derive(Default)]
    struct Record(Vec<(Kind, String)>);

    impl Sink for Record {
        fn dense_han(&mut self, index: usize) {
            self.0.push((Kind::Han, feature_text(index)));
        }
        fn dense_gram(&mut self, index: usize) {
            self.0.push((Kind::Gram, feature_text(index)));
        }
        fn han(&mut self, c: char) {
            self.0.push((Kind::Han, c.to_string()));
        }
        fn gram(&mut self, g: [char; 3]) {
            self.0.push((Kind::Gram, g.iter().collect()));
        }
    }

    /// The scan of `bytes` with the shared tables, into a [`Record`], at
    /// each level of vector instructions the processor has (runs of
    /// ideographs sixteen at a time with AVX-512 and VBMI, eight at a
    /// time with AVX2), which must
    /// all agree: the baseline's, with `go_on` called as often. `go_on`
    /// is asked at the baseline's scan only.
    fn scan_bytes(bytes: &[u8], go_on: impl FnMut() -> bool) -> Result<Record, Stop> {
        let fp = shared();
        let at = |simd: Simd, go_on: &mut dyn FnMut() -> bool| {
            scan(
                &fp.fold,
                &fp.fast,
                bytes,
                Record::default(),
                go_on,
                &mut ScanWork::new(),
                simd,
            )
        };
        let mut go_on = go_on;
        let mut asked_baseline = 0;
        let baseline = at(Simd::Baseline, &mut || {
            asked_baseline += 1;
            go_on()
        });
        for simd in Simd::ALL.into_iter().filter(|s| s.available()) {
            let mut asked = 0;
            let other = at(simd, &mut || {
                asked += 1;
                baseline.is_ok() || asked == 1
            });
            // `go_on` as often at every level (a scan that goes on asks
            // it at the same places).
            if baseline.is_ok() {
                assert_eq!(asked, asked_baseline, "{simd:?}: calls of go_on");
            }
            match (&baseline, &other) {
                (Ok(a), Ok(b)) => assert_eq!(a.0, b.0, "{simd:?}: {bytes:x?}"),
                (Err(_), _) => {}
                (Ok(_), Err(e)) => panic!("{simd:?}: {e:?} for {bytes:x?}"),
            }
            if let (Err(Stop::NotUtf8), e) = (&baseline, &other) {
                assert_eq!(
                    e.as_ref().err(),
                    Some(&Stop::NotUtf8),
                    "{simd:?}: {bytes:x?}"
                );
            }
        }
        baseline
    }

    #[test]
    fn blocks_of_ideographs_take_what_one_at_a_time_takes() {
        // Runs of every length around the block of sixteen, the batch of
        // RUN and the piece length, with marks (which end the piece: a
        // word after a long run is cut where the piece reaches its
        // length), folds, characters that leave the run and bytes that
        // are not UTF-8 at every place in them.
        let others: Vec<&[u8]> = vec![
            "國".as_bytes(),
            "。".as_bytes(),
            "１".as_bytes(),
            "Ａ".as_bytes(),
            "\u{F900}".as_bytes(),
            "\u{301}".as_bytes(),
            "㐀".as_bytes(),
            "鿿".as_bytes(),
            "é".as_bytes(),
            " ".as_bytes(),
            b"\xE4\xB8",
            b"\xE0\xA0\x80",
            b"\xED\xA0\x80",
            b"\xE4\xB8\xC0",
            b"\xE4A\xAD",
        ];
        let mut state = 0xB10C_u64;
        for round in 0..6_000 {
            let len = (splitmix(&mut state) % 1400) as usize;
            // Per thousand pieces: marks, words of letters, anything else.
            let [marks, words, other] = [40, 20, 10].map(|most| {
                let r = splitmix(&mut state) % 4;
                [0, 1, most / 4, most][r as usize]
            });
            let mut bytes = Vec::new();
            for _ in 0..len {
                let r = splitmix(&mut state);
                let draw = r % 1000;
                let piece: &[u8] = if draw < marks {
                    "，".as_bytes()
                } else if draw < marks + words {
                    [&b"ab"[..], b"xyz", b"q"][((r >> 12) % 3) as usize]
                } else if draw < marks + words + other {
                    others[((r >> 12) % others.len() as u64) as usize]
                } else {
                    "字".as_bytes()
                };
                bytes.extend_from_slice(piece);
            }
            let scanned = scan_bytes(&bytes, || true);
            match std::str::from_utf8(&bytes) {
                Ok(text) => assert_eq!(scanned.unwrap().0, walked(text), "round {round}"),
                Err(_) => assert_eq!(scanned.err(), Some(Stop::NotUtf8), "round {round}"),
            }
        }
    }

    fn scanned(text: &str) -> Vec<(Kind, String)> {
        scan_bytes(text.as_bytes(), || true).unwrap().0
    }

    fn walked(text: &str) -> Vec<(Kind, String)> {
        let mut out = Vec::new();
        shared()
            .walk_v3(
                text,
                || true,
                |f| match f {
                    V3Feature::Han(c) => out.push((Kind::Han, c.to_string())),
                    V3Feature::Gram(g) => out.push((Kind::Gram, g.to_owned())),
                },
            )
            .unwrap();
        out
    }

    #[test]
    fn the_scan_hands_on_what_the_walk_does() {
        let cases = [
            "",
            "a",
            "ab",
            "Hello, World! 2024年",
            "中文abc中def",
            "國務院總理 abc國def",
            "cafe\u{301} e\u{301}\u{302}e",
            "a\u{301}",
            "中\u{301}文",
            "\u{F900}\u{F901}中 \u{F902}\u{2FA8}",
            "ＡＢＣ中文ａｂｃ１２３",
            "ﬁﬂ ﬃ",
            "ΟΔΟΣ Σ éèê àâä ñõö",
            "x\u{0}y\u{7f}z",
            "繐 ䷀䷁ ㄅ",
            "ａ\u{301}，\u{301}“引号”（１９９８）ＡＢＣ\u{308} ｶﾞ ￡ ㈱ № ℃ ⅷ ①",
            "１９９８年１月１日，新华社消息：“今天……”——记者",
            "《人民日报》１９９８年１月１日：新年献词。",
        ];
        for t in cases {
            assert_eq!(scanned(t), walked(t), "{t:?}");
        }
        // Runs past the piece length, of every kind of character.
        for long in [
            "a".repeat(MAX_PIECE_CHARS * 2 + 5),
            "字".repeat(MAX_PIECE_CHARS + 1),
            format!("{}é{}", "ab".repeat(300), "字x".repeat(400)),
            "é".repeat(MAX_PIECE_CHARS + 3),
        ] {
            assert_eq!(scanned(&long), walked(&long), "{} chars", long.len());
        }
        let pool: Vec<char> = "aZ9 ,.^$，。、“”《》：；！？…—·ＡＢｚ１２％＋＝㈱№℃ⅷ①￡↚←\u{338}中文字國語車門\u{301}\u{308}\u{327}é\u{F900}\u{F902}\u{2FA8}ＡＢ１，。\u{3000}Σσς\u{1100}\u{1161}İﬁ😀\u{200B}\u{FF9E}ｶ繐䷀㐀鿿𠀀"
            .chars()
            .collect();
        let mut state = 0x5EED_u64;
        for round in 0..30_000 {
            let len = (splitmix(&mut state) % 24) as usize;
            let t: String = (0..len)
                .map(|_| pool[(splitmix(&mut state) % pool.len() as u64) as usize])
                .collect();
            assert_eq!(scanned(&t), walked(&t), "round {round}: {t:?}");
        }
        // Long texts of long runs: words and runs of ideographs across
        // the sink's batches and the piece length, and a word that opens
        // on a character outside the table.
        let pool: Vec<char> = "aaaaaaaaaaBz9     .字字字字字字字國，é😀".chars().collect();
        for round in 0..400 {
            let len = (splitmix(&mut state) % 3000) as usize;
            let stretch = 1 + (splitmix(&mut state) % 700) as usize;
            let mut t = String::new();
            while t.chars().count() < len {
                let c = pool[(splitmix(&mut state) % pool.len() as u64) as usize];
                let n = 1 + (splitmix(&mut state) % stretch as u64) as usize;
                t.extend(std::iter::repeat_n(c, n));
            }
            assert_eq!(scanned(&t), walked(&t), "long round {round}");
        }
    }

    #[test]
    fn a_run_gives_back_a_mark_before_a_character_that_takes_nfkc() {
        let fp = shared();
        // (text, the byte where the run leaves off, the piece's length
        // then): a mark before a combining character goes back to the
        // caller, which puts both through NFKC, and the piece is as it was
        // before the mark; before anything else fast, the mark stays in
        // the run and ends the piece.
        let cases = [
            ("字，字，\u{301}", 9, 1),
            ("字字，\u{301}", 6, 2),
            ("字，，\u{301}", 6, 0),
            ("字，字，a", 12, 0),
            ("字，字，", 12, 0),
            ("字字字é", 9, 3),
        ];
        for (text, to, piece) in cases {
            let bytes = text.as_bytes();
            let mut s = Scan::new(&fp.fold, &fp.fast, Record::default());
            let mut work = ScanWork::new();
            let mut steps = CHECK_EVERY;
            let u = '字' as u32;
            let left = s
                .ideograph_run::<0, false>(&mut work.buffer, bytes, 0, u, &mut steps, &mut || true)
                .unwrap();
            assert_eq!((left, s.piece), (to, piece), "{text:?}");
        }
    }

    #[test]
    fn the_scan_stops_when_told() {
        let text = "天地玄黄".repeat(10);
        let mut calls = 0;
        let stopped = scan_bytes(text.as_bytes(), || {
            calls += 1;
            false
        });
        assert_eq!(stopped.err(), Some(Stop::Interrupted));
        assert_eq!(calls, 1);
        // A long text is checked every CHECK_EVERY characters, through
        // the NFKC stretches too.
        for unit in ["字", "a", "😀", "é", "字，", "，字"] {
            let text = unit.repeat(CHECK_EVERY as usize * 3);
            let mut calls = 0;
            scan_bytes(text.as_bytes(), || {
                calls += 1;
                true
            })
            .unwrap();
            assert!(calls >= 3, "{unit}: {calls} calls");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_found() {
        let check = |bytes: &[u8]| {
            let scanned = scan_bytes(bytes, || true);
            match std::str::from_utf8(bytes) {
                Ok(text) => assert_eq!(scanned.unwrap().0, walked(text), "{bytes:x?}"),
                Err(_) => assert_eq!(scanned.err(), Some(Stop::NotUtf8), "{bytes:x?}"),
            }
        };
        let good = "中文，ab１２ é😀".as_bytes();
        // Every cut and every single-byte change of a good text, and
        // the classic bad forms: a lone continuation byte, a cut
        // sequence, a surrogate, too long a form, bytes past U+10FFFF.
        for cut in 0..=good.len() {
            check(&good[..cut]);
            check(&good[cut..]);
        }
        for i in 0..good.len() {
            for b in [
                0x00, 0x41, 0x80, 0xBF, 0xC0, 0xE2, 0xE4, 0xED, 0xEF, 0xF0, 0xF5, 0xFF,
            ] {
                let mut bad = good.to_vec();
                bad[i] = b;
                check(&bad);
            }
        }
        for bad in [
            &b"\x80"[..],
            b"a\xE4\xB8",
            b"\xED\xA0\x80x",
            b"\xE0\x80\xAF",
            b"\xF4\x90\x80\x80",
            b"\xE4\xB8\xAD\xE4",
            b"\xEF\xBC",
        ] {
            check(bad);
            assert!(std::str::from_utf8(bad).is_err());
        }
    }
}
