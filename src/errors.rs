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

/// 0A000: fingerprints, keys and similarities are defined on Unicode
/// text, so the database must be UTF-8; in any other encoding the same
/// characters would be other bytes. Raised by every text function, so the
/// message names none of them.
pub fn database_not_utf8(encoding: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        "the text functions of simhash require a UTF8 database".into(),
        Some(format!("The database encoding is {encoding}.")),
        Some("Create the database with ENCODING 'UTF8'."),
    )
}

/// 22021: a text value whose bytes are not UTF-8 in a UTF8 database
/// (PostgreSQL checks every value it takes in, so only a damaged value
/// gets here).
pub fn text_not_utf8() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
        "invalid byte sequence for encoding \"UTF8\" in the text to fingerprint".into(),
        None,
        None,
    )
}

/// 53200: the allocator refused the memory of comparing two texts: the
/// gram keys the 5-gram overlap holds (`simhash_jaccard`,
/// `simhash_containment`, `simhash_lsh_match`), at most 32 MB whatever
/// the texts.
pub fn similarity_out_of_memory() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory comparing two texts".into(),
        Some("Comparing the texts' 5-grams holds up to 16 MB of gram keys for each text, and the server process could not allocate them.".into()),
        Some("Retry when the server has more free memory."),
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

/// 22023: the verified guard's similarity threshold.
pub fn guard_bad_threshold(given: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_near_unique() similarity threshold must be a number from 0 to 1, not \"{given}\""),
        None,
        None,
    )
}

/// 42804: the verified guard's text column is not of type text.
pub fn guard_text_not_text(column: &str, relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        format!("column \"{column}\" of relation {relation} is not of type text"),
        Some("The near-unique guard verifies candidates on a text column.".into()),
        None,
    )
}

/// 54000: `simhash_explain` of a text longer than it takes.
pub fn explain_too_long(len: usize, limit: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("simhash_explain: a text of {len} bytes is longer than the {limit} it explains"),
        Some("It keeps both texts' normalized streams in memory to find where they differ.".into()),
        Some("Explain a part of the texts; simhash_similarity and simhash_is_near_duplicate take any length."),
    )
}

/// 22023: `simhash_explain` asked for a negative number of features.
pub fn explain_bad_top(top: i32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_explain: the number of features must be 0 or more, not {top}"),
        None,
        None,
    )
}

/// 53200: clustering in memory would take more than simhash.cluster_memory.
pub fn cluster_memory_exceeded(rows: usize, cap: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        format!("simhash_clusters_query: {rows} rows need more than simhash.cluster_memory ({cap})"),
        Some("Clustering in memory holds about 75 bytes a row.".into()),
        Some("Use simhash_clusters(), which clusters a larger table by buckets on disk, or raise simhash.cluster_memory."),
    )
}

/// 53200: clustering by buckets would hold more than its bound: one
/// bucket's rows, or the links of the rows that have a neighbour.
pub fn cluster_buckets_exceeded(what: &str, rows: usize, held: &str, cap: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        format!("{what}: {rows} {held} need more than simhash.cluster_memory ({cap}, at least 1MB)"),
        Some("Clustering by buckets holds one bucket's rows (about 75 bytes each) and the links of the rows that have a neighbour (about 80 bytes each) within simhash.cluster_memory, or 1MB when it is set lower.".into()),
        Some("Raise simhash.cluster_memory."),
    )
}

/// 53200: the allocator refused memory Rust code asked for.
pub fn out_of_memory(what: &str, items: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory".into(),
        Some(format!("{what} could not hold {items} rows.")),
        None,
    )
}

/// 42804: a clustering query whose rows are not (key, fingerprint).
pub fn cluster_query_shape(what: &str, found: &[String]) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        format!("{what}: the query must return two columns, a key and a fingerprint"),
        Some(returns(found)),
        Some("Return the key as smallint, integer or bigint and the fingerprint as simhash64 or bigint, in that order."),
    )
}

/// "It returns 2 columns: integer, text." for a query's column types.
fn returns(found: &[String]) -> String {
    format!(
        "It returns {} column{}{}{}.",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        if found.is_empty() { "" } else { ": " },
        found.join(", ")
    )
}

/// 42804: a query of links for `_simhash_join_links` that does not return
/// two bigint columns.
pub fn links_query_shape(found: &[String]) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        "_simhash_join_links: the query must return two bigint columns, the keys of a link".into(),
        Some(returns(found)),
        Some("Return each link as two bigint keys, for example SELECT a::bigint, b::bigint FROM links."),
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
    too_many_features_in("simhash_features", limit)
}

/// 54000: `simhash_features` or `simhash_explain` (`what`) on a text with
/// more distinct features than one call holds.
pub fn too_many_features_in(what: &str, limit: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("{what}: text has more than {limit} distinct features"),
        Some(format!(
            "One call holds at most {limit} distinct features, of at most {} bytes in all.",
            simhash_core::fingerprint::MAX_FEATURE_BYTES
        )),
        Some(features_hint(what)),
    )
}

/// What to do instead, for the function that hit a features limit.
fn features_hint(what: &str) -> &'static str {
    if what == "simhash_explain" {
        "Explain shorter parts of the texts; simhash_similarity() and simhash() have no such limit."
    } else {
        "Call it on a shorter part of the text; simhash() itself has no such limit."
    }
}

/// 54000: `simhash_features` on a text whose distinct features are more
/// bytes in all than one listing holds.
pub fn features_too_long(limit: usize) -> ! {
    features_too_long_in("simhash_features", limit)
}

/// 54000: `simhash_features` or `simhash_explain` (`what`) on a text whose
/// distinct features take more bytes than one call holds.
pub fn features_too_long_in(what: &str, limit: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        format!("{what}: the distinct features of the text are more than {limit} bytes"),
        Some(format!(
            "One call holds at most {} distinct features, of at most {limit} bytes in all.",
            simhash_core::fingerprint::MAX_FEATURES
        )),
        Some(features_hint(what)),
    )
}

/// 22023: the two arrays of one bucket differ in length.
pub fn bucket_arrays_mismatch(keys: usize, fps: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("_simhash_bucket_links: {keys} keys but {fps} fingerprints"),
        None,
        Some("Pass array_agg(key) and array_agg(fingerprint) of the same rows."),
    )
}

/// 22023: `_simhash_skipped_in_order` got arrays of different lengths.
pub fn pair_arrays_mismatch(later: usize, earlier: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("_simhash_skipped_in_order: {later} later rows but {earlier} earlier ones"),
        None,
        Some("Pass array_agg(later) and array_agg(earlier) of the same pairs."),
    )
}

/// 22023: two arrays of one batch of different lengths.
pub fn batch_arrays_mismatch(what: &str, n: usize, fps: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("{what}: {n} rows but {fps} fingerprints"),
        None,
        Some("Pass array_agg(n) and array_agg(fingerprint) of the same rows, in the same order."),
    )
}

/// 22023: a batch given with fewer or more keys than rows.
pub fn batch_keys_mismatch(what: &str, n: usize, keys: usize) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("{what}: {n} rows but {keys} keys"),
        None,
        Some("Pass array_agg(n), array_agg(key) and array_agg(fingerprint) of the same rows, in the same order."),
    )
}

/// 22004: a NULL among a batch's places or fingerprints, where each row
/// must have both.
pub fn batch_nulls(what: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
        format!("{what}: a row of the batch has a NULL place or fingerprint"),
        None,
        None,
    )
}

/// 22023: a load's distance out of the range the band indexes answer.
pub fn load_distance_out_of_range(what: &str, k: i32, max: u32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("{what}: k must be from 0 to {max}, not {k}"),
        None,
        None,
    )
}

/// 39P01: `simhash_near_unique()` called other than by the trigger manager.
pub fn guard_not_trigger() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        "simhash_near_unique() was not called by the trigger manager".into(),
        None,
        None,
    )
}

/// 39P01: the guard made as another kind of trigger.
pub fn guard_wrong_event() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        "simhash_near_unique() must be a BEFORE INSERT OR UPDATE ... FOR EACH ROW trigger".into(),
        None,
        None,
    )
}

/// 22023: the guard's arguments, counted.
pub fn guard_argument_count() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        "simhash_near_unique() takes 2, 3, 4 or 6 arguments: column, k [, error | skip [, key column [, text column, similarity threshold]]]"
            .into(),
        None,
        None,
    )
}

/// 22023: the guard's distance argument.
pub fn guard_bad_distance(given: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_near_unique() distance must be an integer from 0 to 11, not \"{given}\""),
        None,
        None,
    )
}

/// 22023: the guard's action argument.
pub fn guard_bad_action(given: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("simhash_near_unique() action must be \"error\" or \"skip\", not \"{given}\""),
        None,
        None,
    )
}

/// 42703: a column named in the guard's arguments is missing.
pub fn guard_no_column(column: &str, relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
        format!("column \"{column}\" of relation \"{relation}\" does not exist"),
        None,
        None,
    )
}

/// 42804: the guarded column is not a fingerprint.
pub fn guard_not_simhash64(column: &str, relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        format!("column \"{column}\" of relation \"{relation}\" is not of type simhash64"),
        Some("simhash_near_unique() guards a simhash64 column.".into()),
        None,
    )
}

/// 0A000: a foreign partition cannot be checked.
pub fn guard_foreign_partition(relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        format!("simhash_near_unique() cannot check foreign table \"{relation}\""),
        Some("The guard reads every partition of the table it is made on.".into()),
        None,
    )
}

/// 0A000: the guard on a Citus shard would see that shard only.
pub fn guard_on_citus_shard(relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        format!("simhash_near_unique() cannot guard Citus shard \"{relation}\""),
        Some("On a distributed table with more than one shard the guard would check one shard, not the table.".into()),
        Some("Load with simhash_insert_new(), guard a reference table, or find near-duplicates after loading with simhash_clusters()."),
    )
}

/// 55000: another BEFORE row trigger fires after the near-unique guard
/// and could change the row it checked.
pub fn guard_not_last(guard: &str, later: &str, relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("near-unique guard \"{guard}\" on \"{relation}\" must be the last BEFORE row trigger"),
        Some(format!(
            "Trigger \"{later}\" fires after it (triggers fire in the order of their names) and could change the fingerprint or the text after the guard checked the row."
        )),
        Some("Rename that trigger so that its name sorts before the guard's, or make it an AFTER trigger."),
    )
}

/// 42P01: `simhash_probe()` on a table that is gone.
pub fn probe_no_table(relid: u32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
        format!("relation with OID {relid} does not exist"),
        None,
        None,
    )
}

/// 42809: `simhash_probe()` reads one table's rows.
pub fn probe_not_table(relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
        format!("simhash_probe() cannot read \"{relation}\""),
        Some("It reads the rows of one table or materialized view; for a partitioned table, call it on each partition.".into()),
        None,
    )
}

/// 42501: `simhash_probe()` without SELECT on the table or the column.
pub fn probe_denied(relation: &str, column: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        format!("permission denied for table {relation}"),
        Some(format!(
            "simhash_probe() returns row locations (ctid), so it needs SELECT on the whole table, not only on column \"{column}\"."
        )),
        Some("Query the distance itself (fp <~> q <= k): it uses the band indexes with the privileges you have."),
    )
}

/// 42501: `simhash_probe()` would see rows row-level security hides.
pub fn probe_row_security(relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        format!("simhash_probe() cannot read table \"{relation}\", which has row-level security"),
        Some("It would see rows the policies hide.".into()),
        Some("Query the table itself (WHERE fp <~> q <= k): the policies apply to that."),
    )
}

/// 42804: a column that should hold fingerprints does not.
pub fn column_not_simhash64(column: &str, relation: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
        format!("column \"{column}\" of relation \"{relation}\" is not of type simhash64"),
        None,
        None,
    )
}

/// XX001: a text stored compressed with pglz whose compressed bytes do not
/// decode (damaged on disk); PostgreSQL's own decoder says the same.
pub fn pglz_corrupt() -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        "compressed pglz data is corrupt".into(),
        None,
        None,
    )
}

/// XX002: a band index page that is not a B-tree page as PostgreSQL
/// writes one (PostgreSQL's own check says the same, `_bt_checkpage`).
pub fn index_page_corrupt(index: &str, block: u32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
        format!("index \"{index}\" contains corrupted page at block {block}"),
        None,
        Some("Please REINDEX it."),
    )
}

/// 53200: a load's pairs within its batch past `simhash.load_memory`.
pub fn load_pairs_exceeded(what: &str, cap: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        format!("{what}: the batch's pairs within k need more than simhash.load_memory ({cap})"),
        Some("Each pair of batch rows within k of each other takes about 48 bytes.".into()),
        Some("Raise simhash.load_memory, load in smaller batches, or load without verification, which settles the batch without holding its pairs."),
    )
}

/// 22023: a query text with a NUL byte.
pub fn nul_in_query(what: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        format!("{what}: the query contains a NUL byte"),
        None,
        None,
    )
}

/// 42601 (or the class SPI names): a query SPI could not plan or run.
pub fn spi_code_failed(what: &str, code: i32) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
        format!("{what}: could not run the query (SPI result {code})"),
        None,
        None,
    )
}

/// 53200: a load's batch larger than `simhash.load_memory` allows.
pub fn load_batch_exceeded(what: &str, rows: usize, cap: &str) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        format!("{what}: a batch of {rows} rows needs more than simhash.load_memory ({cap})"),
        Some("The load holds about 136 bytes a batch row in memory.".into()),
        Some("Load in smaller batches, or raise simhash.load_memory."),
    )
}
