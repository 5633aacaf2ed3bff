//! The fuzz targets' properties on stable Rust: the functions of
//! `fuzz/src/lib.rs` (the code the targets run) on a few thousand inputs
//! from a seeded generator, shaped like what the targets' seed corpora
//! hold, so `cargo test` checks them everywhere and `scripts/fuzz.sh` has
//! something to run where there is no nightly toolchain.

#[path = "../../../fuzz/src/lib.rs"]
mod props;

/// SplitMix64, as the core's unit tests use: the same inputs every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Pieces text is made of: common and rare ideographs, traditional ones
/// (folded), ASCII words and digits, full-width forms, punctuation,
/// combining marks, other scripts, characters outside the BMP.
const PIECES: &[&str] = &[
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工",
    "新华社北京一月一日电",
    "國們學說經濟時間發現",
    "㐀㑈䶵丂龥鿿",
    "𠀀𪚥𫝀",
    "豈更車",
    "the quick brown fox jumps over the lazy dog ",
    "SimHash 2002 ",
    "iPhone15Pro ",
    "ＦＵＬＬ－ＷＩＤＴＨ１２３",
    "，。、“”《》？！",
    "　",
    " ",
    "\n",
    "cafe\u{301} nai\u{308}ve ",
    "e\u{301}\u{302}",
    "Привет мир ",
    "Ελληνικά ",
    "日本語のかなカタカナ",
    "한국어",
    "ﬁﬂẞİ",
    "😀👍🏽",
    "0123456789",
];

/// Bytes that are not UTF-8 on their own.
const BAD: &[&[u8]] = &[
    b"\xff",
    b"\x80",
    b"\xe4\xb8",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xf4\x90\x80\x80",
];

/// A text of up to about `most` bytes from [`PIECES`], runs of one piece
/// repeated (long runs of ideographs, of ASCII), and now and then bytes
/// that are not UTF-8 (`bad` in 1000 of the pieces).
fn text(rng: &mut Rng, most: usize, bad: usize) -> Vec<u8> {
    let len = rng.below(most + 1);
    let mut out = Vec::with_capacity(len + 64);
    while out.len() < len {
        if rng.below(1000) < bad {
            out.extend_from_slice(BAD[rng.below(BAD.len())]);
            continue;
        }
        let piece = rng.pick(PIECES).as_bytes();
        let times = if rng.below(8) == 0 {
            1 + rng.below(40)
        } else {
            1
        };
        for _ in 0..times {
            // Part of a piece now and then: cut anywhere, even inside a
            // character.
            if rng.below(16) == 0 {
                out.extend_from_slice(&piece[..rng.below(piece.len() + 1)]);
            } else {
                out.extend_from_slice(piece);
            }
        }
    }
    out
}

/// Random bytes, `n` of them.
fn noise(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next() as u8).collect()
}

#[test]
fn pglz_decodes_as_the_reference_and_never_panics() {
    let mut rng = Rng(0x70_67_6c_7a);
    for _ in 0..3000 {
        let mode = rng.below(3) as u8;
        let mut input = vec![mode];
        match mode {
            0 => {
                // A stream: the core's compressor's, damaged or not, or
                // noise.
                let plain = text(&mut rng, 600, 5);
                let mut stream = if rng.below(4) == 0 {
                    let n = rng.below(200);
                    noise(&mut rng, n)
                } else {
                    simhash_core::pglz::compress(&plain, 3 + rng.below(271))
                };
                if !stream.is_empty() && rng.below(2) == 0 {
                    let at = rng.below(stream.len());
                    stream[at] ^= 1 << rng.below(8);
                }
                if rng.below(4) == 0 {
                    stream.truncate(rng.below(stream.len() + 1));
                }
                input.extend((plain.len() as u16).to_le_bytes());
                input.extend(stream);
            }
            1 => {
                let n = rng.below(400);
                input.extend(noise(&mut rng, n));
            }
            _ => input.extend(text(&mut rng, 800, 5)),
        }
        props::pglz(&input);
    }
    // Every length of match, overlapping or not, at every offset the
    // script can reach.
    for len in 0..=u8::MAX {
        props::pglz(&[1, 0, b'a', 2, b'b', 1, len, 0, 1, 1, len, 0, 3, 0, b'c']);
    }
}

#[test]
fn hex_parses_exactly_sixteen_digits_and_round_trips() {
    let mut rng = Rng(0x68_65_78);
    let digits = b"0123456789abcdefABCDEF";
    for _ in 0..20_000 {
        let len = match rng.below(4) {
            0 => rng.below(20),
            _ => 16,
        };
        let mut literal: Vec<u8> = (0..len).map(|_| *rng.pick(digits)).collect();
        if !literal.is_empty() && rng.below(3) == 0 {
            let at = rng.below(literal.len());
            literal[at] = rng.next() as u8;
        }
        props::hex(&literal);
        props::hex(&noise(&mut rng, 9));
    }
}

#[test]
fn fingerprints_agree_at_every_level_and_after_a_stopped_walk() {
    let mut rng = Rng(0x73_63_61_6e);
    for round in 0..1500 {
        // Mostly a walk stopped at the start or after one check; every
        // twentieth a longer one (a few hundred kB: slow in a debug build).
        let stop = if round % 20 == 0 {
            rng.below(4)
        } else {
            rng.below(2)
        };
        let longer = if round % 20 == 0 { rng.below(2) } else { 0 };
        let header = (rng.next() as u8 & 0xf0) | (longer << 2 | stop) as u8;
        let bad = if rng.below(3) == 0 { 20 } else { 0 };
        let mut input = vec![header];
        input.extend(text(&mut rng, 400, bad));
        props::scan(&input);
    }
}

#[test]
fn a_walk_stopped_in_a_long_run_of_ideographs_leaves_nothing_behind() {
    // A stop inside the run (the second call of `go_on`), then texts
    // made of the same characters, at every level.
    let chinese = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年";
    for fp in props::levels() {
        for (stop_at, tail) in [(2, &b""[..]), (3, b"\xff"), (1, b"")] {
            let part = [chinese.as_bytes(), tail].concat();
            let next: [&[u8]; 3] = [
                "中国人民".as_bytes(),
                chinese.as_bytes(),
                b"the quick brown fox",
            ];
            props::stopped_then_fresh(fp, &part, stop_at, 0, &next);
        }
    }
}

#[test]
fn runs_of_ideographs_broken_at_every_offset_agree_at_every_level() {
    // A run of ideographs of each length around the kernels' blocks
    // (eight with AVX2, sixteen with AVX-512), after a lead that shifts
    // it against the bytes, with one piece that ends or interrupts it at
    // every offset: ASCII, punctuation that stays in the run, full-width
    // forms, a fold, a combining mark, characters of two and four bytes,
    // bytes that are not UTF-8. Every level gives the plain path's
    // fingerprint, or the error.
    use simhash_core::{BytesError, Version};
    let han: Vec<char> =
        "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工"
            .chars()
            .collect();
    let breakers: &[&[u8]] = &[
        b"a",
        b" ",
        "，".as_bytes(),
        "。“".as_bytes(),
        "Ａ".as_bytes(),
        "國".as_bytes(),
        "\u{F900}".as_bytes(),
        "\u{301}".as_bytes(),
        "é".as_bytes(),
        "😀".as_bytes(),
        b"\xff",
        b"\xe4\xb8",
        b"\xed\xa0\x80",
    ];
    let levels = props::levels();
    for lead in [&b""[..], b"x", "中文 ".as_bytes()] {
        for len in [1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 33, 48, 49, 70] {
            for at in 0..=len {
                for breaker in breakers {
                    let mut body = lead.to_vec();
                    for (i, c) in han.iter().cycle().take(len).enumerate() {
                        if i == at {
                            body.extend_from_slice(breaker);
                        }
                        let mut buf = [0u8; 4];
                        body.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                    if at == len {
                        body.extend_from_slice(breaker);
                    }
                    let want = match std::str::from_utf8(&body) {
                        Ok(text) => Ok(levels[0].fingerprint_v3_reference(text)),
                        Err(_) => Err(BytesError::NotUtf8),
                    };
                    for fp in levels {
                        let got = fp.fingerprint_bytes_checked_as(Version::V3, &body, || true);
                        assert_eq!(got, want, "{:?}: {body:x?}", fp.simd());
                    }
                }
            }
        }
    }
}
