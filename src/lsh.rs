//! The second source of candidates inside the backend: a table's column
//! of `simhash_lsh(text)` keys (a stored generated column, what
//! `simhash_add_lsh` adds) and its GIN index, and the rows that share a
//! key with a text, for the verified guard.
//!
//! GIN answers only bitmap scans: the rows come as pages of row ids
//! (some lossy, without offsets), each fetched through the table's
//! access method with the caller's snapshot (following HOT chains, as an
//! index scan does) and rechecked on the stored keys band by band.

use std::ffi::c_int;

use pgrx::pg_sys::{self, Oid};
use pgrx::FromDatum;

/// GIN's "overlaps" strategy of the array operator class (`&&`).
const GIN_OVERLAP_STRATEGY: u16 = 1;

/// A table's candidate keys: the column, and its GIN index when it has a
/// usable one (valid, whole-table, on the column alone, and one this
/// transaction may read). Without the index the keys are still the second
/// source, read by a scan: every path decides the same pairs whether the
/// column is indexed or not.
#[derive(Clone, Copy)]
pub struct LshColumn {
    pub attno: i16,
    pub index: Option<Oid>,
}

/// The column of `rel` generated as `simhash_lsh(<text_attno>)` (the
/// function `lsh_fn`), with its GIN index if it has one.
///
/// # Safety
/// `rel` is open; called in a transaction.
pub unsafe fn find(rel: pg_sys::Relation, text_attno: i16, lsh_fn: Oid) -> Option<LshColumn> {
    let relid = (*rel).rd_id;
    let natts = (*(*rel).rd_att).natts as i16;
    let attno = (1..=natts).find(|&attnum| {
        // A dropped column's type is InvalidOid.
        if pg_sys::get_attgenerated(relid, attnum) as u8 != b's'
            || pg_sys::get_atttype(relid, attnum) != pg_sys::INT4ARRAYOID
        {
            return false;
        }
        let expr = pg_sys::build_column_default(rel, i32::from(attnum));
        if expr.is_null() || !pgrx::is_a(expr, pg_sys::NodeTag::T_FuncExpr) {
            return false;
        }
        let call = expr.cast::<pg_sys::FuncExpr>();
        if (*call).funcid != lsh_fn {
            return false;
        }
        let args = pgrx::PgList::<pg_sys::Node>::from_pg((*call).args);
        match args.get_ptr(0) {
            Some(arg) => {
                args.len() == 1
                    && pgrx::is_a(arg, pg_sys::NodeTag::T_Var)
                    && (*arg.cast::<pg_sys::Var>()).varattno == text_attno
            }
            None => false,
        }
    })?;
    let list = pg_sys::RelationGetIndexList(rel);
    let oids = crate::nodes::oid_list(list);
    pg_sys::list_free(list);
    let index = oids.into_iter().find(|&oid| {
        let index = pg_sys::index_open(oid, pg_sys::AccessShareLock as c_int);
        let form = (*index).rd_index;
        let fits = (*(*index).rd_rel).relam == pg_sys::GIN_AM_OID
            && (*form).indnatts == 1
            && *(*form).indkey.values.as_ptr() == attno
            && crate::layout::usable_by_transaction(index)
            && pg_sys::RelationGetIndexPredicate(index).is_null();
        pg_sys::index_close(index, pg_sys::NoLock as c_int);
        fits
    });
    Some(LshColumn { attno, index })
}

/// Whether the row in `slot` shares at least
/// [`simhash_core::lsh::MIN_SHARED_BANDS`] bands' keys with `keys` (its
/// stored keys compared band by band; a row without keys shares none).
///
/// # Safety
/// `slot` holds a row of the table `column` is of.
pub unsafe fn shares_key(
    slot: *mut pg_sys::TupleTableSlot,
    column: LshColumn,
    keys: &[i32; simhash_core::lsh::BANDS],
) -> bool {
    let mut isnull = false;
    let value = pg_sys::slot_getattr(slot, c_int::from(column.attno), &mut isnull);
    if isnull {
        return false;
    }
    let Some(stored) = Vec::<Option<i32>>::from_datum(value, false) else {
        return false;
    };
    let shared = crate::verify::shared_places(&stored, keys.iter().copied().map(Some));
    simhash_core::lsh::is_candidate(shared)
}

/// GIN's consistent function of the operator class `simhash_lsh_ops`
/// (`_simhash_lsh_consistent`), for strategy 1 (`&&&` and `&&`): a row
/// that has one of the query's keys, at any place, may match, and is
/// rechecked by the operator's own function (`&&&` compares band by band,
/// which the index, holding keys without their places, cannot).
#[pgrx::pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_lsh_consistent(fcinfo: pg_sys::FunctionCallInfo) -> bool {
    // SAFETY: called by GIN with its eight arguments: check (bool[nkeys]),
    // strategy, query, nkeys, extra_data, recheck (bool *), queryKeys,
    // nullFlags (bool[nkeys]).
    unsafe {
        let args = (*fcinfo).args.as_slice(8);
        let check = args[0].value.cast_mut_ptr::<bool>();
        let nkeys = usize::try_from(args[3].value.value() as i32).unwrap_or(0);
        let recheck = args[5].value.cast_mut_ptr::<bool>();
        let null_flags = args[7].value.cast_mut_ptr::<bool>();
        *recheck = true;
        (0..nkeys).any(|i| *check.add(i) && !*null_flags.add(i))
    }
}

/// Calls `seen` with each row of `heap` that `snapshot` sees and that
/// shares a key with `keys` (compared band by band), until `seen` says
/// stop (false): through the GIN index of the keys when the column has
/// one ([`for_each_indexed`]), else by a scan of the table.
///
/// # Safety
/// `heap` is open, `slot` is one of its slots, `snapshot` is valid (a
/// dirty snapshot is filled in by each fetch, as the guard reads it).
pub unsafe fn for_each_candidate(
    heap: pg_sys::Relation,
    column: LshColumn,
    keys: &[i32; simhash_core::lsh::BANDS],
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    mut seen: impl FnMut(*mut pg_sys::TupleTableSlot) -> bool,
) {
    if let Some(index) = column.index {
        for_each_indexed(heap, index, column, keys, snapshot, slot, seen);
        return;
    }
    let scan = pg_sys::table_beginscan(heap, snapshot, 0, std::ptr::null_mut());
    while pg_sys::table_scan_getnextslot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot) {
        pgrx::check_for_interrupts!();
        if shares_key(slot, column, keys) && !seen(slot) {
            break;
        }
    }
    pg_sys::table_endscan(scan);
}

/// [`for_each_candidate`] through the GIN index `index` of the keys:
/// each row of `heap` that `snapshot` sees and that shares a key with `keys`, until
/// `seen` says stop (false). The bitmap holds at most `work_mem`; past
/// it pages go lossy and every row of such a page is fetched and
/// rechecked.
///
/// # Safety
/// `heap` is open, `slot` is one of its slots, `snapshot` is valid (a
/// dirty snapshot is filled in by each fetch, as the guard reads it).
unsafe fn for_each_indexed(
    heap: pg_sys::Relation,
    index: Oid,
    column: LshColumn,
    keys: &[i32; simhash_core::lsh::BANDS],
    snapshot: pg_sys::Snapshot,
    slot: *mut pg_sys::TupleTableSlot,
    mut seen: impl FnMut(*mut pg_sys::TupleTableSlot) -> bool,
) {
    use pgrx::IntoDatum;
    let index = pg_sys::index_open(index, pg_sys::AccessShareLock as c_int);
    let array = keys
        .to_vec()
        .into_datum()
        .expect("an array of 32 integers is a datum");
    let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
    pg_sys::ScanKeyInit(
        &mut key,
        1,
        GIN_OVERLAP_STRATEGY,
        pg_sys::Oid::from(pg_sys::F_ARRAYOVERLAP),
        array,
    );
    let scan = crate::compat::index_beginscan_bitmap(index, snapshot, 1);
    pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
    let bitmap = crate::compat::tbm_create(pg_sys::work_mem as usize * 1024);
    pg_sys::index_getbitmap(scan, bitmap);
    pg_sys::index_endscan(scan);
    pg_sys::index_close(index, pg_sys::NoLock as c_int);

    let am = (*heap).rd_tableam;
    let fetch = ((*am)
        .index_fetch_begin
        .expect("a table access method fetches"))(heap);
    let fetch_tuple = (*am)
        .index_fetch_tuple
        .expect("a table access method fetches");
    let lossy: Vec<pg_sys::OffsetNumber> =
        (1..=crate::compat::MAX_HEAP_TUPLES_PER_PAGE as u16).collect();
    crate::compat::bitmap_pages(bitmap, |block, offsets| {
        for &offset in offsets.unwrap_or(&lossy) {
            pgrx::check_for_interrupts!();
            let mut tid: pg_sys::ItemPointerData = std::mem::zeroed();
            pgrx::itemptr::item_pointer_set_all(&mut tid, block, offset);
            // A HOT chain: every version the snapshot sees (a dirty
            // snapshot may see more than one); call_again says the
            // access method is in the middle of the chain.
            let mut call_again = false;
            loop {
                let mut all_dead = false;
                let found = fetch_tuple(
                    fetch,
                    &mut tid,
                    snapshot,
                    slot,
                    &mut call_again,
                    &mut all_dead,
                );
                if found && shares_key(slot, column, keys) && !seen(slot) {
                    return false;
                }
                if !found || !call_again {
                    break;
                }
            }
        }
        true
    });
    ((*am)
        .index_fetch_end
        .expect("a table access method fetches"))(fetch);
    pg_sys::tbm_free(bitmap);
}
