//! Where the time of definition version 3 goes: a stage profile, one
//! core, no PostgreSQL (issue: the fingerprint at ClickHouse's speed).
//!
//! Reads JSON lines `{"id": ..., "text": ...}` from standard input and
//! times, over `--rounds` rounds, passes over all the texts that each do
//! one step more than the one before, so the difference between two
//! passes is what that step costs amid the others:
//!
//! * `decode`: the UTF-8 decode alone (`text.chars()`), the floor;
//! * `pieces`: step 2 to 4 of the definition: NFKC (around the fast path
//!   for ASCII and unified ideographs), lower case, the fold and the
//!   split into pieces (`for_each_piece_mapped` with the shipped fold);
//! * `features`: the same plus step 5's features as strings (each Han
//!   character, and the trigrams with `^` and `$` of other words), as
//!   `Fingerprinter::features_v3` hands them on;
//! * `hash`: plus XXH3-64 of each feature;
//! * `count`: plus the count of each distinct feature in a hash map keyed
//!   by its hash (a new map per text, as the core makes one per call);
//! * `weigh`: plus, per distinct feature, its self-information from the
//!   table of its kind and its weight against chance (the Poisson term,
//!   with `exp_neg`'s 24-term series, four features side by side), to
//!   fixed point;
//! * `accumulate`: plus the 64 counters and the sign bits: the whole of
//!   definition 3 rebuilt from the core's public parts. Its count and XOR
//!   of fingerprints must equal those of `fingerprint` (`replica_ok=1`),
//!   or the profile would not be of the real thing;
//! * `fingerprint`: `Fingerprinter::fingerprint_as(Version::V3, text)`,
//!   what SQL `simhash(text)` computes.
//!
//! and the hot path that `fingerprint` takes (`Fingerprinter::profile_v3`),
//! each pass one step more:
//!
//! * `hot_scan`: one pass over the bytes (UTF-8 checked on the way,
//!   ASCII, ideographs, punctuation and full-width forms by table, NFKC
//!   only around the rest), each feature counted by its table index;
//! * `hot_weigh`: plus the weights of the distinct features (the chance
//!   term from a table and two polynomials, four lanes at a time,
//!   certified against the 24-term series);
//! * `fingerprint` (above): plus the 64 counters and the sign bits;
//!
//! and, each step alone in a tight loop over inputs prepared untimed:
//!
//! * `pieces_nofold`: `pieces` without the fold (`for_each_piece`);
//! * `lookup_only`: the self-information lookups of the distinct features;
//! * `chance_only`: the fast chance term `expected_capped6_fast(n * p)` of
//!   the distinct features (a table of e^-j/64 and two short polynomials;
//!   the core certifies it against the 24-term series);
//! * `accumulate_only`: the 64 counters over the distinct features'
//!   (hash, weight) pairs, and the sign bits.
//!
//! Output is `key=value` lines: one `round=` line per round, then the
//! counts (`bytes`, `feature_occurrences`, `distinct_features`, ...) and
//! per pass the median seconds (`<pass>_s`) and nanoseconds per byte of
//! UTF-8 input (`<pass>_ns_per_byte`). Loading and parsing are not timed.
//!
//! ```text
//! zcat corpus.jsonl.gz | fingerprint-stages [--rounds N]
//! ```

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::hint::black_box;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

use serde::Deserialize;

/// A text's distinct features (hash, kind, count) and its totals by kind.
type Distinct = (Vec<(u64, Kind, u64)>, [u64; 2]);
use simhash_core::accumulate::Accumulator;
use simhash_core::cpu::Simd;
use simhash_core::fingerprint::{
    Kind, V3Options, GRAM_WEIGHTS_TXT, HAN_WEIGHTS_TXT, V3_GRAM_UNKNOWN, V3_HAN_UNKNOWN,
};
use simhash_core::fold::Fold;
use simhash_core::idf::{to_fixed, PassThrough};
use simhash_core::text::{for_each_piece, for_each_piece_mapped};
use simhash_core::weights::{expected_capped6_fast, SelfInfo, Weighing};
use simhash_core::{Fingerprinter, Version};
use xxhash_rust::xxh3::xxh3_64;

#[derive(Deserialize)]
struct Doc {
    text: String,
}

type Counts = HashMap<u64, (u32, Kind), BuildHasherDefault<PassThrough>>;

fn usage() -> String {
    "usage: fingerprint-stages [--rounds N] [--simd baseline|avx2|avx512-novbmi|avx512] < corpus.jsonl".to_owned()
}

fn parse_args() -> Result<(usize, Simd), String> {
    let mut rounds = 1;
    let mut simd = Simd::detected();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                let n = args.next().ok_or_else(usage)?;
                rounds = match n.parse() {
                    Ok(r) if r > 0 => r,
                    _ => return Err(format!("--rounds wants a positive number, not {n:?}")),
                };
            }
            "--simd" => {
                let name = args.next().ok_or_else(usage)?;
                simd = Simd::from_name(&name).ok_or_else(|| {
                    format!("--simd wants baseline, avx2, avx512-novbmi or avx512, not {name:?}")
                })?;
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    Ok((rounds, simd))
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

/// How far down the pipeline a pass of [`Stages::run`] goes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Depth {
    Features,
    Hash,
    Count,
    Weigh,
    Accumulate,
}

/// The parts of definition 3 the core exposes, put back together.
struct Stages {
    fingerprinter: Fingerprinter,
    han: SelfInfo,
    grams: SelfInfo,
    opts: V3Options,
}

impl Stages {
    fn weighing(&self, kind: Kind) -> (&SelfInfo, Weighing) {
        match kind {
            Kind::Han => (&self.han, self.opts.han),
            Kind::Gram => (&self.grams, self.opts.gram),
        }
    }

    /// One pass over `text` down to `depth`; something to keep alive.
    /// At [`Depth::Accumulate`], the fingerprint of definition 3 (what
    /// `fingerprint_bounded_as` computes for a text of fewer distinct
    /// features than its bound, which is every text of a real corpus).
    fn run(&self, depth: Depth, text: &str) -> Option<u64> {
        let mut sink = 0u64;
        let mut counts = Counts::default();
        let mut totals = [0u64; 2];
        let _ = self.fingerprinter.features_v3(
            text,
            || true,
            |kind, f| match depth {
                Depth::Features => sink = sink.wrapping_add(f.len() as u64),
                Depth::Hash => sink ^= xxh3_64(f.as_bytes()),
                _ => {
                    totals[kind as usize] += 1;
                    let h = xxh3_64(f.as_bytes());
                    let tf = &mut counts.entry(h).or_insert((0, kind)).0;
                    *tf = tf.saturating_add(1);
                }
            },
        );
        match depth {
            Depth::Features | Depth::Hash => return Some(sink),
            Depth::Count => return Some(counts.len() as u64),
            _ => {}
        }
        let mut acc = Accumulator::new();
        let mut fallback = Accumulator::new();
        let mut positive = false;
        // As the core does: the chance terms four features at a time.
        let distinct: Vec<(u64, u64, Kind)> = counts
            .iter()
            .map(|(&h, &(tf, kind))| (h, u64::from(tf), kind))
            .collect();
        let mut looked = Vec::with_capacity(distinct.len());
        for &(h, _, kind) in &distinct {
            let (table, weighing) = self.weighing(kind);
            looked.push((table.get(h), weighing));
        }
        let mean = |i: usize| totals[distinct[i].2 as usize] as f64 * looked[i].0 .1;
        for (i, &(h, tf, _)) in distinct.iter().enumerate() {
            let ((s, _, known), weighing) = looked[i];
            let factor = if known { 1.0 } else { weighing.unknown };
            let w = weighing.fixed_weight(s, factor, tf, mean(i));
            if depth == Depth::Weigh {
                sink = sink.wrapping_add(w as u64);
                continue;
            }
            acc.add(h, w);
            if !positive {
                if w > 0 {
                    positive = true;
                } else {
                    fallback.add(
                        h,
                        to_fixed(factor * weighing.weight_regardless_of_chance(s, tf)),
                    );
                }
            }
        }
        if depth == Depth::Weigh {
            return Some(sink);
        }
        if positive {
            acc.finish()
        } else {
            fallback.finish()
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fingerprint-stages: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The passes, in the order they run each round.
const PASSES: [&str; 14] = [
    "decode",
    "pieces",
    "features",
    "hash",
    "count",
    "weigh",
    "accumulate",
    "fingerprint",
    "pieces_nofold",
    "lookup_only",
    "chance_only",
    "accumulate_only",
    "hot_scan",
    "hot_weigh",
];

fn run() -> Result<(), String> {
    let (rounds, simd) = parse_args()?;
    let texts = read_texts()?;
    let bytes: usize = texts.iter().map(String::len).sum();
    let stages = Stages {
        fingerprinter: Fingerprinter::new().with_simd(simd),
        han: SelfInfo::parse(HAN_WEIGHTS_TXT, V3_HAN_UNKNOWN),
        grams: SelfInfo::parse(GRAM_WEIGHTS_TXT, V3_GRAM_UNKNOWN),
        opts: V3Options::DEFINITION,
    };
    let fold = Fold::t2s();

    // Per text, untimed: each distinct feature as (hash, kind, tf), the
    // totals per kind, and its fixed-point weight, for the passes that time
    // one step alone.
    let mut distinct: Vec<Distinct> = Vec::with_capacity(texts.len());
    let mut weighed: Vec<Vec<(u64, i64)>> = Vec::with_capacity(texts.len());
    let mut occurrences = 0u64;
    let mut han_occurrences = 0u64;
    for text in &texts {
        let mut counts = Counts::default();
        let mut totals = [0u64; 2];
        let _ = stages.fingerprinter.features_v3(
            text,
            || true,
            |kind, f| {
                totals[kind as usize] += 1;
                let tf = &mut counts.entry(xxh3_64(f.as_bytes())).or_insert((0, kind)).0;
                *tf += 1;
            },
        );
        occurrences += totals[0] + totals[1];
        han_occurrences += totals[0];
        let feats: Vec<(u64, Kind, u64)> = counts
            .iter()
            .map(|(&h, &(tf, kind))| (h, kind, u64::from(tf)))
            .collect();
        weighed.push(
            feats
                .iter()
                .map(|&(h, kind, tf)| {
                    let (table, weighing) = stages.weighing(kind);
                    let (s, p, known) = table.get(h);
                    let factor = if known { 1.0 } else { weighing.unknown };
                    (
                        h,
                        to_fixed(factor * weighing.weight(s, p, tf, totals[kind as usize])),
                    )
                })
                .collect(),
        );
        distinct.push((feats, totals));
    }
    // The chance term's argument n * p of each distinct feature.
    let means: Vec<f64> = distinct
        .iter()
        .flat_map(|(feats, totals)| {
            feats.iter().map(|&(h, kind, _)| {
                let (table, _) = stages.weighing(kind);
                totals[kind as usize] as f64 * table.get(h).1
            })
        })
        .collect();
    let distinct_count: usize = distinct.iter().map(|(f, _)| f.len()).sum();

    let pass = |name: &str, found: &mut (u64, u64)| match name {
        "decode" => {
            for text in &texts {
                for c in black_box(text.as_str()).chars() {
                    found.1 = found.1.wrapping_add(u64::from(c));
                }
            }
        }
        "pieces" => {
            for text in &texts {
                for_each_piece_mapped(
                    black_box(text),
                    |c| fold.char(c),
                    |p| {
                        found.1 = found.1.wrapping_add(black_box(p.text).len() as u64);
                        true
                    },
                );
            }
        }
        "pieces_nofold" => {
            for text in &texts {
                for_each_piece(black_box(text), |p| {
                    found.1 = found.1.wrapping_add(black_box(p.text).len() as u64);
                    true
                });
            }
        }
        "features" | "hash" | "count" | "weigh" | "accumulate" => {
            let depth = match name {
                "features" => Depth::Features,
                "hash" => Depth::Hash,
                "count" => Depth::Count,
                "weigh" => Depth::Weigh,
                _ => Depth::Accumulate,
            };
            for text in &texts {
                if let Some(v) = black_box(stages.run(depth, black_box(text))) {
                    found.0 += 1;
                    found.1 ^= v;
                }
            }
        }
        "hot_scan" | "hot_weigh" => {
            let stage = if name == "hot_scan" { 0 } else { 1 };
            for text in &texts {
                let kept = stages.fingerprinter.profile_v3(black_box(text), stage);
                found.1 ^= black_box(kept).unwrap_or(0);
            }
        }
        "fingerprint" => {
            for text in &texts {
                if let Some(fp) = black_box(
                    stages
                        .fingerprinter
                        .fingerprint_as(Version::V3, black_box(text)),
                ) {
                    found.0 += 1;
                    found.1 ^= fp;
                }
            }
        }
        "lookup_only" => {
            for (feats, _) in &distinct {
                for &(h, kind, _) in feats {
                    let (table, _) = stages.weighing(kind);
                    found.1 = found
                        .1
                        .wrapping_add(black_box(table.get(black_box(h))).1 as u64);
                }
            }
        }
        "chance_only" => {
            for &m in &means {
                let c = black_box(expected_capped6_fast(black_box(m)));
                found.1 = found.1.wrapping_add(c.unwrap_or(0.0).to_bits());
            }
        }
        "accumulate_only" => {
            for seq in &weighed {
                let mut acc = Accumulator::new();
                for &(h, w) in seq {
                    acc.add(black_box(h), black_box(w));
                }
                found.1 ^= black_box(acc.finish()).unwrap_or(0);
            }
        }
        _ => unreachable!(),
    };

    // One untimed pass over part of the corpus: first-touch page faults
    // and allocator warm-up are not charged to round 1.
    let warm = texts.len().min(200);
    for text in &texts[..warm] {
        black_box(stages.run(Depth::Accumulate, text));
        black_box(stages.fingerprinter.fingerprint_as(Version::V3, text));
    }

    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); PASSES.len()];
    let mut replica = (0u64, 0u64);
    let mut real = (0u64, 0u64);
    let out = io::stdout();
    let mut out = out.lock();
    for round in 1..=rounds {
        let mut line = format!("round={round}");
        for (i, name) in PASSES.iter().enumerate() {
            let mut found = (0u64, 0u64);
            let start = Instant::now();
            pass(name, &mut found);
            let s = start.elapsed().as_secs_f64();
            black_box(found);
            match *name {
                "accumulate" => replica = found,
                "fingerprint" => real = found,
                _ => {}
            }
            seconds[i].push(s);
            line.push_str(&format!(" {name}_s={s:.5}"));
        }
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }

    let mut summary = vec![
        format!("docs={}", texts.len()),
        format!("simd={}", stages.fingerprinter.simd().name()),
        format!("bytes={bytes}"),
        format!("rounds={rounds}"),
        format!("feature_occurrences={occurrences}"),
        format!("han_occurrences={han_occurrences}"),
        format!("distinct_features={distinct_count}"),
        format!("fingerprints={}", real.0),
        format!("fingerprint_xor={}", real.1 as i64),
        format!("replica_ok={}", u8::from(replica == real)),
    ];
    for (name, s) in PASSES.iter().zip(&seconds) {
        let m = median(s);
        summary.push(format!("{name}_s={m:.5}"));
        summary.push(format!("{name}_ns_per_byte={:.3}", m * 1e9 / bytes as f64));
    }
    for line in summary {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}
