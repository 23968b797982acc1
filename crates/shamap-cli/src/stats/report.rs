//! What `shamap stats` reports about one map: the [`Report`] that the
//! text, JSON and chart outputs render.

use std::collections::BTreeMap;

use shamap::advisor::{Advice, ClassPlan};
use shamap::{Hash256, HashFunction, MapKind, MemStats, ShapeStats, SizeClasses};

use super::entry_type::TypeStats;
use super::models::Models;
use super::timing::HashTiming;

/// Where the entries came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputInfo {
    /// `--random N --seed S`.
    Random {
        /// The seed.
        seed: u64,
        /// The fixed data length, or `None` for mainnet-shaped sizes.
        data_len: Option<u32>,
    },
    /// Ledger dump files.
    Dump {
        /// The files, as named.
        sources: Vec<String>,
        /// The ledger's sequence number, when the input has one.
        ledger_index: Option<u32>,
    },
}

/// Leaf data, counted by iterating the map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataStats {
    /// Data bytes of all entries.
    pub total: u64,
    /// Per ledger-entry type, most bytes first (state maps only).
    pub by_type: Option<Vec<TypeStats>>,
    /// Entries by data length.
    pub lengths: BTreeMap<usize, u64>,
}

/// Everything `shamap stats` reports about one map.
#[derive(Clone, Debug)]
pub struct Report {
    /// Where the entries came from.
    pub input: InputInfo,
    /// The map's kind.
    pub kind: MapKind,
    /// The size classes it was built with.
    pub classes: SizeClasses,
    /// Its root hash.
    pub root_hash: Hash256,
    /// The node hash function it was built with.
    pub hash: HashFunction,
    /// Counted memory.
    pub mem: MemStats,
    /// Counted shape.
    pub shape: ShapeStats,
    /// Leaf data sizes.
    pub data: DataStats,
    /// The tree priced under other layouts.
    pub models: Models,
    /// Size-class advice from the child histogram.
    pub advice: Advice,
    /// The classes built with, priced like the advice.
    pub current: ClassPlan,
    /// Seconds to build the map (producing and inserting every entry).
    pub build_seconds: f64,
    /// Hashing cost, unless skipped.
    pub hashing: Option<HashTiming>,
}

impl Report {
    /// Our bytes beyond keys and data.
    pub fn overhead_bytes(&self) -> u64 {
        self.models.ours_bytes
    }

    /// Predicted bytes per entry beyond key and data were the map built
    /// with `plan`: ours, with the child slots of `plan` instead of those
    /// of the classes built with (pool slack assumed unchanged).
    pub fn predicted_overhead_per_entry(&self, plan: &ClassPlan) -> f64 {
        let entries = self.mem.entries as f64;
        if entries == 0.0 {
            return 0.0;
        }
        let delta = 8.0 * (plan.slots as f64 - self.current.slots as f64);
        (self.overhead_bytes() as f64 + delta) / entries
    }
}
