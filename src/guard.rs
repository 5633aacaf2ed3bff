//! `simhash_near_unique()`: the near-unique guard, a `BEFORE INSERT OR
//! UPDATE ... FOR EACH ROW` trigger that refuses (or skips) a row within
//! distance `k` of a row already in the table.
//!
//! It behaves like a unique constraint, not like a query the inserting
//! role runs:
//!
//! - It reads the table directly, with PostgreSQL's dirty snapshot (what a
//!   unique index check sees): every committed row whatever the role may
//!   read (row-level security and privileges do not apply), rows of
//!   transactions still in progress, rows committed after the transaction's
//!   snapshot (so it works under REPEATABLE READ and SERIALIZABLE too).
//!   When a candidate within `k` belongs to a transaction still in
//!   progress, it waits for that transaction to end and looks again, as a
//!   unique index does.
//! - It probes the four band indexes of the column directly (no SQL, no
//!   plan), on every leaf partition of the partitioned table the trigger
//!   was made on: one guard over all partitions. A partition without the
//!   four band indexes is scanned instead: slow, never wrong.
//! - Between its check and the row's insertion, a concurrent near-duplicate
//!   could check and miss the row not yet in. Short locks close that gap
//!   ([`simhash_core::guard::lock_keys`]): two rows within `k` always want
//!   one lock key in common, the lock is taken before the check and given
//!   back once the row is in (at the next row of the statement or at its
//!   end), and it is never held while waiting for another transaction. So
//!   the guard's own locking cannot close a cycle of waits: a deadlock
//!   needs real near-duplicates in two transactions, as with a unique
//!   index. The locks are advisory locks of their own kind
//!   (`pg_locks.objsubid = 21320`), apart from the application's.
//! - The error is PostgreSQL's unique violation: SQLSTATE 23505 with the
//!   table, schema and constraint (the trigger's name) fields. Its DETAIL
//!   names the existing row only when the inserting role could read it, as
//!   PostgreSQL decides for unique keys (no row-level security on the
//!   table, and SELECT on it or on both columns named).
//! - A generated fingerprint column is computed by evaluating its
//!   expression on the new row; `simhash()` then keeps that one result for
//!   the column's own computation right after (`functions::remember_next`),
//!   so the text is fingerprinted once.
//!
//! On a shard of a Citus distributed table the guard would see that shard
//! only, so it refuses to run there. A reference table's copy on each node
//! (or any Citus table with one shard) holds every row: there it runs.

use std::ffi::{c_char, c_int, CStr, CString};

use pgrx::pg_sys::{self, Datum, Oid, Relation};
use pgrx::prelude::*;

use crate::errors;
use crate::functions;
use crate::layout::{band_indexes, KeyFunctions, PartIndex, RLS_ENABLED};
use crate::nodes::{lookup_function, oid_list};
use simhash_core::layout::Layout;

/// `pg_locks.objsubid` of the guard's locks (advisory locks that
/// `pg_advisory_lock` can never take: it uses 1 and 2).
pub const LOCK_FIELD4: u16 = 21320;
/// The same, for the locks of candidate keys (`simhash_lsh`).
pub const LOCK_FIELD4_LSH: u16 = 21321;

/// A text's candidate keys (`simhash_lsh`), one per band.
type LshKeys = [i32; simhash_core::lsh::BANDS];

const TRIGGER_EVENT_OPMASK: u32 = 0x3;
const TRIGGER_EVENT_INSERT: u32 = 0x0;
const TRIGGER_EVENT_UPDATE: u32 = 0x2;
const TRIGGER_EVENT_TIMINGMASK: u32 = 0x18;
/// elog.h: ERROR.
const ERROR_LEVEL: c_int = pgrx::PgLogLevel::ERROR as c_int;

extern "C-unwind" {
    fn get_partition_ancestors(relid: Oid) -> *mut pg_sys::List;
    // Raising the unique violation: called directly, not through pgrx's
    // guarded bindings, so that the error keeps its table, schema and
    // constraint fields (see `raise_conflict`).
    #[link_name = "errstart"]
    fn errstart_unguarded(elevel: c_int, domain: *const c_char) -> bool;
    #[link_name = "errcode"]
    fn errcode_unguarded(sqlerrcode: c_int) -> c_int;
    #[link_name = "errtableconstraint"]
    fn errtableconstraint_unguarded(rel: Relation, conname: *const c_char) -> c_int;
    #[link_name = "errfinish"]
    fn errfinish_unguarded(filename: *const c_char, lineno: c_int, funcname: *const c_char);
}
extern "C" {
    #[link_name = "errmsg_internal"]
    fn errmsg_unguarded(fmt: *const c_char, ...) -> c_int;
    #[link_name = "errdetail_internal"]
    fn errdetail_unguarded(fmt: *const c_char, ...) -> c_int;
}

/// What the trigger's arguments say.
struct Args {
    column: CString,
    k: u32,
    skip: bool,
    key: CString,
    key_given: bool,
    /// The text column a candidate's similarity is verified on, and the
    /// threshold (the verified guard); `None`: the fingerprint decides.
    verify: Option<(CString, f64)>,
}

/// One leaf table the guard checks.
struct Target {
    relid: Oid,
    fp_attno: i16,
    /// The key column's number and type, if the table has it.
    key: Option<(i16, Oid)>,
    /// The layout the guard probes and its indexes, part by part, with
    /// their equality strategy numbers; `None` when the table has no
    /// layout that serves `k` (it is scanned).
    bands: Option<(Layout, Vec<PartIndex>)>,
    /// Whether those indexes are the covering bands, whose entries hold
    /// the fingerprint: the table is visited only for entries within `k`.
    covering: bool,
    /// The verified text column's number, when the guard verifies.
    text_attno: Option<i16>,
    /// The second source of candidates, when the guard verifies and the
    /// table has a column of `simhash_lsh` of that text (`simhash_add_lsh`),
    /// indexed or not: rows that share a key are verified too.
    lsh: Option<crate::lsh::LshColumn>,
}

/// What a statement's calls of one trigger share: worked out on its first
/// row, dropped (and its locks given back) with the statement's memory.
struct Guard {
    args: Args,
    scope: Oid,
    targets: Vec<Target>,
    fp_attno: i16,
    /// The generated column's expression, when the column is generated.
    generated: *mut pg_sys::ExprState,
    econtext: *mut pg_sys::ExprContext,
    salt: u64,
    /// The statement's memory: the executor's per-query context.
    statement: pg_sys::MemoryContext,
    /// The shard id when the table is a Citus shard (a reference table's
    /// copy): the trigger's name there ends in it, and the error names
    /// the trigger as the table the user made has it.
    shard_id: Option<i64>,
}

thread_local! {
    /// The locks of rows checked but maybe not yet in the table, with the
    /// statement that checked them. A statement's next row (whatever the
    /// partition it goes to) finds its previous rows in the table and gives
    /// their locks back; so does the statement's end. A statement run
    /// inside another (by a trigger, say) leaves the outer one's alone: its
    /// row may not be in yet.
    static PENDING: std::cell::RefCell<Vec<(pg_sys::MemoryContext, pg_sys::LOCKTAG)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Gives back the locks `statement` took.
unsafe fn release(statement: pg_sys::MemoryContext) {
    let mine: Vec<pg_sys::LOCKTAG> = PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        let mine = pending
            .iter()
            .filter(|(s, _)| *s == statement)
            .map(|(_, t)| *t)
            .collect();
        pending.retain(|(s, _)| *s != statement);
        mine
    });
    for tag in mine {
        pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as c_int, false);
    }
}

/// The outcome of the guarded part, handed to the unguarded entry point.
#[repr(C)]
struct Verdict {
    row: Datum,
    conflict: bool,
    rel: Relation,
    constraint: *const c_char,
    message: *mut c_char,
    detail: *mut c_char,
}

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo_simhash_near_unique_wrapper() -> &'static pg_sys::Pg_finfo_record {
    static INFO: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &INFO
}

/// The trigger function. Deliberately not `#[pg_guard]`: all the work is
/// in the guarded `check`; a conflict is raised from here, where nothing
/// with a destructor is alive, straight through PostgreSQL's error
/// machinery (pgrx's guard would drop the table and constraint fields).
///
/// # Safety
/// Called by PostgreSQL's function manager.
#[no_mangle]
pub unsafe extern "C-unwind" fn simhash_near_unique_wrapper(
    fcinfo: pg_sys::FunctionCallInfo,
) -> Datum {
    let verdict = check(fcinfo);
    if verdict.conflict {
        raise_conflict(&verdict);
    }
    verdict.row
}

/// Raises the unique violation of `verdict`.
unsafe fn raise_conflict(verdict: &Verdict) {
    if errstart_unguarded(ERROR_LEVEL, std::ptr::null()) {
        errcode_unguarded(PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION as c_int);
        errmsg_unguarded(c"%s".as_ptr(), verdict.message);
        if !verdict.detail.is_null() {
            errdetail_unguarded(c"%s".as_ptr(), verdict.detail);
        }
        errtableconstraint_unguarded(verdict.rel, verdict.constraint);
        errfinish_unguarded(
            c"guard.rs".as_ptr(),
            line!() as c_int,
            c"simhash_near_unique".as_ptr(),
        );
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn check(fcinfo: pg_sys::FunctionCallInfo) -> Verdict {
    let context = (*fcinfo).context;
    if context.is_null() || !pgrx::is_a(context, pg_sys::NodeTag::T_TriggerData) {
        errors::guard_not_trigger();
    }
    let data = context.cast::<pg_sys::TriggerData>();
    let event = (*data).tg_event;
    let op = event & TRIGGER_EVENT_OPMASK;
    if event & TRIGGER_EVENT_TIMINGMASK != pg_sys::TRIGGER_EVENT_BEFORE
        || event & pg_sys::TRIGGER_EVENT_ROW == 0
        || (op != TRIGGER_EVENT_INSERT && op != TRIGGER_EVENT_UPDATE)
    {
        errors::guard_wrong_event();
    }
    let updating = op == TRIGGER_EVENT_UPDATE;
    refuse_later_before_triggers(data, updating);
    let (row, slot) = if updating {
        ((*data).tg_newtuple, (*data).tg_newslot)
    } else {
        ((*data).tg_trigtuple, (*data).tg_trigslot)
    };
    let keep = Verdict {
        row: Datum::from(row),
        conflict: false,
        rel: (*data).tg_relation,
        constraint: (*(*data).tg_trigger).tgname,
        message: std::ptr::null_mut(),
        detail: std::ptr::null_mut(),
    };

    let flinfo = (*fcinfo).flinfo;
    let mut guard_ptr = (*flinfo).fn_extra.cast::<Guard>();
    if guard_ptr.is_null() {
        // Triggers run in the executor's per-row memory, a child of its
        // per-query memory.
        let statement = (*pg_sys::CurrentMemoryContext).parent;
        guard_ptr = Guard::start(data, (*flinfo).fn_oid, statement);
        (*flinfo).fn_extra = guard_ptr.cast();
    }
    let guard = &mut *guard_ptr;
    // The statement's previous row is in the table by now.
    release(guard.statement);

    let Some(fp) = guard.fingerprint(slot) else {
        return keep;
    };
    let own_tid = if updating {
        let old = guard.stored(slot_of_old(data));
        // Unchanged fingerprint: nothing to check, unless the guard
        // verifies and the text changed (the application may write the
        // fingerprint itself, and leave it as it was).
        if old == Some(fp) {
            let same_text = match &guard.args.verify {
                None => true,
                Some((column, _)) => {
                    let attno = text_column((*(*data).tg_relation).rd_id, column);
                    text_of(slot_of_old(data), attno) == text_of(slot, attno)
                }
            };
            if same_text {
                return keep;
            }
        }
        Some(((*(*data).tg_relation).rd_id, (*(*data).tg_trigtuple).t_self))
    } else {
        None
    };

    // The new row's text, when the guard verifies on it.
    let new_text = match &guard.args.verify {
        Some((column, _)) => {
            let attno = text_column((*(*data).tg_relation).rd_id, column);
            text_of(slot, attno)
        }
        None => None,
    };
    // Its candidate keys, when a table checked has the second source.
    let new_keys = match new_text {
        Some(text) if guard.targets.iter().any(|t| t.lsh.is_some()) => {
            crate::verify::lsh_keys_of(text)
        }
        _ => None,
    };
    loop {
        guard.lock(fp, new_keys.as_ref());
        let new_row = (!updating).then(|| NewRow {
            relid: (*(*data).tg_relation).rd_id,
            slot,
        });
        match guard.probe(fp, own_tid, new_row, new_text, new_keys.as_ref()) {
            Probe::Clear => return keep,
            Probe::Wait(xid) => {
                release(guard.statement);
                pg_sys::XactLockTableWait(
                    xid,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    pg_sys::XLTW_Oper::XLTW_None,
                );
            }
            Probe::Found(found) => {
                release(guard.statement);
                if guard.args.skip {
                    count_skipped();
                    return Verdict {
                        row: Datum::from(0usize),
                        ..keep
                    };
                }
                let trigger = CStr::from_ptr(keep.constraint).to_string_lossy();
                let message = format!(
                    "duplicate key value violates near-unique constraint \"{}\"",
                    match guard.shard_id {
                        Some(id) => simhash_core::guard::shell_name(&trigger, id),
                        None => &trigger,
                    }
                );
                let detail = guard.visible(found.key.is_some()).then(|| {
                    let mut d = format!(
                        "Key ({col})=({fp:016x}) is {how} distance {dist} of ({col})=({other:016x})",
                        col = guard.args.column.to_string_lossy(),
                        fp = fp,
                        how = if found.by_lsh && simhash_core::hamming(fp, found.fp) > guard.args.k {
                            "a candidate by shared text keys at"
                        } else {
                            "within"
                        },
                        dist = simhash_core::hamming(fp, found.fp),
                        other = found.fp,
                    );
                    if let Some(key) = &found.key {
                        d.push_str(&format!(
                            ", the row with {}={}",
                            guard.args.key.to_string_lossy(),
                            key
                        ));
                    }
                    d.push('.');
                    d
                });
                return Verdict {
                    conflict: true,
                    message: palloc_str(&message),
                    detail: detail.as_deref().map_or(std::ptr::null_mut(), palloc_str),
                    ..keep
                };
            }
        }
    }
}

/// The slot of the row before an UPDATE.
unsafe fn slot_of_old(data: *mut pg_sys::TriggerData) -> *mut pg_sys::TupleTableSlot {
    (*data).tg_trigslot
}

/// A copy of `s` in the current memory context.
fn palloc_str(s: &str) -> *mut c_char {
    let c = CString::new(s.replace('\0', "")).expect("no NUL left");
    // SAFETY: copies a valid C string into palloc'd memory.
    unsafe { pg_sys::pstrdup(c.as_ptr()) }
}

/// Adds one to the session's count of skipped rows (`simhash_skipped()`),
/// a setting so that a rolled-back transaction takes its count back.
unsafe fn count_skipped() {
    let now = pg_sys::GetConfigOption(c"simhash.skipped".as_ptr(), true, false);
    let n: i64 = if now.is_null() {
        0
    } else {
        CStr::from_ptr(now)
            .to_str()
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    let next = CString::new((n + 1).to_string()).expect("digits");
    pg_sys::set_config_option(
        c"simhash.skipped".as_ptr(),
        next.as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_SET,
        true,
        ERROR_LEVEL,
        false,
    );
}

/// A row within `k`.
struct Found {
    fp: u64,
    key: Option<String>,
    /// Found through the candidate keys (its fingerprint may be past k).
    by_lsh: bool,
}

enum Probe {
    Clear,
    Wait(pg_sys::TransactionId),
    Found(Found),
}

/// Gives a statement's locks back and frees its guard with its memory.
#[pg_guard]
unsafe extern "C-unwind" fn drop_guard(arg: *mut std::ffi::c_void) {
    let guard = Box::from_raw(arg.cast::<Guard>());
    if pg_sys::IsTransactionState() {
        release(guard.statement);
    } else {
        // A commit or an abort: the transaction's locks are gone already.
        PENDING.with(|pending| pending.borrow_mut().retain(|(s, _)| *s != guard.statement));
    }
}

impl Guard {
    /// Reads the arguments and finds the tables and indexes to check.
    unsafe fn start(
        data: *mut pg_sys::TriggerData,
        function: Oid,
        statement: pg_sys::MemoryContext,
    ) -> *mut Guard {
        let trigger = (*data).tg_trigger;
        let rel = (*data).tg_relation;
        let relid = (*rel).rd_id;
        let args = parse_args(trigger);
        let shard_id = refuse_citus_shard(relid);

        let fp_attno = attnum(relid, &args.column).unwrap_or_else(|| {
            errors::guard_no_column(&args.column.to_string_lossy(), &relation_name(relid))
        });
        let fp_type = pg_sys::get_atttype(relid, fp_attno);
        let schema = pg_sys::get_func_namespace(function);
        let functions = KeyFunctions::lookup(schema, fp_type).unwrap_or_else(|| {
            errors::guard_not_simhash64(&args.column.to_string_lossy(), &relation_name(relid))
        });
        if args.key_given && attnum(relid, &args.key).is_none() {
            errors::guard_no_column(&args.key.to_string_lossy(), &relation_name(relid));
        }

        let scope = scope_of(relid, trigger);
        let mut targets = Vec::new();
        let lsh_fn = lookup_function(schema, "simhash_lsh", &[pg_sys::TEXTOID]);
        collect_targets(scope, &args, &functions, lsh_fn, &mut targets);

        let old = pg_sys::MemoryContextSwitchTo(statement);
        let (generated, econtext) = if pg_sys::get_attgenerated(relid, fp_attno) as u8 == b's' {
            let expr = pg_sys::build_column_default(rel, i32::from(fp_attno));
            let planned = pg_sys::expression_planner(expr.cast());
            (
                pg_sys::ExecInitExpr(planned, std::ptr::null_mut()),
                pg_sys::CreateStandaloneExprContext(),
            )
        } else {
            (std::ptr::null_mut(), std::ptr::null_mut())
        };
        let callback: *mut pg_sys::MemoryContextCallback =
            pg_sys::palloc0(std::mem::size_of::<pg_sys::MemoryContextCallback>()).cast();
        pg_sys::MemoryContextSwitchTo(old);

        let salt = simhash_core::guard::name_salt(args.column.as_bytes());
        let guard = Box::into_raw(Box::new(Guard {
            args,
            scope,
            targets,
            fp_attno,
            generated,
            econtext,
            salt,
            statement,
            shard_id,
        }));
        (*callback).func = Some(drop_guard);
        (*callback).arg = guard.cast();
        pg_sys::MemoryContextRegisterResetCallback(statement, callback);
        guard
    }

    /// The new row's fingerprint: the column, or its generation expression
    /// evaluated on the row.
    unsafe fn fingerprint(&mut self, slot: *mut pg_sys::TupleTableSlot) -> Option<u64> {
        if self.generated.is_null() {
            return self.stored(slot);
        }
        pg_sys::MemoryContextReset((*self.econtext).ecxt_per_tuple_memory);
        (*self.econtext).ecxt_scantuple = slot;
        let mut isnull = false;
        let armed = functions::remember_next();
        let old = pg_sys::MemoryContextSwitchTo((*self.econtext).ecxt_per_tuple_memory);
        let value = pg_sys::ExecEvalExpr(self.generated, self.econtext, &mut isnull);
        pg_sys::MemoryContextSwitchTo(old);
        drop(armed);
        (!isnull).then(|| value.value() as u64)
    }

    /// The fingerprint column's stored value in `slot`.
    unsafe fn stored(&self, slot: *mut pg_sys::TupleTableSlot) -> Option<u64> {
        let mut isnull = false;
        let value = pg_sys::slot_getattr(slot, c_int::from(self.fp_attno), &mut isnull);
        (!isnull).then(|| value.value() as u64)
    }

    /// Takes the locks of `fp`, in ascending order, then those of the
    /// candidate keys (two rows that share one wait for each other as two
    /// within k do), in ascending order: every statement takes its locks
    /// in the one order (fingerprint's, then keys', each ascending).
    unsafe fn lock(&mut self, fp: u64, keys: Option<&LshKeys>) {
        let mut lsh_keys: Vec<u32> = keys.map_or_else(Vec::new, |keys| {
            keys.iter().map(|&k| k as u32 ^ self.salt as u32).collect()
        });
        lsh_keys.sort_unstable();
        lsh_keys.dedup();
        let fp_keys = simhash_core::guard::lock_keys(fp, self.args.k, self.salt)
            .into_iter()
            .map(|key| (key, LOCK_FIELD4));
        for (key, field4) in fp_keys.chain(lsh_keys.into_iter().map(|key| (key, LOCK_FIELD4_LSH))) {
            let tag = pg_sys::LOCKTAG {
                locktag_field1: pg_sys::MyDatabaseId.to_u32(),
                locktag_field2: self.scope.to_u32(),
                locktag_field3: key,
                locktag_field4: field4,
                locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
                locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
            };
            pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as c_int, false, false);
            PENDING.with(|pending| pending.borrow_mut().push((self.statement, tag)));
        }
    }

    /// Looks for a row within `k` of `fp` in every target, other than the
    /// row being updated.
    ///
    /// A row that `new_row` (the row being inserted) matches on every
    /// column of a unique index does not count: the index refuses the new
    /// row, or `INSERT ... ON CONFLICT` updates that row or does nothing,
    /// exactly as without the guard. Only then the statement's update of
    /// that row is checked, as every update is.
    unsafe fn probe(
        &self,
        fp: u64,
        own: Option<(Oid, pg_sys::ItemPointerData)>,
        new_row: Option<NewRow>,
        new_text: Option<&[u8]>,
        new_keys: Option<&LshKeys>,
    ) -> Probe {
        // The candidates already compared and found not similar, and the
        // memory a candidate's text is read into (reset after each).
        let dissimilar = std::cell::RefCell::new(std::collections::HashSet::new());
        let scratch = pg_sys::AllocSetContextCreateInternal(
            pg_sys::CurrentMemoryContext,
            c"simhash guard candidate".as_ptr(),
            0,
            8 * 1024,
            8 * 1024 * 1024,
        );
        let outcome = self.probe_in(fp, own, new_row, new_text, new_keys, &dissimilar, scratch);
        pg_sys::MemoryContextDelete(scratch);
        outcome
    }

    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    unsafe fn probe_in(
        &self,
        fp: u64,
        own: Option<(Oid, pg_sys::ItemPointerData)>,
        new_row: Option<NewRow>,
        new_text: Option<&[u8]>,
        new_keys: Option<&LshKeys>,
        dissimilar: &std::cell::RefCell<std::collections::HashSet<(Oid, u16, u16, u16)>>,
        scratch: pg_sys::MemoryContext,
    ) -> Probe {
        for target in &self.targets {
            let heap = pg_sys::table_open(target.relid, pg_sys::AccessShareLock as c_int);
            let slot = pg_sys::table_slot_create(heap, std::ptr::null_mut());
            let mut snapshot: pg_sys::SnapshotData = std::mem::zeroed();
            snapshot.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
            let dirty: *mut pg_sys::SnapshotData = &mut snapshot;
            // A fetched row within k: a conflict, a transaction to wait
            // for (the dirty snapshot names it), or the row being updated.
            // by_lsh: found through the candidate keys, which the row
            // shares (its fingerprint may be past k).
            let seen = |slot: *mut pg_sys::TupleTableSlot, by_lsh: bool| -> Option<Probe> {
                let mut isnull = false;
                let value = pg_sys::slot_getattr(slot, c_int::from(target.fp_attno), &mut isnull);
                if isnull {
                    return None;
                }
                let other = value.value() as u64;
                if !by_lsh && simhash_core::hamming(fp, other) > self.args.k {
                    return None;
                }
                if let Some((relid, tid)) = own {
                    if relid == target.relid && same_tid(&tid, &(*slot).tts_tid) {
                        return None;
                    }
                }
                // The row an upsert would update (or leave alone): a
                // unique index decides what happens to the new row, as it
                // would without the guard.
                if let Some(new) = new_row {
                    if same_unique_key(heap, slot, new) {
                        return None;
                    }
                }
                // The verified guard: a candidate whose text is not
                // similar enough is no near-duplicate (and no transaction
                // to wait for).
                // Each candidate is compared once (a row found through
                // several band indexes is not read again), its text read
                // into memory that is freed as soon as it is compared.
                if let (Some((_, threshold)), Some(attno)) = (&self.args.verify, target.text_attno)
                {
                    let tid = (*slot).tts_tid;
                    let id = (
                        target.relid,
                        tid.ip_blkid.bi_hi,
                        tid.ip_blkid.bi_lo,
                        tid.ip_posid,
                    );
                    if dissimilar.borrow().contains(&id) {
                        return None;
                    }
                    let outer = pg_sys::MemoryContextSwitchTo(scratch);
                    // A candidate only the keys found (past k) must also
                    // pass the second source's test (5-gram Jaccard or
                    // containment).
                    let key_only = by_lsh && simhash_core::hamming(fp, other) > self.args.k;
                    let similar = match (text_of(slot, attno), new_text) {
                        (Some(theirs), Some(ours)) => Some(
                            crate::verify::similarity_of(theirs, ours) >= *threshold
                                && (!key_only
                                    || simhash_core::lsh::second_test(&crate::verify::overlap_of(
                                        theirs, ours,
                                    ))),
                        ),
                        // A NULL text: the fingerprint alone, so a key-only
                        // candidate is none.
                        _ if key_only => Some(false),
                        _ => None,
                    };
                    pg_sys::MemoryContextSwitchTo(outer);
                    pg_sys::MemoryContextReset(scratch);
                    if similar == Some(false) {
                        dissimilar.borrow_mut().insert(id);
                        return None;
                    }
                }
                let xwait = if (*dirty).xmin != pg_sys::InvalidTransactionId {
                    (*dirty).xmin
                } else {
                    (*dirty).xmax
                };
                if xwait != pg_sys::InvalidTransactionId {
                    return Some(Probe::Wait(xwait));
                }
                Some(Probe::Found(Found {
                    fp: other,
                    key: target
                        .key
                        .map(|(attno, typid)| key_text(slot, attno, typid)),
                    by_lsh,
                }))
            };
            let mut outcome = None;
            match &target.bands {
                Some((layout, parts)) => {
                    let probes = layout
                        .probe(fp, self.args.k)
                        .expect("a target's layout serves k");
                    'bands: for (n, values) in &probes {
                        let (index_oid, equal) = parts[*n as usize];
                        let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as c_int);
                        let scan = crate::compat::index_beginscan(heap, index, dirty, 1);
                        (*scan).xs_want_itup = target.covering;
                        for &value in values {
                            pgrx::check_for_interrupts!();
                            let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
                            let (proc_, datum) = crate::layout::scan_key_value(*layout, value);
                            pg_sys::ScanKeyInit(&mut key, 1, equal, proc_, datum);
                            pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
                            if target.covering {
                                let within =
                                    |other: u64| simhash_core::hamming(fp, other) <= self.args.k;
                                crate::layout::covering_matches(scan, slot, &within, &mut |slot| {
                                    outcome = seen(slot, false);
                                    outcome.is_none()
                                });
                                if outcome.is_some() {
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
                                if let Some(found) = seen(slot, false) {
                                    outcome = Some(found);
                                    break;
                                }
                            }
                            if outcome.is_some() {
                                break;
                            }
                        }
                        pg_sys::index_endscan(scan);
                        pg_sys::index_close(index, pg_sys::NoLock as c_int);
                        if outcome.is_some() {
                            break 'bands;
                        }
                    }
                }
                None => {
                    let scan = pg_sys::table_beginscan(heap, dirty, 0, std::ptr::null_mut());
                    while pg_sys::table_scan_getnextslot(
                        scan,
                        pg_sys::ScanDirection::ForwardScanDirection,
                        slot,
                    ) {
                        pgrx::check_for_interrupts!();
                        if let Some(found) = seen(slot, false) {
                            outcome = Some(found);
                            break;
                        }
                    }
                    pg_sys::table_endscan(scan);
                }
            }
            // The second source: the rows that share a candidate key.
            if outcome.is_none() {
                if let (Some(column), Some(keys)) = (target.lsh, new_keys) {
                    crate::lsh::for_each_candidate(heap, column, keys, dirty, slot, |slot| {
                        outcome = seen(slot, true);
                        outcome.is_none()
                    });
                }
            }
            pg_sys::ExecDropSingleTupleTableSlot(slot);
            pg_sys::table_close(heap, pg_sys::NoLock as c_int);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
        Probe::Clear
    }

    /// Whether the inserting role could read the conflicting row's key, by
    /// PostgreSQL's rule for unique-violation details.
    unsafe fn visible(&self, with_key: bool) -> bool {
        if pg_sys::check_enable_rls(self.scope, pg_sys::InvalidOid, true) == RLS_ENABLED {
            return false;
        }
        let user = pg_sys::GetUserId();
        if pg_sys::pg_class_aclcheck(self.scope, user, pg_sys::ACL_SELECT as pg_sys::AclMode)
            == pg_sys::AclResult::ACLCHECK_OK
        {
            return true;
        }
        let mut columns = vec![&self.args.column];
        if with_key {
            columns.push(&self.args.key);
        }
        columns
            .into_iter()
            .all(|name| match attnum(self.scope, name) {
                Some(attno) => {
                    pg_sys::pg_attribute_aclcheck(
                        self.scope,
                        attno,
                        user,
                        pg_sys::ACL_SELECT as pg_sys::AclMode,
                    ) == pg_sys::AclResult::ACLCHECK_OK
                }
                None => false,
            })
    }
}

/// The row being inserted: its table and its slot.
#[derive(Clone, Copy)]
struct NewRow {
    relid: Oid,
    slot: *mut pg_sys::TupleTableSlot,
}

/// Whether the row in `slot`, of the open table `heap`, has the values of
/// `new` in every key of one of the table's valid, immediate, non-partial
/// unique indexes: every unique index an upsert may name as its arbiter,
/// on columns or expressions (compared with the index's own equality; a
/// NULL matches nothing, as in a unique index, except in one made NULLS
/// NOT DISTINCT). A row of another table (another partition than the new
/// row's) is compared on the index's plain columns, by name.
unsafe fn same_unique_key(
    heap: pg_sys::Relation,
    slot: *mut pg_sys::TupleTableSlot,
    new: NewRow,
) -> bool {
    let indexes = oid_list(pg_sys::RelationGetIndexList(heap));
    let relid = (*heap).rd_id;
    for index_oid in indexes {
        let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as c_int);
        let form = (*index).rd_index;
        let usable = (*form).indisunique
            && (*form).indimmediate
            && (*form).indisvalid
            && pg_sys::heap_attisnull(
                (*index).rd_indextuple,
                pg_sys::Anum_pg_index_indpred as c_int,
                std::ptr::null_mut(),
            );
        let n = usize::try_from((*form).indnkeyatts).unwrap_or(0);
        let nulls_equal = (*form).indnullsnotdistinct;
        let equal_at = |i: usize, a: (pg_sys::Datum, bool), b: (pg_sys::Datum, bool)| -> bool {
            match (a.1, b.1) {
                (true, true) => return nulls_equal,
                (false, false) => {}
                _ => return false,
            }
            let family = *(*index).rd_opfamily.add(i);
            let input = *(*index).rd_opcintype.add(i);
            let op = pg_sys::get_opfamily_member(
                family,
                input,
                input,
                pg_sys::BTEqualStrategyNumber as i16,
            );
            if op == pg_sys::InvalidOid {
                return false;
            }
            let collation = *(*index).rd_indcollation.add(i);
            pg_sys::OidFunctionCall2Coll(pg_sys::get_opcode(op), collation, a.0, b.0).value() != 0
        };
        let same = usable
            && n > 0
            && if new.relid == relid {
                // The index's own key values of both rows (expressions
                // evaluated as the index evaluates them).
                let estate = pg_sys::CreateExecutorState();
                let a = index_values(index, estate, slot);
                let b = index_values(index, estate, new.slot);
                let same = (0..n).all(|i| equal_at(i, a[i], b[i]));
                pg_sys::FreeExecutorState(estate);
                same
            } else {
                let keys = (*form).indkey.values.as_slice(n);
                keys.iter().enumerate().all(|(i, &attno)| {
                    if attno <= 0 {
                        // An expression, over another table's columns.
                        return false;
                    }
                    let name = pg_sys::get_attname(relid, attno, true);
                    if name.is_null() {
                        return false;
                    }
                    let new_attno = pg_sys::get_attnum(new.relid, name);
                    if new_attno <= 0 {
                        return false;
                    }
                    let (mut a_null, mut b_null) = (false, false);
                    let a = pg_sys::slot_getattr(slot, c_int::from(attno), &mut a_null);
                    let b = pg_sys::slot_getattr(new.slot, c_int::from(new_attno), &mut b_null);
                    equal_at(i, (a, a_null), (b, b_null))
                })
            };
        pg_sys::index_close(index, pg_sys::AccessShareLock as c_int);
        if same {
            return true;
        }
    }
    false
}

/// The key values `index` holds for the row in `slot` (of the index's
/// table), expressions evaluated in `estate`'s memory: PostgreSQL's
/// `FormIndexDatum`. They live until `estate` is freed.
unsafe fn index_values(
    index: pg_sys::Relation,
    estate: *mut pg_sys::EState,
    slot: *mut pg_sys::TupleTableSlot,
) -> Vec<(pg_sys::Datum, bool)> {
    let info = pg_sys::BuildIndexInfo(index);
    let econtext = pg_sys::MakePerTupleExprContext(estate);
    (*econtext).ecxt_scantuple = slot;
    let mut values = [pg_sys::Datum::from(0usize); pg_sys::INDEX_MAX_KEYS as usize];
    let mut nulls = [false; pg_sys::INDEX_MAX_KEYS as usize];
    pg_sys::FormIndexDatum(info, slot, estate, values.as_mut_ptr(), nulls.as_mut_ptr());
    let n = usize::try_from((*info).ii_NumIndexKeyAttrs).unwrap_or(0);
    (0..n).map(|i| (values[i], nulls[i])).collect()
}

/// The bytes of the text column `attno` of the row in `slot`, `None` for
/// a NULL (such a row is checked by its fingerprint alone).
unsafe fn text_of<'a>(slot: *mut pg_sys::TupleTableSlot, attno: i16) -> Option<&'a [u8]> {
    let mut isnull = false;
    let value = pg_sys::slot_getattr(slot, c_int::from(attno), &mut isnull);
    (!isnull).then(|| crate::detoast::text_bytes(value))
}

fn same_tid(a: &pg_sys::ItemPointerData, b: &pg_sys::ItemPointerData) -> bool {
    a.ip_blkid.bi_hi == b.ip_blkid.bi_hi
        && a.ip_blkid.bi_lo == b.ip_blkid.bi_lo
        && a.ip_posid == b.ip_posid
}

/// The key column of the row in `slot` as text (`NULL` for a null).
unsafe fn key_text(slot: *mut pg_sys::TupleTableSlot, attno: i16, typid: Oid) -> String {
    let mut isnull = false;
    let value = pg_sys::slot_getattr(slot, c_int::from(attno), &mut isnull);
    if isnull {
        return "NULL".into();
    }
    let mut output = pg_sys::InvalidOid;
    let mut varlena = false;
    pg_sys::getTypeOutputInfo(typid, &mut output, &mut varlena);
    CStr::from_ptr(pg_sys::OidOutputFunctionCall(output, value))
        .to_string_lossy()
        .into_owned()
}

/// The trigger's arguments: column, k [, error | skip [, key column]].
unsafe fn parse_args(trigger: *mut pg_sys::Trigger) -> Args {
    let n = (*trigger).tgnargs as usize;
    if !(2..=6).contains(&n) || n == 5 {
        errors::guard_argument_count();
    }
    let arg = |i: usize| CStr::from_ptr(*(*trigger).tgargs.add(i));
    let k_text = arg(1).to_string_lossy();
    let k = match k_text.trim().parse::<u32>() {
        Ok(k) if k <= simhash_core::probe::MAX_PROBED_K && k_text.trim().len() <= 2 => k,
        _ => errors::guard_bad_distance(&k_text),
    };
    let skip = match n {
        2 => false,
        _ => match arg(2).to_string_lossy().to_lowercase().as_str() {
            "error" => false,
            "skip" => true,
            _ => errors::guard_bad_action(&arg(2).to_string_lossy()),
        },
    };
    let (key, key_given) = if n >= 4 {
        (arg(3).to_owned(), true)
    } else {
        (c"id".to_owned(), false)
    };
    let verify = if n == 6 {
        let threshold_text = arg(5).to_string_lossy();
        let threshold = match threshold_text.trim().parse::<f64>() {
            Ok(t) if (0.0..=1.0).contains(&t) => t,
            _ => errors::guard_bad_threshold(&threshold_text),
        };
        Some((arg(4).to_owned(), threshold))
    } else {
        None
    };
    Args {
        column: arg(0).to_owned(),
        k,
        skip,
        key,
        key_given,
        verify,
    }
}

/// The number of the text column `column` of `relid`: 42703 when it has
/// none, 42804 when it is not of type text.
unsafe fn text_column(relid: Oid, column: &CStr) -> i16 {
    let attno = attnum(relid, column).unwrap_or_else(|| {
        errors::guard_no_column(&column.to_string_lossy(), &relation_name(relid))
    });
    if pg_sys::get_atttype(relid, attno) != pg_sys::TEXTOID {
        errors::guard_text_not_text(&column.to_string_lossy(), &relation_name(relid));
    }
    attno
}

/// The column's number, if `relid` has it.
unsafe fn attnum(relid: Oid, name: &CStr) -> Option<i16> {
    let n = pg_sys::get_attnum(relid, name.as_ptr());
    (n > 0).then_some(n)
}

unsafe fn relation_name(relid: Oid) -> String {
    let name = pg_sys::get_rel_name(relid);
    if name.is_null() {
        relid.to_u32().to_string()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

/// The table the guard covers: the trigger's own table, or, for a trigger
/// cloned onto a partition, the highest ancestor that has the trigger.
unsafe fn scope_of(relid: Oid, trigger: *mut pg_sys::Trigger) -> Oid {
    if !(*trigger).tgisclone {
        return relid;
    }
    let ancestors = oid_list(pg_sys::ffi::pg_guard_ffi_boundary(|| {
        get_partition_ancestors(relid)
    }));
    let mut scope = relid;
    for ancestor in ancestors {
        if !has_trigger(ancestor, trigger) {
            break;
        }
        scope = ancestor;
    }
    scope
}

/// Whether `relid` has a trigger of the same name calling the same function.
unsafe fn has_trigger(relid: Oid, trigger: *mut pg_sys::Trigger) -> bool {
    let rel = pg_sys::table_open(relid, pg_sys::AccessShareLock as c_int);
    let desc = (*rel).trigdesc;
    let mut found = false;
    if !desc.is_null() {
        for i in 0..(*desc).numtriggers as usize {
            let t = (*desc).triggers.add(i);
            if (*t).tgfoid == (*trigger).tgfoid
                && CStr::from_ptr((*t).tgname) == CStr::from_ptr((*trigger).tgname)
            {
                found = true;
            }
        }
    }
    pg_sys::table_close(rel, pg_sys::NoLock as c_int);
    found
}

/// Every leaf table under `relid` (itself when it is not partitioned).
unsafe fn collect_targets(
    relid: Oid,
    args: &Args,
    functions: &KeyFunctions,
    lsh_fn: Option<Oid>,
    out: &mut Vec<Target>,
) {
    let rel = pg_sys::table_open(relid, pg_sys::AccessShareLock as c_int);
    let kind = (*(*rel).rd_rel).relkind;
    if kind as u8 == pg_sys::RELKIND_PARTITIONED_TABLE {
        let parts = pg_sys::RelationGetPartitionDesc(rel, true);
        let children: Vec<Oid> = (0..(*parts).nparts as usize)
            .map(|i| *(*parts).oids.add(i))
            .collect();
        pg_sys::table_close(rel, pg_sys::NoLock as c_int);
        for child in children {
            collect_targets(child, args, functions, lsh_fn, out);
        }
        return;
    }
    if kind as u8 == pg_sys::RELKIND_FOREIGN_TABLE {
        errors::guard_foreign_partition(&relation_name(relid));
    }
    let fp_attno = attnum(relid, &args.column).unwrap_or_else(|| {
        errors::guard_no_column(&args.column.to_string_lossy(), &relation_name(relid))
    });
    let indexes = band_indexes(rel, fp_attno, functions);
    // The covering bands, else the halves, else the bands, else a scan
    // (bench/guard_layouts.sh: the covering bands check 2.3 times the
    // halves' rate at k = 3 and 10M rows, 9 times at k = 7).
    let (bands, covering) = match indexes.to_probe(args.k) {
        Some((layout, parts, covering)) => (Some((layout, parts)), covering),
        None => (None, false),
    };
    let key_attno = attnum(relid, &args.key);
    let text_attno = args
        .verify
        .as_ref()
        .map(|(column, _)| text_column(relid, column));
    let lsh = match (text_attno, lsh_fn) {
        (Some(attno), Some(function)) => crate::lsh::find(rel, attno, function),
        _ => None,
    };
    pg_sys::table_close(rel, pg_sys::NoLock as c_int);
    out.push(Target {
        relid,
        fp_attno,
        key: key_attno.map(|attno| (attno, pg_sys::get_atttype(relid, attno))),
        bands,
        covering,
        text_attno,
        lsh,
    });
}

/// Refuses to run when another `BEFORE ... FOR EACH ROW` trigger of this
/// event fires after the guard (triggers fire in the order of their
/// names): it could fill in or change the fingerprint, or the text it is
/// generated from, after the guard checked the row, so the guard would
/// check another row than the one stored (a NULL fingerprint, say, which
/// it lets through). 55000, naming the trigger. Other guards do not
/// count: they change no row.
unsafe fn refuse_later_before_triggers(data: *mut pg_sys::TriggerData, updating: bool) {
    let rel = (*data).tg_relation;
    let desc = (*rel).trigdesc;
    if desc.is_null() {
        return;
    }
    let own = (*data).tg_trigger;
    let triggers =
        std::slice::from_raw_parts((*desc).triggers, (*desc).numtriggers.max(0) as usize);
    let event = if updating {
        pg_sys::TRIGGER_TYPE_UPDATE
    } else {
        pg_sys::TRIGGER_TYPE_INSERT
    } as i16;
    let replica =
        pg_sys::SessionReplicationRole == pg_sys::SESSION_REPLICATION_ROLE_REPLICA as c_int;
    let Some(at) = triggers.iter().position(|t| t.tgoid == (*own).tgoid) else {
        return;
    };
    for later in &triggers[at + 1..] {
        let kind = later.tgtype;
        let before_row = (pg_sys::TRIGGER_TYPE_ROW | pg_sys::TRIGGER_TYPE_BEFORE) as i16;
        // Another guard (of another column) changes no row.
        if kind & before_row != before_row || kind & event == 0 || later.tgfoid == (*own).tgfoid {
            continue;
        }
        // As PostgreSQL decides whether a trigger fires in this session.
        let fires = match later.tgenabled as u8 {
            b'D' => false,
            b'A' => true,
            b'R' => replica,
            _ => !replica,
        };
        if fires {
            errors::guard_not_last(
                &CStr::from_ptr((*own).tgname).to_string_lossy(),
                &CStr::from_ptr(later.tgname).to_string_lossy(),
                &relation_name((*rel).rd_id),
            );
        }
    }
}

/// Refuses to run on a shard of a Citus table that has other shards: the
/// guard would see that shard only. A table's only shard (a reference
/// table's copy on each node) holds every row, so it is checked as a
/// table: each node's copy gets the same rows in the same order and comes
/// to the same verdict. Returns the shard's id when the table is such a
/// shard.
unsafe fn refuse_citus_shard(relid: Oid) -> Option<i64> {
    if pg_sys::get_extension_oid(c"citus".as_ptr(), true) == pg_sys::InvalidOid {
        return None;
    }
    let is_shard = lookup_function(
        Oid::from_u32(pg_sys::PG_CATALOG_NAMESPACE),
        "relation_is_a_known_shard",
        &[pg_sys::REGCLASSOID],
    )?;
    let shard = pg_sys::OidFunctionCall1Coll(is_shard, pg_sys::InvalidOid, Datum::from(relid));
    if shard.value() == 0 {
        return None;
    }
    if !only_shard_of_its_table(relid) {
        errors::guard_on_citus_shard(&relation_name(relid));
    }
    simhash_core::guard::citus_shard_id(&relation_name(relid))
}

/// Whether a Citus shard is its table's only shard, so that it holds all
/// of the table's rows: each node's copy of a reference table, the shard
/// of a single-shard (schema-sharded) or local table. Citus's catalog on
/// this node says; where it does not know the shard, the answer is no.
unsafe fn only_shard_of_its_table(relid: Oid) -> bool {
    let Some(shard_id) = simhash_core::guard::citus_shard_id(&relation_name(relid)) else {
        return false;
    };
    let only = Spi::get_one_with_args::<bool>(
        "SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard a
                  WHERE a.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid) OPERATOR(pg_catalog.=) 1
           FROM pg_catalog.pg_dist_shard s WHERE s.shardid OPERATOR(pg_catalog.=) $1",
        &[shard_id.into()],
    );
    matches!(only, Ok(Some(true)))
}
