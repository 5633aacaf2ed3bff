//! The bytes of a `text` argument, with pglz decoded by the core.
//!
//! PostgreSQL hands a function a long text still in its stored form:
//! compressed inline, or a pointer into the TOAST table (whose chunks,
//! once fetched, may be compressed). `pg_detoast_datum_packed` fetches
//! and decompresses it; its pglz decoder takes one item at a time
//! (`bench/detoast.sh` measures it against the core's). Here the
//! fetch is still PostgreSQL's (`detoast_external_attr`), but a value
//! compressed with pglz is decoded by [`simhash_core::pglz::decompress`]:
//! the same bytes, or the same error where the data is damaged. Anything
//! else (lz4, a short header, an expanded or indirect value) goes through
//! `pg_detoast_datum_packed` as before.

use pgrx::pg_sys;
use pgrx::varlena::{varatt_is_1b_e, varatt_is_4b_c, vardata_4b_c, varsize_4b, vartag_1b_e};

use crate::errors;

/// `VARHDRSZ_COMPRESSED`: the header of a compressed value, its length
/// word and `va_tcinfo` (PostgreSQL's `varatt.h`).
const COMPRESSED_HEADER: usize = 8;

/// `TOAST_PGLZ_COMPRESSION_ID` (PostgreSQL's `toast_compression.h`): the
/// method in the top two bits of `va_tcinfo`.
const PGLZ: u32 = 0;

/// The bytes of the text `datum` (not null), decompressed, valid for as
/// long as the current memory context: what `pg_detoast_datum_packed`
/// would give, the pglz case decoded here.
///
/// # Safety
/// `datum` is a non-null `text` (or other varlena) datum of the current
/// call.
pub unsafe fn text_bytes<'a>(datum: pg_sys::Datum) -> &'a [u8] {
    let mut value = datum.cast_mut_ptr::<pg_sys::varlena>();
    if varatt_is_1b_e(value)
        && u32::from(vartag_1b_e(value)) == pg_sys::vartag_external::VARTAG_ONDISK
    {
        // Its chunks, put together: still compressed if it was stored so.
        value = pg_sys::detoast_external_attr(value);
    }
    if varatt_is_4b_c(value) {
        // SAFETY: a compressed value starts with its length word and
        // `va_tcinfo`, both 4-byte aligned (a 4-byte header).
        let tcinfo = *value.cast::<u32>().add(1);
        if tcinfo >> pg_sys::VARLENA_EXTSIZE_BITS == PGLZ {
            let raw = (tcinfo & pg_sys::VARLENA_EXTSIZE_MASK) as usize;
            let stored = varsize_4b(value).saturating_sub(COMPRESSED_HEADER);
            let src = std::slice::from_raw_parts(vardata_4b_c(value).cast::<u8>(), stored);
            // In the current memory context, as PostgreSQL's own copy is;
            // an empty text still gets a valid pointer.
            let out = pg_sys::palloc(raw.max(1)).cast::<u8>();
            let dst = std::slice::from_raw_parts_mut(out, raw);
            if simhash_core::pglz::decompress(src, dst).is_err() {
                errors::pglz_corrupt();
            }
            if value != datum.cast_mut_ptr::<pg_sys::varlena>() {
                // The compressed copy fetched above, as PostgreSQL frees it.
                pg_sys::pfree(value.cast());
            }
            return dst;
        }
    }
    pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(value))
}
