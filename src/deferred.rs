//! Generic plans of distance queries on Citus distributed tables.
//!
//! Citus cannot plan a query that reads more than one shard while a
//! parameter has no value: for a generic plan (a prepared statement under
//! `plan_cache_mode = force_generic_plan`, the body of a SQL function) it
//! returns a plan that fails when run ("could not create distributed
//! plan"), with a cost so high that the default `plan_cache_mode = auto`
//! always prefers custom plans. So drivers that prepare statements keep
//! working; a generic plan never does.
//!
//! For queries that use the distance (after the parse-time rewrite, a
//! `simhash_within` call), this planner hook puts a small plan of its own
//! in the place of that failing one: a custom scan that, when run, plans
//! the query again with the parameter values it is run with (so Citus
//! makes its ordinary multi-shard plan, with the band-index scans on each
//! shard), runs it, and returns its rows. It keeps the failing plan's cost,
//! so `auto` still picks custom plans, and it touches nothing else: any
//! other query, and every query without Citus, is planned as before.

use std::ffi::{c_char, c_int, c_void, CStr};

use pgrx::pg_sys::{self, Node, NodeTag};
use pgrx::prelude::*;
use pgrx::{is_a, PgList};

use crate::compat;
use crate::nodes::{copy, list};

static mut PREVIOUS_PLANNER: pg_sys::planner_hook_type = None;

const NAME: &CStr = c"Simhash Deferred Plan";

static mut SCAN_METHODS: pg_sys::CustomScanMethods = pg_sys::CustomScanMethods {
    CustomName: NAME.as_ptr(),
    CreateCustomScanState: Some(create_state),
};

static mut EXEC_METHODS: pg_sys::CustomExecMethods = pg_sys::CustomExecMethods {
    CustomName: NAME.as_ptr(),
    BeginCustomScan: Some(begin),
    ExecCustomScan: Some(exec),
    EndCustomScan: Some(end),
    ReScanCustomScan: Some(rescan),
    MarkPosCustomScan: None,
    RestrPosCustomScan: None,
    EstimateDSMCustomScan: None,
    InitializeDSMCustomScan: None,
    ReInitializeDSMCustomScan: None,
    InitializeWorkerCustomScan: None,
    ShutdownCustomScan: None,
    ExplainCustomScan: Some(explain),
};

/// Installs the planner hook, keeping whichever was there (Citus's, when
/// it is preloaded first, as it must be).
pub fn install() {
    // SAFETY: called once from _PG_init, single-threaded, as every
    // PostgreSQL extension chains its hooks; the methods are static.
    unsafe {
        pg_sys::RegisterCustomScanMethods(&raw const SCAN_METHODS);
        PREVIOUS_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
    }
}

/// The cost Citus gives a plan it could not make for want of parameter
/// values (`DissuadePlannerFromUsingPlan`: `FLT_MAX / 100000000`,
/// computed in single precision).
fn dissuading_cost() -> f64 {
    f64::from(f32::MAX / 100_000_000f32)
}

// PostgreSQL's own planner, declared here without pgrx's error guard (see
// `plan`).
extern "C-unwind" {
    #[link_name = "standard_planner"]
    fn standard_planner_unguarded(
        parse: *mut pg_sys::Query,
        query_string: *const c_char,
        cursor_options: c_int,
        bound_params: pg_sys::ParamListInfo,
    ) -> *mut pg_sys::PlannedStmt;
}

/// The planner hook. Deliberately not `#[pg_guard]`, and it calls the
/// planner below it directly, not through pgrx's guarded bindings: an
/// error raised while planning (any query's) then reaches PostgreSQL's
/// handler unchanged, CONTEXT lines included, which a pgrx guard would
/// drop. Nothing with a destructor is alive in this frame; the Rust work
/// happens in the guarded functions it calls.
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    let original = keep_candidate(parse, bound_params);
    let stmt = match PREVIOUS_PLANNER {
        Some(previous) => previous(parse, query_string, cursor_options, bound_params),
        None => standard_planner_unguarded(parse, query_string, cursor_options, bound_params),
    };
    if !original.is_null() {
        defer_if_unplannable(stmt, original, query_string);
    }
    stmt
}

/// A copy of `parse` when it is a candidate (planning scribbles on the
/// query), else NULL.
#[pg_guard]
unsafe extern "C-unwind" fn keep_candidate(
    parse: *mut pg_sys::Query,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::Query {
    if bound_params.is_null() && candidate(parse) {
        copy(parse.cast()).cast()
    } else {
        std::ptr::null_mut()
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn defer_if_unplannable(
    stmt: *mut pg_sys::PlannedStmt,
    original: *mut pg_sys::Query,
    query_string: *const c_char,
) {
    if unplannable(stmt) {
        defer(stmt, original, query_string);
    }
}

/// A read-only query with parameters that uses the distance.
unsafe fn candidate(query: *mut pg_sys::Query) -> bool {
    if (*query).commandType != pg_sys::CmdType::CMD_SELECT
        || !(*query).utilityStmt.is_null()
        || (*query).hasModifyingCTE
        || !(*query).rowMarks.is_null()
    {
        return false;
    }
    let mut found = Found::default();
    pg_sys::query_tree_walker(query, Some(find), (&raw mut found).cast(), 0);
    found.extern_param && found.within
}

#[derive(Default)]
struct Found {
    extern_param: bool,
    within: bool,
    /// The simhash extension's OID, looked up at the first function call.
    extension: Option<pg_sys::Oid>,
}

#[pg_guard]
unsafe extern "C-unwind" fn find(node: *mut Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    let found = &mut *context.cast::<Found>();
    if is_a(node, NodeTag::T_Query) {
        return pg_sys::query_tree_walker(node.cast(), Some(find), context, 0);
    }
    if is_a(node, NodeTag::T_Param) {
        let p = node.cast::<pg_sys::Param>();
        found.extern_param |= (*p).paramkind == pg_sys::ParamKind::PARAM_EXTERN;
    } else if is_a(node, NodeTag::T_FuncExpr) && !found.within {
        let funcid = (*node.cast::<pg_sys::FuncExpr>()).funcid;
        let extension = *found
            .extension
            .get_or_insert_with(|| pg_sys::get_extension_oid(c"simhash".as_ptr(), true));
        let name = pg_sys::get_func_name(funcid);
        found.within = !name.is_null()
            && CStr::from_ptr(name) == c"simhash_within"
            && pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, funcid) == extension;
    }
    pg_sys::expression_tree_walker(node, Some(find), context)
}

/// The plan Citus makes when it cannot plan without the parameter values:
/// its custom scan, at the dissuading cost.
unsafe fn unplannable(stmt: *mut pg_sys::PlannedStmt) -> bool {
    let top = (*stmt).planTree;
    !top.is_null()
        && is_a(top.cast(), NodeTag::T_CustomScan)
        && (*top).total_cost == dissuading_cost()
}

/// Replaces the plan tree of `stmt` with the deferred scan of `query`.
unsafe fn defer(stmt: *mut pg_sys::PlannedStmt, query: *mut pg_sys::Query, source: *const c_char) {
    let failing = (*stmt).planTree;
    let mut plan_tlist = PgList::<pg_sys::TargetEntry>::new();
    let mut scan_tlist = PgList::<pg_sys::TargetEntry>::new();
    let mut resno: i16 = 0;
    for te in PgList::<pg_sys::TargetEntry>::from_pg((*query).targetList).iter_ptr() {
        if (*te).resjunk {
            continue;
        }
        resno += 1;
        let expr = (*te).expr.cast::<Node>();
        let (typ, typmod, collation) = (
            pg_sys::exprType(expr),
            pg_sys::exprTypmod(expr),
            pg_sys::exprCollation(expr),
        );
        let name = if (*te).resname.is_null() {
            std::ptr::null_mut()
        } else {
            pg_sys::pstrdup((*te).resname)
        };
        // The scan's row type: only the types of these entries are read.
        let column = pg_sys::makeNullConst(typ, typmod, collation);
        scan_tlist.push(pg_sys::makeTargetEntry(column.cast(), resno, name, false));
        let var = pg_sys::makeVar(pg_sys::INDEX_VAR as _, resno, typ, typmod, collation, 0);
        plan_tlist.push(pg_sys::makeTargetEntry(var.cast(), resno, name, false));
    }

    let scan =
        pg_sys::palloc0(std::mem::size_of::<pg_sys::CustomScan>()).cast::<pg_sys::CustomScan>();
    let plan = &mut (*scan).scan.plan;
    plan.type_ = NodeTag::T_CustomScan;
    plan.startup_cost = (*failing).startup_cost;
    plan.total_cost = (*failing).total_cost;
    plan.plan_rows = (*failing).plan_rows;
    plan.plan_width = (*failing).plan_width;
    plan.parallel_safe = false;
    plan.targetlist = plan_tlist.into_pg();
    (*scan).scan.scanrelid = 0;
    (*scan).flags = pg_sys::CUSTOMPATH_SUPPORT_BACKWARD_SCAN;
    (*scan).custom_scan_tlist = scan_tlist.into_pg();
    let source = if source.is_null() {
        c"".as_ptr()
    } else {
        source
    };
    (*scan).custom_private = list(&[
        query.cast(),
        pg_sys::makeString(pg_sys::pstrdup(source)).cast(),
    ]);
    (*scan).methods = &raw const SCAN_METHODS;

    (*stmt).planTree = scan.cast();
    // Nothing of the failing plan runs: not its sub-plans, not its
    // executor parameters. The range table stays, so that the plan is
    // invalidated and its tables locked and checked as before.
    (*stmt).subplans = std::ptr::null_mut();
    (*stmt).paramExecTypes = std::ptr::null_mut();
    (*stmt).rewindPlanIDs = std::ptr::null_mut();
    (*stmt).parallelModeNeeded = false;
    (*stmt).jitFlags = 0;
}

/// The executor state: the rows of the query as planned and run with the
/// parameter values, read on demand.
#[repr(C)]
struct Deferred {
    css: pg_sys::CustomScanState,
    rows: *mut pg_sys::Tuplestorestate,
    /// Where rows are read into: a tuplestore gives minimal tuples.
    slot: *mut pg_sys::TupleTableSlot,
}

#[pg_guard]
unsafe extern "C-unwind" fn create_state(_scan: *mut pg_sys::CustomScan) -> *mut Node {
    let state = pg_sys::palloc0(std::mem::size_of::<Deferred>()).cast::<Deferred>();
    (*state).css.ss.ps.type_ = NodeTag::T_CustomScanState;
    (*state).css.methods = &raw const EXEC_METHODS;
    state.cast()
}

#[pg_guard]
unsafe extern "C-unwind" fn begin(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
    _eflags: c_int,
) {
    let desc = (*(*node).ss.ss_ScanTupleSlot).tts_tupleDescriptor;
    (*node.cast::<Deferred>()).slot =
        pg_sys::ExecInitExtraTupleSlot(estate, desc, &raw const pg_sys::TTSOpsMinimalTuple);
}

#[pg_guard]
unsafe extern "C-unwind" fn exec(
    node: *mut pg_sys::CustomScanState,
) -> *mut pg_sys::TupleTableSlot {
    let state = node.cast::<Deferred>();
    let estate = (*node).ss.ps.state;
    if (*state).rows.is_null() {
        (*state).rows = run(node, estate);
    }
    let slot = (*state).slot;
    let forward = (*estate).es_direction != pg_sys::ScanDirection::BackwardScanDirection;
    // An empty slot when the rows are used up.
    pg_sys::tuplestore_gettupleslot((*state).rows, forward, false, slot);
    slot
}

/// Plans the stored query with the parameter values of this execution and
/// runs it into a tuplestore.
unsafe fn run(
    node: *mut pg_sys::CustomScanState,
    estate: *mut pg_sys::EState,
) -> *mut pg_sys::Tuplestorestate {
    let scan = (*node).ss.ps.plan.cast::<pg_sys::CustomScan>();
    let private = PgList::<Node>::from_pg((*scan).custom_private);
    let (Some(query), Some(source)) = (private.get_ptr(0), private.get_ptr(1)) else {
        error!("simhash: a deferred plan without its query");
    };
    let source = (*source.cast::<pg_sys::String>()).sval;
    let params = (*estate).es_param_list_info;

    let old = pg_sys::MemoryContextSwitchTo((*estate).es_query_cxt);
    let query = copy(query).cast::<pg_sys::Query>();
    let stmt = pg_sys::pg_plan_query(
        query,
        source,
        pg_sys::CURSOR_OPT_PARALLEL_OK as c_int,
        params,
    );
    let rows = pg_sys::tuplestore_begin_heap(true, false, pg_sys::work_mem);
    let receiver = pg_sys::palloc0(std::mem::size_of::<Receiver>()).cast::<Receiver>();
    (*receiver).base.receiveSlot = Some(receive);
    (*receiver).base.rStartup = Some(startup);
    (*receiver).base.rShutdown = Some(shutdown);
    (*receiver).base.rDestroy = Some(shutdown);
    (*receiver).base.mydest = pg_sys::CommandDest::DestTuplestore;
    (*receiver).rows = rows;
    let desc = pg_sys::CreateQueryDesc(
        stmt,
        source,
        pg_sys::GetActiveSnapshot(),
        std::ptr::null_mut(),
        receiver.cast(),
        params,
        (*estate).es_queryEnv,
        0,
    );
    pg_sys::ExecutorStart(desc, 0);
    compat::executor_run_to_end(desc);
    pg_sys::ExecutorFinish(desc);
    pg_sys::ExecutorEnd(desc);
    pg_sys::FreeQueryDesc(desc);
    pg_sys::MemoryContextSwitchTo(old);
    rows
}

#[pg_guard]
unsafe extern "C-unwind" fn end(node: *mut pg_sys::CustomScanState) {
    let state = node.cast::<Deferred>();
    if !(*state).rows.is_null() {
        pg_sys::tuplestore_end((*state).rows);
        (*state).rows = std::ptr::null_mut();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn rescan(node: *mut pg_sys::CustomScanState) {
    let state = node.cast::<Deferred>();
    if !(*state).rows.is_null() {
        pg_sys::tuplestore_rescan((*state).rows);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn explain(
    _node: *mut pg_sys::CustomScanState,
    _ancestors: *mut pg_sys::List,
    es: *mut pg_sys::ExplainState,
) {
    pg_sys::ExplainPropertyText(
        c"Planned".as_ptr(),
        c"when run, with the parameter values (a generic plan of a multi-shard query)".as_ptr(),
        es,
    );
}

/// A receiver that puts the rows into a tuplestore.
#[repr(C)]
struct Receiver {
    base: pg_sys::DestReceiver,
    rows: *mut pg_sys::Tuplestorestate,
}

#[pg_guard]
unsafe extern "C-unwind" fn receive(
    slot: *mut pg_sys::TupleTableSlot,
    this: *mut pg_sys::DestReceiver,
) -> bool {
    pg_sys::tuplestore_puttupleslot((*this.cast::<Receiver>()).rows, slot);
    true
}

#[pg_guard]
unsafe extern "C-unwind" fn startup(
    _this: *mut pg_sys::DestReceiver,
    _operation: c_int,
    _desc: pg_sys::TupleDesc,
) {
}

#[pg_guard]
unsafe extern "C-unwind" fn shutdown(_this: *mut pg_sys::DestReceiver) {}
