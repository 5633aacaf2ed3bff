//! Every error a user can cause, one named helper each, with its SQLSTATE
//! and a message in PostgreSQL's style (lower-case message, sentence-style
//! detail and hint).

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode};

fn raise(code: PgSqlErrorCode, message: String, detail: Option<String>, hint: Option<&str>) -> ! {
    let mut report = ErrorReport::new(code, message, "simhash");
    if let Some(detail) = detail {
        report = report.set_detail(detail);
    }
    if let Some(hint) = hint {
        report = report.set_hint(hint);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("an ERROR report does not return")
}

/// 22P02: a `simhash64` literal that is not 16 hexadecimal digits.
pub fn invalid_simhash64_literal(literal: &[u8], why: &simhash_core::hex::ParseError) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
        format!(
            "invalid input syntax for type simhash64: \"{}\"",
            String::from_utf8_lossy(literal)
        ),
        Some(why.to_string()),
        None,
    )
}

/// 22026: a `bit` string of the wrong length cast to `simhash64`.
pub fn bit_length_mismatch(len: i32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_STRING_DATA_LENGTH_MISMATCH,
        format!("bit string length {len} does not match type simhash64"),
        Some("A simhash64 is exactly 64 bits.".into()),
        None,
    )
}

/// 0A000: fingerprints are defined on Unicode text, so the database must be
/// UTF-8; in any other encoding the same characters would be other bytes.
pub fn database_not_utf8(encoding: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        "simhash() requires a UTF8 database".into(),
        Some(format!("The database encoding is {encoding}.")),
        Some("Create the database with ENCODING 'UTF8'."),
    )
}

/// 22023: a clustering distance outside what is supported.
pub fn cluster_distance_out_of_range(k: i32, max: u32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_clusters distance {k} is out of range"),
        Some(format!("Clustering supports distances 0 to {max}.")),
        None,
    )
}

/// 54000: more distinct fingerprints than one clustering handles.
pub fn too_many_fingerprints(distinct: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("simhash_clusters: {distinct} distinct fingerprints is too many"),
        Some(format!(
            "One clustering handles at most {} distinct fingerprints.",
            u32::MAX
        )),
        Some("Cluster the table in parts, for example by a range of keys."),
    )
}

/// 42804: a clustering query whose rows are not (key, fingerprint).
pub fn cluster_query_shape(found: &[String]) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        "simhash_clusters_query: the query must return two columns, a key and a fingerprint".into(),
        Some(format!(
            "It returns {} column{}{}{}.",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            if found.is_empty() { "" } else { ": " },
            found.join(", ")
        )),
        Some("Return the key as smallint, integer or bigint and the fingerprint as simhash64 or bigint, in that order."),
    )
}

/// The error of a query run through SPI, when it comes back as a value
/// rather than as PostgreSQL's own error (which keeps its SQLSTATE).
pub fn spi_failed(what: &str, e: &pgrx::spi::SpiError) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_CURSOR_DEFINITION,
        format!("{what}: could not read the query's rows"),
        Some(e.to_string()),
        None,
    )
}

/// 54000: `simhash_features` on a text with more distinct features than
/// one listing holds (each row is held in memory until the set is
/// returned).
pub fn too_many_features(limit: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("simhash_features: text has more than {limit} distinct features"),
        Some(format!(
            "One call lists at most {limit} distinct features, of at most {} bytes in all.",
            simhash_core::fingerprint::MAX_FEATURE_BYTES
        )),
        Some("Call it on a shorter part of the text; simhash() itself has no such limit."),
    )
}

/// 54000: `simhash_features` on a text whose distinct features are more
/// bytes in all than one listing holds.
pub fn features_too_long(limit: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("simhash_features: the distinct features of the text are more than {limit} bytes"),
        Some(format!(
            "One call lists at most {} distinct features, of at most {limit} bytes in all.",
            simhash_core::fingerprint::MAX_FEATURES
        )),
        Some("Call it on a shorter part of the text; simhash() itself has no such limit."),
    )
}

/// 22023: the two arrays of one bucket differ in length.
pub fn bucket_arrays_mismatch(keys: usize, fps: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_bucket_links: {keys} keys but {fps} fingerprints"),
        None,
        Some("Pass array_agg(key) and array_agg(fingerprint) of the same rows."),
    )
}
