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
    fn a_generic_plan_fingerprints_its_parameter_once_per_execution() {
        // A generic plan keeps simhash($1) as a call that the executor
        // evaluates for every row that reaches it (here all 2,000, by a
        // scan): computed once an execution, not once a row.
        Spi::run(
            "CREATE TABLE generic_t AS SELECT i AS id, \
                 (CASE WHEN i % 2 = 0 THEN '0000000000000000' ELSE 'ffffffffffffffff' END)::simhash64 AS fp \
               FROM generate_series(1, 2000) i; \
             SET plan_cache_mode = force_generic_plan; \
             PREPARE generic_q(text) AS SELECT count(*) FROM generic_t WHERE fp <~> simhash($1) <= 3",
        )
        .expect("the set-up runs");
        let before = crate::functions::computed_at_call_sites();
        for text in [
            "a first query text",
            "a second, different one",
            "a first query text",
        ] {
            let count = Spi::get_one_with_args::<i64>(
                "SELECT count(*) FROM generic_t WHERE fp <~> simhash($1) <= 64",
                &[text.into()],
            );
            assert_eq!(count, Ok(Some(2000)));
            Spi::run(&format!("EXECUTE generic_q('{text}')")).expect("the execution runs");
        }
        let computed = crate::functions::computed_at_call_sites() - before;
        assert!(
            computed <= 6,
            "{computed} fingerprints for 6 executions of 2,000 rows"
        );
    }

    #[pg_test]
    fn a_generic_plan_computes_the_keys_of_its_parameter_once_per_execution() {
        // The second source's filter in a generic plan:
        // simhash_lsh_shared(keys, simhash_lsh($1)) on every row.
        Spi::run(
            "CREATE TABLE generic_lsh AS SELECT i AS id, simhash_lsh('row ' || i || ' of a table of texts') AS k \
               FROM generate_series(1, 2000) i; \
             SET plan_cache_mode = force_generic_plan; \
             PREPARE generic_lsh_q(text) AS SELECT count(*) FROM generic_lsh \
               WHERE simhash_lsh_shared(k, simhash_lsh($1)) >= 0",
        )
        .expect("the set-up runs");
        let before = crate::functions::computed_at_call_sites();
        for text in ["a first query text", "a second one", "a first query text"] {
            let count = Spi::get_one::<i64>(&format!("EXECUTE generic_lsh_q('{text}')"));
            assert_eq!(count, Ok(Some(2000)));
        }
        let computed = crate::functions::computed_at_call_sites() - before;
        assert!(
            computed <= 3,
            "{computed} keys computed for 3 executions of 2,000 rows"
        );
        // And a PL/pgSQL expression kept across values: each its own keys.
        Spi::run(
            "DO $$ DECLARE t text; BEGIN \
               FOR i IN 1..20 LOOP \
                 t := 'row ' || i || ' of a table of texts'; \
                 IF simhash_lsh(t) IS DISTINCT FROM (SELECT k FROM generic_lsh WHERE id = i) THEN \
                   RAISE EXCEPTION 'the keys of % are not its own', t; \
                 END IF; \
               END LOOP; END $$",
        )
        .expect("every value gets its own keys");
    }

    #[pg_test]
    fn a_plpgsql_expression_kept_across_values_fingerprints_each_value() {
        // PL/pgSQL keeps a simple expression's state for the whole
        // transaction and evaluates it again with other values of its
        // variables: what a call site keeps must not outlive its text.
        Spi::run(
            "CREATE TABLE plpgsql_t AS SELECT i, simhash('text number ' || i || ' of many') AS h \
               FROM generate_series(1, 50) i; \
             DO $$ DECLARE r record; t text; BEGIN \
               FOR r IN SELECT * FROM plpgsql_t ORDER BY i LOOP \
                 t := 'text number ' || r.i || ' of many'; \
                 IF simhash(t) IS DISTINCT FROM r.h THEN \
                   RAISE EXCEPTION 'simhash(%) is %, not %', t, simhash(t), r.h; \
                 END IF; \
               END LOOP; END $$",
        )
        .expect("every value gets its own fingerprint");
    }

    #[pg_test]
    fn an_error_in_a_generated_column_leaves_the_memo_disarmed() {
        // The guard arms the memo while it evaluates the generated column's
        // expression; an error there must not leave it armed for the rest
        // of the session (every later simhash() would copy its text). The
        // expression divides by zero for a body of four characters only
        // (an error at run time, not one the planner folds in).
        Spi::run(
            "CREATE TABLE memo_t (id int, body text, \
                 fp simhash64 GENERATED ALWAYS AS \
                   (simhash(body || (1 / (length(body) - 4))::text)) STORED); \
             SELECT simhash_add_guard('memo_t', 'fp', 3, 'error')",
        )
        .expect("set-up");
        assert!(!crate::functions::memo_armed());
        Spi::run(
            "DO $$ BEGIN INSERT INTO memo_t (id, body) VALUES (1, 'boom'); \
             EXCEPTION WHEN division_by_zero THEN NULL; END $$",
        )
        .expect("the error is caught");
        assert!(!crate::functions::memo_armed(), "armed after an error");
        Spi::run("INSERT INTO memo_t (id, body) VALUES (2, 'fine text here')").expect("insert");
        assert!(!crate::functions::memo_armed(), "armed after a row");
        let stored = Spi::get_one::<bool>(
            "SELECT fp = simhash(body || (1 / (length(body) - 4))::text) FROM memo_t WHERE id = 2",
        );
        assert_eq!(stored, Ok(Some(true)));
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

    /// A varlena compressed with pglz, as PostgreSQL stores one inline:
    /// the header of a compressed value, then the stream of the core's
    /// compressor.
    fn pglz_varlena(stream: &[u8], raw: usize) -> pg_sys::Datum {
        let size = 8 + stream.len();
        // SAFETY: a fresh allocation of `size` bytes, written in full.
        unsafe {
            let p = pg_sys::palloc(size).cast::<u8>();
            // SET_VARSIZE_4B_C (little-endian): the length shifted up two
            // bits, tag 0b10; then va_tcinfo, method 0 (pglz).
            p.cast::<u32>().write(((size as u32) << 2) | 0b10);
            p.cast::<u32>().add(1).write(raw as u32);
            std::ptr::copy_nonoverlapping(stream.as_ptr(), p.add(8), stream.len());
            pg_sys::Datum::from(p)
        }
    }

    fn pglz_samples() -> Vec<Vec<u8>> {
        let mut state = 5u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let alphabet: Vec<char> = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能，。"
            .chars()
            .collect();
        let mut out = vec![b"a".to_vec(), vec![b'z'; 10_000]];
        for round in 0..60 {
            let len = next() % 6000 + 1;
            let mut s = String::new();
            while s.len() < len {
                if round % 3 == 0 {
                    s.push_str(&format!("word{} ", next() % 30));
                } else {
                    s.push(alphabet[next() % alphabet.len()]);
                }
            }
            out.push(s.into_bytes());
        }
        out
    }

    #[pg_test]
    fn pglz_is_decoded_as_postgresql_decodes_it() {
        for data in pglz_samples() {
            for longest in [3, 18, 273] {
                let stream = simhash_core::pglz::compress(&data, longest);
                let datum = pglz_varlena(&stream, data.len());
                // SAFETY: a valid compressed varlena of this call.
                let ours = unsafe { crate::detoast::text_bytes(datum) }.to_vec();
                let theirs = unsafe {
                    pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(
                        datum.cast_mut_ptr(),
                    ))
                }
                .to_vec();
                assert_eq!(theirs, data, "PostgreSQL decodes the core's stream");
                assert_eq!(ours, data, "and so does the core");
            }
        }
    }

    #[pg_test(error = "compressed pglz data is corrupt")]
    fn a_damaged_pglz_value_is_reported_as_postgresql_reports_it() {
        let data = "北京北京北京北京北京北京北京北京".repeat(40).into_bytes();
        let mut stream = simhash_core::pglz::compress(&data, 273);
        // Its last byte lost: the output cannot be complete.
        stream.truncate(stream.len() - 1);
        // SAFETY: a compressed varlena of this call (damaged on purpose).
        unsafe { crate::detoast::text_bytes(pglz_varlena(&stream, data.len())) };
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
