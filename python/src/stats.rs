//! `stats(map)`: the fields of `shamap stats --json` for a map or snapshot.
//!
//! The CLI builds its report in `crates/shamap-cli/src/stats/` (a binary
//! crate, so not callable from here). This module computes the same fields
//! from the engine's public API: counted memory ([`ShaMap::mem_stats`]),
//! the tree's shape ([`ShaMap::shape_stats`]), leaf data by iterating, the
//! size-class advisor ([`shamap::advisor`]); the two layout models and the
//! ledger-entry type names are restated here from the CLI's `models.rs`
//! and `entry_type.rs` (keep them in step until they move into a library
//! crate). What differs from the CLI's object:
//!
//! - `input` is `{"type": "dump", "sources": [...], "ledger_index": N}` for
//!   a map read by `read_ledger` and not written since, else
//!   `{"type": "python"}`;
//! - `timing.build_seconds` is the time `read_ledger` took to insert the
//!   entries (`null` for other maps), and `timing.hashing` is always `null`
//!   (as with the CLI's `--no-timing`): the hash-floor measurement lives
//!   only in the CLI.

use std::collections::BTreeMap;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::{json, Value};
use shamap::advisor::{self, Advice, ClassPlan, MAX_SPARSE_CLASSES};
use shamap::{Hash256, HashFunction, MapKind, MemStats, ShapeStats, SizeClasses};

use crate::args::type_name;
use crate::convert::to_py;
use crate::map::{Origin, PyShaMap, PySnapshot};

/// rippled's inner-node object, bytes (CLI `models.rs`).
const RIPPLED_INNER_OBJECT: u64 = 64;
/// rippled's child-block bytes per slot: a 32-byte hash and an 8-byte pointer.
const RIPPLED_SLOT: u64 = 40;
/// rippled's leaf node plus the item's size and reference count, bytes.
const RIPPLED_LEAF: u64 = 56 + 4 + 4;
/// Our inner chunk with 16 slots, bytes.
const DENSE_INNER: u64 = 32 + 8 * 16;

use shamap_ledger::entry_type::{entry_type, name as type_code_name};

fn type_label(code: Option<u16>) -> String {
    match code {
        Some(c) => type_code_name(c).map_or_else(|| format!("0x{c:04X}"), str::to_owned),
        None => "(no type field)".to_owned(),
    }
}

/// What is gathered from the map before the report is assembled.
struct Gathered {
    kind: MapKind,
    hash: HashFunction,
    classes: SizeClasses,
    root: Hash256,
    mem: MemStats,
    shape: ShapeStats,
    data_total: u64,
    data_max: usize,
    /// Per type code: (entries, bytes); state maps only.
    by_type: Option<TypeTally>,
}

/// Entries and data bytes per ledger-entry type code (`None`: no type field).
type TypeTally = BTreeMap<Option<u16>, (u64, u64)>;

fn tally<'a>(
    kind: MapKind,
    items: impl Iterator<Item = &'a [u8]>,
) -> (u64, usize, Option<TypeTally>) {
    let state = kind == MapKind::AccountState;
    let mut types = BTreeMap::new();
    let mut total = 0u64;
    let mut max = 0usize;
    for data in items {
        total += data.len() as u64;
        max = max.max(data.len());
        if state {
            let e: &mut (u64, u64) = types.entry(entry_type(data)).or_default();
            e.0 += 1;
            e.1 += data.len() as u64;
        }
    }
    (total, max, state.then_some(types))
}

/// Our bytes beyond keys and data.
fn ours_overhead(mem: &MemStats) -> u64 {
    (mem.bytes.total - mem.bytes.leaf_keys - mem.bytes.leaf_data) as u64
}

fn model(bytes: u64, entries: u64, ours: u64) -> Value {
    json!({
        "bytes": bytes,
        "overhead_per_entry": if entries == 0 { 0.0 } else { bytes as f64 / entries as f64 },
        "ratio_to_ours": (ours > 0).then(|| bytes as f64 / ours as f64),
    })
}

fn plan(g: &Gathered, advice: &Advice, current: &ClassPlan, p: &ClassPlan) -> Value {
    let entries = g.mem.entries as f64;
    let predicted = if entries == 0.0 {
        0.0
    } else {
        let delta = 8.0 * (p.slots as f64 - current.slots as f64);
        (ours_overhead(&g.mem) as f64 + delta) / entries
    };
    json!({
        "classes": p.capacities,
        "sparse_classes": p.sparse_classes(),
        "slots": p.slots,
        "slots_per_inner": p.slots_per_inner(),
        "slots_vs_dense": advice.slots_vs_dense(p),
        "inner_bytes": p.inner_bytes(),
        "inner_bytes_vs_dense": advice.inner_bytes_vs_dense(p),
        "predicted_overhead_per_entry": predicted,
    })
}

/// The report, with the field names of `shamap stats --json`.
fn render(g: &Gathered, origin: Option<&Origin>) -> Value {
    let input = match origin {
        Some(o) => json!({"type": "dump", "sources": o.sources, "ledger_index": o.ledger_index}),
        None => json!({"type": "python"}),
    };
    let mem = &g.mem;
    let b = &mem.bytes;
    let entries = mem.entries;
    let classes: Vec<Value> = mem
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
    let by_type = g.by_type.as_ref().map(|types| {
        let mut v: Vec<(Option<u16>, u64, u64)> = types
            .iter()
            .map(|(c, (n, bytes))| (*c, *n, *bytes))
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        v.into_iter()
            .map(|(code, n, bytes)| {
                json!({
                    "type": code.map(|c| format!("0x{c:04X}")),
                    "name": type_label(code),
                    "entries": n,
                    "bytes": bytes,
                    "mean_bytes": bytes as f64 / n.max(1) as f64,
                })
            })
            .collect::<Vec<_>>()
    });

    let hist = &g.shape.child_histogram;
    let inner: u64 = hist.iter().sum();
    let ours = ours_overhead(mem);
    let dense_bytes = (b.leaf_hashes + b.leaf_padding) as u64 + inner * DENSE_INNER;
    let rippled_slots = advisor::slots_for(hist, &SizeClasses::DEFAULT);
    let rippled_bytes =
        entries as u64 * RIPPLED_LEAF + inner * RIPPLED_INNER_OBJECT + rippled_slots * RIPPLED_SLOT;
    let advice = advisor::advise(hist, MAX_SPARSE_CLASSES);
    let current = advisor::price(hist, &g.classes);

    json!({
        "input": input,
        "kind": g.kind.name(),
        "classes": g.classes.capacities(),
        "root_hash": g.root.to_hex(),
        "hash_function": g.hash.name(),
        "entries": entries,
        "leaf_nodes": mem.leaf_nodes,
        "inner_nodes": mem.inner_nodes,
        "mean_leaf_depth": g.shape.mean_leaf_depth(),
        "slots_per_inner": mem.slots_per_inner(),
        "child_histogram": g.shape.child_histogram.to_vec(),
        "depth_histogram": g.shape.depth_histogram.to_vec(),
        "inner_depth_histogram": g.shape.inner_depth_histogram.to_vec(),
        "data": {
            "total_bytes": g.data_total,
            "mean_bytes": if entries == 0 { 0.0 } else { g.data_total as f64 / entries as f64 },
            "max_bytes": g.data_max,
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
            "overhead": ours,
            "overhead_per_entry": mem.overhead_per_entry(),
            "classes": classes,
            "large_leaves": mem.large_leaves,
            "leaf_pools": mem.leaf_pools.len(),
            "leaf_pool_blocks": mem.leaf_pools.iter().map(|p| p.blocks).sum::<usize>(),
        },
        "models": {
            "ours": {
                "bytes": ours,
                "overhead_per_entry": mem.overhead_per_entry(),
            },
            "dense": model(dense_bytes, entries as u64, ours),
            "rippled": model(rippled_bytes, entries as u64, ours),
        },
        "advisor": {
            "current": plan(g, &advice, &current, &current),
            "dense": plan(g, &advice, &current, &advice.dense),
            "best": advice.best.iter().map(|p| plan(g, &advice, &current, p)).collect::<Vec<_>>(),
        },
        "timing": {
            "build_seconds": origin.map(|o| o.build_seconds),
            "hashing": Value::Null,
        },
    })
}

/// The statistics of `shamap stats --json` for a ShaMap or Snapshot, as a
/// dict with the same field names (see docs/stats.md): entries, nodes,
/// histograms, data sizes (per ledger-entry type for state maps), counted
/// bytes by category, the rippled and dense layout models, the size-class
/// advisor. `timing.hashing` is None (the CLI's hash-floor measurement is
/// not available here); `input` is {"type": "python"} unless the map came
/// from read_ledger unchanged. Hashes the map first; runs detached from
/// the interpreter.
#[pyfunction]
pub(crate) fn stats<'py>(py: Python<'py>, map: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (g, origin) = if let Ok(m) = map.cast::<PyShaMap>() {
        m.get().with_detached(py, |inner| {
            let map = &mut inner.map;
            let root = map.root_hash();
            let (data_total, data_max, by_type) = tally(map.kind(), map.iter().map(|(_, d)| d));
            let g = Gathered {
                kind: map.kind(),
                hash: map.hash_function(),
                classes: map.options().size_classes,
                root,
                mem: map.mem_stats(),
                shape: map.shape_stats(),
                data_total,
                data_max,
                by_type,
            };
            (g, inner.origin.clone())
        })?
    } else if let Ok(s) = map.cast::<PySnapshot>() {
        let s = s.get();
        let snap = &s.snap;
        let g = py.detach(|| {
            let mem = snap.mem_stats();
            let caps: Vec<u8> = mem
                .inner_classes
                .iter()
                .filter_map(|c| u8::try_from(c.capacity).ok())
                .collect();
            let (data_total, data_max, by_type) = tally(snap.kind(), snap.iter().map(|(_, d)| d));
            Gathered {
                kind: snap.kind(),
                hash: snap.hash_function(),
                classes: SizeClasses::new(&caps).unwrap_or_default(),
                root: snap.root_hash(),
                mem,
                shape: snap.shape_stats(),
                data_total,
                data_max,
                by_type,
            }
        });
        (g, s.origin.clone())
    } else {
        return Err(PyTypeError::new_err(format!(
            "stats() takes a ShaMap or Snapshot, not {}",
            type_name(map)
        )));
    };
    to_py(py, &render(&g, origin.as_ref()))
}
