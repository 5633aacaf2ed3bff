//! The SimHash fingerprint behind the `simhash` PostgreSQL extension.
//!
//! Everything that decides a fingerprint's bits, or compares two of them,
//! lives here in plain Rust with no PostgreSQL in it, so it is tested with a
//! plain `cargo test`. The extension crate is glue around this one.
//!
//! The pipeline, in order (the README's "Fingerprint definition" is the
//! contract; the golden vectors in `tests/golden.rs` hold it in place):
//!
//! 1. [`text`]: NFKC, lower case, and the split into pieces of word
//!    characters ([`fold`]: traditional to simplified, versions 2 and 3);
//! 2. [`fingerprint`]: the features. Version 3 (the default of the
//!    extension): each Han character, and the character trigrams of every
//!    other word. Versions 1 and 2: jieba segmentation of the pieces that
//!    contain Han characters, one token per other piece;
//! 3. [`weights`] (version 3: self-information times the count above
//!    chance) or [`idf`] (versions 1 and 2: each token's IDF from jieba's
//!    table);
//! 4. [`accumulate`]: 64 signed counters over the xxh3-64 hashes of the
//!    tokens, then the sign of each counter as a bit;
//! 5. [`distance`] and [`hex`]: comparing and printing fingerprints.

pub mod accumulate;
pub mod cluster;
pub mod cpu;
pub mod distance;
pub mod explain;
pub mod fingerprint;
pub mod fold;
pub mod guard;
pub mod hex;
pub mod idf;
pub mod layout;
pub mod lsh;
pub mod near;
mod part;
pub mod pglz;
pub mod probe;
pub mod scatter;
pub mod similarity;
pub mod text;
pub mod weights;

#[cfg(test)]
mod testutil;

pub use distance::{band, hamming, BANDS, BAND_BITS};
pub use fingerprint::{BytesError, Feature, FeaturesError, Fingerprinter, Version};
