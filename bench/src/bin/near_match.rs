//! The check of `simhash_insert_new` against a target read once, without
//! PostgreSQL: a batch of fingerprints indexed in memory
//! (`simhash_core::near::BandSet`) and every target fingerprint looked up
//! in it, one query at a time (`within`, as before) against a group of
//! queries whose runs are asked of memory first (`within_each`).
//! Rounds alternate the two, so both see the same machine.
//!
//! The texts are made as `bench/insert_new.sh` makes its default ones: each
//! row 3 to 6 clauses of the corpus (its texts cut at ，。！？；、 and line
//! ends, distinct clauses of at least 4 characters), picked by hashes of
//! the row's number and joined with ，. Rows `0..batch` are the batch, the
//! next `target` rows the target.
//!
//! Output is `key=value` lines: one `round=` line per round, then the
//! median seconds of each way, the matches each found (they must agree),
//! and `speedup` = one at a time over grouped.
//!
//! ```text
//! zcat zh_short.jsonl.gz | near-match [--batch N] [--target N] [--k K] [--rounds N]
//! ```

use std::collections::BTreeSet;
use std::hint::black_box;
use std::io::{self, BufRead};
use std::time::Instant;

use serde::Deserialize;
use simhash_core::near::BandSet;
use simhash_core::Fingerprinter;

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A hash of a row's number, seeded per use (splitmix64).
fn h(row: u64, seed: u64) -> u64 {
    let mut x = row
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(seed.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn main() {
    let (mut batch, mut target, mut k, mut rounds) =
        (1_000_000usize, 10_000_000usize, 3u32, 5usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v: usize = args
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{a} needs a number"));
        match a.as_str() {
            "--batch" => batch = v.max(1),
            "--target" => target = v.max(1),
            "--k" => k = v as u32,
            "--rounds" => rounds = v.max(1),
            _ => panic!("unknown option {a}"),
        }
    }
    let mut clauses = BTreeSet::new();
    for line in io::stdin().lock().lines() {
        let doc: Doc = serde_json::from_str(&line.expect("stdin")).expect("JSON line");
        for c in doc
            .text
            .unwrap_or_default()
            .split(['，', '。', '！', '？', '；', '、', '\n'])
        {
            let c = c.trim();
            if c.chars().count() >= 4 {
                clauses.insert(c.to_string());
            }
        }
    }
    let clauses: Vec<String> = clauses.into_iter().collect();
    assert!(!clauses.is_empty(), "no clauses in the corpus");
    let fp = Fingerprinter::new();
    let t = Instant::now();
    let fps: Vec<u64> = (0..(batch + target) as u64)
        .map(|r| {
            let m = 3 + h(r, 0) % 4;
            let parts: Vec<&str> = (1..=m)
                .map(|i| clauses[(h(r, i) % clauses.len() as u64) as usize].as_str())
                .collect();
            fp.fingerprint(&(parts.join("，") + "。")).unwrap_or(0)
        })
        .collect();
    println!("clauses={}", clauses.len());
    println!("fingerprint_s={:.1}", t.elapsed().as_secs_f64());
    let (batch_fps, target_fps) = fps.split_at(batch);
    let set = BandSet::new(batch_fps, k).expect("k at most 11");

    let one = || {
        let t = Instant::now();
        let mut found = 0u64;
        for &q in target_fps {
            set.within(black_box(q), |_, _| found += 1);
        }
        (t.elapsed().as_secs_f64(), found)
    };
    let each = || {
        let t = Instant::now();
        let mut found = 0u64;
        set.within_each(black_box(target_fps), |_, _, _| found += 1, &mut || true)
            .expect("never told to stop");
        (t.elapsed().as_secs_f64(), found)
    };
    let (mut os, mut es, mut matches) = (Vec::new(), Vec::new(), (0, 0));
    for r in 0..rounds {
        let (o, m1) = one();
        let (e, m2) = each();
        println!("round={} one_s={o:.3} each_s={e:.3}", r + 1);
        os.push(o);
        es.push(e);
        matches = (m1, m2);
    }
    let (o, e) = (median(&mut os), median(&mut es));
    println!("batch={batch} target={target} k={k}");
    println!("matches_one={} matches_each={}", matches.0, matches.1);
    assert_eq!(matches.0, matches.1, "the two ways disagree");
    println!("one_s={o:.3}");
    println!("each_s={e:.3}");
    println!("speedup={:.2}", o / e);
}
