//! The `durable` workload: on-disk state engines side by side, each step in
//! a child process of its own so that each peak RSS (`VmHWM`) is that
//! step's alone.
//!
//! Engines:
//! - `ours`: a [`shamap_store::BackedMap`] on the node log
//!   ([`shamap_store::LogStore`]), at the node budget `--cache-mb` gives
//!   (default: the library's default), every commit durable (the root
//!   record written with `fdatasync`); `ours-fjall` the same on fjall, set
//!   up for a store under a node cache (`FjallOptions::beside_node_cache`:
//!   8 MiB block cache, 4 MiB write buffer, unless `--fjall-cache-mb`,
//!   `--memtable-mb`; `SyncAll` at commits); `ours-rocks` on RocksDB
//!   (feature `rocksdb`);
//! - `nomt` (feature `peer-nomt`): nomt, whose commit returns after fsync;
//! - `disk-floor`: the bytes our import wrote, written sequentially to one
//!   file with one fsync at the end: what the disk allows.
//!
//! Workloads, in this order, on the same keys and writes for every engine
//! (all a function of `--seed`, see [`ops`]):
//! - `import`: `--entries` random keys with `--data-len` bytes of data,
//!   from an empty directory to a durable root, in `--import-rounds`
//!   rounds (each row its fastest: see the bench README);
//! - `commit_10k`: `--blocks` blocks of `--block` writes (60% updates, 20%
//!   inserts, 20% removes), each committed durably;
//! - `read`: `--gets` random present keys (after 10% of that, untimed, to
//!   warm the caches);
//! - `read_with_writer` (ours): the same reads from a committed root while
//!   a writer thread applies and commits further blocks; the writer's rate
//!   is in the row's note.
//!
//! ```text
//! cargo run --release -p shamap-bench --features peer-nomt -- \
//!     --workloads durable --entries 1000000 [--json]
//! ```

mod floor;
#[cfg(feature = "peer-nomt")]
mod nomt;
pub mod ops;
mod ours;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::args::{Args, ChildStep, Step};

/// One result: a workload on one engine, measured in its own process.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub engine: String,
    pub workload: String,
    pub ops: u64,
    pub seconds: f64,
    /// `VmHWM` of the process that ran it, MiB.
    pub peak_rss_mib: f64,
    /// Whether the engine made its work durable (fsync) before reporting it.
    pub fsync: bool,
    /// Bytes allocated under the engine's directory at the end, if measured.
    pub disk_bytes: Option<u64>,
    /// Payload bytes written (the import's node bytes: the floor's input).
    pub bytes_written: Option<u64>,
    pub note: String,
    /// Seconds of the other rounds of this step, slower than this one.
    pub rounds: Vec<f64>,
}

impl Row {
    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.seconds.max(1e-9)
    }

    fn to_json(&self, entries: u64) -> serde_json::Value {
        let mut v = serde_json::json!({
            "engine": self.engine,
            "workload": self.workload,
            "ops": self.ops,
            "seconds": self.seconds,
            "ops_per_s": self.ops_per_s(),
            "peak_rss_mib": self.peak_rss_mib,
            "fsync": self.fsync,
        });
        if let Some(d) = self.disk_bytes {
            v["disk_bytes"] = d.into();
            v["disk_bytes_per_entry"] = (d as f64 / entries.max(1) as f64).into();
        }
        if let Some(b) = self.bytes_written {
            v["bytes_written"] = b.into();
        }
        if !self.note.is_empty() {
            v["note"] = self.note.clone().into();
        }
        if !self.rounds.is_empty() {
            v["slower_rounds_seconds"] = self.rounds.clone().into();
        }
        v
    }

    fn from_json(v: &serde_json::Value) -> Option<Row> {
        Some(Row {
            engine: v["engine"].as_str()?.to_owned(),
            workload: v["workload"].as_str()?.to_owned(),
            ops: v["ops"].as_u64()?,
            seconds: v["seconds"].as_f64()?,
            peak_rss_mib: v["peak_rss_mib"].as_f64()?,
            fsync: v["fsync"].as_bool()?,
            disk_bytes: v["disk_bytes"].as_u64(),
            bytes_written: v["bytes_written"].as_u64(),
            note: v["note"].as_str().unwrap_or("").to_owned(),
            rounds: Vec::new(),
        })
    }
}

/// The parameters every step shares, from the command line.
pub struct Plan {
    pub entries: u64,
    pub seed: u64,
    pub data_len: usize,
    pub block: usize,
    pub blocks: usize,
    pub reads: usize,
    pub cache_mb: Option<u64>,
    pub fjall_cache_mb: Option<u64>,
    pub memtable_mb: Option<u64>,
    /// Load each block's paths on every core before applying it.
    pub prefetch: bool,
    pub dir: PathBuf,
}

impl Plan {
    fn from_args(args: &Args, dir: PathBuf) -> Plan {
        Plan {
            entries: args.entries as u64,
            seed: args.seed,
            data_len: args.data_len,
            block: args.block,
            blocks: args.blocks,
            reads: args.gets,
            cache_mb: args.cache_mb,
            fjall_cache_mb: args.fjall_cache_mb,
            memtable_mb: args.memtable_mb,
            prefetch: !args.no_prefetch,
            dir,
        }
    }

    /// The engine's own directory.
    pub fn engine_dir(&self, engine: &str) -> PathBuf {
        self.dir.join(engine)
    }
}

/// The engines built into this binary.
fn engines() -> Vec<&'static str> {
    let mut e: Vec<&'static str> = ours::Backend::all().into_iter().map(|(n, _)| n).collect();
    if cfg!(feature = "peer-nomt") {
        e.push("nomt");
    }
    e
}

/// The parent: runs every step in a child process and prints the table.
pub fn run(args: &Args) {
    if let Some(spec) = &args.durable_child {
        child(args, spec);
        return;
    }
    let wanted: Vec<&str> = args.engines.iter().map(String::as_str).collect();
    let built = engines();
    // The peer comparison's default list names engines this workload does
    // not have; keep the ones it has.
    let chosen: Vec<&str> = built
        .iter()
        .copied()
        .filter(|e| wanted.contains(e) || wanted == crate::args::DEFAULT_ENGINES)
        .collect();
    if chosen.is_empty() {
        eprintln!("error: none of the engines {wanted:?} runs the durable workload (ours, ours-fjall; ours-rocks with the rocksdb feature; nomt with the peer-nomt feature)");
        std::process::exit(2);
    }
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("shamap-durable-{}", std::process::id()))
    });
    if dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            eprintln!("error: cannot clear {}: {e}", dir.display());
            std::process::exit(2);
        }
    }
    let plan = Plan::from_args(args, dir);
    let mut rows: Vec<Row> = Vec::new();
    let failed = std::cell::Cell::new(false);
    let run_step =
        |engine: &str, step: Step, rows: &mut Vec<Row>| match spawn(args, &plan, engine, step) {
            Ok(row) => {
                if !args.json {
                    eprintln!("{}", text_line(&row));
                }
                rows.push(row);
            }
            Err(e) => {
                eprintln!("error: {engine} {}: {e}", step.name());
                failed.set(true);
            }
        };
    // Import rounds: every engine, then the floor (the bytes our import
    // wrote), from empty directories; each row keeps its fastest round.
    let mut best: Vec<Row> = Vec::new();
    for round in 0..args.import_rounds.max(1) {
        for &engine in &chosen {
            if round > 0 {
                let cleared = std::fs::remove_dir_all(plan.engine_dir(engine));
                if let Err(e) = cleared.or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                }) {
                    eprintln!(
                        "error: cannot clear {}: {e}",
                        plan.engine_dir(engine).display()
                    );
                    std::process::exit(2);
                }
            }
            let mut one = Vec::new();
            run_step(engine, Step::Import, &mut one);
            one.into_iter().for_each(|r| keep_fastest(r, &mut best));
        }
        let floor_bytes = best
            .iter()
            .find(|r| r.engine == "ours" && r.workload == "import")
            .and_then(|r| r.bytes_written);
        if let Some(bytes) = floor_bytes {
            match floor::run(&plan.engine_dir("disk-floor"), bytes, plan.entries) {
                Ok(row) => {
                    if !args.json {
                        eprintln!("{}", text_line(&row));
                    }
                    keep_fastest(row, &mut best);
                }
                Err(e) => {
                    eprintln!("error: disk-floor: {e}");
                    failed.set(true);
                }
            }
        }
    }
    for b in &mut best {
        if !b.rounds.is_empty() {
            let others: Vec<String> = b.rounds.iter().map(|s| format!("{s:.2} s")).collect();
            let sep = if b.note.is_empty() { "" } else { "; " };
            b.note += &format!(
                "{sep}fastest of {} rounds (others: {})",
                b.rounds.len() + 1,
                others.join(", ")
            );
        }
    }
    rows.extend(best);
    for step in [Step::Commit, Step::Read] {
        for &engine in &chosen {
            run_step(engine, step, &mut rows);
        }
    }
    for &engine in chosen.iter().filter(|e| e.starts_with("ours")) {
        run_step(engine, Step::ReadWithWriter, &mut rows);
    }
    if args.keep_dir {
        eprintln!("kept {}", plan.dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&plan.dir);
    }
    if args.json {
        let json: Vec<_> = rows.iter().map(|r| r.to_json(plan.entries)).collect();
        println!("{}", serde_json::json!({ "rows": json }));
    } else {
        print!("{}", markdown(&rows, &plan));
    }
    if failed.get() {
        std::process::exit(1);
    }
}

/// Keeps in `best` the faster of `row` and the row of its engine there,
/// noting the slower one's seconds.
fn keep_fastest(row: Row, best: &mut Vec<Row>) {
    match best.iter_mut().find(|b| b.engine == row.engine) {
        Some(b) => {
            if row.seconds < b.seconds {
                let slower = std::mem::replace(b, row);
                b.rounds = slower.rounds;
                b.rounds.push(slower.seconds);
            } else {
                b.rounds.push(row.seconds);
            }
        }
        None => best.push(row),
    }
}

/// Runs one step in a child process of this binary and reads its row.
fn spawn(args: &Args, plan: &Plan, engine: &str, step: Step) -> Result<Row, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["--workloads", "durable"])
        .args(["--durable-child", &format!("{engine}/{}", step.name())])
        .args(["--entries", &plan.entries.to_string()])
        .args(["--seed", &plan.seed.to_string()])
        .args(["--data-len", &plan.data_len.to_string()])
        .args(["--block", &plan.block.to_string()])
        .args(["--blocks", &plan.blocks.to_string()])
        .args(["--gets", &plan.reads.to_string()])
        .arg("--dir")
        .arg(&plan.dir);
    for (flag, value) in [
        ("--cache-mb", plan.cache_mb),
        ("--fjall-cache-mb", plan.fjall_cache_mb),
        ("--memtable-mb", plan.memtable_mb),
    ] {
        if let Some(mb) = value {
            cmd.args([flag, &mb.to_string()]);
        }
    }
    if args.json {
        cmd.arg("--json");
    }
    // mimalloc without transparent huge pages, for every engine alike
    // (unless the caller set it): on this VM a fresh 2 MiB page costs
    // host page faults (3 GiB of them: 7.8 s of system time), and
    // mimalloc's arenas back small, short-lived allocations with them (the
    // paired runs behind this: docs/design.md, "mimalloc in the bench").
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        cmd.env("MIMALLOC_ALLOW_THP", "0");
    }
    if !plan.prefetch {
        cmd.arg("--no-prefetch");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start a child process: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return Err(format!("child failed ({}): {last}", out.status));
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or("the child printed no row")?;
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("the child's row is not JSON: {e}"))?;
    Row::from_json(&v).ok_or_else(|| format!("the child's row lacks fields: {line}"))
}

/// The child: runs one step and prints its row as one JSON line.
fn child(args: &Args, spec: &ChildStep) {
    let dir = args.dir.clone().unwrap_or_else(|| {
        eprintln!("error: --durable-child needs --dir");
        std::process::exit(2);
    });
    let plan = Plan::from_args(args, dir);
    let (engine, step) = (spec.engine.as_str(), spec.step);
    let backend = ours::Backend::all()
        .into_iter()
        .find(|(n, _)| *n == engine)
        .map(|(_, b)| b);
    let result = match engine {
        _ if backend.is_some() => ours::run(&plan, step, engine, backend.expect("found")),
        #[cfg(feature = "peer-nomt")]
        "nomt" => nomt::run(&plan, step),
        other => Err(format!("engine {other:?} not built in")),
    };
    match result {
        Ok(mut row) => {
            row.engine = engine.to_owned();
            row.workload = step.name().to_owned();
            row.peak_rss_mib = crate::rss::peak().map_or(f64::NAN, |b| b as f64 / 1048576.0);
            println!("{}", row.to_json(plan.entries));
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}

/// Bytes allocated under `path` (st_blocks × 512), recursively.
pub fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => allocated_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

fn text_line(r: &Row) -> String {
    format!(
        "{:<10} {:<17} {:>10} ops {:>8.2} s {:>12.0} ops/s  peak RSS {:>7.1} MiB  fsync {}{}",
        r.engine,
        r.workload,
        r.ops,
        r.seconds,
        r.ops_per_s(),
        r.peak_rss_mib,
        r.fsync,
        if r.note.is_empty() {
            String::new()
        } else {
            format!("  ({})", r.note)
        }
    )
}

/// The rows as a markdown table, then the ratios the targets are about.
fn markdown(rows: &[Row], plan: &Plan) -> String {
    let fjall_default = shamap_store::FjallOptions::beside_node_cache();
    let mut s = format!(
        "durable workload: {} entries, {} B data, {} blocks of {}, {} reads, seed {}, node budget {}, fjall cache {}, write buffer {}\n\n",
        plan.entries,
        plan.data_len.max(8),
        plan.blocks,
        plan.block,
        plan.reads,
        plan.seed,
        mib(plan.cache_mb),
        mib(Some(plan.fjall_cache_mb.unwrap_or(fjall_default.cache_bytes >> 20))),
        mib(Some(plan.memtable_mb.unwrap_or(fjall_default.memtable_bytes >> 20))),
    );
    s += "| engine | workload | ops | seconds | ops/s | peak RSS MiB | disk B/entry | fsync | note |\n";
    s += "|---|---|---:|---:|---:|---:|---:|---|---|\n";
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {:.2} | {:.0} | {:.1} | {} | {} | {} |\n",
            r.engine,
            r.workload,
            r.ops,
            r.seconds,
            r.ops_per_s(),
            r.peak_rss_mib,
            r.disk_bytes.map_or("".to_owned(), |d| format!(
                "{:.0}",
                d as f64 / plan.entries.max(1) as f64
            )),
            r.fsync,
            r.note
        );
    }
    let find = |e: &str, w: &str| rows.iter().find(|r| r.engine == e && r.workload == w);
    s += "\n";
    for w in ["commit_10k", "read"] {
        if let (Some(a), Some(b)) = (find("ours", w), find("nomt", w)) {
            s += &format!(
                "- {w}: ours/nomt {:.2}× ops/s at {:.2}× peak RSS\n",
                a.ops_per_s() / b.ops_per_s(),
                a.peak_rss_mib / b.peak_rss_mib
            );
        }
    }
    if let (Some(a), Some(f)) = (find("ours", "import"), find("disk-floor", "import")) {
        s += &format!(
            "- import: {:.2}× the disk floor's time\n",
            a.seconds / f.seconds.max(1e-9)
        );
    }
    if let (Some(a), Some(b)) = (find("ours", "import"), find("nomt", "import")) {
        s += &format!(
            "- import: ours/nomt {:.2}× entries/s\n",
            a.ops_per_s() / b.ops_per_s()
        );
    }
    s
}

fn mib(v: Option<u64>) -> String {
    v.map_or("library default".to_owned(), |m| format!("{m} MiB"))
}

/// The `read` step's row: looks up `warm` (untimed), then `timed`, with
/// `get`, which fails on a missing key.
pub fn timed_reads<K>(
    warm: &[K],
    timed: &[K],
    get: impl Fn(&K) -> Result<(), String>,
    note: &str,
) -> Result<Row, String> {
    for k in warm {
        get(k)?;
    }
    let t = std::time::Instant::now();
    for k in timed {
        get(k)?;
    }
    Ok(Row {
        ops: timed.len() as u64,
        seconds: secs(t.elapsed()),
        fsync: true,
        note: note.into(),
        ..Row::default()
    })
}

/// Seconds of a duration, for rows.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
