//! Version 3's weighing of a distinct feature: its self-information and
//! probability from the table of its kind, and the fixed-point weight
//! that the definition adds for it, against chance or regardless of it.
//! The table's hot path ([`super::dense`]), the general path and the
//! feature listing all weigh through here.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::settings::{Kind, V3Options, GRAM_WEIGHTS_TXT, HAN_WEIGHTS_TXT};
use super::settings::{V3_GRAM_UNKNOWN, V3_HAN_UNKNOWN};
use crate::accumulate::Accumulator;
use crate::idf::{to_fixed, PassThrough};
use crate::weights::SelfInfo;

/// A distinct version 3 feature: hash, kind, count, and (self-information,
/// probability, listed) from its table.
pub(crate) type Distinct = (u64, Kind, u64, (f64, f64, bool));

/// The self-information tables of version 3, one for each kind of
/// feature, parsed once per process.
pub(crate) struct SelfInfos {
    pub(super) han: SelfInfo,
    pub(super) grams: SelfInfo,
}

impl SelfInfos {
    /// The shipped tables (`data/han_weights.txt`, `data/gram_weights.txt`).
    pub(crate) fn shipped() -> Self {
        SelfInfos {
            han: SelfInfo::parse(HAN_WEIGHTS_TXT, V3_HAN_UNKNOWN),
            grams: SelfInfo::parse(GRAM_WEIGHTS_TXT, V3_GRAM_UNKNOWN),
        }
    }

    /// (self-information, fixed-point weight) of a version 3 feature seen
    /// `tf` times in a text with `totals` features of each kind, the chance
    /// term from its 24-term series every time: the feature listing
    /// (`simhash_features`) computes its weights this way, so that the
    /// tests that add them up check [`weigh_fixed`]'s shortcut.
    #[inline]
    pub(crate) fn weigh(
        &self,
        opts: &V3Options,
        kind: Kind,
        hash: u64,
        tf: u64,
        totals: [u64; 2],
    ) -> (f64, i64) {
        let (table, weighing) = match kind {
            Kind::Han => (&self.han, opts.han),
            Kind::Gram => (&self.grams, opts.gram),
        };
        let (s, p, known) = table.get(hash);
        let factor = if known { 1.0 } else { weighing.unknown };
        let w = if opts.chance {
            weighing.weight(s, p, tf, totals[kind as usize])
        } else {
            weighing.weight_regardless_of_chance(s, tf)
        };
        (s, to_fixed(factor * w))
    }

    /// (self-information, probability, listed) of a version 3 feature.
    #[inline]
    pub(crate) fn look_up(&self, kind: Kind, hash: u64) -> (f64, f64, bool) {
        match kind {
            Kind::Han => self.han.get(hash),
            Kind::Gram => self.grams.get(hash),
        }
    }

    /// [`add_weighed`] of the features counted in a map, (count, kind) by
    /// hash.
    pub(crate) fn add_counted(
        &self,
        opts: &V3Options,
        counts: &HashMap<u64, (u32, Kind), BuildHasherDefault<PassThrough>>,
        totals: [u64; 2],
        acc: &mut Accumulator,
        fallback: &mut Accumulator,
        positive: &mut bool,
    ) {
        let distinct: Vec<Distinct> = counts
            .iter()
            .map(|(&h, &(tf, kind))| (h, kind, u64::from(tf), self.look_up(kind, h)))
            .collect();
        add_weighed(opts, &distinct, totals, acc, fallback, positive);
    }
}

/// The fixed-point weight version 3 adds for a distinct feature of
/// `kind` seen `tf` times, with what [`SelfInfos::look_up`] gave for it,
/// in a text with `totals` features of each kind: against chance, or
/// (`regardless`) with nothing subtracted for chance, which every
/// feature of a text weighs when none weighs above zero against chance
/// (only a text of a few characters repeated over and over; see
/// [`Weighing::weight_regardless_of_chance`]). The chance term comes
/// from [`Weighing::fixed_weight`]: the bits of the 24-term series,
/// mostly without it.
///
/// [`Weighing::weight_regardless_of_chance`]: crate::weights::Weighing::weight_regardless_of_chance
/// [`Weighing::fixed_weight`]: crate::weights::Weighing::fixed_weight
#[inline]
pub(crate) fn weigh_fixed(
    opts: &V3Options,
    kind: Kind,
    (s, p, known): (f64, f64, bool),
    tf: u64,
    totals: [u64; 2],
    regardless: bool,
) -> i64 {
    let weighing = match kind {
        Kind::Han => opts.han,
        Kind::Gram => opts.gram,
    };
    let factor = if known { 1.0 } else { weighing.unknown };
    if opts.chance && !regardless {
        weighing.fixed_weight(s, factor, tf, totals[kind as usize] as f64 * p)
    } else {
        to_fixed(factor * weighing.weight_regardless_of_chance(s, tf))
    }
}

/// Weighs each distinct feature (hash, kind, count, what
/// [`SelfInfos::look_up`] gave) and adds it to `acc`, and, until a
/// feature weighs above zero, its weight regardless of chance to
/// `fallback`; `positive` says whether one has. The sums do not depend
/// on order.
pub(crate) fn add_weighed(
    opts: &V3Options,
    distinct: &[Distinct],
    totals: [u64; 2],
    acc: &mut Accumulator,
    fallback: &mut Accumulator,
    positive: &mut bool,
) {
    for &(h, kind, tf, info) in distinct {
        let w = weigh_fixed(opts, kind, info, tf, totals, false);
        acc.add(h, w);
        if !*positive {
            if w > 0 {
                *positive = true;
            } else {
                fallback.add(h, weigh_fixed(opts, kind, info, tf, totals, true));
            }
        }
    }
}
