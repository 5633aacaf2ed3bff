//! `simhash_probe(tbl, col, fp, k)`: the row ids (`tid[]`) of the rows of
//! a table whose fingerprint is within `k` of `fp`, as the query's
//! snapshot sees them. The index-only probe.
//!
//! With the covering layout `4x16c` (each 16-bit band's B-tree index
//! carries the fingerprint as an INCLUDE column) it reads each probed
//! band value's index entries, compares the fingerprint stored there, and
//! visits the table only for the entries within `k`, to find the version
//! of the row the snapshot sees (which also follows HOT chains, so the id
//! returned is that version's). A row the bands rule out costs an index
//! entry, not a table page: at 10M rows `k = 7` reads about 10 thousand
//! entries and a handful of rows (bench/band_index.sh). The entries are
//! read straight from the index's pages (`crate::btree`), which halves the
//! probe of `k <= 11` against reading them through the access method; the
//! access method stays for an index of another shape and under
//! SERIALIZABLE, where its scans take the predicate locks.
//!
//! The planner support function (`crate::index`) turns a distance
//! condition on a table with that layout into
//! `hamming(fp, q) <= k AND ctid = ANY (array_append(simhash_probe(...),
//! NULL))`, which a TID
//! scan answers. Without a covering layout (an index being rebuilt, or a
//! direct call) the probe is still exact: it reads the rows another layout
//! that serves `k` points to, or scans the table.
//!
//! It hands out where rows are, so it asks what a query would: SELECT on
//! the table or the column (42501), and no row-level security on the table
//! (42501; the planner does not use it there).

use std::ffi::c_int;

use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use simhash_core::layout::Layout;

use crate::btree::Reader;
use crate::errors;
use crate::layout::{
    band_indexes, covering_matches, fetch_versions, fingerprint_offset, scan_key_value,
    KeyFunctions, RLS_ENABLED,
};

/// The largest `k` the covering layout is probed for (the 16-bit bands').
pub fn covering_serves(k: i32) -> bool {
    k >= 0 && Layout::Bands16.serves(k as u32)
}

/// What one call computed, kept in the function's cache: a call with the
/// same arguments under the same snapshot (the probe as a per-row filter,
/// where the planner could not use it for a TID scan) returns it again.
struct Cached {
    key: Key,
    tids: Vec<pg_sys::ItemPointerData>,
}

/// A call's arguments, its transaction (the backend's local transaction
/// id: an answer is never reused by another transaction, whose predicate
/// locks it must take itself), its statement (when it started: the result
/// is never kept for another one) and subtransaction (a new one after each
/// rolled-back PL/pgSQL block or ROLLBACK TO, which can make rows visible
/// again without a new command), and what its snapshot sees: xmin, xmax,
/// the command and a digest of the transactions in progress. Two
/// snapshots with the same of these see the same rows only while the
/// transaction has written nothing: rows it writes during one command
/// (a multi-row INSERT, UPDATE or COPY whose BEFORE trigger probes) become
/// visible to its later queries with no change to any of them, so
/// [`reusable`] says no cached answer is used once it has an xid.
type Key = (Oid, i16, i64, i32, u32, i64, u32, u32, u32, u32, u64);

/// Whether a cached answer may stand for this call: only in a transaction
/// that has written nothing (no transaction id assigned), where what a
/// snapshot sees follows from the snapshot alone.
///
/// # Safety
/// Called in a transaction.
unsafe fn reusable() -> bool {
    pg_sys::GetTopTransactionIdIfAny() == pg_sys::InvalidTransactionId
}

/// The largest result the backend keeps past its call (6 bytes a row id).
const LAST_MAX_TIDS: usize = 65_536;

thread_local! {
    /// The backend's last result (up to `LAST_MAX_TIDS` row ids), for the
    /// next call with the same key from another call site in the same
    /// statement: the planner
    /// evaluates the probe of a query it plans to estimate the TID scan's
    /// rows (`scalararraysel`), and the execution that follows under the
    /// same snapshot then reads no index again.
    static LAST: std::cell::RefCell<Option<Cached>> = const { std::cell::RefCell::new(None) };
}

/// FNV-1a over the in-progress transaction ids of a snapshot.
unsafe fn in_progress_digest(snapshot: pg_sys::Snapshot) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u32| {
        for b in v.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    let s = &*snapshot;
    mix(s.xcnt);
    for i in 0..s.xcnt as usize {
        mix((*s.xip.add(i)).into_inner());
    }
    mix(s.subxcnt as u32);
    mix(u32::from(s.suboverflowed));
    for i in 0..usize::try_from(s.subxcnt).unwrap_or(0) {
        mix((*s.subxip.add(i)).into_inner());
    }
    h
}

#[pg_extern(stable, strict, parallel_safe, sql = false)]
fn simhash_probe_fn(
    tbl: Oid,
    col: &str,
    fp: i64,
    k: i32,
    fcinfo: pg_sys::FunctionCallInfo,
) -> Vec<pg_sys::ItemPointerData> {
    // SAFETY: called by PostgreSQL with a valid fcinfo, in a transaction.
    unsafe {
        let name = pg_sys::get_rel_name(tbl);
        if name.is_null() {
            errors::probe_no_table(tbl.to_u32());
        }
        let relname = std::ffi::CStr::from_ptr(name)
            .to_string_lossy()
            .into_owned();
        let kind = pg_sys::get_rel_relkind(tbl) as u8;
        if kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_MATVIEW {
            errors::probe_not_table(&relname);
        }
        let c_col = std::ffi::CString::new(col).unwrap_or_default();
        let attno = pg_sys::get_attnum(tbl, c_col.as_ptr());
        if attno <= 0 {
            errors::guard_no_column(col, &relname);
        }
        let schema = pg_sys::get_func_namespace((*(*fcinfo).flinfo).fn_oid);
        // The key functions take a simhash64: found for the column's type only
        // when it is one.
        let keys = KeyFunctions::lookup(schema, pg_sys::get_atttype(tbl, attno))
            .unwrap_or_else(|| errors::column_not_simhash64(col, &relname));
        let user = pg_sys::GetUserId();
        let select = pg_sys::ACL_SELECT as pg_sys::AclMode;
        // SELECT on the whole table, as `SELECT ctid` asks: a role that
        // may read some columns only gets no row locations (its distance
        // queries use the band conditions, `crate::index`).
        if pg_sys::pg_class_aclcheck(tbl, user, select) != pg_sys::AclResult::ACLCHECK_OK {
            errors::probe_denied(&relname, col);
        }
        if pg_sys::check_enable_rls(tbl, pg_sys::InvalidOid, true) == RLS_ENABLED {
            errors::probe_row_security(&relname);
        }
        if k < 0 {
            return Vec::new();
        }
        let snapshot = query_snapshot();
        let key = key_of(tbl, attno, fp, k, snapshot);
        let flinfo = (*fcinfo).flinfo;
        let reuse = reusable();
        let cached = (*flinfo).fn_extra.cast::<Cached>();
        if reuse && !cached.is_null() && (*cached).key == key {
            return (*cached).tids.clone();
        }
        if let Some(tids) = reuse.then(|| last_for(&key)).flatten() {
            remember(flinfo, key, &tids);
            return tids;
        }
        // No limit: never `None`.
        let tids = probe_rows(tbl, attno, &keys, fp, k, snapshot, usize::MAX).unwrap_or_default();
        if !reuse {
            return tids;
        }
        remember(flinfo, key, &tids);
        keep_last(key, &tids);
        tids
    }
}

/// The snapshot a probe reads with: the query's; without one, the
/// transaction's.
///
/// # Safety
/// Called in a transaction.
unsafe fn query_snapshot() -> pg_sys::Snapshot {
    if pg_sys::ActiveSnapshotSet() {
        pg_sys::GetActiveSnapshot()
    } else {
        pg_sys::GetTransactionSnapshot()
    }
}

/// The cache key of a probe of `tbl`'s column `attno` for `fp` within
/// `k` under `snapshot` ([`Key`]).
///
/// # Safety
/// `snapshot` is valid; called in a transaction.
unsafe fn key_of(tbl: Oid, attno: i16, fp: i64, k: i32, snapshot: pg_sys::Snapshot) -> Key {
    (
        tbl,
        attno,
        fp,
        k,
        crate::compat::local_transaction_id(),
        pg_sys::GetCurrentStatementStartTimestamp(),
        pg_sys::GetCurrentSubTransactionId(),
        (*snapshot).xmin.into_inner(),
        (*snapshot).xmax.into_inner(),
        (*snapshot).curcid,
        in_progress_digest(snapshot),
    )
}

/// The backend's last result, if its key is `key`.
fn last_for(key: &Key) -> Option<Vec<pg_sys::ItemPointerData>> {
    LAST.with(|last| {
        last.borrow()
            .as_ref()
            .filter(|last| last.key == *key)
            .map(|last| last.tids.clone())
    })
}

/// Keeps `tids` as the backend's last result, if it is small enough.
fn keep_last(key: Key, tids: &[pg_sys::ItemPointerData]) {
    LAST.with(|last| {
        *last.borrow_mut() = (tids.len() <= LAST_MAX_TIDS).then(|| Cached {
            key,
            tids: tids.to_vec(),
        });
    });
}

/// The most rows within `k` that the planner lets the covering probe
/// answer for a fingerprint it knows ([`planned`]); past it, the band
/// conditions do, through bitmaps that `work_mem` bounds.
pub const PLANNED_MAX_ROWS: usize = LAST_MAX_TIDS;

/// The planner's side of the probe, for a distance condition whose
/// fingerprint and `k` it knows (constants, or a custom plan's
/// parameters): whether the covering probe should answer it. It probes
/// now, up to [`PLANNED_MAX_ROWS`] rows within `k`; past that it says no
/// (a hot fingerprint: the row ids would cost more than a scan, and the
/// planner's estimate of the TID scan would hold them all). Otherwise the
/// result is kept as the backend's last, so the planner's estimate and the
/// execution under the same snapshot of a transaction that has written
/// nothing read no index again.
///
/// # Safety
/// Called in a transaction, by the planner; `keys` are the extension's.
pub unsafe fn planned(tbl: Oid, attno: i16, keys: &KeyFunctions, fp: i64, k: i32) -> bool {
    if k < 0 {
        return true;
    }
    let snapshot = query_snapshot();
    match probe_rows(tbl, attno, keys, fp, k, snapshot, PLANNED_MAX_ROWS) {
        None => false,
        Some(tids) => {
            if reusable() {
                keep_last(key_of(tbl, attno, fp, k, snapshot), &tids);
            }
            true
        }
    }
}

/// The row ids of the rows of `tbl` whose column `attno` is within `k` of
/// `fp` under `snapshot`, in the table's order, each once; `None` as soon
/// as more than `limit` entries within `k` are found.
///
/// # Safety
/// Called in a transaction; `attno` is a `simhash64` column of `tbl`, the
/// caller has checked the privileges.
unsafe fn probe_rows(
    tbl: Oid,
    attno: i16,
    keys: &KeyFunctions,
    fp: i64,
    k: i32,
    snapshot: pg_sys::Snapshot,
    limit: usize,
) -> Option<Vec<pg_sys::ItemPointerData>> {
    let heap = pg_sys::table_open(tbl, pg_sys::AccessShareLock as c_int);
    let indexes = band_indexes(heap, attno, keys);
    let slot = pg_sys::table_slot_create(heap, std::ptr::null_mut());
    let fp = fp as u64;
    let within = |other: u64| simhash_core::hamming(fp, other) <= k as u32;
    let mut tids = Vec::new();
    // More than `limit` entries within k: stopped, resources released.
    let mut over = false;
    if let Some((layout, parts, covering)) = indexes.to_probe(k as u32) {
        // Covering: the fingerprint from the index entry, the table only
        // for the entries within k. Else the candidates, read from the
        // table.
        let probes = layout.probe(fp, k as u32).unwrap_or_default();
        for (n, values) in probes {
            let (index_oid, equal) = parts[n as usize];
            let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as c_int);
            let scan = crate::compat::index_beginscan(heap, index, snapshot, 1);
            (*scan).xs_want_itup = covering;
            let reader = if covering {
                Reader::open(index, fingerprint_offset((*index).rd_att))
            } else {
                None
            };
            if let Some(reader) = reader {
                // The pages read directly; the table for the entries
                // within k only, through the scan (its snapshot, HOT
                // chains), the row's own fingerprint checked again.
                let mut kept = Vec::new();
                let mut read = 0i64;
                for &value in &values {
                    pgrx::check_for_interrupts!();
                    read += reader.entries(value as i32, &mut |other: u64, tid| {
                        if within(other) {
                            kept.push(tid);
                        }
                    });
                    if kept.len() > limit {
                        over = true;
                        break;
                    }
                }
                crate::compat::count_index_scans(index, values.len() as i64, read);
                if over {
                    kept.clear();
                }
                for (n, tid) in kept.into_iter().enumerate() {
                    // A cancel within a few thousand table visits.
                    if n % 1024 == 1023 {
                        pgrx::check_for_interrupts!();
                    }
                    // A new row id: not within a HOT chain (what
                    // index_rescan would have said; the scan has had
                    // none).
                    (*scan).xs_heaptid = tid;
                    (*scan).xs_heap_continue = false;
                    fetch_versions(scan, slot, &mut |slot| {
                        if slot_within(slot, attno, &within) {
                            tids.push((*slot).tts_tid);
                        }
                        true
                    });
                }
                pg_sys::index_endscan(scan);
                pg_sys::index_close(index, pg_sys::NoLock as c_int);
                if over {
                    break;
                }
                continue;
            }
            for value in values {
                pgrx::check_for_interrupts!();
                let mut skey: pg_sys::ScanKeyData = std::mem::zeroed();
                let (proc_, datum) = scan_key_value(layout, value);
                pg_sys::ScanKeyInit(&mut skey, 1, equal, proc_, datum);
                pg_sys::index_rescan(scan, &mut skey, 1, std::ptr::null_mut(), 0);
                if covering {
                    over = !covering_matches(scan, slot, &within, &mut |slot| {
                        tids.push((*slot).tts_tid);
                        tids.len() <= limit
                    });
                    if over {
                        break;
                    }
                    continue;
                }
                while pg_sys::index_getnext_slot(
                    scan,
                    pg_sys::ScanDirection::ForwardScanDirection,
                    slot,
                ) {
                    // A hot band value can have many entries.
                    pgrx::check_for_interrupts!();
                    if slot_within(slot, attno, &within) {
                        tids.push((*slot).tts_tid);
                    }
                }
                if tids.len() > limit {
                    over = true;
                    break;
                }
            }
            pg_sys::index_endscan(scan);
            pg_sys::index_close(index, pg_sys::NoLock as c_int);
            if over {
                break;
            }
        }
    } else {
        // No layout serves k: every row.
        let scan = pg_sys::table_beginscan(heap, snapshot, 0, std::ptr::null_mut());
        while pg_sys::table_scan_getnextslot(
            scan,
            pg_sys::ScanDirection::ForwardScanDirection,
            slot,
        ) {
            pgrx::check_for_interrupts!();
            if slot_within(slot, attno, &within) {
                tids.push((*slot).tts_tid);
                if tids.len() > limit {
                    over = true;
                    break;
                }
            }
        }
        pg_sys::table_endscan(scan);
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    pg_sys::table_close(heap, pg_sys::NoLock as c_int);

    if over {
        return None;
    }
    // A row found through several bands once, in the table's order.
    tids.sort_unstable_by_key(tid_order);
    tids.dedup_by_key(|t| tid_order(t));
    Some(tids)
}

/// Whether the fingerprint column of the row in `slot` is within k.
unsafe fn slot_within(
    slot: *mut pg_sys::TupleTableSlot,
    attno: i16,
    within: &dyn Fn(u64) -> bool,
) -> bool {
    let mut isnull = false;
    let value = pg_sys::slot_getattr(slot, c_int::from(attno), &mut isnull);
    !isnull && within(value.value() as u64)
}

fn tid_order(t: &pg_sys::ItemPointerData) -> (u16, u16, u16) {
    (t.ip_blkid.bi_hi, t.ip_blkid.bi_lo, t.ip_posid)
}

/// Keeps the result in the function's cache (memory of the function's
/// context, freed with it).
unsafe fn remember(flinfo: *mut pg_sys::FmgrInfo, key: Key, tids: &[pg_sys::ItemPointerData]) {
    let cached = (*flinfo).fn_extra.cast::<Cached>();
    if !cached.is_null() {
        (*cached).key = key;
        (*cached).tids = tids.to_vec();
        return;
    }
    // The cache lives as long as the function's memory context; the
    // callback drops the Rust value (and its vector) when it goes.
    // The callback's memory first: if its allocation fails (an error), no
    // box has been made yet to leak.
    let context = (*flinfo).fn_mcxt;
    let callback = pg_sys::MemoryContextAlloc(
        context,
        std::mem::size_of::<pg_sys::MemoryContextCallback>(),
    )
    .cast::<pg_sys::MemoryContextCallback>();
    let boxed = Box::into_raw(Box::new(Cached {
        key,
        tids: tids.to_vec(),
    }));
    (*callback).func = Some(drop_cached);
    (*callback).arg = boxed.cast();
    (*callback).next = std::ptr::null_mut();
    pg_sys::MemoryContextRegisterResetCallback(context, callback);
    (*flinfo).fn_extra = boxed.cast();
}

unsafe extern "C-unwind" fn drop_cached(arg: *mut std::ffi::c_void) {
    drop(Box::from_raw(arg.cast::<Cached>()));
}
