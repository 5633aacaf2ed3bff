//! The pglz decoder of the core against the same format decoded one item
//! at a time, as PostgreSQL's own loop decodes it (`bench/pglz.sh`).
//!
//! Reads JSON lines `{"id": ..., "text": ...}` from standard input, keeps
//! the texts of at least 2,000 bytes (about where PostgreSQL starts to
//! compress a row), compresses each with the core's compressor (untimed),
//! then times, in interleaved rounds, both decoders over all of them:
//! `item_by_item` (`pglz::decompress_item_by_item`, the baseline) and
//! `decoder` (`pglz::decompress`). Each round checks that both gave the
//! text back. Output: `key=value` lines, nanoseconds per decoded byte, the
//! median of the rounds, and `speedup`, the baseline's time over the
//! decoder's.
//!
//! ```text
//! zcat corpus.jsonl.gz | pglz-decode [--rounds N]
//! ```

use std::hint::black_box;
use std::io::{self, BufRead};
use std::process::ExitCode;
use std::time::Instant;

use serde::Deserialize;
use simhash_core::pglz;

#[derive(Deserialize)]
struct Doc {
    text: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = match args.as_slice() {
        [] => 5,
        [flag, n] if flag == "--rounds" => match n.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                eprintln!("--rounds takes a number of at least 1, not '{n}'");
                return ExitCode::FAILURE;
            }
        },
        _ => {
            eprintln!("usage: pglz-decode [--rounds N] < corpus.jsonl");
            return ExitCode::FAILURE;
        }
    };
    let mut texts = Vec::new();
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                eprintln!("reading line {}: {e}", n + 1);
                return ExitCode::FAILURE;
            }
        };
        match serde_json::from_str::<Doc>(&line) {
            Ok(doc) if doc.text.len() >= 2000 => texts.push(doc.text.into_bytes()),
            Ok(_) => {}
            Err(e) => {
                eprintln!("line {}: {e}", n + 1);
                return ExitCode::FAILURE;
            }
        }
    }
    if texts.is_empty() {
        eprintln!("no text of 2,000 bytes or more");
        return ExitCode::FAILURE;
    }
    let packed: Vec<Vec<u8>> = texts.iter().map(|t| pglz::compress(t, 273)).collect();
    let raw: usize = texts.iter().map(Vec::len).sum();
    let stored: usize = packed.iter().map(Vec::len).sum();
    println!("texts={}", texts.len());
    println!("raw_bytes={raw}");
    println!("compressed_bytes={stored}");
    let mut out = vec![0u8; texts.iter().map(Vec::len).max().unwrap_or(0)];
    type Decoder = fn(&[u8], &mut [u8]) -> Result<(), pglz::Corrupt>;
    let decoders: [(&str, Decoder); 2] = [
        ("item_by_item", pglz::decompress_item_by_item),
        ("decoder", pglz::decompress),
    ];
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (k, (name, decode)) in decoders.iter().enumerate() {
            let start = Instant::now();
            for (text, stream) in texts.iter().zip(&packed) {
                let dst = &mut out[..text.len()];
                if decode(black_box(stream), dst).is_err() || dst != text.as_slice() {
                    eprintln!("{name} did not give a text back");
                    return ExitCode::FAILURE;
                }
            }
            times[k].push(start.elapsed().as_secs_f64() * 1e9 / raw as f64);
        }
    }
    let [base, ours] = times.map(median);
    println!("item_by_item_ns_per_byte={base:.3}");
    println!("decoder_ns_per_byte={ours:.3}");
    println!("speedup={:.2}", base / ours);
    ExitCode::SUCCESS
}
