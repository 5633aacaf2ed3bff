//! Verified near-duplicates: `simhash_similarity(a, b)`, the rule of
//! record `simhash_is_near_duplicate(a, b)` with its two settings, and
//! `simhash_explain(a, b)`. The definitions are the core's
//! (`simhash_core::similarity`, `simhash_core::explain`).

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::JsonB;
use simhash_core::similarity::{similarity_bytes_checked, SimilarityError, Span};

use crate::errors;
use crate::functions;

/// The rule's fingerprint distance: candidates within it are verified.
/// Up to 11, the largest distance the band indexes answer exactly.
pub const DEFAULT_K: i32 = 11;
/// The rule's similarity threshold.
pub const DEFAULT_THRESHOLD: f64 = 0.71;

/// The longest text `simhash_explain` takes, in bytes.
pub const EXPLAIN_MAX_BYTES: usize = 16 << 20;

/// `simhash.verify_k`.
pub static VERIFY_K: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_K);
/// `simhash.similarity_threshold`.
pub static THRESHOLD: GucSetting<f64> = GucSetting::<f64>::new(DEFAULT_THRESHOLD);

/// Defines the settings (once per process, from `_PG_init`).
pub fn install() {
    GucRegistry::define_int_guc(
        c"simhash.verify_k",
        c"Fingerprint distance within which the rule of record verifies a pair on its texts.",
        c"simhash_is_near_duplicate() and the verified guard and clustering use it where no k is given. At most 11, the largest distance the band indexes answer exactly.",
        &VERIFY_K,
        0,
        11,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_float_guc(
        c"simhash.similarity_threshold",
        c"Similarity (simhash_similarity) at or above which a candidate pair is a near-duplicate.",
        c"The rule of record: fingerprint distance at most simhash.verify_k and simhash_similarity at least this.",
        &THRESHOLD,
        0.0,
        1.0,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The similarity of two texts' bytes, checking for a cancel as it reads.
pub fn similarity_of(a: &[u8], b: &[u8]) -> f64 {
    functions::check_utf8_database();
    let checked = similarity_bytes_checked(a, b, || {
        pgrx::check_for_interrupts!();
        true
    });
    match checked {
        Ok(s) => s,
        Err(SimilarityError::NotUtf8) => errors::text_not_utf8(),
        Err(SimilarityError::OutOfMemory) => errors::similarity_out_of_memory(),
        // The closure never says stop: a cancel leaves by PostgreSQL's error.
        Err(SimilarityError::Interrupted) => unreachable!("never interrupted"),
    }
}

/// The two `text` arguments of a strict function of two, decoded.
///
/// # Safety
/// `fcinfo` is the call's own, of a strict function of two `text`
/// arguments.
unsafe fn two_texts<'a>(fcinfo: pg_sys::FunctionCallInfo) -> (&'a [u8], &'a [u8]) {
    let args = (*fcinfo).args.as_slice(2);
    (
        crate::detoast::text_bytes(args[0].value),
        crate::detoast::text_bytes(args[1].value),
    )
}

/// `simhash_similarity(a text, b text)`.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_similarity_text(fcinfo: pg_sys::FunctionCallInfo) -> f64 {
    // SAFETY: a strict function of two text arguments, called by PostgreSQL.
    let (a, b) = unsafe { two_texts(fcinfo) };
    similarity_of(a, b)
}

/// How many places two arrays of candidate keys share: the same key at
/// the same place (a NULL shares none).
pub fn shared_places(a: &[Option<i32>], b: impl IntoIterator<Item = Option<i32>>) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.is_some() && **x == *y)
        .count()
}

/// `simhash_lsh_shared(a integer[], b integer[])`: how many bands two
/// arrays of candidate keys share (compared place by place).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_lsh_shared(a: Vec<Option<i32>>, b: Vec<Option<i32>>) -> i32 {
    shared_places(&a, b) as i32
}

/// `a &&& b` (`_simhash_keys_overlap`): whether two arrays of candidate
/// keys make a candidate of the second source, band by band
/// ([`simhash_core::lsh::is_candidate`]).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_keys_share_place(a: Vec<Option<i32>>, b: Vec<Option<i32>>) -> bool {
    simhash_core::lsh::is_candidate(shared_places(&a, b))
}

/// How the two texts' 5-grams overlap (Jaccard, containment), checking
/// for a cancel as it reads.
pub fn overlap_of(a: &[u8], b: &[u8]) -> simhash_core::similarity::GramOverlap {
    functions::check_utf8_database();
    let checked = simhash_core::similarity::overlap_bytes_checked(a, b, || {
        pgrx::check_for_interrupts!();
        true
    });
    match checked {
        Ok(o) => o,
        Err(SimilarityError::NotUtf8) => errors::text_not_utf8(),
        Err(SimilarityError::OutOfMemory) => errors::similarity_out_of_memory(),
        // The closure never says stop: a cancel leaves by PostgreSQL's error.
        Err(SimilarityError::Interrupted) => unreachable!("never interrupted"),
    }
}

/// `simhash_jaccard(a text, b text)`: the Jaccard similarity of the two
/// texts' character 5-grams ([`simhash_core::similarity::GramOverlap::jaccard`]).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_jaccard_text(fcinfo: pg_sys::FunctionCallInfo) -> f64 {
    // SAFETY: a strict function of two text arguments, called by PostgreSQL.
    let (a, b) = unsafe { two_texts(fcinfo) };
    overlap_of(a, b).jaccard()
}

/// `simhash_containment(a text, b text)`: the containment of the smaller
/// set of character 5-grams in the larger
/// ([`simhash_core::similarity::GramOverlap::containment`]).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_containment_text(fcinfo: pg_sys::FunctionCallInfo) -> f64 {
    // SAFETY: a strict function of two text arguments, called by PostgreSQL.
    let (a, b) = unsafe { two_texts(fcinfo) };
    overlap_of(a, b).containment()
}

/// `simhash_lsh_match(a text, b text)`: the second test of a candidate that
/// only the keys found ([`simhash_core::lsh::second_test`]): a 5-gram
/// Jaccard of at least `simhash_lsh_min_jaccard()` or a containment of at
/// least `simhash_lsh_min_containment()`. One pass over each text.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_lsh_match_text(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    // SAFETY: a strict function of two text arguments, called by PostgreSQL.
    let (a, b) = unsafe { two_texts(fcinfo) };
    simhash_core::lsh::second_test(&overlap_of(a, b))
}

/// `simhash_lsh_min_containment()`: the containment that passes in place
/// of the Jaccard ([`simhash_core::lsh::MIN_CONTAINMENT`]).
#[pg_extern(immutable, parallel_safe, sql = false)]
fn simhash_lsh_min_containment() -> f64 {
    simhash_core::lsh::MIN_CONTAINMENT
}

/// `simhash_lsh_min_jaccard()`: the Jaccard of 5-grams that lets a
/// candidate only the second source found pass
/// ([`simhash_core::lsh::MIN_JACCARD`]).
#[pg_extern(immutable, parallel_safe, sql = false)]
fn simhash_lsh_min_jaccard() -> f64 {
    simhash_core::lsh::MIN_JACCARD
}

/// `simhash_lsh_min_shared()`: the bands two texts must share to be a
/// candidate of the second source ([`simhash_core::lsh::MIN_SHARED_BANDS`]).
#[pg_extern(immutable, parallel_safe, sql = false)]
fn simhash_lsh_min_shared() -> i32 {
    simhash_core::lsh::MIN_SHARED_BANDS as i32
}

/// `simhash_lsh(text)`: the text's candidate keys beside the fingerprint
/// ([`simhash_core::lsh`]): 32 integers, NULL for a text without a word
/// character.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_lsh_text(fcinfo: pg_sys::FunctionCallInfo) -> Option<Vec<i32>> {
    // SAFETY: a strict function of one text argument, called by
    // PostgreSQL; the tag is simhash_lsh's alone.
    let keys =
        unsafe { functions::kept_at_call_site(fcinfo, functions::CALL_MEMO_LSH, lsh_keys_of) };
    keys.map(|k| k.to_vec())
}

/// The candidate keys of a text's bytes ([`simhash_core::lsh`]), checking
/// for a cancel as it reads.
pub fn lsh_keys_of(text: &[u8]) -> Option<[i32; simhash_core::lsh::BANDS]> {
    functions::check_utf8_database();
    functions::count_computed();
    let keys = simhash_core::lsh::keys_checked(text, || {
        pgrx::check_for_interrupts!();
        true
    });
    match keys {
        Ok(keys) => keys,
        Err(SimilarityError::NotUtf8) => errors::text_not_utf8(),
        Err(SimilarityError::OutOfMemory) => errors::similarity_out_of_memory(),
        // The closure never says stop: a cancel leaves by PostgreSQL's error.
        Err(SimilarityError::Interrupted) => unreachable!("never interrupted"),
    }
}

/// How many candidate-key bands two texts share (0 when either has none).
pub fn shared_bands_of(a: &[u8], b: &[u8]) -> usize {
    match (lsh_keys_of(a), lsh_keys_of(b)) {
        (Some(ka), Some(kb)) => simhash_core::lsh::shared_bands(&ka, &kb),
        _ => 0,
    }
}

/// Whether the rule of record calls `a` and `b` near-duplicates: their
/// fingerprints within `k` and their similarity at least `threshold`.
/// Texts without features are never near-duplicates (no fingerprint).
///
/// The second source of candidates (shared `simhash_lsh` keys) is a
/// table's choice (`simhash_add_lsh`), not the pair's: with the trigram
/// similarity as the verifier it also lets in long texts on one subject
/// (`bench/quality`: English hard negatives 0% to 1.7%), so the rule for
/// two texts stays the fingerprint's.
pub fn is_near_duplicate(a: &[u8], b: &[u8], k: i32, threshold: f64) -> bool {
    let (Some(fa), Some(fb)) = (functions::fingerprint_v3(a), functions::fingerprint_v3(b)) else {
        return false;
    };
    if simhash_core::hamming(fa as u64, fb as u64) as i32 > k {
        return false;
    }
    similarity_of(a, b) >= threshold
}

/// `simhash_is_near_duplicate(a text, b text)`: the rule of record with
/// the session's settings.
#[pg_extern(stable, strict, parallel_safe, sql = false)]
fn simhash_is_near_duplicate_text(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    // SAFETY: a strict function of two text arguments, called by PostgreSQL.
    let (a, b) = unsafe { two_texts(fcinfo) };
    is_near_duplicate(a, b, VERIFY_K.get(), THRESHOLD.get())
}

/// `simhash_explain(a text, b text, top integer)`: a JSON document that
/// says why the pair is or is not a near-duplicate.
#[pg_extern(stable, strict, parallel_safe, sql = false)]
fn simhash_explain_text(a: &str, b: &str, top: i32) -> JsonB {
    functions::check_utf8_database();
    if top < 0 {
        errors::explain_bad_top(top);
    }
    // The differing stretches keep both texts' streams in memory: a page
    // for a person to read, not a 100 MB dump.
    if a.len().max(b.len()) > EXPLAIN_MAX_BYTES {
        errors::explain_too_long(a.len().max(b.len()), EXPLAIN_MAX_BYTES);
    }
    let explained =
        simhash_core::explain::explain(functions::fingerprinter(), a, b, top as usize, || {
            pgrx::check_for_interrupts!();
            true
        });
    let e = match explained {
        Ok(e) => e,
        Err(simhash_core::FeaturesError::TooMany { limit }) => {
            errors::too_many_features_in("simhash_explain", limit)
        }
        Err(simhash_core::FeaturesError::TooLong { limit }) => {
            errors::features_too_long_in("simhash_explain", limit)
        }
        Err(simhash_core::FeaturesError::Interrupted) => unreachable!("never interrupted"),
    };
    let (k, threshold) = (VERIFY_K.get(), THRESHOLD.get());
    let spans = |text: &str, spans: &[Span]| -> serde_json::Value {
        let chars: Vec<char> = text.chars().collect();
        spans
            .iter()
            .map(|s| {
                serde_json::json!({
                    "start": s.start,
                    "end": s.end,
                    "text": chars[s.start.min(chars.len())..s.end.min(chars.len())].iter().collect::<String>(),
                })
            })
            .collect()
    };
    let hex = |fp: Option<u64>| fp.map(|v| format!("{v:016x}"));
    // Which source makes the pair a candidate: the fingerprint within k,
    // the candidate keys (bands shared), both or neither.
    let by_fingerprint = e.distance.is_some_and(|d| d as i32 <= k);
    let shared = shared_bands_of(a.as_bytes(), b.as_bytes());
    let by_keys = shared >= simhash_core::lsh::MIN_SHARED_BANDS && e.distance.is_some();
    let overlap = overlap_of(a.as_bytes(), b.as_bytes());
    let candidate = match (by_fingerprint, by_keys) {
        (true, true) => Some("both"),
        (true, false) => Some("fingerprint"),
        (false, true) => Some("lsh"),
        (false, false) => None,
    };
    // The verdict is simhash_is_near_duplicate's (the fingerprint's
    // candidates); `candidate` also says when the keys would make the
    // pair one on a table with the second source.
    let near = by_fingerprint && e.similarity >= threshold;
    JsonB(serde_json::json!({
        "distance": e.distance,
        "similarity": e.similarity,
        "k": k,
        "threshold": threshold,
        "lsh_bands_shared": shared,
        "jaccard": overlap.jaccard(),
        "containment": overlap.containment(),
        "lsh_match": simhash_core::lsh::second_test(&overlap),
        "candidate": candidate,
        "near_duplicate": near,
        "fingerprint_a": hex(e.fingerprints.0),
        "fingerprint_b": hex(e.fingerprints.1),
        "only_in_a": spans(a, &e.only_a),
        "only_in_b": spans(b, &e.only_b),
        "features": e.movers.iter().map(|m| serde_json::json!({
            "feature": m.token,
            "weight_a": m.weight_a,
            "weight_b": m.weight_b,
            "bits": m.bits,
            "pull": m.pull,
        })).collect::<Vec<_>>(),
    }))
}
