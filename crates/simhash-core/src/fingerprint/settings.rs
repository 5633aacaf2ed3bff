//! Version 3's settings: the tables it reads, the two kinds of feature
//! and how each kind is weighed. Every module of version 3 reads them;
//! they read nothing of the fingerprint's other modules.

use crate::weights::{Power, Weighing};

/// Version 3's Han character table: `character self-information` lines.
pub const HAN_WEIGHTS_TXT: &str = include_str!("../../data/han_weights.txt");

/// Version 3's trigram table: `trigram self-information` lines.
pub const GRAM_WEIGHTS_TXT: &str = include_str!("../../data/gram_weights.txt");

/// Version 3: how Han characters are weighed: the self-information times
/// the count above chance, counted up to 6 times. A character (5 to 17)
/// outweighs a trigram (1), as a character says more than a Latin letter;
/// scaling characters down to a quarter lost copies whose appended footer
/// holds a URL or a date (`bench/quality`, variant "v3 han scale 0.25":
/// short Chinese footers 42% instead of 49% at k = 7).
pub const V3_HAN: Weighing = Weighing {
    scale: 1.0,
    cap: 6,
    unknown: 1.0,
    power: Power::One,
};

/// Version 3: how the character trigrams of other words are weighed: the
/// count above chance, counted up to 6 times, every trigram alike (the
/// trigram table only says what chance gives: weighing by it let the
/// rare trigrams that edits make up outweigh the real ones).
pub const V3_GRAM: Weighing = Weighing {
    scale: 1.0,
    cap: 6,
    unknown: V3_GRAM_UNKNOWN_FACTOR,
    power: Power::Zero,
};

/// The settings of version 3's weighing. [`V3Options::DEFINITION`] is the
/// definition; anything else is an experiment
/// ([`Fingerprinter::fingerprint_v3_with`](super::Fingerprinter::fingerprint_v3_with)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct V3Options {
    /// How Han characters are weighed.
    pub han: Weighing,
    /// How trigrams are weighed.
    pub gram: Weighing,
    /// Whether what chance gives is subtracted.
    pub chance: bool,
}

impl V3Options {
    /// Version 3 as defined.
    pub const DEFINITION: V3Options = V3Options {
        han: V3_HAN,
        gram: V3_GRAM,
        chance: true,
    };
}

/// Version 3: the self-information of a Han character missing from
/// `data/han_weights.txt` (the table's largest is 17.73).
pub const V3_HAN_UNKNOWN: f64 = 17.73;

/// Version 3: the self-information of a trigram missing from
/// `data/gram_weights.txt`.
pub const V3_GRAM_UNKNOWN: f64 = 12.0;

/// Version 3: what a trigram missing from `data/gram_weights.txt` weighs
/// against one the table lists. A typo in an English word makes up
/// trigrams no English text has (`qxe`); at full weight they pushed an
/// edited copy away as much as the real trigrams it lost.
pub const V3_GRAM_UNKNOWN_FACTOR: f64 = 0.3;

/// The two kinds of version 3 features, counted apart: how many features
/// of its kind a text has decides what chance gives a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A Han character.
    Han = 0,
    /// A character trigram of a word in another script.
    Gram = 1,
}
