//! The second candidate source beside the fingerprint, measured: of
//! edited copies of real texts, which become candidates by the
//! fingerprint within 11, by a shared `simhash_lsh` key, or by either, and
//! which of those the rule of record's verification then keeps; of pairs
//! of different texts, how many share a key (the rows a query verifies)
//! and how many the verification lets through. Baseline (the fingerprint
//! alone) and candidate (either source) come from the same pairs in one
//! run.
//!
//! Reads JSON lines `{"text": ...}` on standard input (`bench/lsh.sh`
//! feeds `en_docs`); texts of 200 characters or more are the long
//! originals, the first 60-199 characters of each (cut at a space) the
//! short ones. Edits, each seeded: letters replaced at scattered places (3,
//! 5 and 8% of the characters), and a footer as long as the text
//! appended (short texts).

use std::io::{self, BufRead};

use serde::Deserialize;
use simhash_core::similarity::similarity;
use simhash_core::{hamming, lsh, Fingerprinter, Version};

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `rate` of the characters, letters only, replaced by random letters.
fn scatter(text: &str, rate: f64, seed: &mut u64) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let letters: Vec<usize> = (0..chars.len())
        .filter(|&i| chars[i].is_alphabetic())
        .collect();
    let edits = ((chars.len() as f64) * rate).round() as usize;
    for _ in 0..edits.min(letters.len()) {
        let i = letters[(next(seed) % letters.len() as u64) as usize];
        chars[i] = (b'a' + (next(seed) % 26) as u8) as char;
    }
    chars.into_iter().collect()
}

/// The boilerplate appended to a short text, as long as the text.
fn footer(text: &str) -> String {
    const BOILERPLATE: &str = "Subscribe to our newsletter for more stories like this one. \
        Follow us on social media, share this article with your friends, and read our \
        privacy policy and terms of use before you leave a comment below. ";
    let want = text.chars().count();
    let tail: String = BOILERPLATE.chars().cycle().take(want).collect();
    format!("{text}\n\n{tail}")
}

/// The first 60 to 199 characters of a text, cut at a space.
fn short(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().take(199).collect();
    let cut = chars.iter().rposition(|&c| c == ' ')?;
    (cut >= 60).then(|| chars[..cut].iter().collect())
}

struct Keys {
    fp: Option<u64>,
    lsh: Option<[i32; lsh::BANDS]>,
}

fn keys(fp: &Fingerprinter, text: &str) -> Keys {
    Keys {
        fp: fp.fingerprint_as(Version::V3, text),
        lsh: lsh::keys(text),
    }
}

fn shares(a: &Keys, b: &Keys) -> bool {
    match (&a.lsh, &b.lsh) {
        (Some(x), Some(y)) => x.iter().zip(y).any(|(p, q)| p == q),
        _ => false,
    }
}

fn within(a: &Keys, b: &Keys, k: u32) -> bool {
    matches!((a.fp, b.fp), (Some(x), Some(y)) if hamming(x, y) <= k)
}

const K: u32 = 11;
const THRESHOLD: f64 = 0.82;

fn main() {
    let fp = Fingerprinter::new();
    let mut long = Vec::new();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Ok(Doc { text: Some(t) }) = serde_json::from_str::<Doc>(&line) {
            if t.chars().count() >= 200 {
                long.push(t);
            }
        }
    }
    let limit: usize = std::env::var("DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    long.truncate(limit);
    let shorts: Vec<String> = long.iter().filter_map(|t| short(t)).collect();
    println!(
        "texts: {} long, {} short; k = {K}, threshold {THRESHOLD}",
        long.len(),
        shorts.len()
    );
    println!("| copies | pairs | fingerprint within {K} | shared lsh key | either | verified: fingerprint | verified: either |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut seed = 1998;
    type Edit = Box<dyn Fn(&str, &mut u64) -> String>;
    let cases: Vec<(&str, &Vec<String>, Edit)> = vec![
        (
            "long, 3% letters",
            &long,
            Box::new(|t: &str, s: &mut u64| scatter(t, 0.03, s)),
        ),
        (
            "long, 5% letters",
            &long,
            Box::new(|t: &str, s: &mut u64| scatter(t, 0.05, s)),
        ),
        (
            "long, 8% letters",
            &long,
            Box::new(|t: &str, s: &mut u64| scatter(t, 0.08, s)),
        ),
        (
            "short, 5% letters",
            &shorts,
            Box::new(|t: &str, s: &mut u64| scatter(t, 0.05, s)),
        ),
        (
            "short, a footer as long",
            &shorts,
            Box::new(|t: &str, _: &mut u64| footer(t)),
        ),
    ];
    let pct = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    let mut originals: Vec<Vec<Keys>> = Vec::new();
    for (name, texts, edit) in &cases {
        let (mut f, mut l, mut e, mut vf, mut ve) = (0, 0, 0, 0, 0);
        for t in texts.iter() {
            let copy = edit(t, &mut seed);
            let (a, b) = (keys(&fp, t), keys(&fp, &copy));
            let (in_f, in_l) = (within(&a, &b, K), shares(&a, &b));
            let similar = (in_f || in_l) && similarity(t, &copy) >= THRESHOLD;
            f += usize::from(in_f);
            l += usize::from(in_l);
            e += usize::from(in_f || in_l);
            vf += usize::from(in_f && similar);
            ve += usize::from(similar);
        }
        let n = texts.len();
        println!(
            "| {name} | {n} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            pct(f, n),
            pct(l, n),
            pct(e, n),
            pct(vf, n),
            pct(ve, n)
        );
    }
    // Different texts: every pair of the long and of the short originals.
    for texts in [&long, &shorts] {
        originals.push(texts.iter().map(|t| keys(&fp, t)).collect());
    }
    println!();
    println!("| different texts | pairs | fingerprint within {K} | shared lsh key | verified: fingerprint | verified: either | keys to verify per query at 1M rows: fingerprint / either |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, texts, ks) in [
        ("long", &long, &originals[0]),
        ("short", &shorts, &originals[1]),
    ] {
        let (mut pairs, mut f, mut l, mut vf, mut ve) = (0usize, 0usize, 0usize, 0usize, 0usize);
        for i in 0..ks.len() {
            for j in 0..i {
                pairs += 1;
                let (in_f, in_l) = (within(&ks[i], &ks[j], K), shares(&ks[i], &ks[j]));
                if !(in_f || in_l) {
                    continue;
                }
                f += usize::from(in_f);
                l += usize::from(in_l);
                let similar = similarity(&texts[i], &texts[j]) >= THRESHOLD;
                vf += usize::from(in_f && similar);
                ve += usize::from(similar);
            }
        }
        let per_m = |n: usize| n as f64 / pairs.max(1) as f64 * 1e6;
        println!(
            "| {name} | {pairs} | {f} | {l} | {vf} | {ve} | {:.1} / {:.1} |",
            per_m(f),
            per_m(f + l)
        );
    }
}
