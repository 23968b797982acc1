//! What `shamap stats` and the Python module's `stats()` report about one
//! map: the counted part of the report, its layout models and advice, and
//! its JSON object. Both callers gather a [`MapStats`] here and render it
//! with [`MapStats::to_json`]; each adds only where the map came from
//! (`input`) and what it timed (`timing`). Field-by-field documentation:
//! `docs/stats.md`.
//!
//! Everything is counted, not estimated: memory from the engine's own
//! counters ([`ShaMap::mem_stats`]), the tree's shape from a walk
//! ([`ShaMap::shape_stats`]), leaf data (per ledger-entry type for state
//! maps, [`crate::entry_type`]) by iterating the map. What is predicted is
//! labelled as such: the two layout models ([`models`]) and the size-class
//! advisor's figures ([`shamap::advisor`],
//! [`MapStats::predicted_overhead_per_entry`]).
//!
//! ```
//! use shamap::{Key, MapKind, ShaMap};
//! use shamap_ledger::map_stats::MapStats;
//!
//! let mut map = ShaMap::new(MapKind::AccountState);
//! map.insert(Key([0x10; 32]), &[0x11, 0x00, 0x61, 0x22])?;
//! let stats = MapStats::of_map(&mut map);
//! assert_eq!(stats.data.total, 4);
//! let json = stats.to_json(serde_json::json!({"type": "example"}), None, None);
//! assert_eq!(json["data"]["by_type"][0]["name"], "AccountRoot");
//! # Ok::<(), shamap::MapError>(())
//! ```

mod json;
pub mod models;

use std::collections::BTreeMap;

use shamap::advisor::{self, Advice, ClassPlan, MAX_SPARSE_CLASSES};
use shamap::{Hash256, HashFunction, MapKind, MemStats, ShaMap, ShapeStats, SizeClasses, Snapshot};

use crate::entry_type::{TypeStats, TypeTally};
pub use json::dump_input;
pub use models::{ModelCost, Models};

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

impl DataStats {
    /// Counts the data of a map of `kind` (per type for state maps only).
    pub fn count<'a>(kind: MapKind, data: impl IntoIterator<Item = &'a [u8]>) -> DataStats {
        let state = kind == MapKind::AccountState;
        let mut tally = TypeTally::default();
        let mut lengths = BTreeMap::new();
        let mut total = 0u64;
        for d in data {
            total += d.len() as u64;
            *lengths.entry(d.len()).or_insert(0) += 1;
            if state {
                tally.add(d);
            }
        }
        DataStats {
            total,
            by_type: state.then(|| tally.finish()),
            lengths,
        }
    }

    /// The longest datum, bytes (0 for an empty map).
    pub fn max_bytes(&self) -> usize {
        self.lengths.keys().next_back().copied().unwrap_or(0)
    }
}

/// The counted report of one map, with its models and advice.
#[derive(Clone, Debug)]
pub struct MapStats {
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
}

impl MapStats {
    /// The report of `map`, whose root is hashed first (if stale).
    pub fn of_map(map: &mut ShaMap) -> MapStats {
        let root_hash = map.root_hash();
        let data = DataStats::count(map.kind(), map.iter().map(|(_, d)| d));
        MapStats::new(
            map.kind(),
            map.options().size_classes,
            root_hash,
            map.hash_function(),
            map.mem_stats(),
            map.shape_stats(),
            data,
        )
    }

    /// The report of a snapshot. Its size classes are those its memory
    /// counts name (a snapshot keeps its map's classes).
    pub fn of_snapshot(snap: &Snapshot) -> MapStats {
        let mem = snap.mem_stats();
        let caps: Vec<u8> = mem
            .inner_classes
            .iter()
            .filter_map(|c| u8::try_from(c.capacity).ok())
            .collect();
        let data = DataStats::count(snap.kind(), snap.iter().map(|(_, d)| d));
        MapStats::new(
            snap.kind(),
            SizeClasses::new(&caps).unwrap_or_default(),
            snap.root_hash(),
            snap.hash_function(),
            mem,
            snap.shape_stats(),
            data,
        )
    }

    fn new(
        kind: MapKind,
        classes: SizeClasses,
        root_hash: Hash256,
        hash: HashFunction,
        mem: MemStats,
        shape: ShapeStats,
        data: DataStats,
    ) -> MapStats {
        let models = models::price(&mem, &shape);
        let advice = advisor::advise(&shape.child_histogram, MAX_SPARSE_CLASSES);
        let current = advisor::price(&shape.child_histogram, &classes);
        MapStats {
            kind,
            classes,
            root_hash,
            hash,
            mem,
            shape,
            data,
            models,
            advice,
            current,
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use shamap::{Key, MapOptions};

    fn map(classes: &[u8]) -> ShaMap {
        let caps = SizeClasses::new(classes).expect("classes");
        let mut map = ShaMap::with_options(
            MapKind::AccountState,
            MapOptions::default().with_size_classes(caps),
        );
        for i in 0..200u8 {
            let data = [0x11, 0x00, if i % 3 == 0 { 0x72 } else { 0x61 }, i];
            map.insert(Key([i.wrapping_mul(37); 32]), &data)
                .expect("insert");
        }
        map
    }

    #[test]
    fn a_snapshot_reports_as_its_map() {
        let mut m = map(&[2, 4, 10, 16]);
        let of_map = MapStats::of_map(&mut m);
        let of_snap = MapStats::of_snapshot(&m.snapshot());
        assert_eq!(of_snap.classes.capacities(), [2, 4, 10, 16]);
        assert_eq!(of_snap.root_hash, of_map.root_hash);
        assert_eq!(of_snap.shape, of_map.shape);
        assert_eq!(of_snap.data, of_map.data);
        assert_eq!(of_snap.current, of_map.current);
        // Memory differs only by the snapshot's own bookkeeping.
        assert_eq!(of_snap.mem.inner_classes, of_map.mem.inner_classes);
    }

    #[test]
    fn data_and_predictions_are_counted() {
        let mut m = map(&[2, 4, 6, 16]);
        let s = MapStats::of_map(&mut m);
        let d = &s.data;
        assert_eq!((d.total, d.max_bytes()), (800, 4));
        let by_type = d.by_type.as_ref().expect("a state map");
        let labels: Vec<String> = by_type.iter().map(TypeStats::label).collect();
        assert_eq!(labels, ["AccountRoot", "RippleState"]);
        assert_eq!(by_type[0].entries + by_type[1].entries, 200);
        // The classes built with predict what was counted; another plan
        // changes it by its slot bytes alone.
        let ours = s.overhead_bytes() as f64 / 200.0;
        assert_eq!(s.predicted_overhead_per_entry(&s.current), ours);
        let inner = s.mem.inner_nodes as u64;
        assert_eq!(s.advice.dense.slots, 16 * inner);
        let extra = 8.0 * (16 * inner - s.current.slots) as f64 / 200.0;
        assert_eq!(
            s.predicted_overhead_per_entry(&s.advice.dense),
            ours + extra
        );
    }

    #[test]
    fn an_empty_map_predicts_nothing() {
        let mut m = ShaMap::new(MapKind::TransactionWithMeta);
        let s = MapStats::of_map(&mut m);
        assert_eq!(s.data.by_type, None);
        assert_eq!(s.data.max_bytes(), 0);
        assert_eq!(s.predicted_overhead_per_entry(&s.advice.dense), 0.0);
    }
}
