//! `simhash_clusters(...)`: whole-table clustering, the glue around
//! `simhash_core::clusters`. The SQL wrapper in `sql/simhash.sql` builds
//! the query (quoting the names the caller gave) and calls this with it.

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use simhash_core::clusters::{components, MAX_CLUSTER_K};

use crate::errors;

/// How often a long run reports progress.
const NOTICE_EVERY: Duration = Duration::from_secs(5);

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
    if !(0..=MAX_CLUSTER_K as i32).contains(&k) {
        errors::cluster_distance_out_of_range(k, MAX_CLUSTER_K);
    }
    let started = Instant::now();
    let mut last_notice = Instant::now();
    let mut keys: Vec<i64> = Vec::new();
    let mut fps: Vec<u64> = Vec::new();
    Spi::connect(|client| {
        let mut cursor = client.open_cursor(query, &[]);
        loop {
            let batch = cursor.fetch(50_000).expect("fetching from the cursor");
            if batch.is_empty() {
                break;
            }
            for row in batch {
                let key: Option<i64> = row.get(1).expect("a bigint key");
                let fp: Option<i64> = row.get(2).expect("a bigint fingerprint");
                if let (Some(key), Some(fp)) = (key, fp) {
                    keys.push(key);
                    fps.push(fp as u64);
                }
            }
            pgrx::check_for_interrupts!();
            if last_notice.elapsed() >= NOTICE_EVERY {
                last_notice = Instant::now();
                notice!(
                    "simhash_clusters: {} rows read, {:.0} s",
                    keys.len(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    });
    let labels = components(&fps, k as u32, |p| {
        pgrx::check_for_interrupts!();
        if last_notice.elapsed() >= NOTICE_EVERY {
            last_notice = Instant::now();
            notice!(
                "simhash_clusters: {} rows, {} distinct fingerprints, {} of {} bucket passes, {} pairs compared, {:.0} s",
                keys.len(),
                p.distinct,
                p.chunks_done,
                k + 1,
                p.pairs,
                started.elapsed().as_secs_f64()
            );
        }
        true
    })
    .expect("k was checked")
    .expect("a cancel leaves through PostgreSQL's error, not here");
    drop(fps);
    // Each cluster's smallest key, and its size.
    let mut smallest = vec![i64::MAX; keys.len()];
    let mut size = vec![0u32; keys.len()];
    for (row, &label) in labels.iter().enumerate() {
        let l = label as usize;
        smallest[l] = smallest[l].min(keys[row]);
        size[l] += 1;
    }
    let rows: Vec<(i64, i64)> = labels
        .iter()
        .enumerate()
        .filter(|&(_, &l)| singletons || size[l as usize] > 1)
        .map(|(row, &l)| (keys[row], smallest[l as usize]))
        .collect();
    TableIterator::new(rows)
}
