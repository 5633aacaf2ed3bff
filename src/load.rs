//! `simhash_skipped_in_order()`: the glue of `simhash_insert_new`'s
//! ordering rule. The batch's pairs of neighbours come in as two arrays;
//! which rows one-at-a-time guarded inserts would skip comes out
//! ([`simhash_core::guard::skipped_in_order`]).

use pgrx::prelude::*;

use crate::errors;

/// Each skipped row of a batch with the earlier kept row it matched, from
/// the pairs `(later[i], earlier[i])` of neighbours in the batch's order.
/// NULL pairs are left out.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_skipped_in_order(
    later: Array<'_, i64>,
    earlier: Array<'_, i64>,
) -> TableIterator<'static, (name!(skipped, i64), name!(matched, i64))> {
    if later.len() != earlier.len() {
        errors::pair_arrays_mismatch(later.len(), earlier.len());
    }
    let mut pairs: Vec<(i64, i64)> = later
        .iter()
        .zip(earlier.iter())
        .filter_map(|(y, x)| Some((y?, x?)))
        .collect();
    TableIterator::new(simhash_core::guard::skipped_in_order(&mut pairs))
}
