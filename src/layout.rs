//! Which band layouts a table is indexed with, read from its index
//! definitions: the one place the planner support function (`crate::index`)
//! and the near-unique guard (`crate::guard`) learn it.
//!
//! An index counts for part `n` of a layout (`simhash_core::layout`) when
//! it is valid, covers the whole table (no predicate), is a B-tree or hash
//! index, and has exactly one key: `simhash_band(column, n)` for `4x16`,
//! `simhash_band32(column, n)` for `2x32`, with `n` a constant. Indexes
//! made by hand in that form count as much as the ones
//! `simhash_add_bands` makes. A layout is there when every part has one.
//!
//! A B-tree band index may also `INCLUDE (column)`, the fingerprint
//! itself: it still counts for its part, and when every 16-bit band's
//! index does, the table has the covering layout `4x16c`, which
//! `simhash_probe` (`crate::tids`) reads without visiting the table for
//! the rows it rules out.

use std::ffi::c_int;

use pgrx::pg_sys::{self, Oid};
use simhash_core::layout::Layout;

use crate::nodes::{int4_value, lookup_function};

/// Equality's strategy number in a B-tree and in a hash index.
const BTREE_EQUAL: u16 = 3;
const HASH_EQUAL: u16 = 1;

/// One part's index and the strategy number of its equality operator.
pub type PartIndex = (Oid, u16);

/// `int4eq` and `int8eq` (pg_proc.dat: bootstrap OIDs, the same in every
/// PostgreSQL release): the comparison of a part's scan key.
pub const F_INT4EQ: Oid = Oid::from_u32(65);
pub const F_INT8EQ: Oid = Oid::from_u32(467);

/// The function and datum of a scan key for `value` on a part of `layout`.
pub fn scan_key_value(layout: Layout, value: u64) -> (Oid, pg_sys::Datum) {
    match layout {
        Layout::Bands16 => (F_INT4EQ, pg_sys::Datum::from(value as i32)),
        Layout::Halves32 => (F_INT8EQ, pg_sys::Datum::from(value as i64)),
    }
}

/// The key functions of the extension, by OID.
#[derive(Clone, Copy)]
pub struct KeyFunctions {
    band16: Oid,
    band32: Oid,
}

impl KeyFunctions {
    /// The key functions for fingerprints of type `fp_type`, looked up in
    /// the extension's schema.
    ///
    /// # Safety
    /// Called in a transaction.
    pub unsafe fn lookup(schema: Oid, fp_type: Oid) -> Option<KeyFunctions> {
        Some(KeyFunctions {
            band16: lookup_function(schema, "simhash_band", &[fp_type, pg_sys::INT4OID])?,
            band32: lookup_function(schema, "simhash_band32", &[fp_type, pg_sys::INT4OID])
                .unwrap_or(pg_sys::InvalidOid),
        })
    }

    /// The key function of `layout`.
    pub fn of(&self, layout: Layout) -> Oid {
        match layout {
            Layout::Bands16 => self.band16,
            Layout::Halves32 => self.band32,
        }
    }

    fn layout_of(&self, funcid: Oid) -> Option<Layout> {
        Layout::ALL
            .into_iter()
            .find(|&l| funcid != pg_sys::InvalidOid && self.of(l) == funcid)
    }
}

/// The band indexes of one column of one table, by layout.
#[derive(Default)]
pub struct BandIndexes {
    bands16: [Option<PartIndex>; 4],
    halves32: [Option<PartIndex>; 2],
    covering16: [Option<Oid>; 4],
}

impl BandIndexes {
    /// The indexes of every part of `layout`, in part order, if all exist.
    pub fn complete(&self, layout: Layout) -> Option<Vec<PartIndex>> {
        match layout {
            Layout::Bands16 => self.bands16.iter().copied().collect(),
            Layout::Halves32 => self.halves32.iter().copied().collect(),
        }
    }

    /// The layouts every part of which is indexed.
    pub fn layouts(&self) -> Vec<Layout> {
        Layout::ALL
            .into_iter()
            .filter(|&l| self.complete(l).is_some())
            .collect()
    }

    /// The covering B-tree indexes of the 16-bit bands (each with the
    /// fingerprint as an INCLUDE column), in band order, if all exist.
    pub fn covering(&self) -> Option<Vec<Oid>> {
        self.covering16.iter().copied().collect()
    }

    /// What a probe for distance `k` reads: the covering bands where every
    /// band has one (the fingerprint from the index entry, `true`), else
    /// the halves where they serve `k` (almost no rows to recheck on a
    /// large table), else the 16-bit bands; `None` when no layout serves
    /// `k` (a scan).
    pub fn to_probe(&self, k: u32) -> Option<(Layout, Vec<PartIndex>, bool)> {
        if let Some(oids) = self.covering().filter(|_| Layout::Bands16.serves(k)) {
            let parts = oids.into_iter().map(|oid| (oid, BTREE_EQUAL)).collect();
            return Some((Layout::Bands16, parts, true));
        }
        [Layout::Halves32, Layout::Bands16]
            .into_iter()
            .filter(|layout| layout.serves(k))
            .find_map(|layout| Some((layout, self.complete(layout)?, false)))
    }

    fn set(&mut self, layout: Layout, n: usize, index: PartIndex) {
        let slot = match layout {
            Layout::Bands16 => self.bands16.get_mut(n),
            Layout::Halves32 => self.halves32.get_mut(n),
        };
        if let Some(slot @ None) = slot {
            *slot = Some(index);
        }
    }
}

/// The band indexes on column `fp_attno` of the open relation `rel` (for a
/// partitioned table: its partitioned indexes).
///
/// # Safety
/// `rel` is open; called in a transaction.
pub unsafe fn band_indexes(
    rel: pg_sys::Relation,
    fp_attno: i16,
    functions: &KeyFunctions,
) -> BandIndexes {
    let mut found = BandIndexes::default();
    let list = pg_sys::RelationGetIndexList(rel);
    let oids = crate::nodes::oid_list(list);
    pg_sys::list_free(list);
    for index_oid in oids {
        if let Some((layout, n, equal, covering)) = part_of_index(index_oid, fp_attno, functions) {
            found.set(layout, n, (index_oid, equal));
            if covering && layout == Layout::Bands16 {
                if let Some(slot @ None) = found.covering16.get_mut(n) {
                    *slot = Some(index_oid);
                }
            }
        }
    }
    found
}

/// Whether this transaction may read `index` as the planner would let it
/// (`get_relation_info`): valid, and not one that `indcheckxmin` keeps
/// from transactions whose xmin precedes its creation (a plain
/// `CREATE INDEX` over a broken HOT chain indexes only the chain's newest
/// version, which older snapshots may not see). Every reader of the band
/// indexes (the probe, the guard, the planner's conditions, hence the load
/// and clustering) goes by it.
///
/// # Safety
/// `index` is open; called in a transaction.
pub unsafe fn usable_by_transaction(index: pg_sys::Relation) -> bool {
    let form = (*index).rd_index;
    if !(*form).indisvalid {
        return false;
    }
    if !(*form).indcheckxmin {
        return true;
    }
    // HeapTupleHeaderGetXmin: a frozen xmin precedes every other.
    let header = (*(*index).rd_indextuple).t_data;
    let frozen =
        u32::from((*header).t_infomask) & pg_sys::HEAP_XMIN_FROZEN == pg_sys::HEAP_XMIN_FROZEN;
    let xmin = if frozen {
        pg_sys::FrozenTransactionId
    } else {
        (*header).t_choice.t_heap.t_xmin
    };
    pg_sys::TransactionIdPrecedes(xmin, pg_sys::TransactionXmin)
}

/// The layout and part an index answers, with its equality strategy and
/// whether it is covering, when it is of the form the module comment
/// describes.
unsafe fn part_of_index(
    index_oid: Oid,
    fp_attno: i16,
    functions: &KeyFunctions,
) -> Option<(Layout, usize, u16, bool)> {
    let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as c_int);
    let found = (|| {
        let form = (*index).rd_index;
        let am = (*(*index).rd_rel).relam;
        let equal = if am == pg_sys::BTREE_AM_OID {
            BTREE_EQUAL
        } else if am == pg_sys::HASH_AM_OID {
            HASH_EQUAL
        } else {
            return None;
        };
        // One key; a B-tree may carry the column itself as an INCLUDE
        // column (covering).
        let covering = am == pg_sys::BTREE_AM_OID
            && (*form).indnkeyatts == 1
            && (*form).indnatts == 2
            && *(*form).indkey.values.as_ptr().add(1) == fp_attno;
        if ((*form).indnatts != 1 && !covering)
            || !usable_by_transaction(index)
            || !pg_sys::RelationGetIndexPredicate(index).is_null()
        {
            return None;
        }
        let exprs =
            pgrx::PgList::<pg_sys::Node>::from_pg(pg_sys::RelationGetIndexExpressions(index));
        if exprs.len() != 1 {
            return None;
        }
        let expr = exprs.get_ptr(0)?;
        if !pgrx::is_a(expr, pg_sys::NodeTag::T_FuncExpr) {
            return None;
        }
        let call = expr.cast::<pg_sys::FuncExpr>();
        let layout = functions.layout_of((*call).funcid)?;
        let args = pgrx::PgList::<pg_sys::Node>::from_pg((*call).args);
        if args.len() != 2 {
            return None;
        }
        let column = args.get_ptr(0)?;
        if !pgrx::is_a(column, pg_sys::NodeTag::T_Var)
            || (*column.cast::<pg_sys::Var>()).varattno != fp_attno
        {
            return None;
        }
        let n = int4_value(args.get_ptr(1)?)?;
        (0..layout.parts() as i32)
            .contains(&n)
            .then_some((layout, n as usize, equal, covering))
    })();
    pg_sys::index_close(index, pg_sys::NoLock as c_int);
    found
}

/// `check_enable_rls`'s answer for a table whose row-level security applies.
pub const RLS_ENABLED: std::ffi::c_int = 2;

/// Hands `found` each row version the started scan `scan` (on a covering
/// band index, `xs_want_itup` set, keys given) leads to whose fingerprint,
/// read from the index entry, is `within`: the table is visited for those
/// only (`index_fetch_heap`, which follows the HOT chain to the version
/// the scan's snapshot sees; with a non-MVCC snapshot there can be more
/// than one). `found` returns `false` to stop; so does this, then.
///
/// # Safety
/// `scan` is a started B-tree scan of a covering band index (key, then
/// the fingerprint); `slot` fits the scan's table.
pub unsafe fn covering_matches(
    scan: pg_sys::IndexScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    within: &dyn Fn(u64) -> bool,
    found: &mut dyn FnMut(*mut pg_sys::TupleTableSlot) -> bool,
) -> bool {
    let offset = fingerprint_offset((*scan).xs_itupdesc);
    loop {
        let tid = pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection);
        if tid.is_null() {
            return true;
        }
        // A hot band value can have many entries.
        pgrx::check_for_interrupts!();
        let itup = (*scan).xs_itup;
        let fp = match offset {
            // Read in place (index_deform_tuple was a third of the time
            // an entry took at k = 11).
            Some(offset) if u32::from((*itup).t_info) & pg_sys::INDEX_NULL_MASK == 0 => {
                itup.cast::<u8>().add(offset).cast::<u64>().read_unaligned()
            }
            _ => {
                let mut values = [pg_sys::Datum::from(0usize); 2];
                let mut nulls = [true; 2];
                pg_sys::index_deform_tuple(
                    itup,
                    (*scan).xs_itupdesc,
                    values.as_mut_ptr(),
                    nulls.as_mut_ptr(),
                );
                if nulls[1] {
                    continue;
                }
                values[1].value() as u64
            }
        };
        if !within(fp) {
            continue;
        }
        if !fetch_versions(scan, slot, found) {
            return false;
        }
    }
}

/// Hands `found` each version of the row at `scan`'s `xs_heaptid` the
/// scan's snapshot sees (`index_fetch_heap` along its HOT chain: one with
/// an MVCC snapshot, maybe more with another). Returns `false` when
/// `found` does (to stop).
///
/// # Safety
/// `scan` is a started index scan whose `xs_heaptid` is set; `slot` fits
/// the scan's table.
pub unsafe fn fetch_versions(
    scan: pg_sys::IndexScanDesc,
    slot: *mut pg_sys::TupleTableSlot,
    found: &mut dyn FnMut(*mut pg_sys::TupleTableSlot) -> bool,
) -> bool {
    while pg_sys::index_fetch_heap(scan, slot) {
        if !found(slot) {
            return false;
        }
        if !(*scan).xs_heap_continue {
            break;
        }
    }
    true
}

/// Where the fingerprint is in an entry without NULLs of a covering band
/// index whose tuple descriptor is `desc` (the key, a 4-byte integer, then
/// the 8-byte fingerprint, after the entry's header), as PostgreSQL lays
/// the entry out: each column at its type's alignment. `None` for any
/// other shape (the entries are then deformed one by one).
///
/// # Safety
/// `desc` is a valid tuple descriptor.
pub unsafe fn fingerprint_offset(desc: pg_sys::TupleDesc) -> Option<usize> {
    let desc = pgrx::PgTupleDesc::from_pg_unchecked(desc);
    let (key, fp) = (desc.get(0)?, desc.get(1)?);
    if desc.len() != 2 || key.attlen != 4 || !key.attbyval || fp.attlen != 8 || !fp.attbyval {
        return None;
    }
    let align = |offset: usize, how: std::ffi::c_char| -> Option<usize> {
        let to = match how as u8 {
            b'c' => 1,
            b's' => 2,
            b'i' => 4,
            b'd' => 8,
            _ => return None,
        };
        Some(offset.next_multiple_of(to))
    };
    // The header, MAXALIGNed (IndexInfoFindDataOffset without NULLs).
    let header = std::mem::size_of::<pg_sys::IndexTupleData>()
        .next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize);
    let key_at = align(header, key.attalign)?;
    align(key_at + 4, fp.attalign)
}
