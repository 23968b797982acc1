//! What `shamap stats` reports about one map: the [`Report`] that the
//! text, JSON and chart outputs render. Its counted part, models and advice
//! are a [`MapStats`] of [`shamap_ledger::map_stats`] (shared with the
//! Python module's `stats()`); the CLI adds where the entries came from
//! and what it timed.

use shamap_ledger::map_stats::MapStats;

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

/// Everything `shamap stats` reports about one map.
#[derive(Clone, Debug)]
pub struct Report {
    /// Where the entries came from.
    pub input: InputInfo,
    /// The counted report, models and advice.
    pub stats: MapStats,
    /// Seconds to build the map (producing and inserting every entry).
    pub build_seconds: f64,
    /// Hashing cost, unless skipped.
    pub hashing: Option<HashTiming>,
}
