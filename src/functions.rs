//! `simhash(text)`, `simhash_features(text)`, `hamming`, `simhash_band`.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use pgrx::prelude::*;
use simhash_core::layout::Layout;
use simhash_core::{BytesError, FeaturesError, Fingerprinter, Version};

use crate::errors;

static FINGERPRINTER: OnceLock<Fingerprinter> = OnceLock::new();

/// The process's one fingerprinter: jieba's dictionary and the IDF table,
/// built on first use. `_PG_init` builds it in the postmaster when the
/// library is preloaded, so every backend inherits it copy-on-write.
pub fn fingerprinter() -> &'static Fingerprinter {
    FINGERPRINTER.get_or_init(Fingerprinter::new)
}

/// Whether this process has its fingerprinter already (inherited from the
/// postmaster when preloaded, or built by an earlier call).
#[cfg(any(test, feature = "pg_test"))]
pub fn fingerprinter_is_built() -> bool {
    FINGERPRINTER.get().is_some()
}

/// The text of a `text` argument, after checking that the database is
/// UTF-8. The argument arrives as raw bytes so that a non-UTF-8 database
/// gets this error instead of a failed conversion.
fn utf8_text(bytes: &[u8]) -> &str {
    check_utf8_database();
    // PostgreSQL has already verified every text value of a UTF-8 database;
    // checking again costs far less than listing features and keeps this
    // safe.
    std::str::from_utf8(bytes).unwrap_or_else(|_| errors::text_not_utf8())
}

/// 0A000 unless the database is UTF-8.
pub fn check_utf8_database() {
    // SAFETY: plain reads of the session's database encoding.
    let encoding = unsafe { pg_sys::GetDatabaseEncoding() };
    if encoding != pg_sys::pg_enc::PG_UTF8 as i32 {
        // SAFETY: returns a static C string naming the encoding.
        let name = unsafe { std::ffi::CStr::from_ptr(pg_sys::GetDatabaseEncodingName()) };
        errors::database_not_utf8(&name.to_string_lossy());
    }
}

/// The fingerprint of `text` under `version`, or None for text without
/// features. Checks for a cancel or a statement timeout between pieces of
/// text.
fn fingerprint(version: Version, text: &[u8]) -> Option<i64> {
    if let Some(fp) = MEMO.with(|memo| memo.take(version, text)) {
        return fp;
    }
    check_utf8_database();
    // The bytes are checked to be UTF-8 as they are read (version 3) or
    // before (the others), not in a pass of their own here.
    let checked = fingerprinter().fingerprint_bytes_checked_as(version, text, || {
        pgrx::check_for_interrupts!();
        true
    });
    let fp = match checked {
        Ok(fp) => fp.map(|fp| fp as i64),
        Err(BytesError::NotUtf8) => errors::text_not_utf8(),
        // The closure never says stop: a cancel leaves by PostgreSQL's error.
        Err(BytesError::Interrupted) => unreachable!("never interrupted"),
    };
    MEMO.with(|memo| memo.keep(version, text, fp));
    count_computed();
    fp
}

/// Counts one fingerprint or set of keys computed (for the tests).
#[inline]
pub(crate) fn count_computed() {
    #[cfg(any(test, feature = "pg_test"))]
    COMPUTED.with(|n| n.set(n.get() + 1));
}

// The fingerprints and sets of keys this backend computed (for the
// tests: a generic plan's `simhash($1)` is computed once per execution,
// not once per row).
#[cfg(any(test, feature = "pg_test"))]
thread_local! {
    static COMPUTED: Cell<u64> = const { Cell::new(0) };
}

/// How many fingerprints and sets of keys this backend has computed (for
/// the tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn computed_at_call_sites() -> u64 {
    COMPUTED.with(Cell::get)
}

/// The longest text whose value a call site keeps ([`CallMemo`]).
const CALL_MEMO_MAX_BYTES: usize = 16 << 20;

/// The most text bytes the call sites of a backend keep together
/// ([`CallMemo`]): past it a call site computes its value each time rather
/// than keep one more copy (PL/pgSQL keeps every simple expression's call
/// sites, and their copies, for the whole transaction).
const CALL_MEMO_BUDGET: usize = 64 << 20;

thread_local! {
    /// The text bytes the backend's call sites keep now.
    static CALL_MEMO_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Gives back what a call site kept to [`CALL_MEMO_BUDGET`].
fn call_memo_release(len: usize) {
    CALL_MEMO_BYTES.with(|bytes| bytes.set(bytes.get().saturating_sub(len)));
}

/// Takes `len` bytes of [`CALL_MEMO_BUDGET`], if that many are left.
fn call_memo_reserve(len: usize) -> bool {
    CALL_MEMO_BYTES.with(|bytes| {
        let kept = bytes.get();
        let fits = kept.saturating_add(len) <= CALL_MEMO_BUDGET;
        if fits {
            bytes.set(kept + len);
        }
        fits
    })
}

/// Marks a call site's `fn_extra` as a [`CallMemo`]; the low byte says
/// which function's (the definitions of the fingerprint, the keys).
const CALL_MEMO_MAGIC: u32 = 0x5348_4d00;

/// The call site's mark of each definition of the fingerprint.
fn call_memo_tag(version: Version) -> u32 {
    CALL_MEMO_MAGIC
        | match version {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
}

/// The call site's mark of `simhash_lsh`.
pub(crate) const CALL_MEMO_LSH: u32 = CALL_MEMO_MAGIC | 0x10;

/// The last value a call site computed from its text argument, with the
/// text, in the call site's own memory (`fn_mcxt`, freed with the
/// expression).
///
/// Where the argument is a constant or a query parameter (`simhash($1)` in
/// a prepared statement), PostgreSQL evaluates the call once per row that
/// reaches it: in a generic plan, once per candidate row of the band
/// indexes. Kept here, the value is computed once per execution and every
/// other row compares the text with the one kept (a memcmp, at memory
/// speed, where the fingerprint runs at a few hundred MB/s). The text is
/// always compared: the same expression is evaluated again with other
/// parameter values (PL/pgSQL keeps a simple expression's state for the
/// whole transaction), and a different text is computed anew.
#[repr(C)]
struct CallMemo<T> {
    tag: u32,
    value: T,
    /// The kept text (NULL: none) and its length, counted in
    /// [`CALL_MEMO_BYTES`] until `forget` runs with the memory's reset.
    len: usize,
    bytes: *mut u8,
    forget: pg_sys::MemoryContextCallback,
}

/// The reset callback of a [`CallMemo`]'s memory: its text leaves the
/// backend's count. `arg` points at the memo's `len`.
unsafe extern "C-unwind" fn forget_call_memo(arg: *mut std::ffi::c_void) {
    call_memo_release(*arg.cast::<usize>());
}

/// `compute` of the call's text argument, kept at the call site (marked
/// `tag`, one per function) when the argument cannot change between rows.
///
/// # Safety
/// `fcinfo` is the call's own, of a strict function of one `text`
/// argument, and `tag` is that function's alone (the call site's memory
/// is read as a `CallMemo<T>` where the tag matches).
pub(crate) unsafe fn kept_at_call_site<T: Copy>(
    fcinfo: pg_sys::FunctionCallInfo,
    tag: u32,
    compute: impl FnOnce(&[u8]) -> T,
) -> T {
    let text = text_arg(fcinfo);
    let flinfo = (*fcinfo).flinfo;
    if flinfo.is_null()
        || text.len() > CALL_MEMO_MAX_BYTES
        || !pg_sys::get_fn_expr_arg_stable(flinfo, 0)
    {
        return compute(text);
    }
    let mut memo = (*flinfo).fn_extra.cast::<CallMemo<T>>();
    if !memo.is_null() && (*memo).tag == tag && !(*memo).bytes.is_null() {
        let kept = std::slice::from_raw_parts((*memo).bytes, (*memo).len);
        if kept == text {
            return (*memo).value;
        }
    }
    let value = compute(text);
    if memo.is_null() {
        memo =
            pg_sys::MemoryContextAllocZero((*flinfo).fn_mcxt, std::mem::size_of::<CallMemo<T>>())
                .cast::<CallMemo<T>>();
        (*memo).tag = tag;
        (*memo).forget.func = Some(forget_call_memo);
        (*memo).forget.arg = std::ptr::addr_of_mut!((*memo).len).cast();
        pg_sys::MemoryContextRegisterResetCallback((*flinfo).fn_mcxt, &mut (*memo).forget);
        (*flinfo).fn_extra = memo.cast();
    } else if (*memo).tag != tag {
        // Someone else's state: leave it alone.
        return value;
    } else if !(*memo).bytes.is_null() {
        pg_sys::pfree((*memo).bytes.cast());
        call_memo_release((*memo).len);
        (*memo).bytes = std::ptr::null_mut();
        (*memo).len = 0;
    }
    // Past the backend's budget the value is not kept: computed again next
    // time, rather than one more copy of a text held to the end.
    if !call_memo_reserve(text.len()) {
        return value;
    }
    // Counted before the allocation, which may fail: the reset gives it back.
    (*memo).len = text.len();
    let bytes = pg_sys::MemoryContextAlloc((*flinfo).fn_mcxt, text.len().max(1)).cast::<u8>();
    std::ptr::copy_nonoverlapping(text.as_ptr(), bytes, text.len());
    (*memo).value = value;
    (*memo).bytes = bytes;
    value
}

/// The fingerprint of the call's text argument under `version`, kept at
/// the call site ([`kept_at_call_site`]).
///
/// # Safety
/// `fcinfo` is the call's own, of a strict function of one `text`
/// argument.
unsafe fn fingerprint_of_arg(fcinfo: pg_sys::FunctionCallInfo, version: Version) -> Option<i64> {
    kept_at_call_site(fcinfo, call_memo_tag(version), |text| {
        fingerprint(version, text)
    })
}

/// The fingerprint of `text` under definition 3 (the default), as
/// `simhash(text)` computes it.
pub fn fingerprint_v3(text: &[u8]) -> Option<i64> {
    fingerprint(Version::V3, text)
}

/// One fingerprint kept for the call that comes right after: the
/// near-unique guard computes a generated fingerprint column's value on
/// the new row (`crate::guard`), and PostgreSQL then computes the column
/// itself from the same text. Armed only by the guard, consumed by the
/// first call that follows, so every other call pays one branch.
struct Memo {
    armed: Cell<bool>,
    kept: RefCell<Option<Kept>>,
}

/// A fingerprint with the definition and text it was computed from.
type Kept = (Version, Vec<u8>, Option<i64>);

impl Memo {
    fn take(&self, version: Version, text: &[u8]) -> Option<Option<i64>> {
        let mut kept = self.kept.borrow_mut();
        let (v, t, fp) = kept.take()?;
        (v == version && t == text).then_some(fp)
    }

    fn keep(&self, version: Version, text: &[u8], fp: Option<i64>) {
        if self.armed.get() {
            *self.kept.borrow_mut() = Some((version, text.to_vec(), fp));
        }
    }
}

thread_local! {
    static MEMO: Memo = const {
        Memo {
            armed: Cell::new(false),
            kept: RefCell::new(None),
        }
    };
}

/// Keep the fingerprints computed from now until the returned value is
/// dropped for the next call with the same text (the last one wins).
/// Dropped on every way out, an error's unwind included; an error that
/// leaves some other way aborts the (sub)transaction, whose callback
/// ([`forget_on_abort`]) disarms it too. Left armed, every later call of
/// the session would copy its whole text.
pub fn remember_next() -> Armed {
    MEMO.with(|memo| {
        memo.kept.borrow_mut().take();
        memo.armed.set(true);
    });
    Armed(())
}

/// The memo armed by [`remember_next`]: disarmed when dropped; the one
/// kept stays for the next call.
#[must_use = "the memo is disarmed when this is dropped"]
pub struct Armed(());

impl Drop for Armed {
    fn drop(&mut self) {
        MEMO.with(|memo| memo.armed.set(false));
    }
}

/// Whether the memo is armed (for the tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn memo_armed() -> bool {
    MEMO.with(|memo| memo.armed.get())
}

/// Disarms the memo and drops what it kept: a transaction or
/// subtransaction that aborts may have left it armed.
fn forget_all() {
    MEMO.with(|memo| {
        memo.armed.set(false);
        if let Ok(mut kept) = memo.kept.try_borrow_mut() {
            kept.take();
        }
    });
}

#[pg_guard]
unsafe extern "C-unwind" fn forget_on_abort(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::XactEvent::XACT_EVENT_ABORT
        || event == pg_sys::XactEvent::XACT_EVENT_PARALLEL_ABORT
    {
        forget_all();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn forget_on_subabort(
    event: pg_sys::SubXactEvent::Type,
    _sub: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        forget_all();
    }
}

/// Registers the abort callbacks of the memo (once per process, from
/// `_PG_init`).
pub fn install() {
    // SAFETY: registers callbacks with static lifetime and no argument.
    unsafe {
        pg_sys::RegisterXactCallback(Some(forget_on_abort), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(forget_on_subabort), std::ptr::null_mut());
    }
}

/// The `text` argument of a strict function of one argument, its pglz
/// decoded by the core ([`crate::detoast`]).
///
/// # Safety
/// `fcinfo` is the call's own, of a strict function of one `text`
/// argument, so it holds one datum that is not null.
unsafe fn text_arg<'a>(fcinfo: pg_sys::FunctionCallInfo) -> &'a [u8] {
    crate::detoast::text_bytes((*fcinfo).args.as_slice(1)[0].value)
}

/// `simhash(text)` of extension 0.1, `simhash_v1(text)` from 0.2 on:
/// definition version 1. This C symbol computes version 1 for good, so a
/// database still at extension 0.1 keeps its fingerprints when the library
/// is upgraded under it.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_text(fcinfo: pg_sys::FunctionCallInfo) -> Option<i64> {
    // SAFETY: a strict function of one text argument, called by PostgreSQL.
    unsafe { fingerprint_of_arg(fcinfo, Version::V1) }
}

/// `simhash(text)` of extension 0.2, `simhash_v2(text)` from 0.3 on:
/// definition version 2.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_v2_text(fcinfo: pg_sys::FunctionCallInfo) -> Option<i64> {
    // SAFETY: a strict function of one text argument, called by PostgreSQL.
    unsafe { fingerprint_of_arg(fcinfo, Version::V2) }
}

/// `simhash(text)` from extension 0.3 on: definition version 3.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_v3_text(fcinfo: pg_sys::FunctionCallInfo) -> Option<i64> {
    // SAFETY: a strict function of one text argument, called by PostgreSQL.
    unsafe { fingerprint_of_arg(fcinfo, Version::V3) }
}

/// The rows of `simhash_features*`: at most
/// [`simhash_core::fingerprint::MAX_FEATURES`] distinct features of at
/// most [`simhash_core::fingerprint::MAX_FEATURE_BYTES`] bytes in all, past
/// which the call fails with 54000 rather than hold rows without end.
fn features(version: Version, text: &[u8]) -> TableIterator<'static, (String, i64, f64, f64, i64)> {
    let listed = fingerprinter().features_as(version, utf8_text(text), || {
        pgrx::check_for_interrupts!();
        true
    });
    let features = match listed {
        Ok(features) => features,
        Err(FeaturesError::TooMany { limit }) => errors::too_many_features(limit),
        Err(FeaturesError::TooLong { limit }) => errors::features_too_long(limit),
        // The closure never says stop: a cancel leaves by PostgreSQL's error.
        Err(FeaturesError::Interrupted) => unreachable!("never interrupted"),
    };
    TableIterator::new(
        features
            .into_iter()
            .map(|f| (f.token, f.tf as i64, f.idf, f.weight, f.hash as i64)),
    )
}

/// `simhash_features(text)` of 0.1, `simhash_features_v1(text)` from 0.2:
/// one row per distinct token, definition version 1.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_features_text(
    text: &[u8],
) -> TableIterator<
    'static,
    (
        name!(token, String),
        name!(tf, i64),
        name!(idf, f64),
        name!(weight, f64),
        name!(hash, i64),
    ),
> {
    features(Version::V1, text)
}

/// `simhash_features(text)` of 0.2, `simhash_features_v2(text)` from 0.3:
/// definition version 2.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_features_v2_text(
    text: &[u8],
) -> TableIterator<
    'static,
    (
        name!(token, String),
        name!(tf, i64),
        name!(idf, f64),
        name!(weight, f64),
        name!(hash, i64),
    ),
> {
    features(Version::V2, text)
}

/// `simhash_features(text)` from 0.3 on: definition version 3, one row
/// per distinct feature (a Han character or a trigram).
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_features_v3_text(
    text: &[u8],
) -> TableIterator<
    'static,
    (
        name!(token, String),
        name!(tf, i64),
        name!(idf, f64),
        name!(weight, f64),
        name!(hash, i64),
    ),
> {
    features(Version::V3, text)
}

/// `hamming(a, b)` and `a <~> b`: the number of differing bits.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_hamming(a: i64, b: i64) -> i32 {
    simhash_core::hamming(a as u64, b as u64) as i32
}

/// `simhash_band(fp, n)`: band n (0..3) as an int from 0 to 65535, NULL
/// for any other n. Raises no error: it is LEAKPROOF, so that band
/// conditions can use the indexes under row-level security.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band_n(fp: i64, n: i32) -> Option<i32> {
    simhash_core::band(fp as u64, i64::from(n)).map(i32::from)
}

/// `simhash_band32(fp, n)`: half n (0 or 1) of the fingerprint, the 32 bits
/// from the left, as a bigint from 0 to 4294967295; NULL for any other n.
/// The key of the `2x32` layout (`simhash_core::layout`). LEAKPROOF, as
/// `simhash_band` is.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band32_n(fp: i64, n: i32) -> Option<i64> {
    Layout::Halves32
        .key(fp as u64, i64::from(n))
        .map(|key| key as i64)
}

/// `simhash_band32_neighbors(fp, n, k)`: every value half n of a
/// fingerprint within distance k of fp can have: empty for a negative k,
/// NULL for a half that does not exist or a k the layout does not probe
/// (above 7). Raises no error (LEAKPROOF).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_band32_neighbors_fn(fp: i64, n: i32, k: i32) -> Option<Vec<i64>> {
    let layout = Layout::Halves32;
    layout.key(fp as u64, i64::from(n))?;
    if k < 0 {
        return Some(Vec::new());
    }
    let keys = layout.neighbors(fp as u64, i64::from(n), k as u32)?;
    Some(keys.into_iter().map(|key| key as i64).collect())
}

/// `simhash_layout_for(rows, k, row_bytes)`: the layout `'auto'` chooses
/// for a table of about that many rows of that many heap bytes each,
/// queried within distance `k` (`simhash_core::layout::choose_for`). A
/// NULL `k` is the session's `simhash.verify_k`, NULL row bytes 0 (the
/// indexes alone weighed); NULL rows, NULL.
#[pg_extern(stable, parallel_safe, sql = false)]
fn simhash_layout_for_k_fn(
    rows: Option<f64>,
    k: Option<i32>,
    row_bytes: Option<f64>,
) -> Option<&'static str> {
    let k = k.unwrap_or_else(|| crate::verify::VERIFY_K.get());
    Some(simhash_core::layout::choose_for(rows?, row_bytes.unwrap_or(0.0), i64::from(k)).name())
}

/// `simhash_layout_for(rows)` of extension 0.6.0: the layout by the rows
/// alone (`simhash_core::layout::choose`). A C symbol never changes what
/// it computes, so a database still at 0.6.0 keeps its `'auto'` under this
/// library; 0.7.0's `simhash_layout_for(rows, k, row_bytes)` is
/// `simhash_layout_for_k_fn`.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_layout_for_fn(rows: f64) -> &'static str {
    simhash_core::layout::choose(rows).name()
}

/// `simhash_layout_estimates(rows, k, row_bytes)`: what `'auto'` weighs,
/// a row per layout (`simhash_core::layout::estimates`), the chosen one
/// marked; the arguments as `simhash_layout_for`'s.
#[allow(clippy::type_complexity)]
#[pg_extern(stable, parallel_safe, sql = false)]
fn simhash_layout_estimates_fn(
    rows: Option<f64>,
    k: Option<i32>,
    row_bytes: Option<f64>,
) -> TableIterator<
    'static,
    (
        name!(layout, &'static str),
        name!(serves, bool),
        name!(probe_ms, Option<f64>),
        name!(index_bytes, f64),
        name!(cost, Option<f64>),
        name!(chosen, bool),
    ),
> {
    let Some(rows) = rows else {
        return TableIterator::new(Vec::new());
    };
    let k = i64::from(k.unwrap_or_else(|| crate::verify::VERIFY_K.get()));
    let row_bytes = row_bytes.unwrap_or(0.0);
    let chosen = simhash_core::layout::choose_for(rows, row_bytes, k);
    let all = simhash_core::layout::estimates(rows, row_bytes, k);
    TableIterator::new(all.map(|e| {
        (
            e.pick.name(),
            e.serves,
            e.serves.then_some(e.probe_ms),
            e.index_bytes,
            e.serves.then_some(e.cost),
            e.pick == chosen,
        )
    }))
}
