//! Which vector instructions the hot kernels use: the x86-64 baseline
//! (SSE2, through `wide`) everywhere, and on a processor that has them,
//! AVX2 or AVX-512 versions of the same kernels, chosen once at run time.
//!
//! The weights' and the counters' wider versions are the same safe Rust
//! source compiled with more instructions allowed (`#[target_feature]`):
//! the same IEEE operations in the same order on each lane, so the same
//! bits. One kernel is written with the intrinsics themselves, as no
//! compiler finds it: runs of ideographs sixteen at a time
//! (`fingerprint/wide.rs`, AVX-512 with VBMI, or with BW alone). The
//! tests run every level the processor has against the baseline.
//!
//! `SIMHASH_SIMD` caps the level: `baseline`, `avx2`, `avx512-novbmi`
//! (AVX-512 as on a processor without VBMI: Intel's Skylake-SP and
//! Cascade Lake, x86-64-v4 without more) or `avx512` (everything there
//! is). A processor with AVX-512 but without VBMI is found at
//! `avx512-novbmi`; the cap lets a processor with VBMI measure and test
//! that level too.

use std::sync::OnceLock;

/// A set of vector instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    /// The x86-64 baseline (SSE2), or any other architecture.
    Baseline,
    /// AVX2 (x86-64-v3: Intel since 2013, AMD since 2015).
    Avx2,
    /// AVX-512 F, DQ, BW and VL (x86-64-v4), without VBMI: the weights
    /// and counters of [`Simd::Avx512`], runs of ideographs without its
    /// byte permutes.
    Avx512NoVbmi,
    /// AVX-512 F, DQ, BW and VL with VBMI (and POPCNT, LZCNT, BMI1 and
    /// BMI2, which every processor with VBMI has): Intel since Ice Lake,
    /// AMD since Zen 4.
    Avx512,
}

impl Simd {
    /// Every level, narrowest first.
    pub const ALL: [Simd; 4] = [Simd::Baseline, Simd::Avx2, Simd::Avx512NoVbmi, Simd::Avx512];

    /// Whether `self` has AVX-512's F, DQ, BW and VL, with or without VBMI:
    /// the levels that take the AVX-512 weights and counters.
    pub fn is_avx512(self) -> bool {
        self >= Simd::Avx512NoVbmi
    }

    /// The widest level this processor has, found once per process, at
    /// most the one `SIMHASH_SIMD` names ([`Simd::capped`]).
    pub fn detected() -> Simd {
        static DETECTED: OnceLock<Simd> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            let setting = std::env::var("SIMHASH_SIMD").ok();
            Simd::capped(detect(), setting.as_deref())
        })
    }

    /// `found`, the level a processor has, capped by `setting`, the
    /// value of `SIMHASH_SIMD`: the narrower of the two when it names a
    /// level (in any case, spaces around it allowed), `found` itself when
    /// it is unset or names none.
    pub fn capped(found: Simd, setting: Option<&str>) -> Simd {
        let named = setting.and_then(|s| Simd::from_name(&s.trim().to_ascii_lowercase()));
        named.map_or(found, |cap| cap.min(found))
    }

    /// Whether this processor has the instructions of `self`.
    pub fn available(self) -> bool {
        self <= Simd::detected()
    }

    /// The level's name, as `fingerprint-stages --simd` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Simd::Baseline => "baseline",
            Simd::Avx2 => "avx2",
            Simd::Avx512NoVbmi => "avx512-novbmi",
            Simd::Avx512 => "avx512",
        }
    }

    /// The level named `name`.
    pub fn from_name(name: &str) -> Option<Simd> {
        Simd::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Simd {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx2")
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512vbmi") && has!("popcnt") && has!("lzcnt") && has!("bmi1") && has!("bmi2") {
            Simd::Avx512
        } else {
            Simd::Avx512NoVbmi
        }
    } else if std::arch::is_x86_feature_detected!("avx2") {
        Simd::Avx2
    } else {
        Simd::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Simd {
    Simd::Baseline
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_both_ways_and_the_baseline_is_always_there() {
        for s in Simd::ALL {
            assert_eq!(Simd::from_name(s.name()), Some(s));
        }
        assert_eq!(Simd::from_name("sse9"), None);
        assert!(Simd::Baseline.available());
        assert!(Simd::detected().available());
    }

    #[test]
    fn the_setting_only_ever_lowers_the_level() {
        use Simd::*;
        for found in Simd::ALL {
            assert_eq!(Simd::capped(found, None), found);
            for junk in ["", "sse9", "avx", "avx-512", "avx512novbmi", "1"] {
                assert_eq!(Simd::capped(found, Some(junk)), found, "{junk:?}");
            }
            for cap in Simd::ALL {
                assert_eq!(Simd::capped(found, Some(cap.name())), cap.min(found));
            }
        }
        assert_eq!(Simd::capped(Avx512, Some("avx2")), Avx2);
        assert_eq!(Simd::capped(Avx512, Some(" AVX2\n")), Avx2);
        assert_eq!(Simd::capped(Avx2, Some("avx512")), Avx2);
        assert_eq!(Simd::capped(Baseline, Some("avx512")), Baseline);
        assert_eq!(Simd::capped(Avx512, Some("baseline")), Baseline);
        assert_eq!(Simd::capped(Avx512, Some("avx512-novbmi")), Avx512NoVbmi);
        assert_eq!(Simd::capped(Avx512, Some(" AVX512-NoVBMI ")), Avx512NoVbmi);
        assert_eq!(Simd::capped(Avx512NoVbmi, Some("avx512")), Avx512NoVbmi);
        assert_eq!(Simd::capped(Avx2, Some("avx512-novbmi")), Avx2);
        assert!(Avx512.is_avx512() && Avx512NoVbmi.is_avx512() && !Avx2.is_avx512());
    }
}
