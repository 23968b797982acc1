//! Store workloads: import of N entries, random reads, and 10k-update
//! commits, on MemStore, the node log (`--backend log`) or FjallStore
//! (RocksStore with `--features rocksdb`,
//! CassandraStore with `--features cassandra`: `--backend cassandra --url
//! cassandra://HOST:PORT/KEYSPACE[?inflight=N&replication=N]`, the keyspace
//! dropped and recreated by `--op import`).
//!
//! ```text
//! cargo run --release -p shamap-store --example store_bench -- \
//!     --backend fjall --op import --entries 1000000 --dir /tmp/sb
//! /usr/bin/time -v target/release/examples/store_bench --backend fjall --op read --dir /tmp/sb
//! ```
//!
//! `--op import` builds N random entries (32-byte data) and imports them;
//! `read` and `commit` reuse the store in `--dir` (importing first when it
//! is empty, or always for `mem`). Keys come from `--seed`, so every op
//! sees the same map. Peak RSS: run under `/usr/bin/time -v`.
//!
//! The backed-map ops never build the map in memory: key `i` is a function
//! of (`--seed`, `i`), and the root is the one `--op import` recorded, so
//! their peak RSS is the backed map's budget (`--cache-mb`, default 5% of
//! the state) plus fixed overhead, printed at the end (`VmHWM`):
//!
//! - `backed-read`: random gets through a [`BackedMap`];
//! - `backed-commit`: blocks of `--updates` random updates, each block
//!   committed (`commit()`: one atomic batch);
//! - `scan`: every item in key order.
//!
//! `--fjall-cache-mb` sets fjall's block cache (default 8 for backed ops,
//! 64 otherwise).

use std::time::{Duration, Instant};

use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::sha512_half;
use shamap::{Key, MapKind, ShaMap, Snapshot};
use shamap_store::{
    import_ledger, meta, record_root, write_changed, Access, BackedMap, BackedOptions, FjallStore,
    MemStore, NewStore, NodeStore, NodeStoreExt, OpenOptions, Opened, StoredMap,
};

/// Store workloads: import, reads, commits and backed-map ops on one
/// backend.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// mem, log, fjall, rocksdb (feature `rocksdb`) or cassandra (feature
    /// `cassandra`).
    #[arg(long, default_value = "fjall")]
    backend: String,
    /// import, read, commit, backed-read, backed-commit or scan.
    #[arg(long, default_value = "import")]
    op: String,
    /// Entries of the benchmark map.
    #[arg(long, default_value_t = 1_000_000)]
    entries: usize,
    /// Random reads.
    #[arg(long, default_value_t = 200_000)]
    reads: usize,
    /// Committed blocks.
    #[arg(long, default_value_t = 20)]
    commits: usize,
    /// Updates per committed block.
    #[arg(long, default_value_t = 10_000)]
    updates: usize,
    /// Seed of the keys and data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory of an on-disk store.
    #[arg(long, default_value_os_t = std::env::temp_dir().join("shamap-store-bench"))]
    dir: std::path::PathBuf,
    /// The backed map's budget, MiB (default: 5% of the state); for the
    /// other ops on fjall, fjall's block cache.
    #[arg(long)]
    cache_mb: Option<u64>,
    /// fjall's block cache, MiB (default: 8 for the backed ops and `scan`,
    /// otherwise 64).
    #[arg(long)]
    fjall_cache_mb: Option<u64>,
    /// Cassandra: `cassandra://HOST:PORT/KEYSPACE[?inflight=N&replication=N]`.
    #[arg(long)]
    url: Option<String>,
}

/// Key `i` of the benchmark map of `seed`: a pure function, so backed ops
/// need not hold the key list.
fn bench_key(seed: u64, i: u64) -> Key {
    Key::from(sha512_half(&[&seed.to_le_bytes(), &i.to_le_bytes()]))
}

/// The data of key `i` as imported.
fn bench_data(seed: u64, i: u64) -> [u8; 32] {
    sha512_half(&[b"data", &seed.to_le_bytes(), &i.to_le_bytes()]).0
}

/// The name the import records its root under.
fn record_name(a: &Args) -> String {
    format!("bench {} {}", a.entries, a.seed)
}

/// The benchmark map: `n` random keys with 32 bytes of data each.
fn build(n: usize, seed: u64) -> (ShaMap, Vec<Key>) {
    let mut map = ShaMap::new(MapKind::AccountState);
    let mut keys = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let k = bench_key(seed, i);
        map.insert(k, &bench_data(seed, i))
            .expect("distinct 256-bit keys");
        keys.push(k);
    }
    (map, keys)
}

type Bench = (Box<dyn NodeStore>, Option<FjallStore>);

/// Opens the backend `--backend` names through the store crate's one
/// opening (`shamap_store::open_with`), except the in-memory store.
fn open(a: &Args) -> Result<Bench, String> {
    let mut opts = OpenOptions::new(Access::Create);
    let location = match a.backend.as_str() {
        "mem" => return Ok((Box::new(MemStore::new()), None)),
        "log" => a.dir.clone(),
        "fjall" => {
            opts.new_store = NewStore::Fjall;
            if let Some(mb) = a
                .cache_mb
                .filter(|_| !a.op.starts_with("backed") && a.op != "scan")
            {
                opts.fjall.cache_bytes = mb << 20;
            }
            if a.op.starts_with("backed") || a.op == "scan" {
                opts.fjall.cache_bytes = 8 << 20;
                opts.fjall.memtable_bytes = 8 << 20;
            }
            if let Some(mb) = a.fjall_cache_mb {
                opts.fjall.cache_bytes = mb << 20;
            }
            a.dir.clone()
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => {
            opts.new_store = NewStore::Rocks;
            a.dir.clone()
        }
        #[cfg(feature = "cassandra")]
        "cassandra" => {
            let url = a
                .url
                .as_deref()
                .ok_or("--backend cassandra needs --url cassandra://HOST:PORT/KEYSPACE")?;
            if a.op == "import" {
                if let Ok(Opened::Cassandra(old)) =
                    shamap_store::open_with(url, &OpenOptions::new(Access::Write))
                {
                    old.drop_keyspace().map_err(|e| e.to_string())?;
                }
            }
            std::path::PathBuf::from(url)
        }
        other => return Err(format!("unknown backend {other}")),
    };
    match shamap_store::open_with(&location, &opts).map_err(|e| e.to_string())? {
        Opened::Fjall(f) => Ok((Box::new(f.clone()), Some(f))),
        other => Ok((other.into_boxed(), None)),
    }
}

/// `--commits` commits of `--updates` updates each in `took`, as rates.
fn commit_rate(a: &Args, took: Duration) -> String {
    format!(
        "{} commits of {} updates: {:.2} commits/s ({:.0} updates/s)",
        a.commits,
        a.updates,
        a.commits as f64 / secs(took),
        (a.commits * a.updates) as f64 / secs(took)
    )
}

/// Prints `what`: the bytes on disk of the store at `dir` (fjall's
/// memtables flushed first), with and without fjall's journal.
fn print_disk_bytes(
    what: &str,
    store: &dyn NodeStore,
    fjall: Option<&FjallStore>,
    dir: &std::path::Path,
) -> Result<(), String> {
    if let Some(f) = fjall {
        f.flush_memtables().map_err(|e| e.to_string())?;
    }
    println!(
        "{what}: {} ({} without the preallocated journal)",
        store.disk_bytes().map_err(|e| e.to_string())?,
        bytes_except_journal(dir)
    );
    Ok(())
}

/// Allocated bytes under `dir`, leaving out fjall's journal files (`*.jnl`,
/// preallocated at 64 MiB whatever they hold).
fn bytes_except_journal(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(md) = e.metadata() else { continue };
            if md.is_dir() {
                stack.push(p);
            } else if p.extension().is_none_or(|x| x != "jnl") {
                total += md.blocks() * 512;
            }
        }
    }
    total
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Imports the map unless the store already holds it; returns the snapshot.
fn ensure_imported(
    store: &dyn NodeStore,
    a: &Args,
    keys: &mut Vec<Key>,
) -> Result<Snapshot, String> {
    let t = Instant::now();
    let (mut map, k) = build(a.entries, a.seed);
    *keys = k;
    let snap = map.snapshot();
    let built = t.elapsed();
    let have = meta::retained(store).map_err(|e| e.to_string())?;
    if have.iter().any(|r| r.hash == snap.root_hash()) {
        return Ok(snap);
    }
    let t = Instant::now();
    let r = import_ledger(store, &record_name(a), Some(&snap), None, None, &mut |_| {})
        .map_err(|e| e.to_string())?;
    store.sync().map_err(|e| e.to_string())?;
    let took = t.elapsed();
    println!(
        "import {} entries: build {:.2} s, store {:.2} s = {:.0} entries/s; {} nodes, {} value bytes",
        a.entries,
        secs(built),
        secs(took),
        a.entries as f64 / secs(took),
        r.stats.written,
        r.stats.bytes
    );
    Ok(snap)
}

fn run() -> Result<(), String> {
    let a = Args::parse();
    if (a.backend == "fjall" || a.backend == "rocksdb") && a.op == "import" && a.dir.exists() {
        std::fs::remove_dir_all(&a.dir).map_err(|e| e.to_string())?;
    }
    let (store, fjall) = open(&a)?;
    if a.op.starts_with("backed") || a.op == "scan" {
        return backed(&a, store.as_ref());
    }
    let mut keys = Vec::new();
    let snap = ensure_imported(store.as_ref(), &a, &mut keys)?;
    print_disk_bytes("disk bytes", store.as_ref(), fjall.as_ref(), &a.dir)?;
    let mut rng = SmallRng::seed_from_u64(a.seed ^ 0x5EED);
    match a.op.as_str() {
        "import" => {}
        "read" => {
            drop(snap);
            let map = StoredMap::open(
                store.as_ref(),
                meta::latest(store.as_ref())
                    .map_err(|e| e.to_string())?
                    .ok_or("no root")?
                    .hash,
                MapKind::AccountState,
            )
            .map_err(|e| e.to_string())?;
            // Warm-up: 10% of the reads, not timed.
            for _ in 0..a.reads / 10 {
                let k = keys[rng.gen_range(0..keys.len())];
                map.get(&k).map_err(|e| e.to_string())?;
            }
            timed_reads("read", a.reads, || {
                let k = keys[rng.gen_range(0..keys.len())];
                match map.get(&k).map_err(|e| e.to_string())? {
                    Some(_) => Ok(()),
                    None => Err(format!("key {k} missing")),
                }
            })?;
        }
        "commit" => {
            let mut current = snap;
            let t = Instant::now();
            let mut written = 0;
            for c in 0..a.commits {
                let mut m = current.to_map();
                let mut changed = Vec::with_capacity(a.updates);
                for _ in 0..a.updates {
                    let k = keys[rng.gen_range(0..keys.len())];
                    let d: [u8; 32] = rng.gen();
                    m.update(k, &d).map_err(|e| e.to_string())?;
                    changed.push(k);
                }
                let s = m.snapshot();
                let w = write_changed(store.as_ref(), &s, &changed).map_err(|e| e.to_string())?;
                record_root(
                    store.as_ref(),
                    &format!("commit {c}"),
                    s.root_hash(),
                    Default::default(),
                )
                .map_err(|e| e.to_string())?;
                written += w.written;
                current = s;
            }
            let took = t.elapsed();
            println!(
                "{}, {:.0} nodes written per commit",
                commit_rate(&a, took),
                written as f64 / a.commits as f64
            );
        }
        other => return Err(format!("unknown op {other}")),
    }
    print_disk_bytes("disk bytes at end", store.as_ref(), fjall.as_ref(), &a.dir)?;
    Ok(())
}

/// Runs `read` `reads` times, timing each, and prints reads/s and the p50
/// and p99 latencies under the name `what`.
fn timed_reads(
    what: &str,
    reads: usize,
    mut read: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let mut lat = Vec::with_capacity(reads);
    let t = Instant::now();
    for _ in 0..reads {
        let s = Instant::now();
        read()?;
        lat.push(s.elapsed());
    }
    let took = t.elapsed();
    lat.sort_unstable();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{what} {reads} random keys: {:.0} reads/s, p50 {:.1} us, p99 {:.1} us",
        reads as f64 / secs(took),
        p(0.50).as_secs_f64() * 1e6,
        p(0.99).as_secs_f64() * 1e6
    );
    Ok(())
}

/// Peak RSS of this process (`VmHWM`), in MiB.
fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// RSS of this process now (`VmRSS`), in MiB.
fn rss_now_mb() -> f64 {
    status_mb("VmRSS:")
}

fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The backed-map ops (see the module docs): nothing but the store, the
/// backed map and its budget in memory.
fn backed(a: &Args, store: &dyn NodeStore) -> Result<(), String> {
    let name = record_name(a);
    let root = meta::retained(store)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|r| r.name == name)
        .ok_or(format!("no root '{name}' in the store: run --op import first with the same --entries and --seed"))?
        .hash;
    // Default budget: 5% of the state's node bytes (≈ 266 B per entry at
    // 32-byte data: 1.36 nodes per entry).
    let budget_mb = a
        .cache_mb
        .unwrap_or(((a.entries as u64 * 266) / 20) >> 20)
        .max(1);
    let opts = BackedOptions::with_budget_mb(budget_mb);
    let mut map =
        BackedMap::open(store, root, MapKind::AccountState, opts).map_err(|e| e.to_string())?;
    let mut rng = SmallRng::seed_from_u64(a.seed ^ 0xBAC4ED);
    let n = a.entries as u64;
    println!("backed map: budget {budget_mb} MiB, root {root}");
    match a.op.as_str() {
        "backed-read" => {
            for _ in 0..a.reads / 10 {
                map.get(&bench_key(a.seed, rng.gen_range(0..n)))
                    .map_err(|e| e.to_string())?;
            }
            timed_reads("backed-read", a.reads, || {
                let i = rng.gen_range(0..n);
                let v = map.get(&bench_key(a.seed, i)).map_err(|e| e.to_string())?;
                if v.as_deref() != Some(&bench_data(a.seed, i)[..]) {
                    return Err(format!("key {i} reads wrong data"));
                }
                Ok(())
            })?;
        }
        "backed-commit" => {
            let t = Instant::now();
            for c in 0..a.commits {
                for _ in 0..a.updates {
                    let k = bench_key(a.seed, rng.gen_range(0..n));
                    let d: [u8; 32] = rng.gen();
                    map.upsert(k, &d).map_err(|e| e.to_string())?;
                }
                map.commit(&format!("{name} head"))
                    .map_err(|e| e.to_string())?;
                println!(
                    "commit {c} at {:.2} s, RSS now {:.1} MiB",
                    secs(t.elapsed()),
                    rss_now_mb()
                );
            }
            let took = t.elapsed();
            println!("backed-commit: {}", commit_rate(a, took));
        }
        "scan" => {
            let t = Instant::now();
            let mut count = 0u64;
            map.for_each(&mut |_, _| {
                count += 1;
                std::ops::ControlFlow::Continue(())
            })
            .map_err(|e| e.to_string())?;
            let took = t.elapsed();
            if count != n {
                return Err(format!("scan found {count} items, expected {n}"));
            }
            println!(
                "scan {count} items: {:.0} items/s ({:.2} s)",
                count as f64 / secs(took),
                secs(took)
            );
        }
        other => return Err(format!("unknown op {other}")),
    }
    let s = map.stats();
    println!(
        "node cache: peak {:.1} MiB of {budget_mb} MiB, {} hits, {} loads, {} evictions; dirty peak {:.1} MiB, {} spills, {} nodes written",
        s.cache_peak_bytes as f64 / 1048576.0,
        s.hits,
        s.loads,
        s.evictions,
        s.dirty_peak_bytes as f64 / 1048576.0,
        s.spills,
        s.nodes_written
    );
    println!("peak RSS (VmHWM) {:.1} MiB", peak_rss_mb());
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
