//! Parse-time rewrite of the distance comparisons users write.
//!
//! `hamming(a, b) <= k`, `a <~> b <= k`, `a <~> b < k`, `k >= a <~> b` and
//! the like are plain comparisons of an int: the planner sees a built-in
//! operator and nothing to index. This hook, run right after parse
//! analysis, replaces each such comparison in a WHERE or JOIN ... ON
//! condition, at any depth of sub-selects, with `simhash_within(a, b, k)`,
//! whose planner support function (`crate::index`) adds the band-index
//! conditions. Equality (`a <~> b = k`) becomes `simhash_within(a, b, k)
//! AND a <~> b >= k`.
//!
//! The replacement means exactly what the comparison means, for every
//! value: a bound of any built-in numeric type (smallint, bigint, numeric,
//! real, double precision, as psycopg and JDBC send them) goes through
//! `simhash_bound`, which turns it into the whole-number bound with the
//! same answers (`< 0` and `<= -1` match nothing, `< 3.5` is `<= 3`, NaN
//! and anything from 64 up match every fingerprint). A comparison whose
//! operands are volatile is left alone: it must be evaluated once per row.
//!
//! Why at parse analysis: the rewritten form is what prepared statements,
//! views and SQL function bodies keep, so it survives re-planning and
//! generic plans, and what a user sees in `EXPLAIN` is an ordinary function
//! call. The hook is installed whenever the library is loaded; with
//! `shared_preload_libraries` that is before any query. Without preloading
//! the comparison is still exact, just answered by a scan, until the
//! library happens to be loaded in the session; `simhash_within(a, b, k)`
//! written by hand uses the indexes either way.
//!
//! Only conditions are rewritten, never select lists: there a comparison
//! is a value, and nothing could use an index for it.

use std::ffi::{c_void, CStr};

use pgrx::pg_sys::{self, Node, NodeTag, Oid};
use pgrx::prelude::*;
use pgrx::{is_a, PgList};

use crate::compat;
use crate::nodes::{bool_const, call, copy, int4_const, int4_value, list, lookup_function, op};

// B-tree operator families of the built-in numeric types (bootstrap OIDs
// from pg_opfamily.dat, the same in every release): a comparison of a
// distance with a bound of any of these types is one of their operators.
const INTEGER_OPS: Oid = Oid::from_u32(1976);
const FLOAT_OPS: Oid = Oid::from_u32(1970);
const NUMERIC_OPS: Oid = Oid::from_u32(1988);

// B-tree strategy numbers (access/stratnum.h).
const LESS: u16 = 1;
const LESS_EQUAL: u16 = 2;
const EQUAL: u16 = 3;
const GREATER_EQUAL: u16 = 4;
const GREATER: u16 = 5;

// The implicit casts of an int4 (the distance) to the other types, which
// the parser wraps around the distance to compare it with such a bound
// (bootstrap OIDs from pg_proc.dat): int8(int4), float4(int4),
// float8(int4), numeric(int4).
const INT4_WIDENINGS: [Oid; 4] = [
    Oid::from_u32(481),
    Oid::from_u32(318),
    Oid::from_u32(316),
    Oid::from_u32(1740),
];

static mut PREVIOUS_HOOK: pg_sys::post_parse_analyze_hook_type = None;

/// Installs the hook, keeping whichever hook was there before.
pub fn install() {
    // SAFETY: called once from _PG_init, single-threaded, as every
    // PostgreSQL extension chains its hooks.
    unsafe {
        PREVIOUS_HOOK = pg_sys::post_parse_analyze_hook;
        pg_sys::post_parse_analyze_hook = Some(post_parse_analyze);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn post_parse_analyze(
    pstate: *mut pg_sys::ParseState,
    query: *mut pg_sys::Query,
    jstate: *mut pg_sys::JumbleState,
) {
    if let Some(previous) = PREVIOUS_HOOK {
        previous(pstate, query, jstate);
    }
    if !query.is_null() {
        rewrite_query(query);
    }
}

/// Rewrites the conditions of `query` and of every query nested in it.
///
/// Idempotent: a rewritten condition is a `simhash_within` call (plus, for
/// `=`, a `>=` comparison), which a second pass leaves as it is. That
/// matters where a query is analyzed again from its deparsed text, as
/// Citus does with the query it sends to each shard.
unsafe fn rewrite_query(query: *mut pg_sys::Query) {
    let utility = (*query).utilityStmt;
    // Statements that carry an analyzed query inside: CREATE TABLE AS,
    // DECLARE CURSOR (server-side cursors; the hook is not called for the
    // inner query), EXPLAIN.
    if !utility.is_null() {
        if is_a(utility, NodeTag::T_CreateTableAsStmt) {
            rewrite_node_query((*utility.cast::<pg_sys::CreateTableAsStmt>()).query);
        } else if is_a(utility, NodeTag::T_DeclareCursorStmt) {
            rewrite_node_query((*utility.cast::<pg_sys::DeclareCursorStmt>()).query);
        } else if is_a(utility, NodeTag::T_ExplainStmt) {
            rewrite_node_query((*utility.cast::<pg_sys::ExplainStmt>()).query);
        }
    }
    if !(*query).jointree.is_null() {
        rewrite_jointree((*query).jointree.cast());
    }
    // Every query nested anywhere else: sub-selects in the select list, in
    // HAVING or in conditions, subqueries in FROM, CTEs.
    pg_sys::query_tree_walker(query, Some(find_queries), std::ptr::null_mut(), 0);
}

unsafe fn rewrite_node_query(node: *mut Node) {
    if !node.is_null() && is_a(node, NodeTag::T_Query) {
        rewrite_query(node.cast());
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn find_queries(node: *mut Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    if is_a(node, NodeTag::T_Query) {
        rewrite_query(node.cast());
        return false;
    }
    pg_sys::expression_tree_walker(node, Some(find_queries), context)
}

unsafe fn rewrite_jointree(node: *mut Node) {
    if node.is_null() {
        return;
    }
    if is_a(node, NodeTag::T_FromExpr) {
        let from = node.cast::<pg_sys::FromExpr>();
        (*from).quals = mutate((*from).quals, std::ptr::null_mut());
        for item in PgList::<Node>::from_pg((*from).fromlist).iter_ptr() {
            rewrite_jointree(item);
        }
    } else if is_a(node, NodeTag::T_JoinExpr) {
        let join = node.cast::<pg_sys::JoinExpr>();
        (*join).quals = mutate((*join).quals, std::ptr::null_mut());
        rewrite_jointree((*join).larg);
        rewrite_jointree((*join).rarg);
    }
}

/// Walks a condition, replacing distance comparisons. Nested queries are
/// left to `find_queries`.
#[pg_guard]
unsafe extern "C-unwind" fn mutate(node: *mut Node, context: *mut c_void) -> *mut Node {
    if node.is_null() || is_a(node, NodeTag::T_Query) {
        return node;
    }
    if is_a(node, NodeTag::T_OpExpr) {
        if let Some(replacement) = rewrite_comparison(node.cast()) {
            return replacement;
        }
    }
    compat::expression_tree_mutator(node, mutate, context)
}

/// A distance in a comparison: `hamming(a, b)` or `a <~> b`, perhaps
/// widened to the bound's type.
struct Distance {
    a: *mut Node,
    b: *mut Node,
    /// `simhash_within` beside this `hamming`.
    within: Oid,
    /// The schema both live in, where `simhash_bound` is looked up too.
    schema: Oid,
}

/// The distance `expr` computes, if it is ours.
unsafe fn distance(mut expr: *mut Node) -> Option<Distance> {
    if is_a(expr, NodeTag::T_FuncExpr) {
        let f = expr.cast::<pg_sys::FuncExpr>();
        let args = PgList::<Node>::from_pg((*f).args);
        if INT4_WIDENINGS.contains(&(*f).funcid) && args.len() == 1 {
            expr = args.get_ptr(0)?;
        }
    }
    let (funcid, args) = if is_a(expr, NodeTag::T_FuncExpr) {
        let f = expr.cast::<pg_sys::FuncExpr>();
        ((*f).funcid, (*f).args)
    } else if is_a(expr, NodeTag::T_OpExpr) {
        let o = expr.cast::<pg_sys::OpExpr>();
        (pg_sys::get_opcode((*o).opno), (*o).args)
    } else {
        return None;
    };
    let args = PgList::<Node>::from_pg(args);
    if args.len() != 2 || pg_sys::get_func_rettype(funcid) != pg_sys::INT4OID {
        return None;
    }
    let name = pg_sys::get_func_name(funcid);
    if name.is_null() || CStr::from_ptr(name).to_bytes() != b"hamming" {
        return None;
    }
    let (a, b) = (args.get_ptr(0)?, args.get_ptr(1)?);
    // Ours if `simhash_within` exists beside it for the same argument type.
    let schema = pg_sys::get_func_namespace(funcid);
    let fp_type = pg_sys::exprType(a);
    let within = lookup_function(
        schema,
        "simhash_within",
        &[fp_type, fp_type, pg_sys::INT4OID],
    )?;
    Some(Distance {
        a,
        b,
        within,
        schema,
    })
}

/// The B-tree family and strategy of a comparison operator between
/// built-in numeric types.
unsafe fn comparison(opno: Oid) -> Option<(Oid, u16)> {
    [INTEGER_OPS, FLOAT_OPS, NUMERIC_OPS]
        .into_iter()
        .find_map(|family| {
            let strategy = pg_sys::get_op_opfamily_strategy(opno, family);
            (strategy != 0).then_some((family, strategy as u16))
        })
}

/// Whether evaluating `expr` more than once could give another value, or
/// more than one row: such an operand must be evaluated once per row, as
/// in the comparison the user wrote, and the planner's support function
/// copies operands.
pub unsafe fn unstable(expr: *mut Node) -> bool {
    pg_sys::contain_volatile_functions(expr) || pg_sys::expression_returns_set(expr)
}

/// The replacement for a distance comparison, or `None` for any other
/// expression (and for the comparisons that are better left alone).
unsafe fn rewrite_comparison(cmp: *mut pg_sys::OpExpr) -> Option<*mut Node> {
    let (family, strategy) = comparison((*cmp).opno)?;
    let args = PgList::<Node>::from_pg((*cmp).args);
    if args.len() != 2 {
        return None;
    }
    let (left, right) = (args.get_ptr(0)?, args.get_ptr(1)?);
    // Read as `distance <strategy> bound`.
    let (d, bound, strategy) = if let Some(d) = distance(left) {
        (d, right, strategy)
    } else if let Some(d) = distance(right) {
        let flipped = match strategy {
            LESS => GREATER,
            LESS_EQUAL => GREATER_EQUAL,
            GREATER_EQUAL => LESS_EQUAL,
            GREATER => LESS,
            s => s,
        };
        (d, left, flipped)
    } else {
        return None;
    };
    if ![LESS, LESS_EQUAL, EQUAL].contains(&strategy) {
        return None; // a lower bound: no index helps
    }
    if unstable(d.a) || unstable(d.b) || unstable(bound) {
        return None;
    }
    let k = at_most(&d, bound, strategy == LESS)?;
    let within_call = call(d.within, pg_sys::BOOLOID, &[copy(d.a), copy(d.b), k]);
    if strategy != EQUAL {
        return Some(within_call);
    }
    // `distance = bound` is `within(a, b, bound) AND distance >= bound`.
    let (ltype, rtype) = (pg_sys::exprType(left), pg_sys::exprType(right));
    let lower = if distance(left).is_some() {
        GREATER_EQUAL
    } else {
        LESS_EQUAL
    };
    let lower_op = pg_sys::get_opfamily_member(family, ltype, rtype, lower as i16);
    if lower_op == pg_sys::InvalidOid {
        return None;
    }
    let lower_bound = op(lower_op, pg_sys::BOOLOID, copy(left), copy(right));
    Some(pg_sys::make_andclause(list(&[within_call, lower_bound])).cast())
}

/// The int4 bound `k` with `distance <= k` equal to `distance <= bound`
/// (or `distance < bound` when `below`): the bound itself when it is an
/// int4, folded when it is an int4 constant, else
/// `simhash_bound(bound, below)`, which clamps rather than overflows.
unsafe fn at_most(d: &Distance, bound: *mut Node, below: bool) -> Option<*mut Node> {
    let bound_type = pg_sys::exprType(bound);
    if bound_type == pg_sys::INT4OID {
        if !below {
            return Some(copy(bound));
        }
        if is_a(bound, NodeTag::T_Const) {
            return Some(match int4_value(bound) {
                None => copy(bound), // NULL stays NULL
                Some(v) => int4_const(simhash_core::probe::at_most_below_int(i64::from(v))),
            });
        }
    }
    let helper = lookup_function(d.schema, "simhash_bound", &[bound_type, pg_sys::BOOLOID])?;
    Some(call(
        helper,
        pg_sys::INT4OID,
        &[copy(bound), bool_const(below)],
    ))
}
