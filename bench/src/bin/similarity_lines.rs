//! Similarities for the detection-quality yardstick (`bench/quality/`),
//! computed by the core's own function (`simhash_core::similarity`), so
//! that the yardstick measures what the extension would verify with.
//!
//! Reads the texts from `--texts FILE` (JSON lines `{"text": ...}`, as
//! `fingerprint-lines` takes them; a null text is empty), then pairs of
//! 0-based line numbers `i j` from standard input, one pair a line, and
//! prints for each pair one column per measure, tab-separated, with six
//! decimals.
//!
//! `--measures` lists the measures (default `c3`): `cN` is the weighted
//! containment of character N-grams (`c3` is the definition), `jN` the
//! Jaccard of the sets of N-grams; N from 1 to 6. Anything but `c3` is an
//! experiment ([`simhash_core::similarity::similarity_measured`]), except
//! `jaccard` (which should equal `j5`) and `containment`: the product's
//! Jaccard and containment of 5-grams
//! ([`simhash_core::similarity::GramOverlap`]), the second test of the
//! key-only candidates ([`simhash_core::lsh::second_test`]).
//!
//! ```text
//! fingerprint-lines ... ; similarity-lines --texts texts.jsonl --measures c3,c5,j5 < pairs.txt
//! ```

use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use serde::Deserialize;
use simhash_core::similarity::{
    jaccard, overlap_bytes_checked, similarity_measured, Measure, MeasureKind,
};

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

/// A measure of the command line: an experimental one, or the product's
/// Jaccard.
#[derive(Clone, Copy)]
enum Column {
    Measured(Measure),
    Jaccard,
    Containment,
}

fn parse_column(s: &str) -> Result<Column, String> {
    if s == "jaccard" {
        return Ok(Column::Jaccard);
    }
    if s == "containment" {
        return Ok(Column::Containment);
    }
    parse_measure(s).map(Column::Measured)
}

fn parse_measure(s: &str) -> Result<Measure, String> {
    let bad = || format!("unknown measure {s:?}: cN or jN, N from 1 to 6, jaccard or containment");
    let kind = match s.get(..1) {
        Some("c") => MeasureKind::Containment,
        Some("j") => MeasureKind::Jaccard,
        _ => return Err(bad()),
    };
    let n: usize = s[1..].parse().map_err(|_| bad())?;
    if !(1..=6).contains(&n) {
        return Err(bad());
    }
    Ok(Measure { n, kind })
}

fn run() -> Result<(), String> {
    let mut texts_path = None;
    let mut measures = vec![Column::Measured(Measure::DEFINITION)];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--texts" => texts_path = Some(value()?),
            "--measures" => {
                measures = value()?
                    .split(',')
                    .map(parse_column)
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown option {a:?}")),
        }
    }
    let path = texts_path.ok_or("--texts FILE is required")?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut texts = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{path}: {e}"))?;
        let doc: Doc = serde_json::from_str(&line).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
        texts.push(doc.text.unwrap_or_default());
    }
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut row = String::new();
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("reading standard input: {e}"))?;
        let mut ids = line.split_whitespace().map(|v| v.parse::<usize>());
        let (Some(Ok(i)), Some(Ok(j)), None) = (ids.next(), ids.next(), ids.next()) else {
            return Err(format!("pair {}: not two line numbers: {line:?}", n + 1));
        };
        let (Some(a), Some(b)) = (texts.get(i), texts.get(j)) else {
            return Err(format!("pair {}: no text {i} or {j}", n + 1));
        };
        row.clear();
        for (k, &m) in measures.iter().enumerate() {
            if k > 0 {
                row.push('\t');
            }
            let v = match m {
                Column::Measured(m) => similarity_measured(a, b, m),
                Column::Jaccard => jaccard(a, b),
                Column::Containment => overlap_bytes_checked(a.as_bytes(), b.as_bytes(), || true)
                    .expect("UTF-8, never stopped")
                    .containment(),
            };
            row.push_str(&format!("{v:.6}"));
        }
        writeln!(out, "{row}").map_err(|e| format!("writing standard output: {e}"))?;
    }
    out.flush()
        .map_err(|e| format!("writing standard output: {e}"))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("similarity-lines: {e}");
            ExitCode::FAILURE
        }
    }
}
