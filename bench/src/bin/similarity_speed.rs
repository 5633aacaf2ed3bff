//! What verifying a candidate pair by similarity costs beside
//! fingerprinting its two texts: one core, no PostgreSQL.
//!
//! Reads JSON lines `{"text": ...}` from standard input and pairs each
//! text with the next one (neighbours in a corpus: same day, same page,
//! the pairs a fingerprint search is most likely to return). Each round
//! times, over all pairs, in alternation so that both see the same
//! machine:
//!
//! * `fingerprint`: `Fingerprinter::fingerprint_bytes_checked_as` of both
//!   texts under version 3, what SQL `simhash()` computes for each;
//! * `similarity`: `similarity::similarity_bytes_checked` of the pair,
//!   what the verification computes once per candidate.
//!
//! Output is `key=value` lines: one `round=` line per round, then the
//! median seconds of each, nanoseconds per byte of the pairs' UTF-8, and
//! `ratio` = similarity over fingerprint (at most 1 is the target: the
//! verification costs no more than fingerprinting what it verifies).
//!
//! ```text
//! zcat zh_news.jsonl.gz | similarity-speed [--rounds N] [--limit PAIRS]
//! ```

use std::hint::black_box;
use std::io::{self, BufRead};
use std::time::Instant;

use serde::Deserialize;
use simhash_core::similarity::similarity_bytes_checked;
use simhash_core::{Fingerprinter, Version};

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 7;
    let mut limit = usize::MAX;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v: usize = args
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{a} needs a number"));
        match a.as_str() {
            "--rounds" => rounds = v.max(1),
            "--limit" => limit = v,
            _ => panic!("unknown option {a}"),
        }
    }
    let texts: Vec<String> = io::stdin()
        .lock()
        .lines()
        .map(|l| serde_json::from_str::<Doc>(&l.expect("stdin")).expect("JSON line"))
        .filter_map(|d| d.text)
        .take(limit.saturating_add(1))
        .collect();
    assert!(texts.len() >= 2, "need at least two texts");
    let pairs: Vec<(&[u8], &[u8])> = texts
        .windows(2)
        .map(|w| (w[0].as_bytes(), w[1].as_bytes()))
        .collect();
    let bytes: usize = pairs.iter().map(|(a, b)| a.len() + b.len()).sum();
    let fp = Fingerprinter::new();

    let fingerprint = || {
        let t = Instant::now();
        let mut x = 0u64;
        for &(a, b) in &pairs {
            for t in [a, b] {
                let f = fp.fingerprint_bytes_checked_as(Version::V3, black_box(t), || true);
                x ^= f.expect("UTF-8").unwrap_or(0);
            }
        }
        black_box(x);
        t.elapsed().as_secs_f64()
    };
    let similarity = || {
        let t = Instant::now();
        let mut x = 0.0;
        for &(a, b) in &pairs {
            x += similarity_bytes_checked(black_box(a), black_box(b), || true).expect("UTF-8");
        }
        black_box(x);
        t.elapsed().as_secs_f64()
    };
    // One untimed round of each: tables built, caches warm.
    fingerprint();
    similarity();
    let (mut fs, mut ss) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let f = fingerprint();
        let s = similarity();
        println!("round={} fingerprint_s={f:.5} similarity_s={s:.5}", r + 1);
        fs.push(f);
        ss.push(s);
    }
    let (f, s) = (median(&mut fs), median(&mut ss));
    println!("pairs={}", pairs.len());
    println!("bytes={bytes}");
    println!("fingerprint_s={f:.5}");
    println!("similarity_s={s:.5}");
    println!("fingerprint_ns_per_byte={:.3}", f * 1e9 / bytes as f64);
    println!("similarity_ns_per_byte={:.3}", s * 1e9 / bytes as f64);
    println!("ratio={:.3}", s / f);
}
