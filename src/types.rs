//! The `simhash64` type: 8 bytes, passed by value, the same bits as a
//! `bigint`. PostgreSQL hands the value to these functions as an `i64`; the
//! SQL that declares the type and its operators is `sql/simhash.sql`.
//!
//! Equality, hashing and the binary wire format are bigint's own (same
//! bits), declared in SQL as `LANGUAGE internal`. Ordering is not: a
//! fingerprint orders as an unsigned number, the order of its hex text, so
//! `'8000000000000000' > '0000000000000001'` as it reads.

use std::ffi::{CStr, CString};

use pgrx::prelude::*;

use crate::errors;

/// Input: exactly 16 hexadecimal digits, either case.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_in(literal: &CStr) -> i64 {
    let bytes = literal.to_bytes();
    match simhash_core::hex::parse(bytes) {
        Ok(v) => v as i64,
        Err(why) => errors::invalid_simhash64_literal(bytes, &why),
    }
}

/// Output: 16 lower-case hexadecimal digits.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_out(value: i64) -> CString {
    CString::new(simhash_core::hex::format(value as u64)).expect("hex digits contain no NUL")
}

/// Unsigned three-way comparison, the B-tree support function.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_cmp(a: i64, b: i64) -> i32 {
    (a as u64).cmp(&(b as u64)) as i32
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_lt(a: i64, b: i64) -> bool {
    (a as u64) < (b as u64)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_le(a: i64, b: i64) -> bool {
    (a as u64) <= (b as u64)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_gt(a: i64, b: i64) -> bool {
    (a as u64) > (b as u64)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_ge(a: i64, b: i64) -> bool {
    (a as u64) >= (b as u64)
}

/// Called by the `bit -> simhash64` cast when the string is not 64 bits;
/// it only raises the error (the cast itself is SQL).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash64_bit_length_error(len: i32) -> i64 {
    errors::bit_length_mismatch(len)
}
