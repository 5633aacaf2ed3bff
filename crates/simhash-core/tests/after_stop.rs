//! Per-thread state is right after a walk that stopped half way: a cancel
//! (the caller's `go_on` says stop, or PostgreSQL's error unwinds through
//! it as a panic) or invalid UTF-8 in the middle of a long text must not
//! change any later fingerprint of the same thread.

use std::panic::{catch_unwind, AssertUnwindSafe};

use simhash_core::{BytesError, Fingerprinter, Version};

const PROBE: &str = "the quick brown fox jumps over the lazy dog; alpha bravo charlie";

fn shared() -> &'static Fingerprinter {
    static FP: std::sync::OnceLock<Fingerprinter> = std::sync::OnceLock::new();
    FP.get_or_init(Fingerprinter::new)
}

fn long_text() -> String {
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet ".repeat(20_000)
}

fn fresh(fp: &Fingerprinter, text: &str) -> Option<u64> {
    // Another thread: its own per-thread state, never touched before.
    std::thread::scope(|s| {
        s.spawn(|| fp.fingerprint_as(Version::V3, text))
            .join()
            .unwrap()
    })
}

fn check_probes(fp: &Fingerprinter) {
    // Golden values of the extension's `simhash()` (definition 3).
    for (text, want) in [
        (PROBE, 0xa2bf_d9fd_751e_91b4),
        ("alpha bravo charlie", 0x2495_f3fd_2c6c_9934),
    ] {
        let got = fp.fingerprint_bytes_checked_as(Version::V3, text.as_bytes(), || true);
        assert_eq!(got.unwrap(), Some(want), "{text:?}");
    }
    for text in [
        PROBE,
        "alpha bravo charlie",
        "日本語と中文：新华社北京电，记者报道。",
    ] {
        let got = fp
            .fingerprint_bytes_checked_as(Version::V3, text.as_bytes(), || true)
            .unwrap();
        assert_eq!(got, fresh(fp, text), "{text:?} after a stopped walk");
    }
}

#[test]
fn a_stop_half_way_leaves_nothing_behind() {
    let fp = shared();
    let text = long_text();
    for stop_after in [1, 2, 5, 30] {
        let mut calls = 0;
        let got = fp.fingerprint_bytes_checked_as(Version::V3, text.as_bytes(), || {
            calls += 1;
            calls < stop_after
        });
        assert!(matches!(got, Err(BytesError::Interrupted)), "{got:?}");
        check_probes(fp);
    }
}

#[test]
fn an_unwind_half_way_leaves_nothing_behind() {
    let fp = shared();
    let text = long_text();
    for stop_after in [1, 3, 10] {
        let mut calls = 0;
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            fp.fingerprint_bytes_checked_as(Version::V3, text.as_bytes(), || {
                calls += 1;
                if calls >= stop_after {
                    panic!("canceling statement due to user request");
                }
                true
            })
        }));
        assert!(unwound.is_err());
        check_probes(fp);
    }
}

#[test]
fn invalid_utf8_half_way_leaves_nothing_behind() {
    let fp = shared();
    let mut bytes = long_text().into_bytes();
    let at = bytes.len() * 2 / 3;
    bytes[at] = 0xff;
    let got = fp.fingerprint_bytes_checked_as(Version::V3, &bytes, || true);
    assert!(matches!(got, Err(BytesError::NotUtf8)), "{got:?}");
    check_probes(fp);
}
