//! The peer comparison's rows, as a markdown table or JSON.

use std::time::Duration;

use super::Peer;
use crate::args::Args;

/// Memory per entry, total (keys and values included), by source.
#[derive(Clone, Copy, Default)]
pub struct Mem {
    /// The engine's own count of its bytes.
    pub counted: Option<f64>,
    /// `VmRSS` after the build minus `VmRSS` before the engine was created.
    pub rss: f64,
    /// `VmHWM` during the build (reset before it) minus `VmRSS` before.
    pub peak: Option<f64>,
    /// Bytes allocated on disk.
    pub disk: Option<f64>,
}

impl Mem {
    fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.counted {
            parts.push(format!("counted {c:.0}"));
        }
        parts.push(format!("RSS Δ {:.0}", self.rss));
        if let Some(p) = self.peak {
            parts.push(format!("peak Δ {p:.0}"));
        }
        if let Some(d) = self.disk {
            parts.push(format!("disk {d:.0}"));
        }
        parts.join("; ")
    }
}

pub struct PeerRow {
    workload: String,
    engine: String,
    hash: String,
    ops: u64,
    time: Duration,
    mem: Option<Mem>,
    note: String,
}

impl PeerRow {
    pub fn new(workload: &str, peer: &Peer, ops: u64, time: Duration) -> PeerRow {
        PeerRow::named(workload, peer.name, peer.hash, ops, time)
    }

    pub fn named(workload: &str, engine: &str, hash: &str, ops: u64, time: Duration) -> PeerRow {
        PeerRow {
            workload: workload.to_string(),
            engine: engine.to_string(),
            hash: hash.to_string(),
            ops,
            time,
            mem: None,
            note: String::new(),
        }
    }

    pub fn mem(mut self, mem: Mem) -> PeerRow {
        self.mem = Some(mem);
        self
    }

    pub fn note(mut self, note: &str) -> PeerRow {
        self.note = note.to_string();
        self
    }

    fn ns_per_op(&self) -> f64 {
        self.time.as_secs_f64() * 1e9 / self.ops.max(1) as f64
    }
}

pub struct PeerTable {
    entries: usize,
    data_len: usize,
    seed: u64,
    rows: Vec<PeerRow>,
}

impl PeerTable {
    pub fn new(args: &Args, data_len: usize) -> PeerTable {
        PeerTable {
            entries: args.entries,
            data_len,
            seed: args.seed,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: PeerRow) {
        eprintln!("done: {} / {}", row.workload, row.engine);
        self.rows.push(row);
    }

    /// Time per op of `row` over ours on the same workload.
    fn vs_ours(&self, row: &PeerRow) -> Option<f64> {
        let ours = self
            .rows
            .iter()
            .find(|r| r.engine == "ours" && r.workload == row.workload)?;
        Some(row.ns_per_op() / ours.ns_per_op().max(1e-9))
    }

    pub fn markdown(&self) -> String {
        let mut s = format!(
            "entries {}, value {} B, seed {}; one process, engines run one after another\n\n",
            self.entries, self.data_len, self.seed
        );
        s.push_str(
            "| workload | engine | hash | ops | time | ns/op | × ours | B/entry (total) | note |\n",
        );
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {:.3} s | {:.0} | {} | {} | {} |\n",
                r.workload,
                r.engine,
                r.hash,
                r.ops,
                r.time.as_secs_f64(),
                r.ns_per_op(),
                self.vs_ours(r)
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_default(),
                r.mem.map(|m| m.text()).unwrap_or_default(),
                r.note
            ));
        }
        s
    }

    pub fn json(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "workload": r.workload,
                    "engine": r.engine,
                    "hash": r.hash,
                    "ops": r.ops,
                    "seconds": r.time.as_secs_f64(),
                    "ns_per_op": r.ns_per_op(),
                    "ratio_to_ours": self.vs_ours(r),
                    "bytes_per_entry_counted": r.mem.and_then(|m| m.counted),
                    "bytes_per_entry_rss_delta": r.mem.map(|m| m.rss),
                    "bytes_per_entry_peak_rss_delta": r.mem.and_then(|m| m.peak),
                    "bytes_per_entry_disk": r.mem.and_then(|m| m.disk),
                    "note": r.note,
                })
            })
            .collect();
        serde_json::json!({
            "entries": self.entries,
            "value_len": self.data_len,
            "seed": self.seed,
            "rows": rows,
        })
    }
}
