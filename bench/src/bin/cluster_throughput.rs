//! Clustering speed and memory on one core, release build.
//!
//! Data sets, `ROWS` rows each (default 1,000,000), keys `0..ROWS`:
//!
//! * `random`: uniformly random 64-bit fingerprints, with 50,000 planted
//!   groups (a base and 1 to 4 copies, each exactly 1 to `k` bits from the
//!   base);
//! * `hot`: the same, except that every fingerprint has band 0 = `0xBEEF`
//!   (copies differ only in the other 48 bits): one bucket holding every
//!   row, the case a band-by-band pairwise comparison cannot survive;
//! * `code` (k <= 3 only, nothing planted): every fingerprint has the same
//!   high 40 bits, and the low 24 bits are one of the 262,144 codewords of
//!   a shortened extended Hamming code, so no two distinct fingerprints
//!   are within 3 bits although they all vary in the same 24 bits: built
//!   so that groups stay large level after level and no join lets work be
//!   skipped, an adversarial case for the recursion.
//!
//! Each run clusters one data set at one `k` (3, 7 and 11 unless `--k`
//! lists others) with `simhash_core::cluster::cluster`, and checks that
//! every planted copy is in its base's cluster. With `--compare`, the older
//! clustering of version 0.1 (`bench/src/baseline_clusters.rs`, k <= 7 only) runs on the same
//! rows too, and must give the same number of clusters.
//!
//! Every run is a child process of its own, so that its peak resident
//! memory (`VmHWM`) is its own: `extra_mb` is that peak minus the resident
//! memory just before clustering (the input rows, 16 bytes each, are
//! already there). `pairs` is how many fingerprint pairs were compared
//! (`-` for `components`, which does not say), and `sort/search/label`
//! the seconds spent in each phase.
//!
//! ```text
//! cargo run --release -p simhash-bench --bin cluster-throughput [ROWS] [--compare] [--k 3,7,11]
//! ```

use std::process::Command;
use std::time::Instant;

use simhash_core::cluster::{cluster, Phase};
#[path = "../baseline_clusters.rs"]
mod baseline_clusters;

use baseline_clusters::{components, MAX_CLUSTER_K};

const GROUPS: usize = 50_000;
/// The `code` set's messages: 18 bits, so its 262,144 codewords fill a
/// 24-bit subspace as densely as a minimum distance of 4 allows.
const CODE_MESSAGES: u64 = (1 << 18) - 1;
const USAGE: &str = "usage: cluster-throughput [ROWS] [--compare] [--k K,K,...]";

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `fp` with exactly `n` bits flipped, all inside `mask`.
fn flip(s: &mut u64, fp: u64, n: u32, mask: u64) -> u64 {
    let mut diff = 0u64;
    while diff.count_ones() < n {
        diff |= (1u64 << (splitmix(s) % 64)) & mask;
    }
    fp ^ diff
}

/// A codeword of the extended Hamming code [32, 26, 4] for the low 26 bits
/// of `m`: any two codewords differ in at least 4 bits.
fn codeword(m: u64) -> u64 {
    let mut w = 0u64;
    let mut bit = 0;
    for pos in 1..32u64 {
        if !pos.is_power_of_two() {
            w |= (m >> bit & 1) << pos;
            bit += 1;
        }
    }
    // Parity bits at positions 1, 2, 4, 8, 16: the XOR of the positions of
    // the set bits becomes 0.
    let syndrome = (1..32u64)
        .filter(|&pos| w >> pos & 1 == 1)
        .fold(0, |x, pos| x ^ pos);
    for i in 0..5 {
        w |= (syndrome >> i & 1) << (1u64 << i);
    }
    w | u64::from(w.count_ones() % 2)
}

/// Rows `(key, fingerprint)`, and planted `(base key, copy key)` pairs.
type Data = (Vec<(i64, u64)>, Vec<(usize, usize)>);

/// The rows of a data set, and its planted pairs.
fn data(rows: usize, k: u32, set: &str) -> Data {
    let mut s = 42;
    let (fixed, free) = match set {
        "hot" => (0xBEEF_u64 << 48, u64::MAX >> 16),
        "code" => (0xC0DE_C0DE_u64 << 32, u64::MAX >> 32),
        _ => (0, u64::MAX),
    };
    let value = |s: &mut u64| {
        let r = splitmix(s);
        if set == "code" {
            fixed | codeword(r & CODE_MESSAGES)
        } else {
            fixed | (r & free)
        }
    };
    let mut out: Vec<(i64, u64)> = Vec::with_capacity(rows + 4);
    let mut planted = Vec::with_capacity(GROUPS * 5 / 2);
    let groups = if set == "code" { 0 } else { GROUPS };
    for _ in 0..groups {
        let base = value(&mut s);
        let base_row = out.len();
        out.push((base_row as i64, base));
        for _ in 0..1 + splitmix(&mut s) % 4 {
            let d = 1 + (splitmix(&mut s) % u64::from(k)) as u32;
            planted.push((base_row, out.len()));
            out.push((out.len() as i64, flip(&mut s, base, d, free)));
        }
    }
    while out.len() < rows {
        out.push((out.len() as i64, value(&mut s)));
    }
    out.truncate(rows);
    planted.retain(|&(_, c)| c < rows);
    (out, planted)
}

/// A field of `/proc/self/status`, in kB (0 where there is none).
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0)
}

/// One run, in this process: prints one line.
fn one(set: &str, k: u32, algo: &str, rows: usize) {
    let (mut input, planted) = data(rows, k, set);
    let fps: Vec<u64> = if algo == "components" {
        input.iter().map(|&(_, fp)| fp).collect()
    } else {
        Vec::new()
    };
    let before_kb = status_kb("VmRSS");
    let t0 = Instant::now();
    let mut pairs = None;
    // Seconds from the start to the search and to the labelling.
    let (mut search_at, mut label_at) = (None, None);
    // The cluster (smallest key, or first row) of each row, by key.
    // Time and peak memory are taken as soon as the clustering returns.
    let (secs, extra_kb, cluster_of): (f64, u64, Vec<i64>) = if algo == "components" {
        let labels = components(&fps, k, |_| true)
            .expect("k is supported")
            .expect("not interrupted");
        let secs = t0.elapsed().as_secs_f64();
        let extra_kb = status_kb("VmHWM").saturating_sub(before_kb);
        (secs, extra_kb, labels.into_iter().map(i64::from).collect())
    } else {
        let out = cluster(&mut input, k, &mut |p| {
            pairs = Some(p.pairs);
            let at = Some(t0.elapsed().as_secs_f64());
            match p.phase {
                Phase::Search => search_at = search_at.or(at),
                Phase::Label => label_at = label_at.or(at),
                Phase::Sort => {}
            }
            true
        })
        .expect("k is supported");
        let secs = t0.elapsed().as_secs_f64();
        let extra_kb = status_kb("VmHWM").saturating_sub(before_kb);
        let mut cluster_of = vec![0i64; rows];
        for &(key, c) in &out {
            cluster_of[key as usize] = c;
        }
        (secs, extra_kb, cluster_of)
    };
    // Sort (and collapse), search, label: seconds each.
    let phases = match (search_at, label_at) {
        (Some(s), Some(l)) => format!("{s:.2}/{:.2}/{:.2}", l - s, secs - l),
        _ => "-".to_owned(),
    };
    let clusters = cluster_of
        .iter()
        .enumerate()
        .filter(|&(i, &c)| c == i as i64)
        .count();
    let missed = planted
        .iter()
        .filter(|&&(b, c)| cluster_of[b] != cluster_of[c])
        .count();
    println!(
        "algo={algo} data={set} k={k} rows={rows} seconds={secs:.2} rows_per_s={:.0} sort/search/label={phases} clusters={clusters} planted_pairs={} missed={missed} pairs={} extra_mb={:.0} extra_bytes_per_row={:.0}",
        rows as f64 / secs,
        planted.len(),
        pairs.map_or("-".to_owned(), |p| p.to_string()),
        extra_kb as f64 / 1024.0,
        extra_kb as f64 * 1024.0 / rows as f64,
    );
    assert_eq!(missed, 0, "a planted copy was not clustered with its base");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        let [_, set, k, algo, rows] = &args[..] else {
            panic!("--one SET K ALGO ROWS");
        };
        one(
            set,
            k.parse().expect(USAGE),
            algo,
            rows.parse().expect(USAGE),
        );
        return;
    }
    let mut rows = 1_000_000usize;
    let mut compare = false;
    let mut ks = vec![3u32, 7, 11];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--compare" {
            compare = true;
        } else if arg == "--k" {
            let list = args.next().expect(USAGE);
            ks = list.split(',').map(|k| k.parse().expect(USAGE)).collect();
        } else {
            rows = arg.parse().expect(USAGE);
        }
    }
    let me = std::env::current_exe().expect("the benchmark's own path");
    for set in ["random", "hot", "code"] {
        for &k in &ks {
            if set == "code" && k > 3 {
                continue;
            }
            let mut algos = vec!["cluster"];
            if compare && k <= MAX_CLUSTER_K {
                algos.push("components");
            }
            let mut counts = Vec::new();
            for algo in algos {
                let out = Command::new(&me)
                    .args(["--one", set, &k.to_string(), algo, &rows.to_string()])
                    .output()
                    .expect("running a child");
                let line = String::from_utf8_lossy(&out.stdout);
                print!("{line}");
                eprint!("{}", String::from_utf8_lossy(&out.stderr));
                assert!(out.status.success(), "{algo} {set} k={k} failed");
                counts.extend(
                    line.split_whitespace()
                        .find_map(|f| f.strip_prefix("clusters="))
                        .map(str::to_owned),
                );
            }
            // Both are exact: the same partition, so the same count.
            assert!(
                counts.windows(2).all(|w| w[0] == w[1]),
                "the clusterings differ"
            );
        }
    }
}
