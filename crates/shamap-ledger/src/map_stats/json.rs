//! The report as one JSON object, [`MapStats::to_json`]. Field names are
//! stable; each is documented in `docs/stats.md`. Byte counts are integers,
//! ratios and per-entry figures floating point, hashes upper-case hex; a
//! ratio that has no meaning (an empty map) is `null`.

use serde_json::{json, Value};
use shamap::advisor::ClassPlan;

use super::models::ModelCost;
use super::MapStats;
use crate::entry_type::hex;

/// The `input` object of a map read from ledger dump files: `{"type":
/// "dump", "sources": [...], "ledger_index": N}` (`null` when the input has
/// no ledger index).
pub fn dump_input(sources: &[String], ledger_index: Option<u32>) -> Value {
    json!({"type": "dump", "sources": sources, "ledger_index": ledger_index})
}

fn plan(r: &MapStats, p: &ClassPlan) -> Value {
    json!({
        "classes": p.capacities,
        "sparse_classes": p.sparse_classes(),
        "slots": p.slots,
        "slots_per_inner": p.slots_per_inner(),
        "slots_vs_dense": r.advice.slots_vs_dense(p),
        "inner_bytes": p.inner_bytes(),
        "inner_bytes_vs_dense": r.advice.inner_bytes_vs_dense(p),
        "predicted_overhead_per_entry": r.predicted_overhead_per_entry(p),
    })
}

fn model(m: &ModelCost) -> Value {
    json!({
        "bytes": m.bytes,
        "overhead_per_entry": m.overhead_per_entry,
        "ratio_to_ours": m.ratio_to_ours,
    })
}

impl MapStats {
    /// The report as one JSON object: every field of `shamap stats --json`,
    /// with the caller's `input` (where the map came from: e.g.
    /// [`dump_input`]) and `timing` (`build_seconds`, the seconds taken to
    /// build the map, and `hashing`, the caller's hashing measurement;
    /// `null` when not known or not measured).
    pub fn to_json(
        &self,
        input: Value,
        build_seconds: Option<f64>,
        hashing: Option<Value>,
    ) -> Value {
        let r = self;
        let b = &r.mem.bytes;
        let classes: Vec<Value> = r
            .mem
            .inner_classes
            .iter()
            .map(|c| {
                json!({
                    "capacity": c.capacity,
                    "nodes": c.nodes,
                    "slots_used": c.slots_used,
                    "slots_unused": c.slots_unused,
                    "chunk_bytes": c.chunk_bytes,
                    "bytes": c.nodes * c.chunk_bytes,
                    "blocks": c.blocks,
                })
            })
            .collect();
        let by_type = r.data.by_type.as_ref().map(|types| {
            types
                .iter()
                .map(|t| {
                    json!({
                        "type": t.code.map(hex),
                        "name": t.label(),
                        "entries": t.entries,
                        "bytes": t.bytes,
                        "mean_bytes": t.mean(),
                    })
                })
                .collect::<Vec<_>>()
        });
        let entries = r.mem.entries;
        json!({
            "input": input,
            "kind": r.kind.name(),
            "classes": r.classes.capacities(),
            "root_hash": r.root_hash.to_hex(),
            "hash_function": r.hash.name(),
            "leaf_hashes": r.mem.leaf_hashes.name(),
            "entries": entries,
            "leaf_nodes": r.mem.leaf_nodes,
            "inner_nodes": r.mem.inner_nodes,
            "mean_leaf_depth": r.shape.mean_leaf_depth(),
            "slots_per_inner": r.mem.slots_per_inner(),
            "child_histogram": r.shape.child_histogram.to_vec(),
            "depth_histogram": r.shape.depth_histogram.to_vec(),
            "inner_depth_histogram": r.shape.inner_depth_histogram.to_vec(),
            "data": {
                "total_bytes": r.data.total,
                "mean_bytes": if entries == 0 { 0.0 } else { r.data.total as f64 / entries as f64 },
                "max_bytes": r.data.max_bytes(),
                "by_type": by_type,
            },
            "bytes": {
                "inner_hashes": b.inner_hashes,
                "child_slots_used": b.child_slots_used,
                "child_slots_unused": b.child_slots_unused,
                "leaf_hashes": b.leaf_hashes,
                "leaf_keys": b.leaf_keys,
                "leaf_data": b.leaf_data,
                "leaf_padding": b.leaf_padding,
                "pool_slack": b.pool_slack,
                "pool_untouched": b.pool_untouched,
                "other": b.other,
                "total": b.total,
                "overhead": r.overhead_bytes(),
                "overhead_per_entry": r.mem.overhead_per_entry(),
                "classes": classes,
                "large_leaves": r.mem.large_leaves,
                "leaf_pools": r.mem.leaf_pools.len(),
                "leaf_pool_blocks": r.mem.leaf_pools.iter().map(|p| p.blocks).sum::<usize>(),
            },
            "models": {
                "ours": {
                    "bytes": r.models.ours_bytes,
                    "overhead_per_entry": r.mem.overhead_per_entry(),
                },
                "dense": model(&r.models.dense),
                "rippled": model(&r.models.rippled),
            },
            "advisor": {
                "current": plan(r, &r.current),
                "dense": plan(r, &r.advice.dense),
                "best": r.advice.best.iter().map(|p| plan(r, p)).collect::<Vec<_>>(),
            },
            "timing": {
                "build_seconds": build_seconds,
                "hashing": hashing,
            },
        })
    }
}
