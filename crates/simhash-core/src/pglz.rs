//! PostgreSQL's pglz format, decoded.
//!
//! A `text` value longer than about 2 kB is stored compressed, by default
//! with pglz, and PostgreSQL decompresses it before any function sees it.
//! Its decoder takes one item at a time (a literal byte, or a match: a
//! length and an offset back into what is already decoded), with a branch
//! on each control bit and a byte-by-byte copy of each match; on Chinese
//! text, where literals and three-byte matches alternate, that is most of
//! what reading such a text costs. [`decompress`] gives the same bytes with
//! the literals between two matches copied eight at a time and each match
//! sixteen bytes at a time where it does not overlap its own output, and
//! fails exactly where PostgreSQL's decoder fails (corrupt data), so the
//! extension can decode a value itself and fingerprint the same text.
//!
//! The format (PostgreSQL's `src/common/pg_lzcompress.c`): a control byte,
//! then up to eight items, bit 0 first. A clear bit is one literal byte. A
//! set bit is a match of two bytes, `LLLL OOOO` `OOOO OOOO` in the bits of
//! the first and second: length `L + 3` and offset `O` (1 to 4095) back
//! from where the match is written, a length of 18 followed by a third
//! byte to add (so up to 273). A match may overlap what it writes (an
//! offset below its length repeats the last `offset` bytes).

/// The compressed bytes are not a pglz stream of the size they claim:
/// PostgreSQL says "compressed pglz data is corrupt".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// The longest match: a length of 18 and 255 more.
const LONGEST: usize = 273;

/// Decodes `src` into the whole of `dst`, as PostgreSQL's
/// `pglz_decompress(src, dst.len(), check_complete = true)` does: the same
/// bytes, or [`Corrupt`] where it returns -1 (a match with no byte before
/// it to copy, an item cut off by the end of the input, or input and
/// output that do not end together). What `dst` holds after an error is
/// unspecified.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), Corrupt> {
    let (mut sp, mut dp) = (0, 0);
    // A control byte and its eight items read at most 1 + 8 * 3 bytes,
    // and a literal run is copied eight bytes at once: with this much
    // input left, no read of a group goes past the end.
    const GROUP_IN: usize = 1 + 8 * 3 + 8;
    while sp + GROUP_IN <= src.len() && dp < dst.len() {
        // The sentinel bit above the eight: the trailing zeros never count
        // more literals than the items left.
        let mut ctrl = u32::from(src[sp]) | 0x100;
        sp += 1;
        let mut items = 8;
        loop {
            // The literals up to the next match (or the group's end),
            // eight copied whatever their number.
            if dp + 8 > dst.len() {
                return finish(src, dst, sp, dp, ctrl, items);
            }
            let lits = ctrl.trailing_zeros() as usize;
            let eight: [u8; 8] = src[sp..sp + 8].try_into().expect("eight bytes");
            dst[dp..dp + 8].copy_from_slice(&eight);
            sp += lits;
            dp += lits;
            items -= lits;
            ctrl >>= lits;
            if items == 0 || dp >= dst.len() {
                break;
            }
            // A match.
            let (b0, b1) = (src[sp], src[sp + 1]);
            let mut len = usize::from(b0 & 0x0f) + 3;
            let off = (usize::from(b0 & 0xf0) << 4) | usize::from(b1);
            sp += 2;
            if len == 18 {
                len += usize::from(src[sp]);
                sp += 1;
            }
            if off == 0 || off > dp {
                return Err(Corrupt);
            }
            if dp + len + 32 > dst.len() {
                // Near the end of the output, where PostgreSQL cuts a
                // match short: byte by byte.
                let len = len.min(dst.len() - dp);
                copy_match(dst, dp, off, len);
                dp += len;
            } else if off >= 16 {
                // Sixteen bytes at a time, from bytes already written
                // (each copy reads below where it writes); the last copy's
                // extra bytes are written over by what follows. Two copies
                // whatever the length (most matches are of 3 to 17 bytes),
                // then the rest of a longer one.
                copy16(dst, dp - off, dp);
                copy16(dst, dp - off + 16, dp + 16);
                let mut k = 32;
                while k < len {
                    copy16(dst, dp - off + k, dp + k);
                    k += 16;
                }
                dp += len;
            } else {
                copy_match(dst, dp, off, len);
                dp += len;
            }
            ctrl >>= 1;
            items -= 1;
            if items == 0 || dp >= dst.len() {
                break;
            }
        }
        if items > 0 {
            // The output is full before the group's end.
            return finish(src, dst, sp, dp, ctrl, items);
        }
    }
    finish(src, dst, sp, dp, 0, 0)
}

/// Sixteen bytes of `dst` from `from` to `to`.
#[inline(always)]
fn copy16(dst: &mut [u8], from: usize, to: usize) {
    let chunk: [u8; 16] = dst[from..from + 16].try_into().expect("sixteen bytes");
    dst[to..to + 16].copy_from_slice(&chunk);
}

/// A match of `len` bytes at `dp`, `off` back, overlapping or not: each
/// byte as the one `off` before it, as the format says.
#[inline(always)]
fn copy_match(dst: &mut [u8], dp: usize, off: usize, len: usize) {
    for k in dp..dp + len {
        dst[k] = dst[k - off];
    }
}

/// The rest of [`decompress`] item by item, PostgreSQL's loop itself:
/// from `sp` and `dp` with `items` items of the control bits `ctrl` left
/// (none at the start of a group).
fn finish(
    src: &[u8],
    dst: &mut [u8],
    mut sp: usize,
    mut dp: usize,
    mut ctrl: u32,
    mut items: usize,
) -> Result<(), Corrupt> {
    loop {
        while items > 0 && sp < src.len() && dp < dst.len() {
            if ctrl & 1 != 0 {
                let b0 = src[sp];
                let b1 = *src.get(sp + 1).ok_or(Corrupt)?;
                let mut len = usize::from(b0 & 0x0f) + 3;
                let off = (usize::from(b0 & 0xf0) << 4) | usize::from(b1);
                sp += 2;
                if len == 18 {
                    len += usize::from(*src.get(sp).ok_or(Corrupt)?);
                    sp += 1;
                }
                if off == 0 || off > dp {
                    return Err(Corrupt);
                }
                let len = len.min(dst.len() - dp);
                copy_match(dst, dp, off, len);
                dp += len;
            } else {
                dst[dp] = src[sp];
                sp += 1;
                dp += 1;
            }
            ctrl >>= 1;
            items -= 1;
        }
        if !(sp < src.len() && dp < dst.len()) {
            break;
        }
        ctrl = u32::from(src[sp]);
        sp += 1;
        items = 8;
    }
    if sp == src.len() && dp == dst.len() {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// A pglz stream of `data` that [`decompress`] and PostgreSQL decode back
/// to `data`: greedy matches found through a table of the last place of
/// each three bytes, `longest` at most (3 to 273). Not PostgreSQL's
/// compressor (its streams differ, though any decoder of the format takes
/// both); for tests and benchmarks of the decoder.
pub fn compress(data: &[u8], longest: usize) -> Vec<u8> {
    let longest = longest.clamp(3, LONGEST);
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 1);
    let mut last = vec![usize::MAX; 1 << 12];
    let key = |i: usize| {
        let v = u32::from(data[i]) | u32::from(data[i + 1]) << 8 | u32::from(data[i + 2]) << 16;
        (v.wrapping_mul(2_654_435_761) >> 20) as usize
    };
    let (mut i, mut ctrl_at, mut bit) = (0, 0, 8);
    while i < data.len() {
        if bit == 8 {
            ctrl_at = out.len();
            out.push(0);
            bit = 0;
        }
        let mut len = 0;
        let mut off = 0;
        if i + 3 <= data.len() {
            let k = key(i);
            let at = last[k];
            last[k] = i;
            if at != usize::MAX && i - at <= 4095 {
                while len < longest && i + len < data.len() && data[at + len] == data[i + len] {
                    len += 1;
                }
                off = i - at;
            }
        }
        if len >= 3 {
            out[ctrl_at] |= 1 << bit;
            let short = len.min(18) - 3;
            out.push(((off >> 4) & 0xf0) as u8 | short as u8);
            out.push((off & 0xff) as u8);
            if len >= 18 {
                out.push((len - 18) as u8);
            }
            i += len;
        } else {
            out.push(data[i]);
            i += 1;
        }
        bit += 1;
    }
    out
}

/// [`decompress`] one item at a time, as PostgreSQL's own loop goes: the
/// oracle of the tests and the baseline of `bench/pglz.sh`.
pub fn decompress_item_by_item(src: &[u8], dst: &mut [u8]) -> Result<(), Corrupt> {
    finish(src, dst, 0, 0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::splitmix as next;

    /// PostgreSQL's loop, one item at a time: the oracle.
    fn reference(src: &[u8], size: usize) -> Result<Vec<u8>, Corrupt> {
        let mut dst = vec![0; size];
        decompress_item_by_item(src, &mut dst).map(|()| dst)
    }

    fn decoded(src: &[u8], size: usize) -> Result<Vec<u8>, Corrupt> {
        // Garbage in the output first: nothing may depend on zeros.
        let mut dst = vec![0xa5; size];
        decompress(src, &mut dst).map(|()| dst)
    }

    fn texts(seed: u64) -> Vec<Vec<u8>> {
        let mut state = seed;
        let zh = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质";
        let mut out = vec![
            Vec::new(),
            b"a".to_vec(),
            b"abcabcabcabcabcabcabcabc".to_vec(),
            vec![b'x'; 5000],
            zh.repeat(3).into_bytes(),
        ];
        let chars: Vec<char> = zh.chars().collect();
        for _ in 0..300 {
            let len = (next(&mut state) % 3000) as usize;
            let kind = next(&mut state) % 4;
            let mut s = Vec::new();
            while s.len() < len {
                match kind {
                    // Chinese from a small alphabet: three-byte matches.
                    0 => s.extend(chars[(next(&mut state) % 40) as usize].to_string().bytes()),
                    // Bytes from a few values: long and overlapping matches.
                    1 => s.push((next(&mut state) % 3) as u8),
                    // Anything: few matches.
                    2 => s.push(next(&mut state) as u8),
                    // Words repeated: runs of literals and long matches.
                    _ => {
                        let w = next(&mut state) % 20;
                        s.extend(format!("word{w} ").bytes());
                    }
                }
            }
            out.push(s);
        }
        out
    }

    #[test]
    fn what_is_compressed_decodes_back() {
        for data in texts(1) {
            for longest in [3, 7, 18, 19, 100, 273] {
                let packed = compress(&data, longest);
                assert_eq!(
                    reference(&packed, data.len()),
                    Ok(data.clone()),
                    "the oracle"
                );
                assert_eq!(
                    decoded(&packed, data.len()),
                    Ok(data.clone()),
                    "longest {longest}"
                );
            }
        }
    }

    #[test]
    fn the_compressor_writes_every_kind_of_item() {
        // Literals, short matches, long matches with their extra byte,
        // overlapping matches: what the other tests rely on being there.
        let data = [b"abcabcabc".as_slice(), &[b'z'; 300], b"0123456789abcabc"].concat();
        let packed = compress(&data, 273);
        assert!(
            packed.len() < data.len() / 4,
            "{} of {}",
            packed.len(),
            data.len()
        );
        // "abc" then a match of 6 at offset 3: overlapping.
        assert_eq!(packed[0] & 0x0f, 0b1000);
        assert_eq!(&packed[1..6], &[b'a', b'b', b'c', 3, 3]);
        // The run of z: one literal, then a match of 273 at offset 1.
        assert_eq!(packed[0] & 0b11_0000, 0b10_0000);
        assert_eq!(&packed[6..10], &[b'z', 0x0f, 1, 255]);
    }

    #[test]
    fn damaged_streams_fail_where_postgres_fails() {
        let mut state = 7;
        for data in texts(2).into_iter().filter(|d| !d.is_empty()) {
            let packed = compress(&data, 273);
            // Cut short, one byte too many, the wrong size claimed.
            for (src, size) in [
                (&packed[..packed.len() - 1], data.len()),
                (&[packed.as_slice(), &[0]].concat()[..], data.len()),
                (&packed[..], data.len() + 1),
                (&packed[..], data.len() - 1),
                (&packed[..], data.len() + 40),
            ] {
                assert_eq!(decoded(src, size), reference(src, size));
            }
            // Bytes changed at random: the same answer, error or bytes.
            for _ in 0..20 {
                let mut bad = packed.clone();
                let at = (next(&mut state) as usize) % bad.len();
                bad[at] ^= 1 << (next(&mut state) % 8);
                let size = data.len();
                assert_eq!(decoded(&bad, size), reference(&bad, size));
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state = 11;
        for _ in 0..3000 {
            let len = (next(&mut state) % 200) as usize;
            let src: Vec<u8> = (0..len).map(|_| next(&mut state) as u8).collect();
            let size = (next(&mut state) % 400) as usize;
            assert_eq!(decoded(&src, size), reference(&src, size));
        }
    }

    #[test]
    fn a_match_before_any_output_or_at_offset_zero_is_corrupt() {
        // The first item a match: nothing to copy from.
        assert_eq!(decoded(&[1, 0x00, 0x01], 3), Err(Corrupt));
        // A literal, then a match of offset zero.
        assert_eq!(decoded(&[0b10, b'a', 0x00, 0x00], 4), Err(Corrupt));
        // A literal, then offset 1 length 3: "aaaa".
        assert_eq!(decoded(&[0b10, b'a', 0x00, 0x01], 4), Ok(b"aaaa".to_vec()));
        // The same match cut short by the output's end, as PostgreSQL does.
        assert_eq!(decoded(&[0b10, b'a', 0x00, 0x01], 3), Ok(b"aaa".to_vec()));
    }
}
