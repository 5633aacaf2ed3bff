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
//! Those are the conditions of the `4x16` layout. The support function
//! reads which layouts the table is indexed with (`crate::layout`) and
//! offers the planner the conditions of each one that serves `k`: for the
//! `2x32` layout, `simhash_band32(a, n) = ANY (simhash_band32_neighbors(b,
//! n, k))` for `n` 0 and 1, up to `k = 7`. Where the table cannot be known
//! (an expression rather than a column) or has no band index, the `4x16`
//! conditions are offered, as they match expression indexes of that form.
//!
//! A table with the covering layout `4x16c` (every 16-bit band's B-tree
//! index INCLUDEs the column) gets, for a constant `k` up to 11 and a `b`
//! known before the scan, `hamming(a, b) <= k AND ctid = ANY
//! (array_append(simhash_probe(table, column, b, k), NULL))` instead (the
//! NULL element keeps the condition NULL where `a` is): a TID scan over the rows
//! the probe found by reading the fingerprints from the index entries
//! (`crate::tids`). Not where the probe could not stand for the condition
//! (see `covering_probe`).
//!
//! With `b` and `k` known when planning, the neighbour lists are worked
//! out then (constant arrays in `EXPLAIN`): where the condition stays a
//! filter as a whole, as in `(fp <~> q <= 11 OR keys && simhash_lsh(q))`,
//! they are not worked out again for every row.
//!
//! When `k` is a constant above 11 the call is left alone (a scan is
//! cheaper than probing 697+ values per band). When `k` is not a constant
//! (a parameter of a generic plan, a column of a joined table) the ANY form
//! is used, and `simhash_band_neighbors` works out the radius from `k` at
//! run time: still exact, however large `k` turns out to be. The halves'
//! lists are not (they stop at 7), so they are offered only for a `k`
//! known when planning.

use pgrx::pg_sys::{self, Node, NodeTag, Oid};
use pgrx::prelude::*;
use pgrx::{is_a, PgList};
use simhash_core::probe::{
    at_most_decimal, at_most_float, at_most_int, band_neighbors, EVERY_DISTANCE, MAX_PROBED_K,
};

use crate::layout::{band_indexes, BandIndexes, KeyFunctions};
use crate::nodes::{call, copy, int4_const, int4_value, list, lookup_function, op};
use crate::rewrite::unstable;
use simhash_core::layout::Layout;

// Fixed OIDs of PostgreSQL's built-in int4 `=` and `<=`, int8 `=`, tid
// `=`, and of `int4eq`, `int8eq`, `tideq` and `array_append` (pg_operator.dat / pg_proc.dat: bootstrap OIDs,
// the same in every PostgreSQL release).
const INT4_EQ_OP: Oid = Oid::from_u32(96);
const INT4_EQ_FN: Oid = Oid::from_u32(65);
const INT4_LE_OP: Oid = Oid::from_u32(523);
const INT8_EQ_OP: Oid = Oid::from_u32(410);
const INT8_EQ_FN: Oid = Oid::from_u32(467);
// tid `=` and `tideq`; `array_append`.
const TID_EQ_OP: Oid = Oid::from_u32(387);
const TID_EQ_FN: Oid = Oid::from_u32(1292);
const ARRAY_APPEND_FN: Oid = Oid::from_u32(378);

/// The equality operator and its function for the keys of `layout`.
fn equality(layout: Layout) -> (Oid, Oid) {
    match layout {
        Layout::Bands16 => (INT4_EQ_OP, INT4_EQ_FN),
        Layout::Halves32 => (INT8_EQ_OP, INT8_EQ_FN),
    }
}

/// `simhash_within(a, b, k)`: `hamming(a, b) <= k`, false for a negative
/// `k` as the comparison is. Raises no error (it is LEAKPROOF).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_within_fn(a: i64, b: i64, k: i32) -> bool {
    k >= 0 && simhash_core::hamming(a as u64, b as u64) <= k as u32
}

/// `simhash_band_neighbors(fp, n, k)`: the values band `n` is probed with
/// for distance `k`: every value within the band's radius for `k` of
/// `fp`'s band (`simhash_core::layout::Layout::radius_of`; for any `k`, up
/// to all 65,536 values), as an int array: empty for a negative `k` or a
/// band the probe for `k` skips, NULL for a band that does not exist.
/// Raises no error (it is LEAKPROOF).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band_neighbors_fn(fp: i64, n: i32, k: i32) -> Option<Vec<i32>> {
    let band = simhash_core::band(fp as u64, i64::from(n))?;
    if k < 0 {
        return Some(Vec::new());
    }
    let Some(radius) = Layout::Bands16.radius_of(k as u32, n as u32) else {
        return Some(Vec::new());
    };
    Some(
        band_neighbors(band, radius)
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
    match simplify((*req).root, (*req).fcall) {
        Some(expr) => pg_sys::Datum::from(expr),
        None => pg_sys::Datum::from(0usize),
    }
}

/// The OIDs of the functions the rewritten expression calls, looked up in
/// the schema `simhash_within` itself lives in.
struct Functions {
    probe: Oid,
    hamming: Oid,
    keys: KeyFunctions,
    neighbors16: Oid,
    neighbors32: Oid,
}

impl Functions {
    unsafe fn lookup(schema: Oid, fp_type: Oid) -> Option<Functions> {
        let int4 = pg_sys::INT4OID;
        Some(Functions {
            probe: lookup_function(
                schema,
                "simhash_probe",
                &[pg_sys::REGCLASSOID, pg_sys::TEXTOID, fp_type, int4],
            )
            .unwrap_or(pg_sys::InvalidOid),
            hamming: lookup_function(schema, "hamming", &[fp_type, fp_type])?,
            keys: KeyFunctions::lookup(schema, fp_type)?,
            neighbors16: lookup_function(schema, "simhash_band_neighbors", &[fp_type, int4, int4])?,
            neighbors32: lookup_function(
                schema,
                "simhash_band32_neighbors",
                &[fp_type, int4, int4],
            )
            .unwrap_or(pg_sys::InvalidOid),
        })
    }
}

/// `left = ANY (right)` with the equality `(operator, function)`.
unsafe fn eq_any(left: *mut Node, right: *mut Node, (opno, opfuncid): (Oid, Oid)) -> *mut Node {
    let saop: *mut pg_sys::ScalarArrayOpExpr =
        pg_sys::palloc0(std::mem::size_of::<pg_sys::ScalarArrayOpExpr>()).cast();
    (*saop).xpr.type_ = NodeTag::T_ScalarArrayOpExpr;
    (*saop).opno = opno;
    (*saop).opfuncid = opfuncid;
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
unsafe fn simplify(
    root: *mut pg_sys::PlannerInfo,
    fcall: *mut pg_sys::FuncExpr,
) -> Option<*mut Node> {
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
    let within = op(
        INT4_LE_OP,
        pg_sys::BOOLOID,
        call(f.hamming, pg_sys::INT4OID, &[copy(a), copy(b)]),
        copy(k),
    );
    let table = table_of(root, a, &f.keys);
    // A table with the covering layout: the index-only probe, for a TID
    // scan (`crate::tids`).
    if let (Some(v), Some(t)) = (k_const, &table) {
        if let Some(probe) = covering_probe(root, t, b, k, v, &f) {
            return Some(pg_sys::make_andclause(list(&[within, probe])).cast());
        }
    }
    // The layouts to offer the planner: those the table is indexed with,
    // read from its index definitions; the 16-bit bands (whose conditions
    // also match expression indexes on other forms of `a`) when that
    // cannot be known or the table has none.
    let indexed = table.map(|t| t.indexes.layouts()).unwrap_or_default();
    let layouts = if indexed.is_empty() {
        vec![Layout::Bands16]
    } else {
        indexed
    };
    let mut conditions = vec![within];
    for layout in layouts {
        let neighbors = match layout {
            Layout::Bands16 => f.neighbors16,
            Layout::Halves32 => f.neighbors32,
        };
        let (key_type, array_type) = match layout {
            Layout::Bands16 => (pg_sys::INT4OID, pg_sys::INT4ARRAYOID),
            Layout::Halves32 => (pg_sys::INT8OID, pg_sys::INT8ARRAYOID),
        };
        match k_const {
            // A bound known now: the layout offers itself if it serves it.
            Some(v) if !layout.serves(v as u32) => continue,
            // A bound known only when the plan runs: the 16-bit bands'
            // neighbour lists stay exact for every k (up to all 65,536
            // values); the halves' would not, so they are not offered.
            None if layout != Layout::Bands16 => continue,
            _ => {}
        }
        let key_fn = f.keys.of(layout);
        let mut arms = PgList::<Node>::new();
        for n in 0..layout.parts() as i32 {
            // A part the probe for a known k skips (see
            // `simhash_core::layout`): no arm. With k known only at run
            // time every band has one, and its list is empty if skipped.
            let radius = k_const.map(|v| layout.radius_of(v as u32, n as u32));
            if radius == Some(None) {
                continue;
            }
            let key_a = call(key_fn, key_type, &[copy(a), int4_const(n)]);
            let arm = match radius {
                Some(Some(0)) => op(
                    equality(layout).0,
                    pg_sys::BOOLOID,
                    key_a,
                    call(key_fn, key_type, &[copy(b), int4_const(n)]),
                ),
                _ => eq_any(
                    key_a,
                    call(neighbors, array_type, &[copy(b), int4_const(n), copy(k)]),
                    equality(layout),
                ),
            };
            arms.push(arm);
        }
        conditions.push(if arms.len() == 1 {
            arms.get_ptr(0)?
        } else {
            pg_sys::make_orclause(arms.into_pg()).cast()
        });
    }
    if conditions.len() == 1 {
        return None;
    }
    // Folded now: where the condition stays a filter as a whole (an arm
    // of an OR, as in the rule with the second source), the neighbour
    // lists of a constant fingerprint would otherwise be worked out again
    // for every row.
    Some(pg_sys::eval_const_expressions(
        root,
        pg_sys::make_andclause(list(&conditions)).cast(),
    ))
}

/// The table a plain column of this query level belongs to, as the
/// support function needs it: read once per call.
struct Table {
    rte: *mut pg_sys::RangeTblEntry,
    var: *mut pg_sys::Var,
    /// Its band indexes on the column, by layout.
    indexes: BandIndexes,
    row_security: bool,
    has_children: bool,
}

/// The table whose column `a` is, or `None` when `a` is not a plain
/// column of a table of this query.
unsafe fn table_of(
    root: *mut pg_sys::PlannerInfo,
    a: *mut Node,
    keys: &KeyFunctions,
) -> Option<Table> {
    if root.is_null() || (*root).parse.is_null() || !local_column(a) {
        return None;
    }
    let var = a.cast::<pg_sys::Var>();
    let rtable = PgList::<pg_sys::RangeTblEntry>::from_pg((*(*root).parse).rtable);
    let rte = rtable.get_ptr(usize::try_from((*var).varno - 1).ok()?)?;
    if (*rte).rtekind != pg_sys::RTEKind::RTE_RELATION || (*var).varattno <= 0 {
        return None;
    }
    let rel = pg_sys::RelationIdGetRelation((*rte).relid);
    if rel.is_null() {
        return None;
    }
    let table = Table {
        rte,
        var,
        indexes: band_indexes(rel, (*var).varattno, keys),
        row_security: (*(*rel).rd_rel).relrowsecurity,
        has_children: (*(*rel).rd_rel).relhassubclass,
    };
    pg_sys::RelationClose(rel);
    Some(table)
}

/// `ctid = ANY (array_append(simhash_probe(table, column, b, k), NULL))`
/// when `a` is a column
/// of a table with the covering layout and the probe can stand for the
/// distance condition: `b` and `k` known before the scan starts (no column
/// of this query level, so a TID scan can use it), one table (not one
/// read with its inheritance children, whose rows the probe of the parent
/// would not see), a SELECT without row locks, no row-level security or
/// security-barrier conditions (the probe
/// is not leakproof, and sees every row), and no Citus (a distributed
/// table's rows are on its shards, not in the table the coordinator
/// plans).
unsafe fn covering_probe(
    root: *mut pg_sys::PlannerInfo,
    table: &Table,
    b: *mut Node,
    k: *mut Node,
    k_value: i32,
    f: &Functions,
) -> Option<*mut Node> {
    let (rte, var) = (table.rte, table.var);
    if f.probe == pg_sys::InvalidOid
        || !crate::tids::covering_serves(k_value)
        || pg_sys::contain_vars_of_level(b, 0)
        || table.indexes.covering().is_none()
        || table.row_security
        || ((*rte).inh && table.has_children)
        || !(*rte).securityQuals.is_null()
        || ((*rte).relkind as u8 != pg_sys::RELKIND_RELATION
            && (*rte).relkind as u8 != pg_sys::RELKIND_MATVIEW)
    {
        return None;
    }
    // Only in a read-only query without row locks, at this level and every
    // one around it: a row re-checked after a concurrent update (UPDATE,
    // DELETE, SELECT ... FOR UPDATE in READ COMMITTED) has a new row id,
    // which the probe's list, made before, does not hold.
    let mut level = root;
    while !level.is_null() {
        let parse = (*level).parse;
        if parse.is_null()
            || (*parse).commandType != pg_sys::CmdType::CMD_SELECT
            || !(*parse).rowMarks.is_null()
        {
            return None;
        }
        level = (*level).parent_root;
    }
    if pg_sys::get_extension_oid(c"citus".as_ptr(), true) != pg_sys::InvalidOid {
        return None;
    }
    // The probe hands out row locations, so it asks for SELECT on the
    // whole table, as the current user (`crate::tids`). Where PostgreSQL
    // checks the table as another role (the owner of a view the query
    // reads it through) or the current user may read some columns only,
    // the band conditions answer instead: the same rows, through the same
    // indexes, with PostgreSQL's own checks. The plan then depends on the
    // role: a cached plan is made anew for another one.
    (*(*root).glob).dependsOnRole = true;
    let user = pg_sys::GetUserId();
    let checked_as = crate::compat::check_as_user((*root).parse, rte);
    if (checked_as != pg_sys::InvalidOid && checked_as != user)
        || pg_sys::pg_class_aclcheck((*rte).relid, user, pg_sys::ACL_SELECT as pg_sys::AclMode)
            != pg_sys::AclResult::ACLCHECK_OK
    {
        return None;
    }
    let attname = pg_sys::get_attname((*rte).relid, (*var).varattno, true);
    if attname.is_null() {
        return None;
    }
    // A fingerprint the planner knows (a constant, a custom plan's
    // parameter, what its estimate would fold): probed now, up to a
    // bound, and answered by the band conditions past it. The planner's
    // estimate of the TID scan evaluates the probe and holds every row id
    // it returns; a hot fingerprint is answered better by the bitmaps.
    let known = pg_sys::estimate_expression_value(root, b);
    if pgrx::is_a(known, pg_sys::NodeTag::T_Const) {
        let known = known.cast::<pg_sys::Const>();
        if !(*known).constisnull
            && !crate::tids::planned(
                (*rte).relid,
                (*var).varattno,
                &f.keys,
                (*known).constvalue.value() as i64,
                k_value,
            )
        {
            return None;
        }
    }
    let table = pg_sys::makeConst(
        pg_sys::REGCLASSOID,
        -1,
        pg_sys::InvalidOid,
        4,
        pg_sys::Datum::from((*rte).relid),
        false,
        true,
    );
    let column = pg_sys::makeConst(
        pg_sys::TEXTOID,
        -1,
        pg_sys::DEFAULT_COLLATION_OID,
        -1,
        pg_sys::Datum::from(pg_sys::cstring_to_text(attname)),
        false,
        false,
    );
    let probe = call(
        f.probe,
        pg_sys::TIDARRAYOID,
        &[table.cast(), column.cast(), copy(b), copy(k)],
    );
    // With a NULL element, `ctid = ANY (...)` is true for the rows found
    // and NULL for every other, never false: so `hamming(a, b) <= k AND
    // ctid = ANY (...)` is NULL where `a` is NULL, as the condition it
    // replaces is, also under NOT or as a value (false there would turn
    // NOT (...) true for rows without a fingerprint). A TID scan skips the
    // NULL.
    let null_tid = pg_sys::makeConst(
        pg_sys::TIDOID,
        -1,
        pg_sys::InvalidOid,
        std::mem::size_of::<pg_sys::ItemPointerData>() as i32,
        pg_sys::Datum::from(0usize),
        true,
        false,
    );
    let probe = call(
        ARRAY_APPEND_FN,
        pg_sys::TIDARRAYOID,
        &[probe, null_tid.cast()],
    );
    // The row id of the same table, with `a`'s nulling marks and all.
    let ctid = copy(var.cast()).cast::<pg_sys::Var>();
    (*ctid).varattno = pg_sys::SelfItemPointerAttributeNumber as i16;
    (*ctid).varattnosyn = pg_sys::SelfItemPointerAttributeNumber as i16;
    (*ctid).vartype = pg_sys::TIDOID;
    (*ctid).vartypmod = -1;
    (*ctid).varcollid = pg_sys::InvalidOid;
    Some(eq_any(ctid.cast(), probe, (TID_EQ_OP, TID_EQ_FN)))
}
