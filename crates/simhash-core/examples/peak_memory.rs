//! Peak memory and time of one fingerprint (or one feature listing) of a
//! generated hostile text, for the memory bound in the README:
//!
//! ```text
//! cargo run --release -p simhash-core --example peak_memory -- WHAT TEXT MB
//! ```
//!
//! * `WHAT`: `v1`, `v2`, `v3` (`Fingerprinter::fingerprint_as`) or
//!   `features-v1`, `features-v2`, `features-v3`
//!   (`Fingerprinter::features_as`, what `simhash_features*` return);
//! * `TEXT`: `hangul`, random Hangul syllables with no space (version 3
//!   makes about one distinct trigram per character, the worst case);
//!   `ascii`, random lower-case ASCII words of 1 to 10 letters between
//!   spaces (about one distinct word per word); `han`, random CJK unified
//!   ideographs with no space (jieba makes one- and two-character tokens);
//! * `MB`: the text's length in 10^6 bytes of UTF-8.
//!
//! The text is made and the fingerprinter loaded first; then the peak
//! resident set (`VmHWM`) is reset (`/proc/self/clear_refs`, Linux) and the
//! call is timed. Printed as `key=value` lines: `input_bytes`, `rss_before`
//! (resident bytes just before the call: text and tables), `peak_during`
//! (the peak resident bytes during the call), `extra` (`peak_during -
//! rss_before`, what the call itself needed), `extra_per_input_byte`,
//! `seconds`, `seconds_per_mb`, and `result`; and `heap_peak`, the most
//! bytes the call had allocated at once (from a counting allocator: what
//! the code asks for, without the C allocator's own slack), with
//! `heap_peak_per_input_byte`; and `go_on_calls`, how often the call
//! checked for interruption (once a piece in every walk over the text).
// The counting allocator below is the one unsafe impl, and only here.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use simhash_core::{Fingerprinter, Version};

/// The system allocator, counting the bytes allocated now and at most.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as the old and the new block side by side, the most
            // a moving realloc holds.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// SplitMix64: a fixed, seeded stream, so runs compare.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn make_text(kind: &str, bytes: usize) -> Option<String> {
    let mut s = 42u64;
    let mut text = String::with_capacity(bytes + 16);
    match kind {
        "hangul" => {
            while text.len() < bytes {
                let c = 0xAC00 + (splitmix(&mut s) % 11_172) as u32;
                text.push(char::from_u32(c)?);
            }
        }
        "han" => {
            while text.len() < bytes {
                let c = 0x4E00 + (splitmix(&mut s) % 20_902) as u32;
                text.push(char::from_u32(c)?);
            }
        }
        "ascii" => {
            while text.len() < bytes {
                let r = splitmix(&mut s);
                for i in 0..=(r % 10) {
                    text.push(char::from(b'a' + ((r >> (8 + 5 * i)) % 26) as u8));
                }
                text.push(' ');
            }
        }
        _ => return None,
    }
    Some(text)
}

/// A `kB` line of `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: peak_memory v1|v2|v3|features-v1|features-v2|features-v3 hangul|ascii|han MB";
    let [what, kind, mb] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let (features, version) = match what.as_str() {
        "v1" => (false, Version::V1),
        "v2" => (false, Version::V2),
        "v3" => (false, Version::V3),
        "features-v1" => (true, Version::V1),
        "features-v2" => (true, Version::V2),
        "features-v3" => (true, Version::V3),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let Ok(mb) = mb.parse::<f64>() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let Some(text) = make_text(kind, (mb * 1e6) as usize) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let fp = Fingerprinter::new();
    // Warm up the tables (and jieba's lazily built parts) on a short text.
    let _ = fp.fingerprint_as(version, "今天天气很好 the weather is fine 오늘");
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_bytes("VmRSS:");
    let heap_before = LIVE.load(Ordering::Relaxed);
    PEAK.store(heap_before, Ordering::Relaxed);
    let start = Instant::now();
    let mut calls = 0u64;
    let result = if features {
        match fp.features_as(version, &text, || {
            calls += 1;
            true
        }) {
            Ok(f) => format!("{} features", f.len()),
            Err(e) => format!("error: {e:?}"),
        }
    } else {
        let fingerprint = fp.fingerprint_checked_as(version, &text, || {
            calls += 1;
            true
        });
        match fingerprint {
            Ok(Some(v)) => simhash_core::hex::format(v),
            Ok(None) => "NULL".to_owned(),
            Err(e) => format!("error: {e:?}"),
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let heap_peak = PEAK.load(Ordering::Relaxed) - heap_before;
    let peak = status_bytes("VmHWM:");
    let extra = peak.saturating_sub(before);
    println!("what={what}");
    println!("text={kind}");
    println!("input_bytes={}", text.len());
    println!("peak_reset={reset}");
    println!("rss_before={before}");
    println!("peak_during={peak}");
    println!("extra={extra}");
    println!(
        "extra_per_input_byte={:.3}",
        extra as f64 / text.len() as f64
    );
    println!("heap_peak={heap_peak}");
    println!(
        "heap_peak_per_input_byte={:.3}",
        heap_peak as f64 / text.len() as f64
    );
    println!("seconds={seconds:.3}");
    println!("seconds_per_mb={:.4}", seconds / (text.len() as f64 / 1e6));
    println!("result={result}");
    // How many times the interruption check ran: once a piece (or a batch
    // of Han pieces) of each walk over the text.
    println!("go_on_calls={calls}");
}
