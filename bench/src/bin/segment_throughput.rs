//! The baseline of `bench/throughput.sh`: how fast jieba-rs segments a
//! corpus on its own, and how fast the pure-Rust fingerprint runs over the
//! same texts, both on one core.
//!
//! Reads JSON lines `{"id": ..., "text": ...}` from standard input, then
//! times, over `--rounds` rounds:
//!
//! * `segment`: `Jieba::new()` then `jieba.cut(text, true)` on each raw
//!   text (precise mode, HMM on, as the extension cuts);
//! * `fingerprint`: `Fingerprinter::fingerprint_as(Version::V3, text)` on
//!   each text, the whole of what `simhash(text)` computes, without
//!   PostgreSQL;
//! * `fingerprint_v2`, `fingerprint_v1`: the same under definition
//!   versions 2 and 1 (`simhash_v2(text)`, `simhash_v1(text)`), the
//!   baselines of each version's changes.
//!
//! Only the passes over the texts are timed: loading the dictionaries and
//! parsing the input are not.
//!
//! With `--stages`, it also times the steps of the fingerprint one by one,
//! to show where its time goes (hashes and weights are prepared untimed):
//!
//! * `normalize`: step 1, NFKC, lower case and the split into pieces;
//! * `split`: step 1 without NFKC (lower case and the split only);
//! * `segment_pieces`: step 2 alone, jieba on the pieces step 1 made;
//! * `tokens`: steps 1 and 2, as `for_each_token` runs them;
//! * `idf`, `accumulate`: steps 3 and 4 alone, in a tight loop;
//! * `tokens_idf`, `tokens_accumulate`: steps 1 and 2 with step 3 (or 4)
//!   done for each token as it comes, which is how the fingerprint runs
//!   them: segmenting between lookups evicts the IDF table from the cache.
//!
//! Output is `key=value` lines. Throughputs are in MB/s of the texts'
//! UTF-8 bytes, with 1 MB = 10^6 bytes; with several rounds the summary
//! keys hold the median round.
//!
//! With `--levels avx2,avx512-novbmi,avx512` it times only the
//! fingerprint, at each of the levels of vector instructions named
//! (`simhash_core::cpu::Simd`; each must be one the processor has, as
//! capped by `SIMHASH_SIMD`), side by side in the same process: each
//! round takes every level in turn (the order rotated from round to
//! round), each the median of three passes over the texts, and prints
//! `fingerprint_<level>_s` per round and their medians; every level must
//! give the same fingerprints (their count and XOR are printed once).
//!
//! ```text
//! zcat corpus.jsonl.gz | segment-throughput [--rounds N] [--stages]
//! zcat corpus.jsonl.gz | segment-throughput [--rounds N] --levels L1,L2,...
//! ```

use std::hint::black_box;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

use jieba_rs::Jieba;
use serde::Deserialize;
use simhash_core::accumulate::Accumulator;
use simhash_core::cpu::Simd;
use simhash_core::text::{for_each_piece, is_han, MAX_PIECE_CHARS};
use simhash_core::{Fingerprinter, Version};

#[derive(Deserialize)]
struct Doc {
    text: String,
}

struct Options {
    rounds: usize,
    stages: bool,
    levels: Vec<Simd>,
}

fn usage() -> String {
    "usage: segment-throughput [--rounds N] [--stages | --levels L1,L2,...] < corpus.jsonl"
        .to_owned()
}

fn parse_args() -> Result<Options, String> {
    let mut opts = Options {
        rounds: 1,
        stages: false,
        levels: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                let n = args.next().ok_or_else(usage)?;
                opts.rounds = match n.parse() {
                    Ok(r) if r > 0 => r,
                    _ => return Err(format!("--rounds wants a positive number, not {n:?}")),
                };
            }
            "--stages" => opts.stages = true,
            "--levels" => {
                let list = args.next().ok_or_else(usage)?;
                for name in list.split(',') {
                    let level = Simd::from_name(name.trim()).ok_or_else(|| {
                        format!(
                            "--levels: no level {name:?} (baseline, avx2, avx512-novbmi, avx512)"
                        )
                    })?;
                    opts.levels.push(level);
                }
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    Ok(opts)
}

fn read_texts() -> Result<Vec<String>, String> {
    let mut texts = Vec::new();
    for (i, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("reading standard input: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let doc: Doc = serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", i + 1))?;
        texts.push(doc.text);
    }
    if texts.is_empty() {
        return Err("no documents on standard input".to_owned());
    }
    Ok(texts)
}

/// [`for_each_piece`] without its NFKC step: lower case and the split into
/// pieces only, to tell the cost of NFKC from the rest of step 1.
fn split_without_nfkc(text: &str, mut emit: impl FnMut(&str, bool)) {
    let mut buf = String::with_capacity(MAX_PIECE_CHARS * 4);
    let mut chars = 0usize;
    let mut has_han = false;
    for c in text.chars() {
        for lc in c.to_lowercase() {
            if lc.is_alphanumeric() {
                buf.push(lc);
                chars += 1;
                has_han |= is_han(lc);
                if chars < MAX_PIECE_CHARS {
                    continue;
                }
            } else if buf.is_empty() {
                continue;
            }
            emit(&buf, has_han);
            buf.clear();
            chars = 0;
            has_han = false;
        }
    }
    if !buf.is_empty() {
        emit(&buf, has_han);
    }
}

/// Seconds taken by one call of `pass`.
fn time(mut pass: impl FnMut()) -> f64 {
    let start = Instant::now();
    pass();
    start.elapsed().as_secs_f64()
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One timed quantity: its seconds per round.
struct Measure {
    key: &'static str,
    seconds: Vec<f64>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("segment-throughput: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--levels`: the fingerprint alone at each level, side by side.
fn run_levels(opts: &Options, texts: &[String]) -> Result<(), String> {
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut levels = Vec::new();
    for &level in &opts.levels {
        let f = Fingerprinter::new().with_simd(level);
        if f.simd() != level {
            return Err(format!(
                "--levels: {} is not there (the processor, capped by SIMHASH_SIMD, goes to {})",
                level.name(),
                Simd::detected().name()
            ));
        }
        levels.push(f);
    }
    let pass = |f: &Fingerprinter| {
        let mut found = (0usize, 0u64);
        for text in texts {
            if let Some(fp) = black_box(f.fingerprint_as(Version::V3, black_box(text))) {
                found.0 += 1;
                found.1 ^= fp;
            }
        }
        found
    };
    let first = pass(&levels[0]);
    for f in &levels {
        // Warm-up, and the same fingerprints at every level.
        if pass(f) != first {
            return Err(format!("{} gives other fingerprints", f.simd().name()));
        }
    }
    let out = io::stdout();
    let mut out = out.lock();
    let mut seconds = vec![Vec::new(); levels.len()];
    for round in 0..opts.rounds {
        let mut line = format!("round={}", round + 1);
        for k in 0..levels.len() {
            let l = (k + round) % levels.len();
            let mut passes = [0.0; 3];
            for p in &mut passes {
                *p = time(|| {
                    black_box(pass(&levels[l]));
                });
            }
            let s = median(&passes);
            seconds[l].push(s);
            line.push_str(&format!(
                " fingerprint_{}_s={s:.5}",
                levels[l].simd().name()
            ));
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    writeln!(out, "docs={}", texts.len()).map_err(|e| e.to_string())?;
    writeln!(out, "bytes={bytes}").map_err(|e| e.to_string())?;
    writeln!(out, "fingerprints={}", first.0).map_err(|e| e.to_string())?;
    writeln!(out, "fingerprint_xor={}", first.1 as i64).map_err(|e| e.to_string())?;
    for (f, s) in levels.iter().zip(&seconds) {
        let s = median(s);
        let name = f.simd().name();
        writeln!(out, "fingerprint_{name}_s={s:.5}").map_err(|e| e.to_string())?;
        writeln!(out, "fingerprint_{name}_mb_s={:.3}", bytes as f64 / 1e6 / s)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let opts = parse_args()?;
    let texts = read_texts()?;
    if !opts.levels.is_empty() {
        return run_levels(&opts, &texts);
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let chars: usize = texts.iter().map(|t| t.chars().count()).sum();

    let jieba = Jieba::new();
    let fingerprinter = Fingerprinter::new();

    // The pieces the fingerprint hands to jieba (normalized, lower-cased
    // runs of word characters, Han or not), prepared untimed for `--stages`.
    let mut pieces: Vec<(String, bool)> = Vec::new();
    // Per text, the (hash, weight) of each token occurrence, in order.
    let mut features: Vec<Vec<(u64, i64)>> = Vec::new();
    if opts.stages {
        let idf = fingerprinter.idf_table();
        for text in &texts {
            for_each_piece(text, |p| {
                pieces.push((p.text.to_owned(), p.has_han));
                true
            });
            let hashes: std::collections::HashMap<String, u64> = fingerprinter
                .features(text, || true)
                .map_err(|_| "interrupted".to_owned())?
                .into_iter()
                .map(|f| (f.token, f.hash))
                .collect();
            let mut seq = Vec::new();
            let _ = fingerprinter.for_each_token(
                text,
                || true,
                |t| {
                    let h = hashes[t];
                    seq.push((h, idf.weight(h)));
                },
            );
            features.push(seq);
        }
    }

    // Segmentation alone, on the raw texts: the baseline.
    let segment = |tokens: &mut usize| {
        for text in &texts {
            *tokens += black_box(jieba.cut(black_box(text), true)).len();
        }
    };
    // The whole fingerprint, as `simhash(text)` computes it. Keeps the count
    // of texts with a fingerprint and the XOR of the fingerprints, which
    // `throughput.sh` checks against what SQL computes.
    let fingerprint = |found: &mut (usize, u64)| {
        for text in &texts {
            if let Some(fp) = black_box(fingerprinter.fingerprint_as(Version::V3, black_box(text)))
            {
                found.0 += 1;
                found.1 ^= fp;
            }
        }
    };
    let fingerprint_v2 = |n: &mut usize| {
        for text in &texts {
            *n += black_box(fingerprinter.fingerprint_as(Version::V2, black_box(text))).is_some()
                as usize;
        }
    };
    let fingerprint_v1 = |n: &mut usize| {
        for text in &texts {
            *n += black_box(fingerprinter.fingerprint_as(Version::V1, black_box(text))).is_some()
                as usize;
        }
    };
    // Step 1 alone: NFKC, lower case, the split into pieces.
    let normalize = |n: &mut usize| {
        for text in &texts {
            for_each_piece(black_box(text), |p| {
                *n += black_box(p.text).len();
                true
            });
        }
    };
    // Steps 1 and 2: the tokens, without hashing or weighing them.
    let tokens_only = |n: &mut usize| {
        for text in &texts {
            let _ = fingerprinter.for_each_token(
                black_box(text),
                || true,
                |t| *n += black_box(t).len(),
            );
        }
    };
    // Step 1 without NFKC: lower case and the split only.
    let split = |n: &mut usize| {
        for text in &texts {
            split_without_nfkc(black_box(text), |p, _| *n += black_box(p).len());
        }
    };
    // Step 3 alone: the IDF weight of every token occurrence, by its hash.
    let idf_lookup = |n: &mut usize| {
        let idf = fingerprinter.idf_table();
        for seq in &features {
            for &(h, _) in seq {
                *n = n.wrapping_add(black_box(idf.weight(black_box(h))) as usize);
            }
        }
    };
    // Step 4 alone: the 64 counters and the final bits.
    let accumulate = |n: &mut usize| {
        for seq in &features {
            let mut acc = Accumulator::new();
            for &(h, w) in seq {
                acc.add(black_box(h), black_box(w));
            }
            *n = n.wrapping_add(black_box(acc.finish()).unwrap_or(0) as usize);
        }
    };
    // Steps 1 and 2 with step 3 (resp. 4) in between, fed with the
    // precomputed hashes: what each costs amid segmentation, whose own
    // memory traffic competes for the cache.
    let tokens_with = |n: &mut usize, weigh: bool| {
        let idf = fingerprinter.idf_table();
        for (text, seq) in texts.iter().zip(&features) {
            let mut next = seq.iter();
            let mut acc = Accumulator::new();
            let _ = fingerprinter.for_each_token(
                black_box(text),
                || true,
                |_| {
                    let &(h, w) = next.next().expect("the same tokens as before");
                    if weigh {
                        *n = n.wrapping_add(black_box(idf.weight(black_box(h))) as usize);
                    } else {
                        acc.add(black_box(h), black_box(w));
                    }
                },
            );
            *n = n.wrapping_add(black_box(acc.finish()).unwrap_or(0) as usize);
        }
    };
    // Step 2 alone: jieba on the already normalized pieces, one call each,
    // as the fingerprint calls it.
    let segment_pieces = |n: &mut usize| {
        for (piece, has_han) in &pieces {
            if *has_han {
                *n += black_box(jieba.cut(black_box(piece), true)).len();
            } else {
                *n += 1;
            }
        }
    };

    // One untimed pass over a part of the corpus, so that first-touch page
    // faults and jieba's scratch buffers are not charged to round 1.
    let warm = texts.len().min(200);
    for text in &texts[..warm] {
        black_box(jieba.cut(text, true));
        black_box(fingerprinter.fingerprint_as(Version::V3, text));
        black_box(fingerprinter.fingerprint_as(Version::V2, text));
        black_box(fingerprinter.fingerprint(text));
    }

    let mut measures = vec![
        Measure {
            key: "segment",
            seconds: Vec::new(),
        },
        Measure {
            key: "fingerprint",
            seconds: Vec::new(),
        },
        Measure {
            key: "fingerprint_v2",
            seconds: Vec::new(),
        },
        Measure {
            key: "fingerprint_v1",
            seconds: Vec::new(),
        },
    ];
    if opts.stages {
        for key in [
            "normalize",
            "split",
            "segment_pieces",
            "tokens",
            "idf",
            "accumulate",
            "tokens_idf",
            "tokens_accumulate",
        ] {
            measures.push(Measure {
                key,
                seconds: Vec::new(),
            });
        }
    }
    let mut seg_tokens = 0usize;
    let mut fingerprints = (0usize, 0u64);
    let mut sink = 0usize;
    let out = io::stdout();
    let mut out = out.lock();
    for round in 1..=opts.rounds {
        seg_tokens = 0;
        fingerprints = (0, 0);
        let mut line = format!("round={round}");
        for m in &mut measures {
            let s = match m.key {
                "segment" => time(|| segment(&mut seg_tokens)),
                "fingerprint" => time(|| fingerprint(&mut fingerprints)),
                "fingerprint_v2" => time(|| fingerprint_v2(&mut sink)),
                "fingerprint_v1" => time(|| fingerprint_v1(&mut sink)),
                "normalize" => time(|| normalize(&mut sink)),
                "tokens" => time(|| tokens_only(&mut sink)),
                "segment_pieces" => time(|| segment_pieces(&mut sink)),
                "split" => time(|| split(&mut sink)),
                "idf" => time(|| idf_lookup(&mut sink)),
                "accumulate" => time(|| accumulate(&mut sink)),
                "tokens_idf" => time(|| tokens_with(&mut sink, true)),
                "tokens_accumulate" => time(|| tokens_with(&mut sink, false)),
                _ => unreachable!(),
            };
            m.seconds.push(s);
            line.push_str(&format!(" {}_s={s:.4}", m.key));
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    black_box(sink);

    let mb = bytes as f64 / 1e6;
    let mut summary = vec![
        format!("docs={}", texts.len()),
        format!("chars={chars}"),
        format!("bytes={bytes}"),
        format!("mb={mb:.3}"),
        format!("rounds={}", opts.rounds),
        // The vector instructions of the fingerprint's kernels (the widest
        // the processor has, capped by SIMHASH_SIMD).
        format!("simd={}", fingerprinter.simd().name()),
        format!("segment_tokens={seg_tokens}"),
        format!("fingerprints={}", fingerprints.0),
        // As a signed bigint, the way SQL's bit_xor(simhash(...)::bigint) prints it.
        format!("fingerprint_xor={}", fingerprints.1 as i64),
    ];
    if opts.stages {
        let han = pieces.iter().filter(|(_, h)| *h).count();
        summary.push(format!("pieces={}", pieces.len()));
        summary.push(format!("han_pieces={han}"));
        let occurrences: usize = features.iter().map(Vec::len).sum();
        summary.push(format!("token_occurrences={occurrences}"));
    }
    for m in &measures {
        let s = median(&m.seconds);
        summary.push(format!("{}_s={s:.4}", m.key));
        summary.push(format!("{}_mb_s={:.3}", m.key, mb / s));
    }
    for line in summary {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}
