//! Prints the fingerprint of each line of standard input:
//! `cargo run -p simhash-core --example fp [v1|v2|v3] < texts.txt`
//! (definition version 1 unless `v2` or `v3` is given).
use std::io::BufRead;

use simhash_core::Version;

fn main() {
    let version = match std::env::args().nth(1).as_deref() {
        None | Some("v1") => Version::V1,
        Some("v2") => Version::V2,
        Some("v3") => Version::V3,
        Some(other) => {
            eprintln!("usage: fp [v1|v2|v3] < texts.txt (not {other:?})");
            std::process::exit(2);
        }
    };
    let fp = simhash_core::Fingerprinter::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("standard input is UTF-8 text");
        match fp.fingerprint_as(version, &line) {
            Some(v) => println!("{}\t{line}", simhash_core::hex::format(v)),
            None => println!("NULL\t{line}"),
        }
    }
}
