//! The second candidate source's keys for the detection-quality yardstick
//! (`bench/quality/`): reads JSON lines `{"text": ...}` (other fields are
//! ignored) on standard input and prints one line per input line: the
//! [`simhash_core::lsh::BANDS`] band keys of `simhash_core::lsh::keys`
//! (what SQL `simhash_lsh(text)` returns), space-separated, in band order,
//! or `NULL` when the text is null or has no word character.
//!
//! Two texts are candidates of this source when at least one band has the
//! same key in both (`simhash_core::lsh::shared_bands`); the yardstick
//! compares the printed keys band by band, in the order printed.
//!
//! ```text
//! lsh-lines < texts.jsonl > keys.txt
//! ```

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use serde::Deserialize;
use simhash_core::lsh;

#[derive(Deserialize)]
struct Doc {
    text: Option<String>,
}

fn run() -> Result<(), String> {
    if let Some(a) = std::env::args().nth(1) {
        return Err(format!("unknown option {a:?}: lsh-lines takes none"));
    }
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut row = String::new();
    for (i, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("reading standard input: {e}"))?;
        let doc: Doc = serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", i + 1))?;
        row.clear();
        match doc.text.as_deref().and_then(lsh::keys) {
            Some(keys) => {
                for (b, key) in keys.iter().enumerate() {
                    if b > 0 {
                        row.push(' ');
                    }
                    row.push_str(&key.to_string());
                }
            }
            None => row.push_str("NULL"),
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
            eprintln!("lsh-lines: {e}");
            ExitCode::FAILURE
        }
    }
}
