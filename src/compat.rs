//! The one place where the PostgreSQL versions this extension builds for
//! differ in an API it calls. Everything else in the glue is the same
//! source on every version.
//!
//! - `expression_tree_mutator`: a function with an untyped callback up to
//!   PostgreSQL 15; from 16 on a macro over `expression_tree_mutator_impl`
//!   with a typed one. (The walkers differ the same way, but pgrx 0.18
//!   already gives them one typed signature on every version.)
//! - `ExecutorRun`: its `execute_once` argument is gone in PostgreSQL 18.
//! - `index_beginscan`: PostgreSQL 18 added an instrumentation argument.
//! - An index's scan statistics (`pgstat_count_index_scan` and
//!   `pgstat_count_index_tuples`, macros): the counters are `t_counts`'
//!   `t_numscans` and `t_tuples_returned` up to PostgreSQL 15, `counts`'
//!   `numscans` and `tuples_returned` from 16 on.
//! - The role a table of a query is checked as (a view's owner for the
//!   tables the view reads): on the range table entry up to PostgreSQL 15,
//!   in the query's permission infos from 16 on.
//! - The backend's local transaction id: `MyProc->lxid` up to PostgreSQL
//!   16, `MyProc->vxid.lxid` from 17 on.

use std::ffi::c_void;

use pgrx::pg_sys::{self, Node};

/// A node mutator: returns the node to put in place of `node`.
pub type Mutator = unsafe extern "C-unwind" fn(*mut Node, *mut c_void) -> *mut Node;

/// PostgreSQL's `expression_tree_mutator`: a copy of `node` whose children
/// are what `mutator` returns for them.
///
/// # Safety
/// `node` is a valid expression tree; `mutator` follows PostgreSQL's
/// mutator protocol.
#[cfg(feature = "pg15")]
pub unsafe fn expression_tree_mutator(
    node: *mut Node,
    mutator: Mutator,
    context: *mut c_void,
) -> *mut Node {
    // SAFETY: up to PostgreSQL 15 the callback is declared without a
    // prototype and called with (node, context): the same ABI.
    let callback: unsafe extern "C-unwind" fn() -> *mut Node = std::mem::transmute(mutator);
    pg_sys::expression_tree_mutator(node, Some(callback), context)
}

/// PostgreSQL's `expression_tree_mutator` (from 16 on, the function behind
/// the macro of that name).
///
/// # Safety
/// As above.
#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
pub unsafe fn expression_tree_mutator(
    node: *mut Node,
    mutator: Mutator,
    context: *mut c_void,
) -> *mut Node {
    pg_sys::expression_tree_mutator_impl(node, Some(mutator), context)
}

/// Runs a started query to its end (`ExecutorRun` lost its `execute_once`
/// argument in PostgreSQL 18).
///
/// # Safety
/// `desc` went through `ExecutorStart`.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn executor_run_to_end(desc: *mut pg_sys::QueryDesc) {
    pg_sys::ExecutorRun(desc, pg_sys::ScanDirection::ForwardScanDirection, 0, true)
}

/// As above, PostgreSQL 18.
///
/// # Safety
/// As above.
#[cfg(feature = "pg18")]
pub unsafe fn executor_run_to_end(desc: *mut pg_sys::QueryDesc) {
    pg_sys::ExecutorRun(desc, pg_sys::ScanDirection::ForwardScanDirection, 0)
}

/// Starts an index scan with no ORDER BY keys (`index_beginscan` took an
/// instrumentation argument in PostgreSQL 18).
///
/// # Safety
/// Open relations and a valid snapshot.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    pg_sys::index_beginscan(heap, index, snapshot, nkeys, 0)
}

/// As above, PostgreSQL 18.
///
/// # Safety
/// As above.
#[cfg(feature = "pg18")]
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, 0)
}

/// The role whose privileges PostgreSQL checks on the table of `rte`
/// (`InvalidOid`: the current user), as `rte->checkAsUser` says up to
/// PostgreSQL 15.
///
/// # Safety
/// `rte` is an entry of `parse`'s range table.
#[cfg(feature = "pg15")]
pub unsafe fn check_as_user(
    _parse: *mut pg_sys::Query,
    rte: *mut pg_sys::RangeTblEntry,
) -> pg_sys::Oid {
    (*rte).checkAsUser
}

/// As above, from PostgreSQL 16 on: the entry's permission info (none for
/// a table no privilege is checked on, which is then read as nobody).
///
/// # Safety
/// As above.
#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
pub unsafe fn check_as_user(
    parse: *mut pg_sys::Query,
    rte: *mut pg_sys::RangeTblEntry,
) -> pg_sys::Oid {
    if (*rte).perminfoindex == 0 {
        // No privilege is checked on this table here (a table that only
        // a view's owner reads and no one is checked for): not the
        // current user's to probe.
        return pg_sys::Oid::from(u32::MAX);
    }
    let info = pg_sys::getRTEPermissionInfo((*parse).rteperminfos, rte);
    (*info).checkAsUser
}

/// A bitmap scan of `index` with `nkeys` keys (set by `index_rescan`).
///
/// # Safety
/// An open index and a valid snapshot.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn index_beginscan_bitmap(
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    pg_sys::index_beginscan_bitmap(index, snapshot, nkeys)
}

/// As above, PostgreSQL 18.
///
/// # Safety
/// As above.
#[cfg(feature = "pg18")]
pub unsafe fn index_beginscan_bitmap(
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    pg_sys::index_beginscan_bitmap(index, snapshot, std::ptr::null_mut(), nkeys)
}

/// The most rows a heap page holds (PostgreSQL's `MaxHeapTuplesPerPage`):
/// the offsets a lossy page of a bitmap may have.
pub const MAX_HEAP_TUPLES_PER_PAGE: usize = (pg_sys::BLCKSZ as usize
    - std::mem::size_of::<pg_sys::PageHeaderData>())
    / (24 + std::mem::size_of::<pg_sys::ItemIdData>());

/// Calls `f` for each page of a bitmap, in block order, with the offsets
/// of its rows, or `None` for a lossy page (any row of it may be in the
/// bitmap), until `f` says stop (false).
///
/// # Safety
/// `tbm` is a bitmap built in this backend, not iterated yet.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn bitmap_pages(
    tbm: *mut pg_sys::TIDBitmap,
    mut f: impl FnMut(pg_sys::BlockNumber, Option<&[pg_sys::OffsetNumber]>) -> bool,
) {
    let iterator = pg_sys::tbm_begin_iterate(tbm);
    loop {
        let page = pg_sys::tbm_iterate(iterator);
        if page.is_null() {
            break;
        }
        let page = &*page;
        let go_on = if page.ntuples < 0 {
            f(page.blockno, None)
        } else {
            f(
                page.blockno,
                Some(page.offsets.as_slice(page.ntuples as usize)),
            )
        };
        if !go_on {
            break;
        }
    }
    pg_sys::tbm_end_iterate(iterator);
}

/// As above, PostgreSQL 18 (the iterator is a value, the offsets are
/// extracted from the page).
///
/// # Safety
/// As above.
#[cfg(feature = "pg18")]
pub unsafe fn bitmap_pages(
    tbm: *mut pg_sys::TIDBitmap,
    mut f: impl FnMut(pg_sys::BlockNumber, Option<&[pg_sys::OffsetNumber]>) -> bool,
) {
    let mut iterator = pg_sys::tbm_begin_iterate(tbm, std::ptr::null_mut(), 0);
    let mut page: pg_sys::TBMIterateResult = Default::default();
    let mut offsets = [0 as pg_sys::OffsetNumber; MAX_HEAP_TUPLES_PER_PAGE];
    while pg_sys::tbm_iterate(&mut iterator, &mut page) {
        let go_on = if page.lossy {
            f(page.blockno, None)
        } else {
            let n = pg_sys::tbm_extract_page_tuple(
                &mut page,
                offsets.as_mut_ptr(),
                offsets.len() as u32,
            );
            f(page.blockno, Some(&offsets[..n.max(0) as usize]))
        };
        if !go_on {
            break;
        }
    }
    pg_sys::tbm_end_iterate(&mut iterator);
}

/// A bitmap of at most `maxbytes` (lossy past it).
///
/// # Safety
/// In a transaction.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17"))]
pub unsafe fn tbm_create(maxbytes: usize) -> *mut pg_sys::TIDBitmap {
    pg_sys::tbm_create(maxbytes as std::ffi::c_long, std::ptr::null_mut())
}

/// As above, PostgreSQL 18.
///
/// # Safety
/// As above.
#[cfg(feature = "pg18")]
pub unsafe fn tbm_create(maxbytes: usize) -> *mut pg_sys::TIDBitmap {
    pg_sys::tbm_create(maxbytes, std::ptr::null_mut())
}

/// Counts `scans` scans of `index` that read `entries` entries in its
/// statistics (`pg_stat_user_indexes.idx_scan` and `idx_tup_read`), as
/// PostgreSQL's `pgstat_count_index_scan` and `pgstat_count_index_tuples`
/// do for a scan through the access method.
///
/// # Safety
/// `index` is an open relation.
pub unsafe fn count_index_scans(index: pg_sys::Relation, scans: i64, entries: i64) {
    // pgstat_should_count_relation: associated on first use when enabled.
    if (*index).pgstat_info.is_null() {
        if !(*index).pgstat_enabled {
            return;
        }
        pg_sys::pgstat_assoc_relation(index);
        if (*index).pgstat_info.is_null() {
            return;
        }
    }
    add_index_counts(&mut *(*index).pgstat_info, scans, entries);
}

#[cfg(feature = "pg15")]
fn add_index_counts(status: &mut pg_sys::PgStat_TableStatus, scans: i64, entries: i64) {
    status.t_counts.t_numscans += scans;
    status.t_counts.t_tuples_returned += entries;
}

#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
fn add_index_counts(status: &mut pg_sys::PgStat_TableStatus, scans: i64, entries: i64) {
    status.counts.numscans += scans;
    status.counts.tuples_returned += entries;
}

/// The backend's local transaction id: a new one for every transaction,
/// read-only ones included (the first half of a virtual transaction id).
///
/// # Safety
/// Called in a backend (`MyProc` set).
#[cfg(any(feature = "pg15", feature = "pg16"))]
pub unsafe fn local_transaction_id() -> u32 {
    (*pg_sys::MyProc).lxid
}

/// As above, PostgreSQL 17 and later.
///
/// # Safety
/// As above.
#[cfg(any(feature = "pg17", feature = "pg18"))]
pub unsafe fn local_transaction_id() -> u32 {
    (*pg_sys::MyProc).vxid.lxid
}
