//! The properties the fuzz targets check, one function per target, each
//! taking the fuzzer's bytes and panicking when a property fails.
//!
//! The same functions run on stable Rust, on a few thousand inputs from a
//! seeded generator, in `crates/simhash-core/tests/fuzz_props.rs`, which
//! includes this file as a module: so this file uses nothing but
//! `simhash_core` and the standard library.
//!
//! - [`pglz`]: the decoder against a reference decoder written here from
//!   the format alone, on raw bytes, on streams written here from a
//!   script of items (every kind of item, overlapping matches), on those
//!   streams damaged, and on the core's own compressor's output;
//! - [`scan`]: version 3 of arbitrary bytes at every level of vector
//!   instructions the processor has against the plain path
//!   (`fingerprint_v3_reference`), versions 1 and 2 on short inputs, and
//!   a walk stopped at an arbitrary point (or by invalid UTF-8) followed by
//!   another text in the same thread;
//! - [`hex`]: the text form of a fingerprint.

use std::sync::OnceLock;

use simhash_core::cpu::Simd;
use simhash_core::{hex, pglz, BytesError, Fingerprinter, Version};

/// The longest output the raw-bytes case decodes: a three-byte item gives
/// at most 273 bytes, so this is never reached by a fuzz input of a few kB
/// with its size taken from the stream.
const MOST_DECODED: usize = 1 << 20;

/// The pglz decoder on the fuzzer's bytes. The first byte picks the case:
///
/// - 0: the rest is a size (two bytes) and a stream: decoded at the size
///   it decodes to by itself, one byte either side of it, and the size
///   given;
/// - 1: the rest is a script of items, written as a stream here: it
///   decodes to what the script says, and damaged (cut short, a byte
///   changed, a byte more, another size claimed) decodes as the
///   reference does;
/// - 2: the rest is a text: the core's compressor's stream decodes back.
///
/// Each decode is checked against [`reference_decode`] (the same bytes or
/// the same error) and against the core's item-by-item decoder, with the
/// output buffer full of garbage first.
pub fn pglz(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            if rest.len() < 2 {
                return;
            }
            let asked = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
            let src = &rest[2..];
            let mut sizes = vec![asked % (4 * src.len() + 64)];
            if let Some(n) = natural_size(src) {
                sizes.extend([n, n + 1]);
                if n > 0 {
                    sizes.push(n - 1);
                }
            }
            for size in sizes {
                same_as_reference(src, size);
            }
        }
        1 => {
            let (stream, plain) = write_script(rest);
            assert_eq!(
                decode(&stream, plain.len()),
                Ok(plain.clone()),
                "a stream written from a script decodes to what it says"
            );
            same_as_reference(&stream, plain.len());
            // The damage, from the script's last bytes.
            let knob = |k: usize| usize::from(*rest.get(rest.len().wrapping_sub(k)).unwrap_or(&0));
            if !stream.is_empty() {
                let cut = stream.len() * knob(1) / 256;
                same_as_reference(&stream[..cut], plain.len());
                let mut bad = stream.clone();
                let at = (knob(2) << 8 | knob(3)) % bad.len();
                bad[at] ^= (knob(4) as u8).max(1);
                same_as_reference(&bad, plain.len());
                same_as_reference(&bad[..cut.max(at)], plain.len());
            }
            let longer = [stream.as_slice(), &[knob(5) as u8]].concat();
            same_as_reference(&longer, plain.len());
            same_as_reference(&stream, plain.len() + 1 + knob(6));
            same_as_reference(&stream, plain.len().saturating_sub(1 + knob(7)));
        }
        _ => {
            let longest = [3, 17, 18, 19, 100, 273][usize::from(*rest.first().unwrap_or(&0)) % 6];
            // Repeated, so that long matches are there to find.
            let times = 1 + usize::from(*rest.get(1).unwrap_or(&0) % 4);
            let plain = rest.repeat(times);
            let stream = pglz::compress(&plain, longest);
            assert_eq!(
                decode(&stream, plain.len()),
                Ok(plain.clone()),
                "the core's compressor, longest {longest}"
            );
            same_as_reference(&stream, plain.len());
        }
    }
}

/// [`pglz::decompress`] into a buffer of garbage.
fn decode(src: &[u8], size: usize) -> Result<Vec<u8>, pglz::Corrupt> {
    let mut dst = vec![0xa5; size];
    pglz::decompress(src, &mut dst).map(|()| dst)
}

/// The decoder, the core's item-by-item decoder and [`reference_decode`]
/// agree on `src` decoded to `size` bytes.
fn same_as_reference(src: &[u8], size: usize) {
    let want = reference_decode(src, size);
    assert_eq!(decode(src, size), want, "decompress, size {size}, {src:x?}");
    let mut dst = vec![0x5a; size];
    let by_item = pglz::decompress_item_by_item(src, &mut dst).map(|()| dst);
    assert_eq!(by_item, want, "decompress_item_by_item, size {size}");
}

/// PostgreSQL's `pglz_decompress(src, size, check_complete = true)` as the
/// format reads (see `crates/simhash-core/src/pglz.rs`), written for
/// clarity and nothing else: a control byte, then up to eight items, bit 0
/// first; a clear bit is a literal byte, a set bit a match `LLLL OOOO`
/// `OOOO OOOO` of length `L + 3` (18 takes one more byte to add) and
/// offset `O` back from where it is written. It stops when the input or
/// the output is used up, a match is cut short by the output's end, and
/// the input and output must end together.
pub fn reference_decode(src: &[u8], size: usize) -> Result<Vec<u8>, pglz::Corrupt> {
    let mut out: Vec<u8> = Vec::new();
    let mut sp = 0;
    'groups: while sp < src.len() && out.len() < size {
        let control = src[sp];
        sp += 1;
        for bit in 0..8 {
            if sp >= src.len() || out.len() >= size {
                break 'groups;
            }
            if control & (1 << bit) == 0 {
                out.push(src[sp]);
                sp += 1;
                continue;
            }
            let (Some(&b0), Some(&b1)) = (src.get(sp), src.get(sp + 1)) else {
                return Err(pglz::Corrupt);
            };
            sp += 2;
            let mut len = usize::from(b0 & 0x0f) + 3;
            let off = usize::from(b0 >> 4) << 8 | usize::from(b1);
            if len == 18 {
                let Some(&extra) = src.get(sp) else {
                    return Err(pglz::Corrupt);
                };
                sp += 1;
                len += usize::from(extra);
            }
            if off == 0 || off > out.len() {
                return Err(pglz::Corrupt);
            }
            for _ in 0..len.min(size - out.len()) {
                out.push(out[out.len() - off]);
            }
        }
    }
    if sp == src.len() && out.len() == size {
        Ok(out)
    } else {
        Err(pglz::Corrupt)
    }
}

/// The size `src` decodes to when nothing cuts it short, if it is a whole
/// stream that decodes at that size (and no longer than [`MOST_DECODED`]).
fn natural_size(src: &[u8]) -> Option<usize> {
    // Each item's length, added up until the input ends.
    let mut size = 0usize;
    let mut sp = 0;
    while sp < src.len() {
        let control = src[sp];
        sp += 1;
        for bit in 0..8 {
            if sp >= src.len() {
                break;
            }
            if control & (1 << bit) == 0 {
                sp += 1;
                size += 1;
            } else {
                let mut len = usize::from(*src.get(sp)? & 0x0f) + 3;
                sp += 2;
                if len == 18 {
                    len += usize::from(*src.get(sp)?);
                    sp += 1;
                }
                size += len;
            }
        }
    }
    (sp == src.len() && size <= MOST_DECODED && reference_decode(src, size).is_ok()).then_some(size)
}

/// A pglz stream written from a script, and what it decodes to: each item
/// of the script a byte `t` and what follows it. An even `t` is a literal
/// (the next byte); an odd `t` a match, when anything is written yet, of
/// length `3 + b % 271` (`b` the next byte: every length the format has,
/// 18 and above with the extra byte) and offset `1 + o % min(written,
/// 4095)` (`o` the two bytes after), overlapping what it writes when the
/// offset is below the length.
pub fn write_script(script: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut stream = Vec::new();
    let mut plain: Vec<u8> = Vec::new();
    let mut control_at = 0;
    let mut items = 8;
    let mut bytes = script.iter().copied();
    while let Some(t) = bytes.next() {
        if items == 8 {
            control_at = stream.len();
            stream.push(0);
            items = 0;
        }
        if t % 2 == 0 || plain.is_empty() {
            let b = bytes.next().unwrap_or(t);
            stream.push(b);
            plain.push(b);
        } else {
            let len = 3 + usize::from(bytes.next().unwrap_or(0)) % 271;
            let o = usize::from(bytes.next().unwrap_or(0)) << 8
                | usize::from(bytes.next().unwrap_or(0));
            let off = 1 + o % plain.len().min(4095);
            stream[control_at] |= 1 << items;
            stream.push(((off >> 4) & 0xf0) as u8 | (len.min(18) - 3) as u8);
            stream.push((off & 0xff) as u8);
            if len >= 18 {
                stream.push((len - 18) as u8);
            }
            for _ in 0..len {
                plain.push(plain[plain.len() - off]);
            }
        }
        items += 1;
    }
    (stream, plain)
}

/// One fingerprinter per level of vector instructions the processor has,
/// narrowest first (building one takes about a second).
pub fn levels() -> &'static [Fingerprinter] {
    static LEVELS: OnceLock<Vec<Fingerprinter>> = OnceLock::new();
    LEVELS.get_or_init(|| {
        Simd::ALL
            .into_iter()
            .filter(|s| s.available())
            .map(|s| Fingerprinter::new().with_simd(s))
            .collect()
    })
}

/// The plain path's version 3 of `bytes`: the error for bytes that are
/// not UTF-8.
fn expected_v3(bytes: &[u8]) -> Result<Option<u64>, BytesError> {
    let text = std::str::from_utf8(bytes).map_err(|_| BytesError::NotUtf8)?;
    Ok(levels()[0].fingerprint_v3_reference(text))
}

/// How many characters the scan reads between two calls of `go_on`
/// (`CHECK_EVERY` in `fingerprint/scan.rs`): a stopped walk is made long
/// enough to be stopped half way.
const CHECK_EVERY: usize = 16 * 1024;

/// The fingerprint on the fuzzer's bytes. The first byte is a header:
/// bits 0-1 which call of `go_on` stops the stopped walk (the first is at
/// the start), bits 2-3 how much longer than that the walk's text is
/// made, bits 4-7 where the rest is split into the stopped walk's text and
/// the next text (1 to 16 seventeenths of the way). The rest:
///
/// 1. at every level, `fingerprint_bytes_checked_as` of version 3 is the
///    plain path's fingerprint, or the error for bytes that are not UTF-8;
///    `fingerprint_as` of the text is too;
/// 2. versions 1 and 2 (up to 512 bytes: jieba is slow) give the error
///    exactly for bytes that are not UTF-8, and otherwise what the text
///    gives;
/// 3. at the level the header's bits 4-5 pick, a walk over the first part
///    (repeated to reach the call of `go_on` that stops it) ends as it
///    should (stopped, not UTF-8, or the right fingerprint), and then, in
///    the same thread, the second part and the first part's valid prefix
///    give what the plain path gives.
pub fn scan(data: &[u8]) {
    let Some((&header, body)) = data.split_first() else {
        return;
    };
    let levels = levels();
    let want = expected_v3(body);
    for fp in levels {
        let got = fp.fingerprint_bytes_checked_as(Version::V3, body, || true);
        assert_eq!(got, want, "{:?}: {body:x?}", fp.simd());
        if let Ok(text) = std::str::from_utf8(body) {
            assert_eq!(
                Ok(fp.fingerprint_as(Version::V3, text)),
                want,
                "{:?}: {text:?}",
                fp.simd()
            );
        }
    }

    if body.len() <= 512 {
        let fp = &levels[levels.len() - 1];
        for version in [Version::V1, Version::V2] {
            let got = fp.fingerprint_bytes_checked_as(version, body, || true);
            match std::str::from_utf8(body) {
                Ok(text) => assert_eq!(got, Ok(fp.fingerprint_as(version, text)), "{version:?}"),
                Err(_) => assert_eq!(got, Err(BytesError::NotUtf8), "{version:?}"),
            }
        }
    }

    let stop_at = 1 + usize::from(header & 3);
    let longer = usize::from(header >> 2 & 3);
    let split = body.len() * (1 + usize::from(header >> 4)) / 17;
    let (first, second) = body.split_at(split);
    let fp = &levels[usize::from(header >> 4) % levels.len()];
    stopped_then_fresh(fp, first, stop_at, longer, &[second]);
}

/// A version 3 walk of `part` repeated (to about `stop_at - 1 + longer`
/// times [`CHECK_EVERY`] characters, when it is not empty) and stopped at
/// the `stop_at`-th call of `go_on` ends as it should; then each of
/// `next`, and the valid UTF-8 prefix of `part`, give in the same thread
/// what the plain path gives.
pub fn stopped_then_fresh(
    fp: &Fingerprinter,
    part: &[u8],
    stop_at: usize,
    longer: usize,
    next: &[&[u8]],
) {
    let mut text = part.to_vec();
    if !part.is_empty() {
        // Enough bytes for that many ideographs (three bytes each): more
        // characters of ASCII, fewer of four-byte characters.
        let bytes = (stop_at - 1 + longer) * CHECK_EVERY * 3 + 1;
        while text.len() < bytes {
            text.extend_from_slice(part);
        }
    }
    let mut calls = 0;
    let walk = fp.fingerprint_bytes_checked_as(Version::V3, &text, || {
        calls += 1;
        calls < stop_at
    });
    match walk {
        Err(BytesError::Interrupted) => {
            assert_eq!(calls, stop_at, "stopped at the call that said stop")
        }
        Err(BytesError::NotUtf8) => {
            assert!(std::str::from_utf8(&text).is_err(), "NotUtf8 of UTF-8")
        }
        Ok(_) => assert_eq!(
            walk,
            expected_v3(&text),
            "{:?}: a walk that went to the end",
            fp.simd()
        ),
    }
    let valid = match std::str::from_utf8(part) {
        Ok(_) => part,
        Err(e) => &part[..e.valid_up_to()],
    };
    for probe in next.iter().copied().chain([valid]) {
        let got = fp.fingerprint_bytes_checked_as(Version::V3, probe, || true);
        assert_eq!(
            got,
            expected_v3(probe),
            "{:?}: {probe:x?} after a walk of {} bytes that ended {walk:?} (stop at call {stop_at})",
            fp.simd(),
            text.len(),
        );
    }
}

/// The text form on the fuzzer's bytes: parsing never panics, accepts
/// exactly 16 hexadecimal digits (the value `u64::from_str_radix` reads)
/// and otherwise names the error the rules give; formatting gives 16
/// lower-case digits that parse back, in either case. The first eight
/// bytes, as the 64-bit value PostgreSQL's binary form of the type
/// carries (bigint's own, so the core has no reader of it), also go
/// through formatting, the bands and the distance.
pub fn hex(data: &[u8]) {
    let parsed = hex::parse(data);
    let first_bad = data.iter().position(|b| !b.is_ascii_hexdigit());
    let want = if data.is_empty() {
        Err(hex::ParseError::Empty)
    } else if let Some(at) = first_bad {
        Err(hex::ParseError::Digit(at))
    } else if data.len() != 16 {
        Err(hex::ParseError::Length(data.len()))
    } else {
        let text = std::str::from_utf8(data).expect("hex digits are ASCII");
        Ok(u64::from_str_radix(text, 16).expect("16 hex digits fit"))
    };
    assert_eq!(parsed, want, "{data:x?}");
    match parsed {
        Ok(v) => assert_eq!(
            hex::format(v).as_bytes(),
            data.to_ascii_lowercase(),
            "{data:x?}"
        ),
        Err(e) => assert!(!e.to_string().is_empty()),
    }

    let mut word = [0u8; 8];
    let n = data.len().min(8);
    word[..n].copy_from_slice(&data[..n]);
    let x = u64::from_be_bytes(word);
    let text = hex::format(x);
    assert_eq!(text.len(), 16);
    assert!(
        text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{text}"
    );
    assert_eq!(hex::parse(text.as_bytes()), Ok(x));
    assert_eq!(hex::parse(text.to_ascii_uppercase().as_bytes()), Ok(x));
    for n in -1..=4i64 {
        let band = simhash_core::band(x, n);
        if (0..4).contains(&n) {
            let digits = &text[4 * n as usize..4 * n as usize + 4];
            assert_eq!(
                band,
                Some(u16::from_str_radix(digits, 16).expect("four digits"))
            );
        } else {
            assert_eq!(band, None);
        }
    }
    let y = x.rotate_left(u32::from(data.get(8).copied().unwrap_or(0)));
    assert_eq!(simhash_core::hamming(x, y), (x ^ y).count_ones());
    assert_eq!(simhash_core::hamming(x, x), 0);
}
