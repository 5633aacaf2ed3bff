//! The entries of one band value, read straight from the pages of a
//! covering band index (a B-tree on `simhash_band(fp, n)` that INCLUDEs
//! `fp`): the probe of `k <= 11` reads some 84 thousand entries at 10M
//! rows, and through the access method (`index_getnext_tid`) each cost
//! a key check by function call, a copy and a return through two layers
//! of calls, about three fifths of the probe's time (docs/performance.md).
//!
//! The reading follows PostgreSQL's B-tree (`src/backend/access/nbtree`,
//! its README): from the metapage's fast root down, at each level the
//! last downlink whose separator is at most `(value, minus infinity)`,
//! moving right past a page whose high key is at most that (a split
//! since the parent was read) or that is being deleted; on the leaf the
//! entries with the key `value`, following right links while the high key
//! says the next page may hold more. Each page is read under a share lock
//! and released before the next is locked, as an index scan does; the
//! table is visited only for the entries kept, with the scan's snapshot,
//! which an MVCC snapshot makes safe after the leaf's lock is let go (the
//! same argument as an index scan's that drops its pin).
//!
//! Only where the shape is the one this reads: a B-tree of version 4 or
//! later, one `int4` key in ascending order with NULLs last (the default
//! integer operator family) and the fingerprint as the one INCLUDE column,
//! no deduplication, and not under SERIALIZABLE (an index scan takes the
//! predicate locks there). Otherwise `open` says no and the caller uses
//! the access method. A page that is not a B-tree page raises XX002,
//! as PostgreSQL's own check would.

use std::ffi::c_int;

use pgrx::pg_sys::{self, BlockNumber, Buffer, ItemPointerData};

use crate::errors;

/// The header of a page (`SizeOfPageHeaderData`): the line pointers follow.
const PAGE_HEADER: usize = 24;
/// `BTreeSpecialSpace`, MAXALIGNed: what a B-tree page keeps at its end.
const SPECIAL_SIZE: usize = 16;
const BTREE_MAGIC: u32 = 0x053162;
/// The first version with the heap TID as a key (PostgreSQL 12 on).
const BTREE_HEAPKEY_VERSION: u32 = 4;
/// `P_NONE`: no page (the end of a level, an empty index).
const P_NONE: BlockNumber = 0;
const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_HALF_DEAD: u16 = 1 << 4;
/// `P_HIKEY`: the high key's place on a page that is not the rightmost.
const P_HIKEY: u16 = 1;
/// `t_info`: the entry's size, its NULLs, and the flag of a pivot tuple
/// (or a posting list) whose `t_tid` holds the number of key columns.
const INDEX_SIZE_MASK: u16 = 0x1FFF;
const INDEX_ALT_TID_MASK: u16 = 0x2000;
const INDEX_NULL_MASK: u16 = 0x8000;
/// In a pivot tuple's `t_tid` offset: key columns kept, and whether a
/// heap TID follows the keys.
const BT_OFFSET_MASK: u16 = 0x0FFF;
const BT_PIVOT_HEAP_TID_ATTR: u16 = 0x1000;
/// Line pointer states: only `LP_NORMAL` and `LP_DEAD` hold an entry.
const LP_NORMAL: u32 = 1;
const LP_DEAD: u32 = 3;

/// `BTPageOpaqueData`, at the end of every B-tree page.
#[repr(C)]
struct Opaque {
    _prev: BlockNumber,
    next: BlockNumber,
    _level: u32,
    flags: u16,
    _cycle: u16,
}

/// The start of `BTMetaPageData` (block 0, after the page header).
#[repr(C)]
struct Meta {
    magic: u32,
    version: u32,
    _root: BlockNumber,
    _level: u32,
    fast_root: BlockNumber,
    _fast_level: u32,
    _last_cleanup_num_delpages: u32,
    _last_cleanup_num_heap_tuples: f64,
    all_equal_image: bool,
}

/// A separator (pivot tuple) against the key searched for.
#[derive(PartialEq)]
enum Separator {
    /// Minus infinity (no key kept), or less than `(value, minus
    /// infinity)`, or equal to it: the subtree or the right sibling may
    /// start at the value's first entry.
    AtMost,
    /// Past it: `(value, some TID)` or a greater key, or NULL.
    Past,
}

/// A covering band index opened for reading its pages.
pub struct Reader {
    index: pg_sys::Relation,
    /// Where the key (`int4`) and the fingerprint (`int8`) are in an entry
    /// without NULLs.
    key_at: usize,
    fp_at: usize,
    /// The fast root, `P_NONE` for an empty index.
    root: BlockNumber,
}

impl Reader {
    /// The reader of `index` when it has the shape this reads (see the
    /// module), its fingerprint at `fp_at` in an entry; `None` to use the
    /// access method instead.
    ///
    /// # Safety
    /// `index` is open and locked; called in a transaction.
    pub unsafe fn open(index: pg_sys::Relation, fp_at: Option<usize>) -> Option<Reader> {
        let fp_at = fp_at?;
        // The line pointers' bit fields as `line_pointer` reads them.
        let mut probe: pg_sys::ItemIdData = std::mem::zeroed();
        probe.set_lp_off(0x1234);
        probe.set_lp_flags(LP_DEAD);
        probe.set_lp_len(0x0567);
        let raw = std::ptr::from_ref(&probe).cast::<u32>().read_unaligned();
        if std::mem::size_of::<pg_sys::ItemIdData>() != 4
            || line_pointer(raw) != (0x1234, 0x0567, LP_DEAD)
        {
            return None;
        }
        let rel = &*(*index).rd_rel;
        if rel.relam != pg_sys::BTREE_AM_OID
            || (*(*index).rd_index).indnkeyatts != 1
            || *(*index).rd_indoption != 0
            || *(*index).rd_opfamily != pg_sys::INTEGER_BTREE_FAM_OID
            || pg_sys::XactIsoLevel == pg_sys::XACT_SERIALIZABLE as c_int
        {
            return None;
        }
        // The key right after the header (MAXALIGNed; an int4 needs no
        // more), the fingerprint after it.
        let key_at = std::mem::size_of::<pg_sys::IndexTupleData>()
            .next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize);
        if fp_at < key_at + 4 {
            return None;
        }
        let buffer = pg_sys::ReadBuffer(index, 0);
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as c_int);
        let page = pg_sys::BufferGetPage(buffer).cast::<u8>();
        let meta = page.add(PAGE_HEADER).cast::<Meta>().read_unaligned();
        pg_sys::UnlockReleaseBuffer(buffer);
        if meta.magic != BTREE_MAGIC {
            errors::index_page_corrupt(&index_name(index), 0);
        }
        if meta.version < BTREE_HEAPKEY_VERSION || meta.all_equal_image {
            return None;
        }
        Some(Reader {
            index,
            key_at,
            fp_at,
            root: meta.fast_root,
        })
    }

    /// Hands `each` the fingerprint and heap TID of every entry whose key
    /// is `value`, in the index's order; returns how many it read.
    ///
    /// # Safety
    /// The index is still open; called in a transaction.
    pub unsafe fn entries<F: FnMut(u64, ItemPointerData)>(&self, value: i32, each: &mut F) -> i64 {
        if self.root == P_NONE {
            return 0;
        }
        let mut page = self.locked(self.root);
        // Down to the leaf.
        loop {
            page = self.move_right(page, value);
            let opaque = page.opaque();
            if opaque.flags & BTP_LEAF != 0 {
                break;
            }
            let child = self.downlink(&page, value);
            page.release();
            // Interrupts are held off while a page is locked: checked
            // between pages, in every loop that moves from page to page.
            pgrx::check_for_interrupts!();
            page = self.locked(child);
        }
        // The value's entries, over as many leaves as they take.
        let mut read = 0i64;
        let whole = self.fp_at + 8;
        loop {
            let first = self.first_at_least(&page, value);
            let mut more = true;
            for offset in first..=page.max {
                let tuple = page.tuple(offset, self);
                let info = tuple.add(6).cast::<u16>().read_unaligned();
                // The usual entry: no NULLs, the key and the fingerprint.
                if info & (INDEX_ALT_TID_MASK | INDEX_NULL_MASK) == 0
                    && usize::from(info & INDEX_SIZE_MASK) >= whole
                {
                    if tuple.add(self.key_at).cast::<i32>().read_unaligned() != value {
                        more = false;
                        break;
                    }
                    read += 1;
                    let fp = tuple.add(self.fp_at).cast::<u64>().read_unaligned();
                    each(fp, tuple.cast::<ItemPointerData>().read_unaligned());
                    continue;
                }
                let (key, tuple) = self.leaf_entry(&page, offset);
                if key != Some(value) {
                    more = false;
                    break;
                }
                read += 1;
                if let Some(tuple) = tuple {
                    let fp = tuple.add(self.fp_at).cast::<u64>().read_unaligned();
                    each(fp, tuple.cast::<ItemPointerData>().read_unaligned());
                }
            }
            // Past the page's last entry: the right sibling holds entries
            // from the high key on, so it may hold more of the value's
            // unless the high key's is greater.
            let next = page.opaque().next;
            if !more || next == P_NONE || self.high_key_past(&page, value) {
                page.release();
                return read;
            }
            page.release();
            pgrx::check_for_interrupts!();
            page = self.locked(next);
            while page.opaque().flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
                let next = page.opaque().next;
                page.release();
                if next == P_NONE {
                    return read;
                }
                // A damaged chain of deleted pages (one linked to itself)
                // must not hold the backend past a cancel.
                pgrx::check_for_interrupts!();
                page = self.locked(next);
            }
        }
    }

    /// Block `block`, pinned and share-locked, checked to be a B-tree page.
    unsafe fn locked(&self, block: BlockNumber) -> Page {
        let buffer = pg_sys::ReadBuffer(self.index, block);
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as c_int);
        let data = pg_sys::BufferGetPage(buffer).cast::<u8>().cast_const();
        let header = &*data.cast::<pg_sys::PageHeaderData>();
        let (lower, upper, special) = (
            usize::from(header.pd_lower),
            usize::from(header.pd_upper),
            usize::from(header.pd_special),
        );
        let size = pg_sys::BLCKSZ as usize;
        if upper == 0
            || special != size - SPECIAL_SIZE
            || lower < PAGE_HEADER
            || lower > upper
            || upper > special
        {
            // The error releases the lock and the pin.
            errors::index_page_corrupt(&index_name(self.index), block);
        }
        Page {
            buffer,
            data,
            max: ((lower - PAGE_HEADER) / std::mem::size_of::<pg_sys::ItemIdData>()) as u16,
        }
    }

    /// Right past pages being deleted, and past pages whose high key is at
    /// most `(value, minus infinity)` (split since their parent was read).
    unsafe fn move_right(&self, mut page: Page, value: i32) -> Page {
        loop {
            let opaque = page.opaque();
            let ignore = opaque.flags & (BTP_DELETED | BTP_HALF_DEAD) != 0;
            if opaque.next == P_NONE {
                if ignore {
                    page.corrupt(self);
                }
                return page;
            }
            if !ignore && self.high_key(&page, value) == Separator::Past {
                return page;
            }
            let next = opaque.next;
            page.release();
            pgrx::check_for_interrupts!();
            page = self.locked(next);
        }
    }

    /// The high key of a page that is not the rightmost, against `value`.
    unsafe fn high_key(&self, page: &Page, value: i32) -> Separator {
        self.separator(page, page.tuple(P_HIKEY, self), value)
    }

    /// Whether the high key of a leaf that is not the rightmost is past
    /// every entry of `value` (a greater key, or NULL).
    unsafe fn high_key_past(&self, page: &Page, value: i32) -> bool {
        let tuple = page.tuple(P_HIKEY, self);
        let info = tuple.add(6).cast::<u16>().read_unaligned();
        if pivot_keys(tuple, info).0 == 0 {
            return false;
        }
        self.key_in(page, tuple, info).is_none_or(|key| key > value)
    }

    /// The child to descend to on an internal page: the last downlink
    /// whose separator is at most `(value, minus infinity)` (the first
    /// one is minus infinity, so there always is one).
    unsafe fn downlink(&self, page: &Page, value: i32) -> BlockNumber {
        let first = page.first_data_key();
        let (mut low, mut high) = (first, page.max);
        if high < low {
            page.corrupt(self);
        }
        // The last offset in [first, max] whose separator is AtMost.
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if self.separator(page, page.tuple(mid, self), value) == Separator::AtMost {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let tid = page
            .tuple(low, self)
            .cast::<ItemPointerData>()
            .read_unaligned();
        (BlockNumber::from(tid.ip_blkid.bi_hi) << 16) | BlockNumber::from(tid.ip_blkid.bi_lo)
    }

    /// A pivot tuple against `(value, minus infinity)`.
    unsafe fn separator(&self, page: &Page, tuple: *const u8, value: i32) -> Separator {
        let info = tuple.add(6).cast::<u16>().read_unaligned();
        let (keys, has_tid) = pivot_keys(tuple, info);
        if keys == 0 {
            return Separator::AtMost;
        }
        match self.key_in(page, tuple, info) {
            Some(key) if key < value || (key == value && !has_tid) => Separator::AtMost,
            _ => Separator::Past,
        }
    }

    /// The first offset of a leaf whose entry's key is at least `value`
    /// (NULLs are past every value), or one past the last.
    unsafe fn first_at_least(&self, page: &Page, value: i32) -> u16 {
        let (mut low, mut high) = (page.first_data_key(), page.max + 1);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.leaf_entry(page, mid) {
                (Some(key), _) if key < value => low = mid + 1,
                _ => high = mid,
            }
        }
        low
    }

    /// A leaf entry: its key (`None` for NULL) and the tuple when its
    /// fingerprint can be read (a NULL one is never within `k`).
    unsafe fn leaf_entry(&self, page: &Page, offset: u16) -> (Option<i32>, Option<*const u8>) {
        let tuple = page.tuple(offset, self);
        let info = tuple.add(6).cast::<u16>().read_unaligned();
        if info & INDEX_ALT_TID_MASK != 0 {
            // A posting list: never in an index with INCLUDE columns.
            page.corrupt(self);
        }
        if info & INDEX_NULL_MASK != 0 {
            return (self.key_in(page, tuple, info), None);
        }
        self.check_size(page, info, self.fp_at + 8);
        (self.key_in(page, tuple, info), Some(tuple))
    }

    /// The key of an entry or a pivot that keeps it: `None` for NULL.
    /// With NULLs the key follows the NULL bitmap (`IndexInfoFindDataOffset`).
    unsafe fn key_in(&self, page: &Page, tuple: *const u8, info: u16) -> Option<i32> {
        let header = std::mem::size_of::<pg_sys::IndexTupleData>();
        let at = if info & INDEX_NULL_MASK != 0 {
            // A clear bit is a NULL.
            if *tuple.add(header) & 1 == 0 {
                return None;
            }
            (header + std::mem::size_of::<pg_sys::IndexAttributeBitMapData>())
                .next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize)
        } else {
            self.key_at
        };
        self.check_size(page, info, at + 4);
        Some(tuple.add(at).cast::<i32>().read_unaligned())
    }

    /// An entry too short for what is read from it: a corrupted page.
    unsafe fn check_size(&self, page: &Page, info: u16, needed: usize) {
        if usize::from(info & INDEX_SIZE_MASK) < needed {
            page.corrupt(self);
        }
    }
}

/// A pinned, share-locked page.
struct Page {
    buffer: Buffer,
    data: *const u8,
    /// The last line pointer's offset (`PageGetMaxOffsetNumber`).
    max: u16,
}

impl Page {
    unsafe fn opaque(&self) -> Opaque {
        self.data
            .add(pg_sys::BLCKSZ as usize - SPECIAL_SIZE)
            .cast::<Opaque>()
            .read_unaligned()
    }

    /// The first entry that is not the high key (`P_FIRSTDATAKEY`).
    unsafe fn first_data_key(&self) -> u16 {
        if self.opaque().next == P_NONE {
            P_HIKEY
        } else {
            P_HIKEY + 1
        }
    }

    /// The tuple at `offset`, its line pointer checked to point inside the
    /// page at an entry.
    #[inline(always)]
    unsafe fn tuple(&self, offset: u16, reader: &Reader) -> *const u8 {
        let (at, len, flags) = line_pointer(
            self.data
                .add(PAGE_HEADER + (usize::from(offset) - 1) * 4)
                .cast::<u32>()
                .read_unaligned(),
        );
        if offset == 0
            || offset > self.max
            || (flags != LP_NORMAL && flags != LP_DEAD)
            || len < std::mem::size_of::<pg_sys::IndexTupleData>()
            || at < PAGE_HEADER
            || at + len > pg_sys::BLCKSZ as usize - SPECIAL_SIZE
        {
            self.corrupt(reader);
        }
        self.data.add(at)
    }

    /// Raises XX002 for this page (the error releases its lock and pin).
    #[cold]
    #[inline(never)]
    unsafe fn corrupt(&self, reader: &Reader) -> ! {
        let block = pg_sys::BufferGetBlockNumber(self.buffer);
        errors::index_page_corrupt(&index_name(reader.index), block)
    }

    unsafe fn release(&self) {
        pg_sys::UnlockReleaseBuffer(self.buffer);
    }
}

/// A line pointer (`ItemIdData`, the bit fields `lp_off:15, lp_flags:2,
/// lp_len:15` of a little-endian build): where its entry is, its length
/// and its state. `Reader::open` checks this against the fields' own
/// accessors once.
#[inline(always)]
fn line_pointer(raw: u32) -> (usize, usize, u32) {
    (
        (raw & 0x7FFF) as usize,
        (raw >> 17) as usize,
        (raw >> 15) & 3,
    )
}

/// How many key columns a pivot tuple keeps, and whether a heap TID
/// follows them (a tuple without the flag keeps its one key).
unsafe fn pivot_keys(tuple: *const u8, info: u16) -> (u16, bool) {
    if info & INDEX_ALT_TID_MASK == 0 {
        return (1, false);
    }
    let offset = tuple.add(4).cast::<u16>().read_unaligned();
    (
        offset & BT_OFFSET_MASK,
        offset & BT_PIVOT_HEAP_TID_ATTR != 0,
    )
}

unsafe fn index_name(index: pg_sys::Relation) -> String {
    std::ffi::CStr::from_ptr((*(*index).rd_rel).relname.data.as_ptr())
        .to_string_lossy()
        .into_owned()
}
