//! Clustering speed of `simhash_core::clusters::components` on one core:
//! 1,000,000 fingerprints (uniformly random 64-bit values, with 50,000
//! planted groups of 2 to 5 copies each 1 to k bits from its base), for
//! k = 3 and 7. Checks that every planted copy lands in its base's cluster.
//!
//! `cargo run --release -p simhash-bench --bin cluster-throughput [ROWS]`
use std::time::Instant;

use simhash_core::clusters::components;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |a| a.parse().expect("ROWS is a number"));
    for k in [3u32, 7] {
        let mut s = 42;
        let mut fps = Vec::with_capacity(rows);
        let mut planted = Vec::new(); // (base row, copy row)
        while fps.len() < rows {
            let base = splitmix(&mut s);
            let base_row = fps.len();
            fps.push(base);
            if planted.len() < 150_000 && splitmix(&mut s).is_multiple_of(20) {
                for _ in 0..2 + splitmix(&mut s) % 4 {
                    let mut copy = base;
                    for _ in 0..1 + splitmix(&mut s) % u64::from(k) {
                        copy ^= 1 << (splitmix(&mut s) % 64);
                    }
                    planted.push((base_row, fps.len()));
                    fps.push(copy);
                }
            }
        }
        fps.truncate(rows);
        planted.retain(|&(_, c)| c < rows);
        let t0 = Instant::now();
        let labels = components(&fps, k, |_| true)
            .expect("k is supported")
            .expect("not interrupted");
        let secs = t0.elapsed().as_secs_f64();
        let missed = planted
            .iter()
            .filter(|&&(b, c)| labels[b] != labels[c])
            .count();
        let clusters = labels
            .iter()
            .enumerate()
            .filter(|&(i, &l)| l as usize == i)
            .count();
        println!(
            "k={k} rows={rows} seconds={secs:.2} rows_per_s={:.0} clusters={clusters} planted_pairs={} missed={missed}",
            rows as f64 / secs,
            planted.len()
        );
        assert_eq!(missed, 0, "a planted copy was not clustered with its base");
    }
}
