//! The glue of `simhash_insert_new`: the batch's pairs within `k`
//! (`_simhash_near_pairs`, [`simhash_core::near`]), its check against a
//! target read once (`_simhash_batch_skips`, which settles the whole batch
//! in that pass) or probed (chosen by
//! `simhash.load_check` and `_simhash_load_scans`), and the ordering rule:
//! the batch's pairs of neighbours come in as two arrays, and which rows
//! one-at-a-time guarded inserts would skip comes out
//! ([`simhash_core::guard::skipped_in_order`]).

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use simhash_core::near::{
    keep_smallest_key, pairs_within, scan_is_cheaper, skipped_in_order_within, BandSet, Batch,
    NearError, TargetMatch, MAX_BATCH,
};
use simhash_core::probe::MAX_PROBED_K;

use crate::{clusters, errors};

/// Each skipped row of a batch with the earlier kept row it matched, from
/// the pairs `(later[i], earlier[i])` of neighbours in the batch's order.
/// NULL pairs are left out.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_skipped_in_order(
    later: Array<'_, i64>,
    earlier: Array<'_, i64>,
) -> TableIterator<'static, (name!(skipped, i64), name!(matched, i64))> {
    if later.len() != earlier.len() {
        errors::pair_arrays_mismatch(later.len(), earlier.len());
    }
    // The pairs held, within simhash.load_memory as the pairs found are
    // (a verified load adds the second source's pairs to the
    // fingerprint's), asked before they are allocated.
    let (cap, cap_text) = load_memory();
    if (later.len() as i64).saturating_mul(PAIR_BYTES) > cap {
        errors::load_pairs_exceeded("_simhash_skipped_in_order", &cap_text);
    }
    let mut pairs: Vec<(i64, i64)> = later
        .iter()
        .zip(earlier.iter())
        .filter_map(|(y, x)| Some((y?, x?)))
        .collect();
    TableIterator::new(simhash_core::guard::skipped_in_order(&mut pairs))
}

/// `simhash.load_check`: how `simhash_insert_new` checks a batch against
/// its target.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum LoadCheck {
    /// Whichever the cost estimate finds cheaper.
    #[name = c"auto"]
    Auto,
    /// Read the target once against the batch held in memory.
    #[name = c"scan"]
    Scan,
    /// Probe the target's band indexes once per batch row.
    #[name = c"probe"]
    Probe,
}

/// The setting behind `simhash.load_check`.
pub static LOAD_CHECK: GucSetting<LoadCheck> = GucSetting::<LoadCheck>::new(LoadCheck::Auto);

/// Defines `simhash.load_check` (once per process, from `_PG_init`).
pub fn install() {
    GucRegistry::define_enum_guc(
        c"simhash.load_check",
        c"How simhash_insert_new checks a batch against its target: auto, scan or probe.",
        c"scan reads the target once against the batch held in memory; probe looks each batch row up in the target's band indexes; auto takes the cheaper by estimate. Verified loads always probe.",
        &LOAD_CHECK,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The positions of a batch given as two arrays of the same length
/// (`n`, `fp`), without the rows where either is NULL.
fn batch_of(what: &str, n: &Array<'_, i64>, fp: &Array<'_, i64>) -> (Vec<i64>, Vec<u64>) {
    if n.len() != fp.len() {
        errors::batch_arrays_mismatch(what, n.len(), fp.len());
    }
    if n.len() > MAX_BATCH {
        errors::out_of_memory(what, n.len());
    }
    // What the batch will take, asked before it is allocated: under
    // Linux's overcommit a refused allocation is the OOM killer, not an
    // error, so the bound is the setting's.
    let (cap, cap_text) = load_memory();
    if (n.len() as i64).saturating_mul(BATCH_ROW_BYTES) > cap {
        errors::load_batch_exceeded(what, n.len(), &cap_text);
    }
    let (mut ns, mut fps) = (Vec::new(), Vec::new());
    if ns.try_reserve(n.len()).is_err() || fps.try_reserve(n.len()).is_err() {
        errors::out_of_memory(what, n.len());
    }
    for (n, fp) in n.iter().zip(fp.iter()) {
        if let (Some(n), Some(fp)) = (n, fp) {
            ns.push(n);
            fps.push(fp as u64);
        }
    }
    (ns, fps)
}

/// [`batch_of`] for a search within `k` of the batch itself, `k` checked.
fn batch_within(
    what: &str,
    n: &Array<'_, i64>,
    fp: &Array<'_, i64>,
    k: i32,
) -> (Vec<i64>, Vec<u64>) {
    let batch = batch_of(what, n, fp);
    if !(0..=MAX_PROBED_K as i32).contains(&k) {
        errors::load_distance_out_of_range(what, k, MAX_PROBED_K);
    }
    batch
}

/// The error of a batch that cannot be searched: `k` out of range (the
/// batch's size is checked before), or no memory.
fn near_failed(what: &str, e: NearError, k: i32, rows: usize) -> ! {
    match e {
        NearError::Refused => errors::load_distance_out_of_range(what, k, MAX_PROBED_K),
        NearError::OutOfMemory => errors::out_of_memory(what, rows),
        NearError::TooManyPairs => errors::load_pairs_exceeded(what, &load_memory().1),
        // The checks here never say stop: a cancel leaves by PostgreSQL's error.
        NearError::Interrupted => unreachable!("never interrupted"),
    }
}

/// `simhash.load_memory` in bytes and as set (default 1GB): what a load's
/// pairs within the batch may take.
fn load_memory() -> (i64, String) {
    Spi::connect(|client| clusters::memory_setting(client, "simhash.load_memory"))
}

/// What one batch row takes in memory in the load's searches, all told:
/// its place, key and fingerprint (24 bytes), the bands' runs of the
/// first copies (4 x 12), the order and first-copy tables (16), the
/// target's best match per first copy (24) and the result (24).
const BATCH_ROW_BYTES: i64 = 136;

/// What one pair of the batch takes in memory, all told: 12 bytes found,
/// then its row of the result and the two arrays the SQL step builds.
const PAIR_BYTES: i64 = 48;

/// The check a search calls as it works: PostgreSQL's interrupts (a
/// cancel leaves by its error, so the search is never told to stop).
fn interrupts() -> bool {
    pgrx::check_for_interrupts!();
    true
}

/// Every pair of rows of a batch (`n[i]`, `fp[i]`) within `k` of each
/// other: `(later, earlier)` by `n`, with their distance. For
/// `simhash_insert_new`'s pass within the batch.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_near_pairs(
    n: Array<'_, i64>,
    fp: Array<'_, i64>,
    k: i32,
) -> TableIterator<'static, (name!(later, i64), name!(earlier, i64), name!(distance, i32))> {
    let (ns, fps) = batch_within("_simhash_near_pairs", &n, &fp, k);
    let max_pairs = usize::try_from(load_memory().0 / PAIR_BYTES).unwrap_or(0);
    let pairs = pairs_within(&fps, k as u32, max_pairs, &mut interrupts)
        .unwrap_or_else(|e| near_failed("_simhash_near_pairs", e, k, fps.len()));
    TableIterator::new(pairs.into_iter().map(move |(i, j, d)| {
        let (a, b) = (ns[i as usize], ns[j as usize]);
        (a.max(b), a.min(b), d as i32)
    }))
}

/// The rows of a batch (`n[i]`, `fp[i]`) that one-at-a-time guarded
/// inserts in the order of `n` would skip for an earlier kept row of the
/// batch within `k`, each with the first such row: what
/// `_simhash_skipped_in_order` makes of `_simhash_near_pairs`, without
/// holding the pairs (memory linear in the batch, whatever its pairs). For
/// `simhash_insert_new`'s unverified load when it probes the target.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_batch_order(
    n: Array<'_, i64>,
    fp: Array<'_, i64>,
    k: i32,
) -> TableIterator<'static, (name!(skipped, i64), name!(matched, i64))> {
    const WHAT: &str = "_simhash_batch_order";
    let (ns, fps) = batch_within(WHAT, &n, &fp, k);
    // In the order of n.
    let mut order: Vec<usize> = (0..ns.len()).collect();
    order.sort_unstable_by_key(|&i| ns[i]);
    let (ns, fps): (Vec<i64>, Vec<u64>) = order.into_iter().map(|i| (ns[i], fps[i])).unzip();
    let skipped = skipped_in_order_within(&fps, k as u32, &mut interrupts)
        .unwrap_or_else(|e| near_failed(WHAT, e, k, fps.len()));
    TableIterator::new(
        skipped
            .into_iter()
            .map(move |(later, kept)| (ns[later as usize], ns[kept as usize])),
    )
}

/// Rows fetched from the target's query at a time.
const FETCH: i64 = 50_000;

/// Reads `(key, fp)` rows from `query` (the target) once, `FETCH` rows at
/// a time, and calls `chunk(keys, fps)` for each batch of rows read
/// (rows with a NULL fingerprint left out; a NULL key is `None`: such a
/// row is checked as the guard checks it, by its fingerprint).
fn read_target(what: &str, query: &str, mut chunk: impl FnMut(&[Option<i64>], &[u64])) {
    let (mut keys, mut fps) = (Vec::new(), Vec::new());
    Spi::connect(|client| {
        let simhash64 = clusters::simhash64_type(client);
        let mut cursor = match client.try_open_cursor(query, &[]) {
            Ok(cursor) => cursor,
            Err(e) => errors::spi_failed(what, &e),
        };
        let mut shape = None;
        loop {
            let mut batch = match cursor.fetch(FETCH) {
                Ok(batch) => batch,
                Err(e) => errors::spi_failed(what, &e),
            };
            let (key_type, fp_type) = match shape {
                Some(shape) => shape,
                None => *shape.insert(clusters::query_shape(what, &batch, simhash64)),
            };
            if batch.is_empty() {
                break;
            }
            keys.clear();
            fps.clear();
            while batch.next().is_some() {
                let key = batch.get_datum_by_ordinal(1).ok().flatten();
                let fp = batch.get_datum_by_ordinal(2).ok().flatten();
                if let Some(fp) = fp {
                    keys.push(key.map(|key| clusters::integer(key, key_type)));
                    fps.push(clusters::integer(fp, fp_type) as u64);
                }
            }
            // SAFETY: as in simhash_clusters_query: the batch just read,
            // not read again.
            unsafe { pgrx::pg_sys::SPI_freetuptable(pgrx::pg_sys::SPI_tuptable) };
            chunk(&keys, &fps);
            pgrx::check_for_interrupts!();
        }
    });
}

/// For each query row, the smallest key (and its distance) among the
/// target rows `query` returns within `k` of it, looked up in `set`.
fn best_matches(what: &str, query: &str, set: &BandSet, rows: usize) -> Vec<TargetMatch> {
    let mut best: Vec<TargetMatch> = Vec::new();
    if best.try_reserve(rows).is_err() {
        errors::out_of_memory(what, rows);
    }
    best.resize(rows, None);
    read_target(what, query, |keys, fps| {
        set.within_each(
            fps,
            |q, pos, d| keep_smallest_key(&mut best[pos as usize], keys[q], d),
            &mut interrupts,
        )
        .unwrap_or_else(|e| near_failed(what, e, MAX_PROBED_K as i32, rows));
    });
    best
}

/// The rows of a batch (`n[i]`, `key[i]`, `fp[i]`) that one-at-a-time
/// guarded inserts in the order of `n` would skip, each with the key it
/// matched (of a target row `query` returns, or of an earlier kept batch
/// row) and the distance: the target is read once against the batch's
/// first copies held in memory ([`simhash_core::near::Batch`]). For
/// `simhash_insert_new`'s unverified load when it reads the target.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, strict, parallel_unsafe, sql = false)]
fn simhash_batch_skips(
    query: &str,
    n: Array<'_, i64>,
    key: Array<'_, i64>,
    fp: Array<'_, i64>,
    k: i32,
) -> TableIterator<
    'static,
    (
        name!(n, i64),
        name!(matched, Option<i64>),
        name!(distance, i32),
    ),
> {
    const WHAT: &str = "_simhash_batch_skips";
    if key.len() != n.len() {
        errors::batch_keys_mismatch(WHAT, n.len(), key.len());
    }
    let (ns, fps) = batch_of(WHAT, &n, &fp);
    if ns.len() != n.len() {
        errors::batch_nulls(WHAT);
    }
    let keys: Vec<Option<i64>> = key.iter().collect();
    let batch = u32::try_from(k)
        .map_err(|_| NearError::Refused)
        .and_then(|k| Batch::new(&ns, &keys, &fps, k))
        .unwrap_or_else(|e| near_failed(WHAT, e, k, ns.len()));
    drop((ns, keys, fps));
    let best = best_matches(WHAT, query, batch.firsts(), batch.first_count());
    let skipped = batch
        .skipped(&best, &mut interrupts)
        .unwrap_or_else(|e| near_failed(WHAT, e, k, best.len()));
    TableIterator::new(skipped.into_iter().map(|(n, m, d)| (n, m, d as i32)))
}

/// Whether `simhash_insert_new` should read the target once rather than
/// probe its band indexes per batch row, by the core's estimate
/// (`simhash_core::near::scan_is_cheaper`), for a target in `shards`
/// shards (1 on one node).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_load_scans(target_rows: f64, batch_rows: f64, k: i32, shards: i32) -> bool {
    match (u32::try_from(k), u32::try_from(shards)) {
        (Ok(k), Ok(shards)) => scan_is_cheaper(target_rows, batch_rows, k, shards),
        _ => false,
    }
}

/// Whether the transaction's snapshot cannot see the row version made by
/// transaction `xid` (a target row's `xmin`, as a number): it committed,
/// or was running, after the snapshot was taken. Always false under READ
/// COMMITTED, where each statement sees what committed before it. For
/// `simhash_insert_new` under REPEATABLE READ and SERIALIZABLE: a row it
/// must check against that its snapshot does not show.
///
/// A frozen row's raw `xmin` could alias a recent transaction only after
/// 2^32 transactions; the window looked at is from the snapshot's oldest
/// running transaction to the next one to start.
#[pg_extern(stable, strict, parallel_restricted, sql = false)]
fn simhash_xid_unseen(xid: i64) -> bool {
    let Ok(xid) = u32::try_from(xid) else {
        return false;
    };
    // SAFETY: reads the session's isolation level and its transaction
    // snapshot (registered by PostgreSQL for the transaction under
    // REPEATABLE READ and SERIALIZABLE); the transam functions take any xid.
    unsafe {
        if pg_sys::XactIsoLevel < pg_sys::XACT_REPEATABLE_READ as i32 {
            return false;
        }
        let xid = pg_sys::TransactionId::from(xid);
        if !pg_sys::TransactionIdIsNormal(xid) || pg_sys::TransactionIdIsCurrentTransactionId(xid) {
            return false;
        }
        let next = pg_sys::TransactionId::from(pg_sys::ReadNextFullTransactionId().value as u32);
        let snapshot = pg_sys::GetTransactionSnapshot();
        pg_sys::TransactionIdPrecedes(xid, next)
            && !pg_sys::TransactionIdPrecedes(xid, (*snapshot).xmin)
            && pg_sys::XidInMVCCSnapshot(xid, snapshot)
    }
}

/// Whether `query` (rows of a fingerprint: `simhash64` or `bigint`), run
/// with a snapshot taken now rather than the transaction's, returns a row.
/// For `simhash_insert_new` under REPEATABLE READ and SERIALIZABLE, after
/// it holds the target's lock: the target's rows within `k` of the batch
/// that the transaction's snapshot cannot see (`_simhash_xid_unseen`), as a
/// unique index sees them.
#[pg_extern(volatile, strict, parallel_unsafe, sql = false)]
fn simhash_latest_rows(query: &str) -> bool {
    const WHAT: &str = "_simhash_latest_rows";
    let query = std::ffi::CString::new(query).unwrap_or_else(|_| errors::nul_in_query(WHAT));
    Spi::connect(|_client| {
        // SAFETY: inside a connected SPI session; the plan is SPI's and
        // freed with it; GetLatestSnapshot's snapshot is copied by SPI.
        unsafe {
            let plan = pg_sys::SPI_prepare(query.as_ptr(), 0, std::ptr::null_mut());
            if plan.is_null() {
                errors::spi_code_failed(WHAT, pg_sys::SPI_result);
            }
            let rc = pg_sys::SPI_execute_snapshot(
                plan,
                std::ptr::null_mut(),
                std::ptr::null(),
                pg_sys::GetLatestSnapshot(),
                std::ptr::null_mut(),
                true,
                false,
                1,
            );
            if rc != pg_sys::SPI_OK_SELECT as i32 {
                errors::spi_code_failed(WHAT, rc);
            }
            pg_sys::SPI_processed > 0
        }
    })
}

/// Whether `query` parses as exactly one statement (it is not run). For
/// `simhash_insert_new`, which puts its `order_by` into a statement: a
/// sort key that closes the statement and starts another is refused. A
/// syntax error is PostgreSQL's own (42601).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_one_statement(query: &str) -> bool {
    let query = std::ffi::CString::new(query)
        .unwrap_or_else(|_| errors::nul_in_query("_simhash_one_statement"));
    // SAFETY: raw_parser reads a NUL-terminated string and returns a list
    // in the current memory context (or raises PostgreSQL's error).
    unsafe {
        let list = pg_sys::raw_parser(query.as_ptr(), pg_sys::RawParseMode::RAW_PARSE_DEFAULT);
        !list.is_null() && (*list).length == 1
    }
}
