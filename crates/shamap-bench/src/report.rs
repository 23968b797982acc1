//! Result rows, printed as a markdown table or JSON.

use std::time::Duration;

/// One measured workload.
pub struct Row {
    name: String,
    ops: u64,
    time: Duration,
    /// (one message at a time floor, multi-lane floor), with the map's hash
    /// function (`sha2` or the `blake3` crate; `sha512-lanes` or
    /// `blake3-lanes`). In JSON the first is `floor_seconds_sha2` either way.
    floor: Option<(Duration, Duration)>,
    baseline: Option<(String, Duration)>,
    bytes_per_entry: Option<f64>,
    note: String,
}

impl Row {
    pub fn new(name: &str, ops: u64, time: Duration) -> Row {
        Row {
            name: name.to_string(),
            ops,
            time,
            floor: None,
            baseline: None,
            bytes_per_entry: None,
            note: String::new(),
        }
    }

    pub fn floor(mut self, floor: (Duration, Duration)) -> Row {
        self.floor = Some(floor);
        self
    }

    pub fn baseline(mut self, name: &str, time: Duration) -> Row {
        self.baseline = Some((name.to_string(), time));
        self
    }

    pub fn bytes_per_entry(mut self, b: f64) -> Row {
        self.bytes_per_entry = Some(b);
        self
    }

    pub fn note(mut self, note: &str) -> Row {
        self.note = note.to_string();
        self
    }

    fn per_op_ns(&self) -> f64 {
        self.time.as_secs_f64() * 1e9 / self.ops.max(1) as f64
    }

    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.time.as_secs_f64().max(1e-12)
    }

    fn vs_floor(&self) -> Option<f64> {
        self.floor
            .map(|(f, _)| self.time.as_secs_f64() / f.as_secs_f64().max(1e-12))
    }

    fn vs_lanes_floor(&self) -> Option<f64> {
        self.floor
            .map(|(_, f)| self.time.as_secs_f64() / f.as_secs_f64().max(1e-12))
    }

    fn vs_baseline(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .map(|(_, b)| self.time.as_secs_f64() / b.as_secs_f64().max(1e-12))
    }
}

/// All rows of one run.
pub struct Report {
    entries: usize,
    data_len: usize,
    seed: u64,
    rows: Vec<Row>,
    hash: shamap::HashFunction,
    /// Leaf hashes stored or recomputed (`--hashless-leaves`).
    leaf_hashes: shamap::LeafHashes,
}

impl Report {
    pub fn new(
        entries: &usize,
        data_len: usize,
        seed: u64,
        hash: shamap::HashFunction,
        leaf_hashes: shamap::LeafHashes,
    ) -> Report {
        Report {
            entries: *entries,
            data_len,
            seed,
            hash,
            leaf_hashes,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Row) {
        eprintln!("done: {}", row.name);
        self.rows.push(row);
    }

    pub fn markdown(&self) -> String {
        let mut s = format!(
            "entries {}, data {} B, seed {}, {}, leaf hashes {}, rayon threads available {}\n\n",
            self.entries,
            self.data_len,
            self.seed,
            self.hash,
            self.leaf_hashes.name(),
            rayon::current_num_threads()
        );
        // The one-message-at-a-time floor: `sha2`, or the `blake3` crate.
        let single = match self.hash {
            shamap::HashFunction::Sha512Half => "sha2",
            shamap::HashFunction::Blake3 => "blake3",
        };
        s.push_str(&format!(
            "| workload | ops | time | ns/op | ops/s | × {single} floor | × lanes floor | × baseline | B/entry | note |\n",
        ));
        s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let opt = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_default();
            let base = match (&r.baseline, r.vs_baseline()) {
                (Some((n, _)), Some(x)) => format!("{x:.2} vs {n}"),
                _ => String::new(),
            };
            s.push_str(&format!(
                "| {} | {} | {:.3} s | {:.0} | {:.0} | {} | {} | {} | {} | {} |\n",
                r.name,
                r.ops,
                r.time.as_secs_f64(),
                r.per_op_ns(),
                r.ops_per_sec(),
                opt(r.vs_floor()),
                opt(r.vs_lanes_floor()),
                base,
                opt(r.bytes_per_entry),
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
                    "workload": r.name,
                    "ops": r.ops,
                    "seconds": r.time.as_secs_f64(),
                    "ns_per_op": r.per_op_ns(),
                    "ops_per_sec": r.ops_per_sec(),
                    "floor_seconds_sha2": r.floor.map(|f| f.0.as_secs_f64()),
                    "floor_seconds_lanes": r.floor.map(|f| f.1.as_secs_f64()),
                    "ratio_to_sha2_floor": r.vs_floor(),
                    "ratio_to_lanes_floor": r.vs_lanes_floor(),
                    "baseline": r.baseline.as_ref().map(|(n, _)| n.clone()),
                    "ratio_to_baseline": r.vs_baseline(),
                    "bytes_per_entry": r.bytes_per_entry,
                    "note": r.note,
                })
            })
            .collect();
        serde_json::json!({
            "entries": self.entries,
            "data_len": self.data_len,
            "seed": self.seed,
            "hash": self.hash.to_string(),
            "leaf_hashes": self.leaf_hashes.name(),
            "rows": rows,
        })
    }
}
