//! The fingerprint of arbitrary bytes at every level of vector instructions,
//! and after a stopped walk (`simhash_fuzz::scan` says what is checked).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| simhash_fuzz::scan(data));
