//! The pglz decoder on damaged, truncated and valid streams
//! (`simhash_fuzz::pglz` says what is checked).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| simhash_fuzz::pglz(data));
