//! In-server tests (`cargo pgrx test`): what needs a running backend. The
//! SQL-visible edge cases live in `tests/sql`, with expected output.

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    const TEXTS: &[&str] = &[
        "中华人民共和国成立于1949年，首都是北京。",
        "The quick brown fox jumps over the lazy dog.",
        "苹果公司发布了新款iPhone 15 Pro，售价7999元起。",
        "ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ",
        "",
        "，。！",
        "國務院總理會見日本客人 銀行 銀行 銀行 銀行",
    ];

    #[pg_test]
    fn the_preloaded_fingerprinter_is_inherited_from_the_postmaster() {
        // The test cluster preloads the library (see `pg_test` in lib.rs), so
        // this backend must find the dictionaries built before it was forked,
        // without having called simhash() yet.
        assert!(crate::functions::fingerprinter_is_built());
    }

    #[pg_test]
    fn sql_fingerprints_equal_the_core_crate() {
        let core = simhash_core::Fingerprinter::new();
        for text in TEXTS {
            for (function, version) in [
                ("simhash", simhash_core::Version::V3),
                ("simhash_v2", simhash_core::Version::V2),
                ("simhash_v1", simhash_core::Version::V1),
            ] {
                let sql = Spi::get_one_with_args::<i64>(
                    &format!("SELECT {function}($1)::bigint"),
                    &[(*text).into()],
                )
                .expect("the query runs");
                let want = core.fingerprint_as(version, text).map(|v| v as i64);
                assert_eq!(sql, want, "{function}({text:?})");
            }
        }
    }

    #[pg_test]
    fn the_type_is_eight_bytes_by_value() {
        let row = Spi::get_two::<i16, bool>(
            "SELECT typlen, typbyval FROM pg_type WHERE typname = 'simhash64'",
        );
        assert_eq!(row, Ok((Some(8), Some(true))));
    }

    #[pg_test]
    fn text_and_bigint_forms_agree() {
        let v = Spi::get_one::<i64>("SELECT 'fedcba9876543210'::simhash64::bigint");
        assert_eq!(v, Ok(Some(0xfedc_ba98_7654_3210_u64 as i64)));
        let t = Spi::get_one::<String>("SELECT (-2)::bigint::simhash64::text");
        assert_eq!(t, Ok(Some("fffffffffffffffe".to_string())));
    }

    #[pg_test(error = "invalid input syntax for type simhash64: \"0123456789abcdez\"")]
    fn a_bad_literal_is_an_error() {
        let _ = Spi::get_one::<i64>("SELECT '0123456789abcdez'::simhash64::bigint");
    }

    #[pg_test]
    fn a_band_that_does_not_exist_is_null_not_an_error() {
        // simhash_band is LEAKPROOF, so it may raise no error for any input.
        for n in [-1, 4, 7, i32::MAX] {
            let v = Spi::get_one::<i32>(&format!("SELECT simhash_band('0123456789abcdef', {n})"));
            assert_eq!(v, Ok(None), "band {n}");
        }
        let v = Spi::get_one::<i32>("SELECT simhash_band('0123456789abcdef', 3)");
        assert_eq!(v, Ok(Some(0xcdef)));
    }

    #[pg_test]
    fn hamming_and_the_operator_agree() {
        let row = Spi::get_two::<i32, i32>(
            "SELECT hamming(simhash('北京天气'), simhash('上海天气')), \
                    simhash('北京天气') <~> simhash('上海天气')",
        )
        .expect("the query runs");
        assert_eq!(row.0, row.1);
        assert!(row.0.is_some_and(|d| (0..=64).contains(&d)));
    }

    #[cfg(feature = "pg18")]
    #[pg_test]
    fn postgresql_18_lists_the_module_by_name_and_version() {
        let row = Spi::get_two::<String, String>(
            "SELECT module_name, version FROM pg_get_loaded_modules() WHERE file_name = 'simhash.so'",
        );
        assert_eq!(
            row,
            Ok((
                Some("simhash".to_string()),
                Some(env!("CARGO_PKG_VERSION").to_string())
            ))
        );
    }
}
