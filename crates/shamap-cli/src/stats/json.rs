//! The JSON report: [`MapStats::to_json`](shamap_ledger::map_stats::MapStats::to_json)
//! (the fields shared with the Python module's `stats()`, documented in
//! `docs/stats.md`) with this command's `input` and hashing timing.

use serde_json::{json, Value};
use shamap_ledger::map_stats::dump_input;

use super::report::{InputInfo, Report};

/// The report as one JSON object.
pub fn render(r: &Report) -> Value {
    let input = match &r.input {
        InputInfo::Random { seed, data_len } => json!({
            "type": "random",
            "seed": seed,
            "data": if data_len.is_some() { "fixed" } else { "mainnet" },
            "data_len": data_len,
        }),
        InputInfo::Dump {
            sources,
            ledger_index,
        } => dump_input(sources, *ledger_index),
    };
    let hashing = r.hashing.as_ref().map(|h| {
        json!({
            "root_seconds": h.root_seconds,
            "hash_floor_seconds": h.floor_seconds,
            "hash_share": h.floor_share(),
            "runs": h.runs,
            "leaf_hashes": h.leaf_hashes,
            "inner_hashes": h.inner_hashes,
            "hashed_bytes": h.hashed_bytes,
            "backend": h.backend,
        })
    });
    r.stats.to_json(input, Some(r.build_seconds), hashing)
}
