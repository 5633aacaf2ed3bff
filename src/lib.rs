//! The `simhash` PostgreSQL extension: glue between PostgreSQL and the pure
//! `simhash-core` crate. The SQL surface is `sql/simhash.sql`.

use pgrx::prelude::*;

mod btree;
mod clusters;
mod compat;
mod deferred;
mod detoast;
mod errors;
mod functions;
mod guard;
mod index;
mod layout;
mod load;
mod lsh;
mod nodes;
mod rewrite;
mod tids;
mod types;
mod verify;

/// The module's version as PostgreSQL 18 reports it
/// (`pg_get_loaded_modules()`). Given explicitly: pgrx 0.18's
/// `pg_module_magic!(name, version)` puts the version in the name field.
const MODULE_VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(version) => version,
    Err(_) => panic!("the package version has no NUL byte"),
};

::pgrx::pg_module_magic!(name = c"simhash", version = MODULE_VERSION);

extension_sql_file!("../sql/simhash.sql", name = "simhash_surface", bootstrap);
extension_sql_file!("../sql/review.sql", name = "simhash_review", finalize);

/// Loaded through `shared_preload_libraries`, this runs in the postmaster:
/// building the fingerprinter there (about 1 s, tens of MB) means every
/// backend forked later shares it copy-on-write instead of building its own
/// on its first `simhash()` call.
///
/// Loading also installs the parse-time rewrite that lets plain
/// `fp <~> q <= k` conditions use the band indexes (see `rewrite`), and
/// the planner hook that runs generic plans of such queries on Citus
/// distributed tables (see `deferred`).
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // A Rust backtrace in an error's DETAIL tells a client about the
    // server's code, and pgrx adds one whenever backtraces are enabled
    // (RUST_BACKTRACE in the server's environment). Errors keep their
    // message, detail and hint; a developer who wants the backtraces sets
    // RUST_LIB_BACKTRACE=1 explicitly.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    rewrite::install();
    functions::install();
    verify::install();
    load::install();
    deferred::install();
    // SAFETY: a plain read of a flag PostgreSQL sets while preloading.
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        functions::fingerprinter();
    }
}

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    /// The test cluster preloads the library, as the README's set-up does.
    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'simhash'"]
    }
}
