//! The 5-gram overlap of two texts ([`overlap_bytes_checked`]) and the
//! candidate keys of a text ([`simhash_core::lsh::keys_checked`]) hold
//! bounded memory whatever the texts: a run of one repeated character,
//! whose every gram is the same key, takes no more than a text of
//! distinct grams. The allocator of this test counts the bytes held and
//! their peak; the tests of this file run one at a time, so that the
//! peak is the measured call's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use simhash_core::lsh;
use simhash_core::similarity::{
    gram_keys_checked, overlap_bytes_checked, GramOverlap, JACCARD_GRAM,
};

/// The system allocator, counting.
struct Counting;

/// Bytes held now.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The most bytes held since the last reset.
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn held(more: usize) {
    let now = CURRENT.fetch_add(more, Ordering::SeqCst) + more;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

fn freed(less: usize) {
    CURRENT.fetch_sub(less, Ordering::SeqCst);
}

// Reason: a global allocator is an unsafe trait; each method hands the
// caller's contract on to `System` unchanged and only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            held(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            held(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        freed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as both blocks held for a moment (a move holds them
        // both), then the old one given back: an upper bound.
        held(new_size);
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            freed(new_size);
        } else {
            freed(layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests of this file, one at a time.
fn alone() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `f` returns, and the most bytes it held at once beyond what was
/// held before it (the inputs, made before, are not counted).
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = CURRENT.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(before))
}

/// The promise of `overlap_bytes_checked` (two texts' keys, 16 MiB each),
/// with room for the normalization's tables, built on first use.
const BOUND: usize = 40 << 20;

fn overlap(a: &[u8], b: &[u8]) -> (GramOverlap, usize) {
    let (o, peak) = peak_of(|| overlap_bytes_checked(a, b, || true));
    (o.expect("UTF-8, never stopped"), peak)
}

/// The overlap written plainly: the sets of each text's gram keys.
fn plain(a: &[u8], b: &[u8]) -> GramOverlap {
    let set = |t: &[u8]| {
        let mut s = HashSet::new();
        gram_keys_checked(
            t,
            JACCARD_GRAM,
            || true,
            |k| {
                s.insert(k);
            },
        )
        .expect("UTF-8");
        s
    };
    let (sa, sb) = (set(a), set(b));
    GramOverlap {
        a: sa.len() as u64,
        b: sb.len() as u64,
        both: sa.intersection(&sb).count() as u64,
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `len` bytes of lower-case ASCII letters and spaces.
fn random_text(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| match splitmix(state) % 32 {
            v @ 0..=25 => b'a' + v as u8,
            _ => b' ',
        })
        .collect()
}

const RUN: usize = 100_000_000;

#[test]
fn a_run_of_one_character_against_a_short_text() {
    let _alone = alone();
    let run = vec![b'a'; RUN];
    let (o, peak) = overlap(&run, b"aaaaaaa");
    eprintln!("run of {RUN} against 7: peak {peak} bytes");
    assert_eq!((o.a, o.b, o.both), (1, 1, 1));
    assert!(peak < BOUND, "peak {peak} bytes");
    // Either way round.
    let (o, peak) = overlap(b"aaaaaaa", &run);
    assert_eq!((o.a, o.b, o.both), (1, 1, 1));
    assert!(peak < BOUND, "peak {peak} bytes");
}

#[test]
fn two_runs_of_different_lengths() {
    let _alone = alone();
    let (long, short) = (vec![b'a'; RUN], vec![b'a'; RUN / 5 * 3]);
    let (o, peak) = overlap(&long, &short);
    eprintln!(
        "runs of {} and {}: peak {peak} bytes",
        long.len(),
        short.len()
    );
    assert_eq!((o.a, o.b, o.both), (1, 1, 1));
    assert_eq!(o.jaccard(), 1.0);
    assert!(peak < BOUND, "peak {peak} bytes");
    // Runs of two characters that differ: no gram in common.
    let other = vec![b'b'; RUN / 5];
    let (o, peak) = overlap(&long, &other);
    assert_eq!((o.a, o.b, o.both), (1, 1, 0));
    assert!(peak < BOUND, "peak {peak} bytes");
}

#[test]
fn many_distinct_grams_give_the_plain_sets_answer() {
    let _alone = alone();
    let mut state = 5;
    // About four million grams, nearly all distinct: more than one text's
    // share of the bound, so the key space is taken a part at a time.
    let a = random_text(&mut state, 4 << 20);
    let mut b = a[1 << 20..].to_vec();
    b.extend(random_text(&mut state, 1 << 20));
    let (o, peak) = overlap(&a, &b);
    eprintln!(
        "random texts of {} and {}: peak {peak} bytes",
        a.len(),
        b.len()
    );
    assert!(peak < BOUND, "peak {peak} bytes");
    let want = plain(&a, &b);
    assert!(want.a > 2_500_000 && want.both > 2_000_000, "{want:?}");
    assert_eq!(o, want);
    // A text of repeats and distinct grams both.
    let mut c = vec![b'x'; 3 << 20];
    c.extend(&a[..2 << 20]);
    c.extend(vec![b'y'; 1 << 20]);
    let (o, peak) = overlap(&c, &a);
    assert!(peak < BOUND, "peak {peak} bytes");
    assert_eq!(o, plain(&c, &a));
}

#[test]
fn small_texts_give_the_plain_sets_answer() {
    let _alone = alone();
    let mut state = 6;
    for _ in 0..200 {
        let la = (splitmix(&mut state) % 400) as usize;
        let lb = (splitmix(&mut state) % 400) as usize;
        let a = random_text(&mut state, la);
        let mut b = a[la / 3..].to_vec();
        b.extend(random_text(&mut state, lb));
        assert_eq!(overlap(&a, &b).0, plain(&a, &b));
        assert_eq!(overlap(&b, &a).0, plain(&b, &a));
    }
    for (a, b) in [
        ("", ""),
        ("", "!!"),
        ("abc", "ABC."),
        ("ab cd ef gh", "abcdefgh"),
        ("國務院總理", "国务院总理 发表讲话"),
    ] {
        assert_eq!(
            overlap(a.as_bytes(), b.as_bytes()).0,
            plain(a.as_bytes(), b.as_bytes()),
            "{a:?} {b:?}"
        );
    }
}

#[test]
fn lsh_keys_of_a_run_hold_no_memory_for_the_text() {
    let _alone = alone();
    // The tables built before the measure.
    let short = lsh::keys("aaaaaaa");
    let run = vec![b'a'; RUN / 5];
    let (keys, peak) = peak_of(|| lsh::keys_checked(&run, || true));
    eprintln!("lsh keys of a run of {}: peak {peak} bytes", run.len());
    // The distinct grams of the run are the one gram of the short text.
    assert_eq!(keys, Ok(short));
    assert!(peak < 1 << 20, "peak {peak} bytes");
}
