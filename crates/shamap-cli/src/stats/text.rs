//! The text report: a heading, then sections of aligned tables.
//!
//! Counted figures are plain; modelled and predicted ones say so in their
//! section heading. Byte figures carry thousands separators.

use shamap::advisor::ClassPlan;
use shamap::MapKind;

use super::report::{InputInfo, Report};

/// `1234567` → `1,234,567`.
pub fn int(n: u64) -> String {
    let s = n.to_string();
    let groups: Vec<&str> = s
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    groups.join(",")
}

/// `{2, 4, 6, 16}`.
pub fn classes(caps: &[u8]) -> String {
    let v: Vec<String> = caps.iter().map(u8::to_string).collect();
    format!("{{{}}}", v.join(", "))
}

fn pct(part: f64, whole: f64) -> String {
    if whole == 0.0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * part / whole)
    }
}

fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

/// Column alignment.
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
}

/// An aligned table: a header row, then rows, columns separated by two
/// spaces and indented by two.
struct Table {
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str], align: &[Align]) -> Table {
        Table {
            align: align.to_vec(),
            rows: vec![header.iter().map(|s| (*s).to_owned()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String) {
        let cols = self.align.len();
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in &self.rows {
            let mut line = String::from(" ");
            for (c, w) in width.iter().enumerate() {
                let cell = r.get(c).map_or("", String::as_str);
                line.push_str("  ");
                match self.align[c] {
                    Align::Left => line.push_str(&format!("{cell:<w$}")),
                    Align::Right => line.push_str(&format!("{cell:>w$}")),
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

fn section(out: &mut String, title: &str) {
    out.push('\n');
    out.push_str(title);
    out.push('\n');
}

fn kind_name(kind: MapKind) -> &'static str {
    match kind {
        MapKind::AccountState => "account-state",
        MapKind::TransactionWithMeta => "transaction (with metadata)",
        MapKind::TransactionNoMeta => "transaction-set (no metadata)",
    }
}

/// The whole text report.
pub fn render(r: &Report) -> String {
    use Align::{Left as L, Right as R};
    let mut out = String::new();
    let n = r.stats.mem.entries as u64;
    let nf = n.max(1) as f64;
    let from = match &r.input {
        InputInfo::Random { seed, data_len } => match data_len {
            None => format!("random keys, seed {seed}, mainnet-shaped data sizes"),
            Some(l) => format!("random keys, seed {seed}, {l}-byte data"),
        },
        InputInfo::Dump {
            sources,
            ledger_index,
        } => {
            let ledger = ledger_index.map_or_else(String::new, |i| format!(", ledger {i}"));
            format!("{}{ledger}", sources.join(", "))
        }
    };
    out.push_str(&format!(
        "{} map of {} entries from {from}\nsize classes {}{}\nroot_hash {}{}\n",
        kind_name(r.stats.kind),
        int(n),
        classes(r.stats.classes.capacities()),
        if r.stats.mem.leaf_hashes.stored() {
            ""
        } else {
            "; hashless-leaf mode: leaf hashes recomputed, not stored"
        },
        r.stats.root_hash,
        if r.stats.hash.is_xrpl() {
            String::new()
        } else {
            format!(" ({}, not an XRPL hash)", r.stats.hash)
        }
    ));

    section(&mut out, "Nodes (counted)");
    let mut t = Table::new(&["", "count", "per entry"], &[L, R, R]);
    let inner = r.stats.mem.inner_nodes as u64;
    t.row(vec!["entries".into(), int(n), String::new()]);
    t.row(vec![
        "leaf nodes".into(),
        int(r.stats.mem.leaf_nodes as u64),
        format!("{:.3}", r.stats.mem.leaf_nodes as f64 / nf),
    ]);
    t.row(vec![
        "inner nodes".into(),
        int(inner),
        format!("{:.3}", inner as f64 / nf),
    ]);
    t.row(vec![
        "mean leaf depth".into(),
        format!("{:.2}", r.stats.shape.mean_leaf_depth()),
        String::new(),
    ]);
    t.row(vec![
        "slots per inner node".into(),
        format!("{:.2}", r.stats.mem.slots_per_inner()),
        String::new(),
    ]);
    t.render(&mut out);

    section(&mut out, "Children per inner node (counted)");
    let mut t = Table::new(
        &["children", "inner nodes", "share", "capacity"],
        &[R, R, R, R],
    );
    let h = &r.stats.shape.child_histogram;
    for (c, &count) in h.iter().enumerate() {
        if c == 0 && count == 0 {
            continue;
        }
        let cap = r.stats.classes.capacity(r.stats.classes.class_for(c));
        t.row(vec![
            c.to_string(),
            int(count),
            pct(count as f64, inner as f64),
            cap.to_string(),
        ]);
    }
    t.render(&mut out);

    section(&mut out, "Leaf depth (counted)");
    let mut t = Table::new(&["depth", "leaves", "share"], &[R, R, R]);
    let d = &r.stats.shape.depth_histogram;
    let last = d.iter().rposition(|&c| c > 0).unwrap_or(0);
    let first = d.iter().position(|&c| c > 0).unwrap_or(0);
    let mut depth = first.max(1);
    while depth <= last {
        // A run of three or more empty depths is one row.
        let run = d[depth..=last].iter().take_while(|&&c| c == 0).count();
        if run >= 3 {
            t.row(vec![
                format!("{}-{}", depth, depth + run - 1),
                "0".into(),
                pct(0.0, n as f64),
            ]);
            depth += run;
            continue;
        }
        t.row(vec![
            depth.to_string(),
            int(d[depth]),
            pct(d[depth] as f64, n as f64),
        ]);
        depth += 1;
    }
    if n == 0 {
        t.row(vec!["-".into(), "0".into(), "-".into()]);
    }
    t.render(&mut out);

    section(&mut out, "Leaf data (counted)");
    out.push_str(&format!(
        "  {} bytes in total, {:.1} per entry; largest {} bytes\n",
        int(r.stats.data.total),
        r.stats.data.total as f64 / nf,
        int(r.stats.data.max_bytes() as u64)
    ));
    if let Some(types) = &r.stats.data.by_type {
        let mut t = Table::new(
            &[
                "entry type",
                "code",
                "entries",
                "bytes",
                "mean",
                "share of bytes",
            ],
            &[L, L, R, R, R, R],
        );
        for ty in types {
            t.row(vec![
                ty.label(),
                ty.code
                    .map_or_else(|| "-".into(), shamap_ledger::entry_type::hex),
                int(ty.entries),
                int(ty.bytes),
                format!("{:.1}", ty.mean()),
                pct(ty.bytes as f64, r.stats.data.total as f64),
            ]);
        }
        t.render(&mut out);
    }

    render_memory(r, &mut out);
    render_models(r, &mut out);
    render_advisor(r, &mut out);
    render_hashing(r, &mut out);
    out
}

fn render_memory(r: &Report, out: &mut String) {
    use Align::{Left as L, Right as R};
    let b = &r.stats.mem.bytes;
    let nf = r.stats.mem.entries.max(1) as f64;
    let total = b.total as f64;
    section(out, "Memory (counted by the engine)");
    let mut t = Table::new(&["category", "bytes", "per entry", "share"], &[L, R, R, R]);
    let mut row = |name: String, v: usize| {
        t.row(vec![
            name,
            int(v as u64),
            format!("{:.2}", v as f64 / nf),
            pct(v as f64, total),
        ]);
    };
    row("inner headers (hash, 32 B each)".into(), b.inner_hashes);
    for c in &r.stats.mem.inner_classes {
        if c.nodes == 0 {
            continue;
        }
        row(
            format!("child slots, capacity {:>2}: used", c.capacity),
            8 * c.slots_used,
        );
        row(
            format!("child slots, capacity {:>2}: unused", c.capacity),
            8 * c.slots_unused,
        );
    }
    row("leaf hashes".into(), b.leaf_hashes);
    row("leaf keys".into(), b.leaf_keys);
    row("leaf data".into(), b.leaf_data);
    row(
        "leaf padding (and long-length words)".into(),
        b.leaf_padding,
    );
    row("pool slack (headers, free chunks)".into(), b.pool_slack);
    row("other (map struct, bookkeeping)".into(), b.other);
    row("total".into(), b.total);
    t.render(out);
    out.push_str(&format!(
        "  beyond key and data: {} bytes, {:.2} per entry\n",
        int(r.stats.overhead_bytes()),
        r.stats.mem.overhead_per_entry()
    ));
    out.push_str(&format!(
        "  not in the total: {} bytes of pool blocks never touched (reserved, not resident)\n",
        int(b.pool_untouched as u64)
    ));
    let leaf_blocks: usize = r.stats.mem.leaf_pools.iter().map(|p| p.blocks).sum();
    out.push_str(&format!(
        "  leaf pools: {} chunk sizes in use, {} blocks of 256 KiB; {} leaves over 1 KiB allocated singly (malloc)\n",
        int(r.stats.mem.leaf_pools.len() as u64),
        int(leaf_blocks as u64),
        int(r.stats.mem.large_leaves as u64)
    ));

    let mut t = Table::new(
        &[
            "capacity",
            "inner nodes",
            "slots used",
            "slots unused",
            "chunk bytes",
            "blocks",
        ],
        &[R, R, R, R, R, R],
    );
    for c in &r.stats.mem.inner_classes {
        t.row(vec![
            c.capacity.to_string(),
            int(c.nodes as u64),
            int(c.slots_used as u64),
            int(c.slots_unused as u64),
            c.chunk_bytes.to_string(),
            int(c.blocks as u64),
        ]);
    }
    out.push('\n');
    t.render(out);
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}x"))
}

fn render_models(r: &Report, out: &mut String) {
    use Align::{Left as L, Right as R};
    section(
        out,
        "Same tree, other layouts (modelled from the histogram; nodes only)",
    );
    let mut t = Table::new(
        &["layout", "B/entry beyond key+data", "vs ours"],
        &[L, R, R],
    );
    t.row(vec![
        format!("ours, counted, {}", classes(r.stats.classes.capacities())),
        format!("{:.2}", r.stats.mem.overhead_per_entry()),
        "1.00x".into(),
    ]);
    t.row(vec![
        "dense: our nodes, 16 slots each".into(),
        format!("{:.2}", r.stats.models.dense.overhead_per_entry),
        ratio(r.stats.models.dense.ratio_to_ours),
    ]);
    t.row(vec![
        "rippled: 64 B + 40 B/slot {2, 4, 6, 16}; leaf 64 B".into(),
        format!("{:.2}", r.stats.models.rippled.overhead_per_entry),
        ratio(r.stats.models.rippled.ratio_to_ours),
    ]);
    t.render(out);
}

fn plan_row(r: &Report, label: String, p: &ClassPlan) -> Vec<String> {
    vec![
        label,
        classes(&p.capacities),
        int(p.slots),
        format!("{:.2}", p.slots_per_inner()),
        pct(r.stats.advice.slots_vs_dense(p), 1.0),
        pct(r.stats.advice.inner_bytes_vs_dense(p), 1.0),
        format!("{:.2}", r.stats.predicted_overhead_per_entry(p)),
    ]
}

fn render_advisor(r: &Report, out: &mut String) {
    use Align::{Left as L, Right as R};
    section(
        out,
        "Size-class advisor (optimal classes for this histogram; B/entry predicted)",
    );
    let mut t = Table::new(
        &[
            "sparse classes",
            "classes",
            "slots",
            "per inner",
            "slots vs dense",
            "inner bytes vs dense",
            "B/entry",
        ],
        &[L, L, R, R, R, R, R],
    );
    t.row(plan_row(r, "as built".into(), &r.stats.current));
    t.row(plan_row(r, "0 (dense)".into(), &r.stats.advice.dense));
    for (k, p) in r.stats.advice.best.iter().enumerate() {
        let label = if p.sparse_classes() < k + 1 {
            format!("{} (needs {})", k + 1, p.sparse_classes())
        } else {
            (k + 1).to_string()
        };
        t.row(plan_row(r, label, p));
    }
    t.render(out);
    out.push_str("  measure a row: shamap stats ... --classes 2,4,10,16\n");
}

fn render_hashing(r: &Report, out: &mut String) {
    use Align::{Left as L, Right as R};
    section(out, "Time");
    let mut t = Table::new(&["", "time", "share"], &[L, R, R]);
    t.row(vec![
        "build the map".into(),
        secs(r.build_seconds),
        String::new(),
    ]);
    match &r.hashing {
        None => {
            t.render(out);
            out.push_str("  hashing not timed (--no-timing)\n");
        }
        Some(h) => {
            let floor = h.floor_seconds.min(h.root_seconds);
            t.row(vec![
                "root from scratch, 1 thread".into(),
                secs(h.root_seconds),
                "100%".into(),
            ]);
            t.row(vec![
                "  inside the hash function (floor)".into(),
                secs(h.floor_seconds),
                pct(h.floor_seconds, h.root_seconds),
            ]);
            t.row(vec![
                "  walking, loading, other".into(),
                secs(h.root_seconds - floor),
                pct(h.root_seconds - floor, h.root_seconds),
            ]);
            t.render(out);
            out.push_str(&format!(
                "  {} leaf + {} inner hashes, {} bytes hashed by {} ({}); fastest of {} run(s)\n",
                int(h.leaf_hashes),
                int(h.inner_hashes),
                int(h.hashed_bytes),
                if r.stats.hash.is_xrpl() {
                    "sha512-lanes"
                } else {
                    "blake3-lanes"
                },
                h.backend,
                h.runs
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(1_234_567), "1,234,567");
        assert_eq!(classes(&[2, 4, 16]), "{2, 4, 16}");
    }
}
