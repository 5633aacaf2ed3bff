//! `simhash_within(a, b, k)` and its planner support function: how a
//! distance query reaches the band indexes.
//!
//! `simhash_within(a, b, k)` is `hamming(a, b) <= k`. On its own the
//! planner cannot use an index for that: no index orders rows by distance.
//! The support function rewrites the call, while the planner simplifies the
//! query, into
//!
//! ```sql
//! hamming(a, b) <= k AND (simhash_band(a, 0) = simhash_band(b, 0) OR ... band 3)
//! ```
//!
//! for `k <= 3`, and for `4 <= k <= 11` into
//!
//! ```sql
//! hamming(a, b) <= k AND (simhash_band(a, 0) = ANY (simhash_band_neighbors(b, 0, k)) OR ...)
//! ```
//!
//! Each arm of the OR matches an expression index on `simhash_band(fp, n)`,
//! so the planner can answer it with a BitmapOr of four index scans and the
//! exact `hamming(a, b) <= k` as the recheck. The OR is implied by the
//! distance condition (the pigeonhole rule, `simhash_core::probe`), so it
//! never removes a row a scan would return. Why a support function and not
//! a planner hook: it needs no preloading, it works wherever the planner
//! simplifies expressions (prepared statements, generic plans, views,
//! LATERAL joins, SQL functions), and it leaves choosing between the
//! indexes and a scan to the planner's costs. The plain `hamming(a, b) <= k`
//! form is turned into `simhash_within` at parse time by `crate::rewrite`.
//!
//! When `k` is a constant above 11 the call is left alone (a scan is
//! cheaper than probing 697+ values per band). When `k` is not a constant
//! (a parameter of a generic plan, a column of a joined table) the ANY form
//! is used, and `simhash_band_neighbors` works out the radius from `k` at
//! run time: still exact, however large `k` turns out to be.

use pgrx::pg_sys::{self, Node, NodeTag, Oid};
use pgrx::prelude::*;
use pgrx::{is_a, PgList};
use simhash_core::probe::{band_neighbors, probe_radius, MAX_PROBED_K};

use crate::errors;
use crate::nodes::{call, copy, int4_const, int4_value, list, lookup_function, op};

// Fixed OIDs of PostgreSQL's built-in int4 `=` and `<=` and of `int4eq`
// (pg_operator.dat / pg_proc.dat: bootstrap OIDs, the same in every
// PostgreSQL release).
const INT4_EQ_OP: Oid = Oid::from_u32(96);
const INT4_EQ_FN: Oid = Oid::from_u32(65);
const INT4_LE_OP: Oid = Oid::from_u32(523);

/// `simhash_within(a, b, k)`: `hamming(a, b) <= k`. A negative `k` is an
/// error rather than an empty answer: it is always a mistake.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_within_fn(a: i64, b: i64, k: i32) -> bool {
    if k < 0 {
        errors::negative_distance(k);
    }
    simhash_core::hamming(a as u64, b as u64) <= k as u32
}

/// `simhash_band_neighbors(fp, n, k)`: every value band `n` of a fingerprint
/// within distance `k` of `fp` can have, as an int array.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band_neighbors_fn(fp: i64, n: i32, k: i32) -> Vec<i32> {
    if k < 0 {
        errors::negative_distance(k);
    }
    let Some(band) = simhash_core::band(fp as u64, i64::from(n)) else {
        errors::band_out_of_range(n)
    };
    band_neighbors(band, probe_radius(k as u32))
        .into_iter()
        .map(i32::from)
        .collect()
}

#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_simhash_within_support() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// The planner support function of `simhash_within` (`SUPPORT` in SQL).
/// Written by hand rather than with `#[pg_extern]`: the protocol wants a
/// NULL pointer, not an SQL NULL, for "nothing to do".
///
/// # Safety
/// Called by PostgreSQL with a valid `fcinfo` whose one argument is a
/// planner support request node.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn simhash_within_support(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let req = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, 0).cast_mut_ptr::<Node>();
    if req.is_null() || !is_a(req, NodeTag::T_SupportRequestSimplify) {
        return pg_sys::Datum::from(0usize);
    }
    let req = req.cast::<pg_sys::SupportRequestSimplify>();
    match simplify((*req).fcall) {
        Some(expr) => pg_sys::Datum::from(expr),
        None => pg_sys::Datum::from(0usize),
    }
}

/// The OIDs of the functions the rewritten expression calls, looked up in
/// the schema `simhash_within` itself lives in.
struct Functions {
    hamming: Oid,
    band: Oid,
    neighbors: Oid,
}

impl Functions {
    unsafe fn lookup(schema: Oid, fp_type: Oid) -> Option<Functions> {
        let int4 = pg_sys::INT4OID;
        Some(Functions {
            hamming: lookup_function(schema, "hamming", &[fp_type, fp_type])?,
            band: lookup_function(schema, "simhash_band", &[fp_type, int4])?,
            neighbors: lookup_function(schema, "simhash_band_neighbors", &[fp_type, int4, int4])?,
        })
    }
}

/// `left = ANY (right)` over int4.
unsafe fn eq_any(left: *mut Node, right: *mut Node) -> *mut Node {
    let saop: *mut pg_sys::ScalarArrayOpExpr =
        pg_sys::palloc0(std::mem::size_of::<pg_sys::ScalarArrayOpExpr>()).cast();
    (*saop).xpr.type_ = NodeTag::T_ScalarArrayOpExpr;
    (*saop).opno = INT4_EQ_OP;
    (*saop).opfuncid = INT4_EQ_FN;
    (*saop).useOr = true;
    (*saop).args = list(&[left, right]);
    (*saop).location = -1;
    saop.cast()
}

/// The rewritten form of `simhash_within(a, b, k)`, or `None` to keep the
/// call as it is.
unsafe fn simplify(fcall: *mut pg_sys::FuncExpr) -> Option<*mut Node> {
    let args = PgList::<Node>::from_pg((*fcall).args);
    if args.len() != 3 {
        return None;
    }
    let (mut a, mut b, k) = (args.get_ptr(0)?, args.get_ptr(1)?, args.get_ptr(2)?);
    // The first argument's bands are compared with the index; when only the
    // second is a column, swap them (the distance is symmetric).
    if !is_a(a, NodeTag::T_Var) && is_a(b, NodeTag::T_Var) {
        std::mem::swap(&mut a, &mut b);
    }
    let k_const = if is_a(k, NodeTag::T_Const) {
        // NULL gives NULL, as the strict call would; a negative bound is an
        // error at run time; a large one is answered by a scan.
        let v = int4_value(k)?;
        if v < 0 || v as u32 > MAX_PROBED_K {
            return None;
        }
        Some(v)
    } else {
        if pg_sys::contain_volatile_functions(k) {
            return None; // evaluating it twice could disagree
        }
        None
    };
    let f = Functions::lookup(
        pg_sys::get_func_namespace((*fcall).funcid),
        pg_sys::exprType(a),
    )?;

    let mut arms = PgList::<Node>::new();
    for n in 0..4 {
        let band_a = call(f.band, pg_sys::INT4OID, &[copy(a), int4_const(n)]);
        let arm = match k_const {
            Some(v) if v <= 3 => op(
                INT4_EQ_OP,
                pg_sys::BOOLOID,
                band_a,
                call(f.band, pg_sys::INT4OID, &[copy(b), int4_const(n)]),
            ),
            _ => eq_any(
                band_a,
                call(
                    f.neighbors,
                    pg_sys::INT4ARRAYOID,
                    &[copy(b), int4_const(n), copy(k)],
                ),
            ),
        };
        arms.push(arm);
    }
    let distance = call(f.hamming, pg_sys::INT4OID, &[copy(a), copy(b)]);
    let exact = op(INT4_LE_OP, pg_sys::BOOLOID, distance, copy(k));
    let any_band: *mut Node = pg_sys::make_orclause(arms.into_pg()).cast();
    Some(pg_sys::make_andclause(list(&[exact, any_band])).cast())
}
