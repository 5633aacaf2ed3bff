//! Prints the fingerprint of each line of standard input:
//! `cargo run -p simhash-core --example fp < texts.txt`.
use std::io::BufRead;

fn main() {
    let fp = simhash_core::Fingerprinter::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("standard input is UTF-8 text");
        match fp.fingerprint(&line) {
            Some(v) => println!("{}\t{line}", simhash_core::hex::format(v)),
            None => println!("NULL\t{line}"),
        }
    }
}
