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
use simhash_core::probe::{
    at_most_decimal, at_most_float, at_most_int, band_neighbors, probe_radius, EVERY_DISTANCE,
    MAX_PROBED_K,
};

use crate::nodes::{call, copy, int4_const, int4_value, list, lookup_function, op};
use crate::rewrite::unstable;

// Fixed OIDs of PostgreSQL's built-in int4 `=` and `<=` and of `int4eq`
// (pg_operator.dat / pg_proc.dat: bootstrap OIDs, the same in every
// PostgreSQL release).
const INT4_EQ_OP: Oid = Oid::from_u32(96);
const INT4_EQ_FN: Oid = Oid::from_u32(65);
const INT4_LE_OP: Oid = Oid::from_u32(523);

/// `simhash_within(a, b, k)`: `hamming(a, b) <= k`, false for a negative
/// `k` as the comparison is. Raises no error (it is LEAKPROOF).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_within_fn(a: i64, b: i64, k: i32) -> bool {
    k >= 0 && simhash_core::hamming(a as u64, b as u64) <= k as u32
}

/// `simhash_band_neighbors(fp, n, k)`: every value band `n` of a fingerprint
/// within distance `k` of `fp` can have, as an int array: empty for a
/// negative `k`, NULL for a band that does not exist. Raises no error (it
/// is LEAKPROOF).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band_neighbors_fn(fp: i64, n: i32, k: i32) -> Option<Vec<i32>> {
    let band = simhash_core::band(fp as u64, i64::from(n))?;
    if k < 0 {
        return Some(Vec::new());
    }
    Some(
        band_neighbors(band, probe_radius(k as u32))
            .into_iter()
            .map(i32::from)
            .collect(),
    )
}

// `simhash_bound(bound, below)` for each numeric type: see
// `simhash_core::probe::at_most_int` and the SQL comment. LEAKPROOF: none
// raises an error for any value.

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_int2(bound: i16, below: bool) -> i32 {
    at_most_int(i64::from(bound), below)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_int4(bound: i32, below: bool) -> i32 {
    at_most_int(i64::from(bound), below)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_int8(bound: i64, below: bool) -> i32 {
    at_most_int(bound, below)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_float4(bound: f32, below: bool) -> i32 {
    at_most_float(f64::from(bound), below)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_float8(bound: f64, below: bool) -> i32 {
    at_most_float(bound, below)
}

#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bound_numeric(bound: AnyNumeric, below: bool) -> i32 {
    // numeric's own text form is exact; PostgreSQL always prints a valid
    // one, so the fallback (every distance, as for NaN) is never taken.
    at_most_decimal(&bound.to_string(), below).unwrap_or(EVERY_DISTANCE)
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

/// Whether `node` is a column of a relation of this query level.
unsafe fn local_column(node: *mut Node) -> bool {
    is_a(node, NodeTag::T_Var) && (*node.cast::<pg_sys::Var>()).varlevelsup == 0
}

/// The rewritten form of `simhash_within(a, b, k)`, or `None` to keep the
/// call as it is.
unsafe fn simplify(fcall: *mut pg_sys::FuncExpr) -> Option<*mut Node> {
    let args = PgList::<Node>::from_pg((*fcall).args);
    if args.len() != 3 {
        return None;
    }
    let (mut a, mut b, k) = (args.get_ptr(0)?, args.get_ptr(1)?, args.get_ptr(2)?);
    // Each operand is copied into several conditions: one that could give
    // another value each time it is evaluated (a volatile function, a
    // sub-select ordered by random()) is left to the plain call, which
    // evaluates it once.
    if unstable(a) || unstable(b) || unstable(k) {
        return None;
    }
    // The first argument's bands are compared with the index; when only the
    // second is a column of this query level, swap them (the distance is
    // symmetric). A column of an outer query is a constant here.
    if !local_column(a) && local_column(b) {
        std::mem::swap(&mut a, &mut b);
    }
    let k_const = if is_a(k, NodeTag::T_Const) {
        // NULL gives NULL and a negative bound false, as the call does; a
        // large one is answered by a scan.
        let v = int4_value(k)?;
        if v < 0 || v as u32 > MAX_PROBED_K {
            return None;
        }
        Some(v)
    } else {
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
