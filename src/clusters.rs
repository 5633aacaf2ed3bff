//! `simhash_clusters(...)`: whole-table clustering, the glue around
//! `simhash_core::cluster`. The SQL wrapper in `sql/simhash.sql` builds
//! the query (quoting the names the caller gave) and calls this with it.

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use simhash_core::cluster::{ClusterError, Clustering, Phase, Progress, MAX_K};
use simhash_core::scatter;

use crate::errors;

/// How often a long run reports progress.
const NOTICE_EVERY: Duration = Duration::from_secs(5);

/// Rows fetched from the cursor at a time.
const FETCH: i64 = 50_000;

/// Reads `(key bigint, fp bigint)` rows from `query`, clusters them within
/// distance `k`, and returns each key with its cluster's smallest key;
/// rows alone in their cluster only when `singletons`.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, strict, parallel_unsafe, sql = false)]
fn simhash_clusters_query(
    query: &str,
    k: i32,
    singletons: bool,
) -> TableIterator<'static, (name!(id, i64), name!(cluster, i64))> {
    if !(0..=MAX_K as i32).contains(&k) {
        errors::cluster_distance_out_of_range(k, MAX_K);
    }
    let started = Instant::now();
    let mut last_notice = Instant::now();
    let mut rows: Vec<(i64, u64)> = Vec::new();
    Spi::connect(|client| {
        let simhash64 = simhash64_type(client);
        // Memory: at most simhash.cluster_memory, as the table's path
        // decides it, checked as the rows come in; past it, or when the
        // allocator says no, 53200 rather than an aborted backend.
        let (cap, cap_text) = cluster_memory(client);
        let max_rows = usize::try_from(cap / BYTES_PER_ROW).unwrap_or(usize::MAX);
        let mut cursor = match client.try_open_cursor(query, &[]) {
            Ok(cursor) => cursor,
            Err(e) => errors::spi_failed("simhash_clusters_query", &e),
        };
        let mut shape = None;
        loop {
            let mut batch = match cursor.fetch(FETCH) {
                Ok(batch) => batch,
                Err(e) => errors::spi_failed("simhash_clusters_query", &e),
            };
            let (key_type, fp_type) = match shape {
                Some(shape) => shape,
                None => *shape.insert(query_shape("simhash_clusters_query", &batch, simhash64)),
            };
            if batch.is_empty() {
                break;
            }
            if rows.len().saturating_add(batch.len()) > max_rows {
                errors::cluster_memory_exceeded(rows.len() + batch.len(), &cap_text);
            }
            if rows.try_reserve(batch.len()).is_err() {
                errors::out_of_memory("simhash_clusters_query", rows.len() + batch.len());
            }
            while batch.next().is_some() {
                let key = batch.get_datum_by_ordinal(1).ok().flatten();
                let fp = batch.get_datum_by_ordinal(2).ok().flatten();
                if let (Some(key), Some(fp)) = (key, fp) {
                    rows.push((integer(key, key_type), integer(fp, fp_type) as u64));
                }
            }
            // SPI keeps every fetched batch until the connection ends:
            // free this one now, or the rows are held twice while they
            // are clustered (bench/clusters.sh: 155 MB peak at 1M rows
            // without this, 134 MB with it).
            // SAFETY: SPI_tuptable is the batch just read, which is not
            // read again (`batch` is not used after this point).
            unsafe { pgrx::pg_sys::SPI_freetuptable(pgrx::pg_sys::SPI_tuptable) };
            pgrx::check_for_interrupts!();
            if last_notice.elapsed() >= NOTICE_EVERY {
                last_notice = Instant::now();
                notice!(
                    "simhash_clusters: {} rows read, {:.0} s",
                    rows.len(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    });
    let mut report = |p: Progress| {
        // A cancel or statement_timeout leaves through PostgreSQL's error
        // handling from here: nothing was written, the memory is the
        // function's and goes with it.
        pgrx::check_for_interrupts!();
        if last_notice.elapsed() >= NOTICE_EVERY {
            last_notice = Instant::now();
            notice!("{}", progress_line(&p, started.elapsed()));
        }
        true
    };
    let clusters = match Clustering::new(k as u32)
        .singletons(singletons)
        .run(&mut rows, &mut report)
    {
        Ok(clusters) => clusters,
        Err(ClusterError::TooManyFingerprints { distinct }) => {
            errors::too_many_fingerprints(distinct)
        }
        Err(e @ (ClusterError::DistanceTooLarge { .. } | ClusterError::Interrupted)) => {
            unreachable!("k was checked and the callback never stops the run: {e}")
        }
    };
    drop(rows);
    TableIterator::new(clusters)
}

/// What clustering holds per row, about: the row, its place in the sort
/// and the union-find (the `simhash_clusters` wrapper's estimate too).
const BYTES_PER_ROW: i64 = 75;

/// What joining the buckets' links holds per link, about: the link (16
/// bytes), both keys sorted (16), their union-find (16) and the result
/// (32).
const BYTES_PER_LINK: i64 = 80;

/// The least the bucket path may hold, whatever simhash.cluster_memory
/// says: a small setting is how clustering is sent to the buckets.
const BUCKETS_FLOOR: i64 = 1 << 20;

/// What the bucket path may hold in bytes, and the setting as set: read
/// without SPI, as `_simhash_bucket_links` runs once per bucket.
fn buckets_memory() -> (i64, String) {
    // SAFETY: GetConfigOption returns the setting's current value (a
    // string the GUC machinery owns) or NULL when it was never set.
    let set = unsafe {
        let value = pg_sys::GetConfigOption(c"simhash.cluster_memory".as_ptr(), true, false);
        (!value.is_null()).then(|| {
            std::ffi::CStr::from_ptr(value)
                .to_string_lossy()
                .into_owned()
        })
    };
    let text = set
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "1GB".into());
    // SAFETY: pg_size_bytes takes one text and errors on a bad one (22023).
    let bytes = unsafe {
        pgrx::direct_function_call::<i64>(pg_sys::pg_size_bytes, &[text.as_str().into_datum()])
    }
    .unwrap_or(1 << 30);
    (bytes.max(BUCKETS_FLOOR), text)
}

/// simhash.cluster_memory in bytes, and as set (default 1GB).
fn cluster_memory(client: &pgrx::spi::SpiClient<'_>) -> (i64, String) {
    memory_setting(client, "simhash.cluster_memory")
}

/// A memory setting (`simhash.cluster_memory`, `simhash.load_memory`) in
/// bytes, and as set (default 1GB).
pub(crate) fn memory_setting(client: &pgrx::spi::SpiClient<'_>, name: &str) -> (i64, String) {
    let row = client
        .select(
            "SELECT s, pg_catalog.pg_size_bytes(s) FROM (SELECT COALESCE(NULLIF(\
             pg_catalog.current_setting($1, true), ''), '1GB') AS s) x",
            Some(1),
            &[name.into()],
        )
        .unwrap_or_else(|e| errors::spi_failed(name, &e));
    let row = row.first();
    let text = row
        .get::<String>(1)
        .ok()
        .flatten()
        .unwrap_or_else(|| "1GB".into());
    let bytes = row.get::<i64>(2).ok().flatten().unwrap_or(1 << 30);
    (bytes, text)
}

/// The OID of the extension's `simhash64` type, looked up through the
/// catalogs (never the caller's search_path).
pub(crate) fn simhash64_type(client: &pgrx::spi::SpiClient<'_>) -> Option<pg_sys::Oid> {
    client
        .select(
            "SELECT t.oid FROM pg_catalog.pg_type t \
             JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) t.typnamespace \
             WHERE e.extname OPERATOR(pg_catalog.=) 'simhash' \
               AND t.typname OPERATOR(pg_catalog.=) 'simhash64'",
            Some(1),
            &[],
        )
        .ok()?
        .first()
        .get_one::<pg_sys::Oid>()
        .ok()
        .flatten()
}

/// The types of a clustering query's two columns: the key (smallint,
/// integer or bigint) and the fingerprint (simhash64 or bigint). Anything
/// else is a 42804 error naming what is expected.
pub(crate) fn query_shape(
    what: &str,
    batch: &pgrx::spi::SpiTupleTable<'_>,
    simhash64: Option<pg_sys::Oid>,
) -> (pg_sys::Oid, pg_sys::Oid) {
    let columns = batch.columns().unwrap_or(0);
    let type_of = |n: usize| batch.column_type_oid(n).map(|t| t.value()).ok();
    let key = if columns == 2 { type_of(1) } else { None };
    let fp = if columns == 2 { type_of(2) } else { None };
    let key_ok = key.filter(|t| [pg_sys::INT2OID, pg_sys::INT4OID, pg_sys::INT8OID].contains(t));
    let fp_ok = fp.filter(|&t| t == pg_sys::INT8OID || Some(t) == simhash64);
    match (key_ok, fp_ok) {
        (Some(key), Some(fp)) => (key, fp),
        _ => {
            let found: Vec<String> = (1..=columns)
                .map(|n| type_of(n).map_or_else(|| "?".into(), type_name))
                .collect();
            errors::cluster_query_shape(what, &found)
        }
    }
}

/// Checks that a links query returns two columns of keys (bigint, as the
/// links are read): a 42804 error naming what it returns otherwise, even
/// when it returns no rows.
fn links_shape(batch: &pgrx::spi::SpiTupleTable<'_>) {
    let columns = batch.columns().unwrap_or(0);
    let type_of = |n: usize| batch.column_type_oid(n).map(|t| t.value()).ok();
    let ok = columns == 2 && (1..=2).all(|n| type_of(n) == Some(pg_sys::INT8OID));
    if !ok {
        let found: Vec<String> = (1..=columns)
            .map(|n| type_of(n).map_or_else(|| "?".into(), type_name))
            .collect();
        errors::links_query_shape(&found);
    }
}

fn type_name(oid: pg_sys::Oid) -> String {
    // SAFETY: format_type_be returns a palloc'd name for any type OID.
    unsafe { std::ffi::CStr::from_ptr(pg_sys::format_type_be(oid)) }
        .to_string_lossy()
        .into_owned()
}

/// The value of a smallint, integer, bigint or simhash64 datum: all are
/// passed by value, a simhash64 with the bits of a bigint.
pub(crate) fn integer(datum: pg_sys::Datum, ty: pg_sys::Oid) -> i64 {
    match ty {
        pg_sys::INT2OID => i64::from(datum.value() as i16),
        pg_sys::INT4OID => i64::from(datum.value() as i32),
        _ => datum.value() as i64,
    }
}

/// The progress NOTICE: rows, buckets done of the current pass, elapsed.
fn progress_line(p: &Progress, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    match p.phase {
        Phase::Sort => format!("simhash_clusters: sorting {} rows, {secs:.0} s", p.rows),
        Phase::Search => format!(
            "simhash_clusters: {} rows, {} distinct fingerprints; pass {} of {}, {} of {} buckets; {} pairs compared, {} joined; {secs:.0} s",
            p.rows,
            p.distinct,
            p.pass + 1,
            p.passes.max(1),
            p.buckets_done,
            p.buckets,
            p.pairs,
            p.joins
        ),
        Phase::Label => format!(
            "simhash_clusters: {} rows searched, labelling clusters, {secs:.0} s",
            p.rows
        ),
    }
}

/// The `k + 1` bucket keys of a fingerprint for clustering a distributed
/// table (`simhash_core::scatter`): two fingerprints within `k` share one.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bucket_keys(fp: i64, k: i32) -> Vec<i64> {
    if !(0..=MAX_K as i32).contains(&k) {
        errors::cluster_distance_out_of_range(k, MAX_K);
    }
    scatter::bucket_keys(fp as u64, k as u32)
}

/// The links of one bucket: each row of a cluster of two or more rows
/// within the bucket, with its cluster's smallest key. `keys` and `fps`
/// are the bucket's rows (`array_agg` of each); NULLs are skipped.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_bucket_links(
    keys: Array<'_, i64>,
    fps: Array<'_, i64>,
    k: i32,
) -> TableIterator<'static, (name!(id, i64), name!(cluster, i64))> {
    if !(0..=MAX_K as i32).contains(&k) {
        errors::cluster_distance_out_of_range(k, MAX_K);
    }
    if keys.len() != fps.len() {
        errors::bucket_arrays_mismatch(keys.len(), fps.len());
    }
    let (cap, cap_text) = buckets_memory();
    if (keys.len() as i64).saturating_mul(BYTES_PER_ROW) > cap {
        errors::cluster_buckets_exceeded(
            "simhash_clusters",
            keys.len(),
            "rows of one bucket",
            &cap_text,
        );
    }
    let mut rows: Vec<(i64, u64)> = keys
        .iter()
        .zip(fps.iter())
        .filter_map(|(key, fp)| Some((key?, fp? as u64)))
        .collect();
    let links = match scatter::bucket_links(&mut rows, k as u32) {
        Ok(links) => links,
        Err(ClusterError::TooManyFingerprints { distinct }) => {
            errors::too_many_fingerprints(distinct)
        }
        Err(e @ (ClusterError::DistanceTooLarge { .. } | ClusterError::Interrupted)) => {
            unreachable!("k was checked and the callback never stops the run: {e}")
        }
    };
    TableIterator::new(links)
}

/// The clusters that the `(key, key)` links read from `query` make: each
/// key in a link with its cluster's smallest key.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, strict, parallel_unsafe, sql = false)]
fn simhash_join_links(
    query: &str,
) -> TableIterator<'static, (name!(id, i64), name!(cluster, i64))> {
    let mut links: Vec<(i64, i64)> = Vec::new();
    let (cap, cap_text) = buckets_memory();
    let max_links = usize::try_from(cap / BYTES_PER_LINK).unwrap_or(usize::MAX);
    Spi::connect(|client| {
        let mut cursor = match client.try_open_cursor(query, &[]) {
            Ok(cursor) => cursor,
            Err(e) => errors::spi_failed("_simhash_join_links", &e),
        };
        let mut shape_checked = false;
        loop {
            let mut batch = match cursor.fetch(FETCH) {
                Ok(batch) => batch,
                Err(e) => errors::spi_failed("_simhash_join_links", &e),
            };
            if !shape_checked {
                links_shape(&batch);
                shape_checked = true;
            }
            if batch.is_empty() {
                break;
            }
            if links.len().saturating_add(batch.len()) > max_links {
                errors::cluster_buckets_exceeded(
                    "simhash_clusters",
                    links.len() + batch.len(),
                    "links of rows with a neighbour",
                    &cap_text,
                );
            }
            while batch.next().is_some() {
                let a = batch.get::<i64>(1).ok().flatten();
                let b = batch.get::<i64>(2).ok().flatten();
                if let (Some(a), Some(b)) = (a, b) {
                    links.push((a, b));
                }
            }
            // SAFETY: as in simhash_clusters_query: the batch just read.
            unsafe { pgrx::pg_sys::SPI_freetuptable(pgrx::pg_sys::SPI_tuptable) };
            pgrx::check_for_interrupts!();
        }
    });
    TableIterator::new(scatter::join_links(&links))
}
