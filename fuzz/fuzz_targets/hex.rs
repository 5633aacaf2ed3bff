//! The simhash64 text form (`simhash_fuzz::hex` says what is checked).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| simhash_fuzz::hex(data));
