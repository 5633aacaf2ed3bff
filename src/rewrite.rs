//! Parse-time rewrite of the distance comparisons users write.
//!
//! `hamming(a, b) <= k`, `a <~> b <= k`, `a <~> b < k`, `k >= a <~> b` and
//! the like are plain int4 comparisons: the planner sees a built-in
//! operator on an int and nothing to index. This hook, run right after
//! parse analysis, replaces each such comparison in a WHERE or JOIN ... ON
//! condition with `simhash_within(a, b, k)`, whose planner support function
//! (`crate::index`) adds the band-index conditions. Equality
//! (`a <~> b = k`) keeps the original comparison as well.
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

use crate::nodes::{call, copy, int4_const, int4_value, list, lookup_function, op};

// Built-in int4 operators (bootstrap OIDs from pg_operator.dat).
const INT4_EQ: Oid = Oid::from_u32(96);
const INT4_LT: Oid = Oid::from_u32(97);
const INT4_GT: Oid = Oid::from_u32(521);
const INT4_LE: Oid = Oid::from_u32(523);
const INT4_GE: Oid = Oid::from_u32(525);
const INT4_MINUS: Oid = Oid::from_u32(555);

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
unsafe fn rewrite_query(query: *mut pg_sys::Query) {
    let utility = (*query).utilityStmt;
    // CREATE TABLE AS carries its analyzed query inside. (EXPLAIN does too,
    // but PostgreSQL calls this hook again for the explained query itself.)
    if !utility.is_null() && is_a(utility, NodeTag::T_CreateTableAsStmt) {
        rewrite_node_query((*utility.cast::<pg_sys::CreateTableAsStmt>()).query);
    }
    if !(*query).jointree.is_null() {
        rewrite_jointree((*query).jointree.cast());
    }
    for rte in PgList::<pg_sys::RangeTblEntry>::from_pg((*query).rtable).iter_ptr() {
        if (*rte).rtekind == pg_sys::RTEKind::RTE_SUBQUERY && !(*rte).subquery.is_null() {
            rewrite_query((*rte).subquery);
        }
    }
    for cte in PgList::<pg_sys::CommonTableExpr>::from_pg((*query).cteList).iter_ptr() {
        rewrite_node_query((*cte).ctequery);
    }
}

unsafe fn rewrite_node_query(node: *mut Node) {
    if !node.is_null() && is_a(node, NodeTag::T_Query) {
        rewrite_query(node.cast());
    }
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

type Mutator = unsafe extern "C-unwind" fn() -> *mut Node;

/// Walks an expression, replacing distance comparisons; descends into
/// sub-selects (`EXISTS (...)`, `IN (...)`) through their queries.
#[pg_guard]
unsafe extern "C-unwind" fn mutate(node: *mut Node, context: *mut c_void) -> *mut Node {
    if node.is_null() {
        return node;
    }
    if is_a(node, NodeTag::T_Query) {
        rewrite_query(node.cast());
        return node;
    }
    if is_a(node, NodeTag::T_OpExpr) {
        if let Some(replacement) = rewrite_comparison(node.cast()) {
            return replacement;
        }
    }
    // SAFETY: PostgreSQL's mutator protocol: the callback is called with
    // (node, context), whatever the old-style prototype says.
    let callback: Mutator = std::mem::transmute(
        mutate as unsafe extern "C-unwind" fn(*mut Node, *mut c_void) -> *mut Node,
    );
    pg_sys::expression_tree_mutator(node, Some(callback), context)
}

/// The comparison's shape, read as `distance <op> bound`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    AtMost,
    Below,
    Exactly,
}

/// `(a, b, simhash_within's OID)` when `expr` is our `hamming(a, b)` or
/// `a <~> b`.
unsafe fn distance_call(expr: *mut Node) -> Option<(*mut Node, *mut Node, Oid)> {
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
    let fp_type = pg_sys::exprType(a);
    let within = lookup_function(
        pg_sys::get_func_namespace(funcid),
        "simhash_within",
        &[fp_type, fp_type, pg_sys::INT4OID],
    )?;
    Some((a, b, within))
}

/// The replacement for a distance comparison, or `None` for any other
/// expression.
unsafe fn rewrite_comparison(op: *mut pg_sys::OpExpr) -> Option<*mut Node> {
    let opno = (*op).opno;
    if ![INT4_EQ, INT4_LT, INT4_GT, INT4_LE, INT4_GE].contains(&opno) {
        return None;
    }
    let args = PgList::<Node>::from_pg((*op).args);
    if args.len() != 2 {
        return None;
    }
    let (left, right) = (args.get_ptr(0)?, args.get_ptr(1)?);
    let (a, b, within, bound_expr, bound) = if let Some((a, b, w)) = distance_call(left) {
        let bound = match opno {
            INT4_LE => Bound::AtMost,
            INT4_LT => Bound::Below,
            INT4_EQ => Bound::Exactly,
            _ => return None,
        };
        (a, b, w, right, bound)
    } else if let Some((a, b, w)) = distance_call(right) {
        let bound = match opno {
            INT4_GE => Bound::AtMost,
            INT4_GT => Bound::Below,
            INT4_EQ => Bound::Exactly,
            _ => return None,
        };
        (a, b, w, left, bound)
    } else {
        return None;
    };
    if pg_sys::contain_volatile_functions(bound_expr) {
        return None; // simhash_within may evaluate it more than once
    }
    let k = match bound {
        Bound::AtMost | Bound::Exactly => copy(bound_expr),
        Bound::Below => below(bound_expr)?,
    };
    let within_call = call(within, pg_sys::BOOLOID, &[copy(a), copy(b), k]);
    if bound == Bound::Exactly {
        return Some(pg_sys::make_andclause(list(&[within_call, op.cast()])).cast());
    }
    Some(within_call)
}

/// `k - 1`, the at-most bound equal to `< k`; folded when `k` is a
/// constant. `< 0` and smaller constants are left alone: nothing is below
/// zero, and rewriting would turn an empty answer into an error.
unsafe fn below(k: *mut Node) -> Option<*mut Node> {
    if is_a(k, NodeTag::T_Const) {
        return match int4_value(k) {
            None => Some(copy(k)), // NULL stays NULL
            Some(v) if v <= 0 => None,
            Some(v) => Some(int4_const(v - 1)),
        };
    }
    Some(op(INT4_MINUS, pg_sys::INT4OID, copy(k), int4_const(1)))
}
