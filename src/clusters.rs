//! `simhash_clusters(...)`: whole-table clustering, the glue around
//! `simhash_core::cluster`. The SQL wrapper in `sql/simhash.sql` builds
//! the query (quoting the names the caller gave) and calls this with it.

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use simhash_core::cluster::{ClusterError, Clustering, Phase, Progress, MAX_K};

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
        let mut cursor = client.open_cursor(query, &[]);
        loop {
            let batch = cursor.fetch(FETCH).expect("fetching from the cursor");
            if batch.is_empty() {
                break;
            }
            for row in batch {
                let key: Option<i64> = row.get(1).expect("a bigint key");
                let fp: Option<i64> = row.get(2).expect("a bigint fingerprint");
                if let (Some(key), Some(fp)) = (key, fp) {
                    rows.push((key, fp as u64));
                }
            }
            // SPI keeps every fetched batch until the connection ends:
            // free this one now, or the rows are held twice while they
            // are clustered (bench/clusters.sh: 155 MB peak at 1M rows
            // without this, 134 MB with it).
            // SAFETY: SPI_tuptable is the batch just read, which nothing
            // refers to any more (`batch` was consumed by the loop above).
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
