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
//! - The role a table of a query is checked as (a view's owner for the
//!   tables the view reads): on the range table entry up to PostgreSQL 15,
//!   in the query's permission infos from 16 on.

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
