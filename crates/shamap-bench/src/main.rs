//! `shamap-bench`: workload benchmarks, each reported beside its hashing
//! floor (the time to hash exactly the byte strings the workload hashed, in
//! a tight loop) and with memory per entry.
//!
//! ```text
//! cargo run --release -p shamap-bench -- --entries 1000000 --seed 7
//! cargo run --release -p shamap-bench -- --workloads update,session --json
//! cargo run --release -p shamap-bench -- --quick --entries 100000   # fixed counts (callgrind)
//! cargo run --release -p shamap-bench --features peers -- --workloads peers
//! ```

use std::time::{Duration, Instant};

use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::xrpl::sha512_half;
use shamap::{HashFunction, HashWork, Key, MapKind, MapOptions, ShaMap};

/// Every engine in this binary allocates through mimalloc: the application
/// chooses the allocator, and every engine gets the same one. Measured
/// (`durable` workload, 1M entries, same run): our `commit_10k` 58.8k
/// writes/s with mimalloc vs 37.8k with glibc's malloc, whose free-list
/// coalescing took ~18% of a commit profile (the backed map's node cache
/// frees and allocates small nodes at every load and eviction); nomt 37.6k
/// vs 36.8k. Figures recorded before this choice ran on glibc's malloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod durable;
#[cfg(feature = "peers-any")]
mod peers;
mod quick;
mod report;
mod rss;

use report::{Report, Row};

/// The default of `--engines`.
const DEFAULT_ENGINES: &str = "ours,ours-sorted,ours-blake3,ours-sorted-blake3,nomt,jmt,alloy-trie";

/// Workload benchmarks for shamap.
#[derive(Debug, Parser)]
#[command(name = "shamap-bench", version, about)]
struct Args {
    /// Entries in the base map.
    #[arg(long, default_value_t = 1_000_000)]
    entries: usize,
    /// Bytes of data per entry.
    #[arg(long, default_value_t = 64)]
    data_len: usize,
    /// RNG seed (keys, data, operations).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Operations per update block.
    #[arg(long, default_value_t = 10_000)]
    block: usize,
    /// Seconds each timed loop may run (after warm-up).
    #[arg(long, default_value_t = 3.0)]
    time_limit: f64,
    /// Comma-separated workloads: build, update, get, proof, snapshot, session, diff;
    /// `peers` (with the `peers` feature) runs the peer comparison instead;
    /// `durable` the on-disk comparison (ours on fjall, nomt with the
    /// `peer-nomt` feature, and the disk floor), each step in a child process.
    #[arg(long, default_value = "build,update,get,proof,snapshot,session,diff")]
    workloads: String,
    /// Print JSON instead of a markdown table.
    #[arg(long)]
    json: bool,
    /// Where our maps' node memory comes from (`MapOptions::huge_pages`):
    /// `auto` is the library default (huge-page regions once a map holds
    /// more than 32 MiB of nodes), `never` base pages only, `always`
    /// huge-page regions from the start.
    #[arg(long, value_enum, default_value = "auto")]
    huge_pages: HugeMode,
    /// Node hash function of our maps: `sha512half` (the XRPL's) or
    /// `blake3`. The floors use the same function: one message at a time
    /// (`sha2` / the `blake3` crate) and multi-lane (`sha512-lanes` /
    /// `blake3-lanes`).
    #[arg(long, default_value = "sha512half")]
    hash: HashFunction,
    /// Fixed operation counts instead of time limits, no warm-up, no floors,
    /// one thread: repeatable instruction counts for `scripts/callgrind.sh`.
    /// Runs build (+ root), the same build from sorted keys (+ root), one
    /// update block (+ root), `--gets` gets (one by
    /// one, then the same keys with `get_many`) and
    /// `--proofs` proofs, each in its own non-inlined function.
    #[arg(long)]
    quick: bool,
    /// Random gets in `--quick` mode and in the peer comparison.
    #[arg(long, default_value_t = 100_000)]
    gets: usize,
    /// Proofs in `--quick` mode.
    #[arg(long, default_value_t = 10_000)]
    proofs: usize,
    /// Update blocks per engine in the peer comparison (fixed, so every
    /// engine applies the same operations).
    #[arg(long, default_value_t = 10)]
    peer_blocks: usize,
    /// Engines in the peer comparison (comma-separated): ours, ours-sorted
    /// (sort + from_sorted build, get_many gets), ours-blake3,
    /// ours-sorted-blake3 (the same with BLAKE3 maps), nomt, jmt, alloy-trie.
    /// In the `durable` workload: ours (the node log), ours-fjall,
    /// ours-rocks (feature `rocksdb`), nomt; the default runs every one
    /// built in.
    #[arg(long, default_value = DEFAULT_ENGINES)]
    engines: String,
    /// Blocks of `--block` writes the `durable` workload commits.
    #[arg(long, default_value_t = 20)]
    blocks: usize,
    /// Rounds of the `durable` workload's imports (every engine, then the
    /// disk floor, each from an empty directory); each row reports its
    /// fastest round. More than one, because this machine's first touch of
    /// memory after a pause costs host page faults that whichever step
    /// runs first would pay alone.
    #[arg(long, default_value_t = 2)]
    import_rounds: usize,
    /// Node budget (MiB) of our backed map in the `durable` workload
    /// (default: the library's default, `BackedOptions::default()`).
    #[arg(long)]
    cache_mb: Option<u64>,
    /// fjall block cache (MiB) of our store in the `durable` workload
    /// (default: `FjallOptions::beside_node_cache()`, 8 MiB).
    #[arg(long)]
    fjall_cache_mb: Option<u64>,
    /// fjall write buffer (MiB) of our store in the `durable` workload
    /// (default: `FjallOptions::beside_node_cache()`, 4 MiB).
    #[arg(long)]
    memtable_mb: Option<u64>,
    /// In the `durable` workload, apply each block without first loading
    /// its keys' paths on every core (`BackedMap::prefetch`).
    #[arg(long)]
    no_prefetch: bool,
    /// Directory of the `durable` workload's stores (default: a new one
    /// under the system's temporary directory; cleared first, removed after).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Keep the `durable` workload's directory afterwards.
    #[arg(long)]
    keep_dir: bool,
    /// Internal: run one step of the `durable` workload (`ENGINE/STEP`) and
    /// print its row.
    #[arg(long, hide = true)]
    durable_child: Option<String>,
}

/// `--huge-pages` values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum HugeMode {
    Never,
    Always,
    Auto,
}

impl Args {
    /// Options for our maps: the `--huge-pages` policy and the `--hash`
    /// function.
    fn map_options(&self) -> MapOptions {
        MapOptions::default()
            .with_huge_pages_policy(self.huge_pages.policy())
            .with_hash(self.hash)
    }
}

impl HugeMode {
    fn policy(self) -> shamap::HugePages {
        match self {
            HugeMode::Never => shamap::HugePages::Never,
            HugeMode::Always => shamap::HugePages::Always,
            HugeMode::Auto => shamap::HugePages::default(),
        }
    }
}

fn main() {
    let args = Args::parse();
    if args.quick {
        quick::run(&args);
        return;
    }
    if args.workloads.split(',').any(|w| w.trim() == "peers") {
        run_peers(&args);
        return;
    }
    if args.workloads.split(',').any(|w| w.trim() == "durable") {
        durable::run(&args);
        return;
    }
    let mut report = Report::new(&args.entries, args.data_len, args.seed, args.hash);
    let wanted: Vec<&str> = args.workloads.split(',').map(str::trim).collect();
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let (mut map, mut keys) = build_map(&args, &mut rng, &mut report, wanted.contains(&"build"));
    for w in &wanted {
        match *w {
            "build" => {}
            "update" => update_blocks(&args, &mut rng, &mut map, &mut keys, &mut report),
            "get" => gets(&args, &mut rng, &map, &keys, &mut report),
            "proof" => proofs(&args, &mut rng, &mut map, &keys, &mut report),
            "snapshot" => snapshots(&args, &mut rng, &mut map, &keys, &mut report),
            "session" => sessions(&args, &mut rng, &mut map, &mut keys, &mut report),
            "diff" => diffs(&args, &mut rng, &mut map, &keys, &mut report),
            other => {
                eprintln!("error: unknown workload {other:?}");
                std::process::exit(2);
            }
        }
    }
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.markdown());
    }
}

#[cfg(feature = "peers-any")]
fn run_peers(args: &Args) {
    peers::run(args);
}

#[cfg(not(feature = "peers-any"))]
fn run_peers(_: &Args) {
    eprintln!(
        "error: the peers workload needs `--features peers` (see crates/shamap-bench/README.md)"
    );
    std::process::exit(2);
}

fn random_data(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

/// Builds the base map; optionally reports the build and a from-scratch
/// root on one and two threads.
fn build_map(
    args: &Args,
    rng: &mut SmallRng,
    report: &mut Report,
    record: bool,
) -> (ShaMap, Vec<Key>) {
    let mut map = ShaMap::with_options(MapKind::AccountState, args.map_options());
    let keys: Vec<Key> = (0..args.entries).map(|_| Key(rng.gen())).collect();
    let data = random_data(rng, args.data_len);
    let t = Instant::now();
    for k in &keys {
        map.insert(*k, &data).expect("random keys are distinct");
    }
    let insert = t.elapsed();
    let one_thread = one_thread();
    let t = Instant::now();
    let (_, work) = one_thread.install(|| map.root_hash_with_work());
    let hash_serial = t.elapsed();
    if record {
        let floor = hash_floors(args.hash, &work);
        let mem = map.mem_stats();
        report.push(Row::new("build: insert N", args.entries as u64, insert).note("no hashing"));
        report.push(
            Row::new(
                "build: root from scratch, 1 thread",
                work.leaves + work.inner,
                hash_serial,
            )
            .floor(floor)
            .note(&format!(
                "{} leaves + {} inner hashed",
                work.leaves, work.inner
            )),
        );
        report.push(
            Row::new(
                "build: insert + root, 1 thread",
                args.entries as u64,
                insert + hash_serial,
            )
            .floor(floor)
            .bytes_per_entry(mem.overhead_per_entry()),
        );
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            map.invalidate_hashes();
            let t = Instant::now();
            pool.install(|| map.root_hash());
            report.push(
                Row::new(
                    &format!("build: root from scratch, rayon {threads} thread(s)"),
                    args.entries as u64,
                    t.elapsed(),
                )
                .floor(floor),
            );
        }
        build_sorted(
            args,
            &keys,
            &data,
            &mut map,
            report,
            (insert, hash_serial),
            floor,
        );
        // The inserted map copied in key order (what `compact()` does),
        // then hashed from scratch like the map it came from.
        let t = Instant::now();
        let mut packed = map.clone();
        let copied = t.elapsed();
        report.push(
            Row::new(
                "build: clone, laid out in key order",
                args.entries as u64,
                copied,
            )
            .bytes_per_entry(packed.mem_stats().overhead_per_entry())
            .note("the copy `compact()` makes; hashes copied, none computed"),
        );
        packed.invalidate_hashes();
        let t = Instant::now();
        let root = one_thread.install(|| packed.root_hash());
        report.push(
            Row::new(
                "build: root from scratch of the key-order copy, 1 thread",
                work.leaves + work.inner,
                t.elapsed(),
            )
            .floor(floor)
            .baseline("same, as inserted", hash_serial),
        );
        assert_eq!(root, map.root_hash(), "the copy has the map's root");
    }
    (map, keys)
}

/// The same items built with `ShaMap::from_sorted` from pre-sorted keys,
/// then hashed on one thread; compared with inserting them (`insert` and
/// `hash`: the insert build's times in this run).
fn build_sorted(
    args: &Args,
    keys: &[Key],
    data: &[u8],
    map: &mut ShaMap,
    report: &mut Report,
    (insert, hash): (Duration, Duration),
    floor: (Duration, Duration),
) {
    let one_thread = one_thread();
    let t = Instant::now();
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    let sort = t.elapsed();
    let t = Instant::now();
    let mut bulk = ShaMap::from_sorted_with_options(
        MapKind::AccountState,
        args.map_options(),
        sorted.iter().map(|k| (*k, data)),
    )
    .expect("sorted, distinct keys");
    let build = t.elapsed();
    let t = Instant::now();
    let root = one_thread.install(|| bulk.root_hash());
    let hashed = t.elapsed();
    assert_eq!(
        root,
        map.root_hash(),
        "bulk build gives the inserted map's root"
    );
    report.push(
        Row::new("build sorted: from_sorted N", args.entries as u64, build)
            .baseline("insert N", insert)
            .note(&format!(
                "keys pre-sorted (sorting them took {:.0} ms); no hashing",
                sort.as_secs_f64() * 1e3
            )),
    );
    report.push(
        Row::new(
            "build sorted: from_sorted + root, 1 thread",
            args.entries as u64,
            build + hashed,
        )
        .floor(floor)
        .baseline("insert + root", insert + hash)
        .bytes_per_entry(bulk.mem_stats().overhead_per_entry())
        .note(&format!(
            "root alone {:.0} ms (after inserts: {:.0} ms)",
            hashed.as_secs_f64() * 1e3,
            hash.as_secs_f64() * 1e3
        )),
    );
    let per_entry = bulk.mem_stats().overhead_per_entry();
    drop(bulk);
    // The same keys, unsorted, as one block of writes into an empty map:
    // `apply` sorts them and builds and hashes run by run.
    let t = Instant::now();
    let mut applied = ShaMap::with_options(MapKind::AccountState, args.map_options());
    let done = one_thread
        .install(|| applied.apply(keys.iter().map(|k| (*k, Some(data)))))
        .expect("apply");
    let took = t.elapsed();
    assert_eq!(done.root_hash, root, "apply gives the inserted map's root");
    report.push(
        Row::new(
            "build: apply N unsorted writes, 1 thread",
            args.entries as u64,
            took,
        )
        .floor(floor)
        .baseline("insert + root", insert + hash)
        .bytes_per_entry(per_entry)
        .note("sort included; root computed"),
    );
}

/// The hashing floor of `work`: the time to hash with `f`, in a tight loop,
/// byte strings of the sizes and count that `work` describes (one message
/// at a time with `sha2` or the `blake3` crate; multi-lane batches of 512
/// like the engine's).
pub(crate) fn hash_floors(f: HashFunction, work: &HashWork) -> (Duration, Duration) {
    let leaf_len = work.leaf_bytes.checked_div(work.leaves).unwrap_or(0) as usize;
    let leaf = vec![0x5Au8; leaf_len];
    let inner = vec![0xA5u8; shamap::node_hash::INNER_MESSAGE_LEN];
    let mut acc = 0u8;
    let one: fn(&[u8]) -> u8 = match f {
        HashFunction::Sha512Half => |m| sha512_half(&[m]).0[0],
        HashFunction::Blake3 => |m| blake3::hash(m).as_bytes()[0],
    };
    let batch: fn(&[&[u8]], &mut [[u8; 32]]) = match f {
        HashFunction::Sha512Half => sha512_lanes::sha512_half_batch,
        HashFunction::Blake3 => blake3_lanes::hash_batch,
    };
    let t = Instant::now();
    for _ in 0..work.leaves {
        acc ^= one(std::hint::black_box(&leaf));
    }
    for _ in 0..work.inner {
        acc ^= one(std::hint::black_box(&inner));
    }
    let single = t.elapsed();
    let mut out = vec![[0u8; 32]; 512];
    let leaf_msgs: Vec<&[u8]> = vec![&leaf[..]; 512];
    let inner_msgs: Vec<&[u8]> = vec![&inner[..]; 512];
    let t = Instant::now();
    for (count, msgs) in [(work.leaves, &leaf_msgs), (work.inner, &inner_msgs)] {
        let mut left = count as usize;
        while left > 0 {
            let n = left.min(512);
            batch(&msgs[..n], &mut out[..n]);
            acc ^= out[0][0];
            left -= n;
        }
    }
    let lanes = t.elapsed();
    std::hint::black_box(acc);
    (single, lanes)
}

/// One block of random writes: 60% updates, 20% inserts, 20% removes, as
/// (key, true = set / false = remove). `keys` follows the block.
pub(crate) fn gen_block(rng: &mut SmallRng, keys: &mut Vec<Key>, n: usize) -> Vec<(Key, bool)> {
    let mut block = Vec::with_capacity(n);
    for _ in 0..n {
        let roll = rng.gen_range(0..10);
        if roll < 6 && !keys.is_empty() {
            block.push((keys[rng.gen_range(0..keys.len())], true));
        } else if roll < 8 || keys.is_empty() {
            let k = Key(rng.gen());
            block.push((k, true));
            keys.push(k);
        } else {
            let i = rng.gen_range(0..keys.len());
            block.push((keys.swap_remove(i), false));
        }
    }
    block
}

/// Applies a block one write at a time (`upsert` / `remove`).
pub(crate) fn write_block(map: &mut ShaMap, block: &[(Key, bool)], data: &[u8]) {
    for &(k, set) in block {
        if set {
            map.upsert(k, data).expect("upsert");
        } else {
            map.remove(&k).expect("present");
        }
    }
}

/// Applies a block with `ShaMap::apply` (which also hashes) on `pool`
/// (one thread: with more, `apply` hands large blocks to the parallel
/// `root_hash`).
pub(crate) fn apply_block(
    pool: &rayon::ThreadPool,
    map: &mut ShaMap,
    block: &[(Key, bool)],
    data: &[u8],
) -> shamap::Hash256 {
    pool.install(|| map.apply(block.iter().map(|&(k, set)| (k, set.then_some(data)))))
        .expect("apply")
        .root_hash
}

/// A rayon pool of one thread: hashing on the calling thread only.
pub(crate) fn one_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool")
}

/// Blocks of random writes with the root after each, alternating two ways
/// on the same map and machine: one write at a time then `root_hash`, and
/// `apply` (sorted, one pass, hashing fused in); and each block also goes
/// to a copy of the map laid out in key order (as `compact()` leaves a
/// map), which must end with the same root.
fn update_blocks(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &mut Vec<Key>,
    report: &mut Report,
) {
    let data = random_data(rng, args.data_len);
    let pool = one_thread();
    let mut packed = map.clone();
    // Warm-up blocks.
    let block = gen_block(rng, keys, args.block);
    for m in [&mut *map, &mut packed] {
        write_block(m, &block, &data);
        m.root_hash_serial();
    }
    let block = gen_block(rng, keys, args.block);
    apply_block(&pool, map, &block, &data);
    apply_block(&pool, &mut packed, &block, &data);
    let mut blocks = 0u64;
    // [single, apply] on the map as built, then on the key-order copy.
    let mut times = [[Duration::ZERO; 2]; 2];
    let mut work = HashWork::default();
    while times.iter().flatten().sum::<Duration>().as_secs_f64() < 4.0 * args.time_limit {
        let singles = gen_block(rng, keys, args.block);
        let batch = gen_block(rng, keys, args.block);
        let mut roots = [[shamap::Hash256::ZERO; 2]; 2];
        // Alternate which layout goes first.
        let order = if blocks.is_multiple_of(2) {
            [0, 1]
        } else {
            [1, 0]
        };
        for which in order {
            let m = if which == 0 { &mut *map } else { &mut packed };
            let t = Instant::now();
            write_block(m, &singles, &data);
            let (root, w) = pool.install(|| m.root_hash_with_work());
            times[which][0] += t.elapsed();
            roots[which][0] = root;
            if which == 0 {
                work.leaves += w.leaves;
                work.leaf_bytes += w.leaf_bytes;
                work.inner += w.inner;
            }
        }
        for which in order {
            let m = if which == 0 { &mut *map } else { &mut packed };
            let t = Instant::now();
            roots[which][1] = std::hint::black_box(apply_block(&pool, m, &batch, &data));
            times[which][1] += t.elapsed();
        }
        assert_eq!(roots[0], roots[1], "both layouts give the same roots");
        blocks += 1;
    }
    // Every way hashes the same kind of blocks on the same contents: the
    // floor measured from the single-write blocks serves for all.
    let floor = hash_floors(args.hash, &work);
    let ops = blocks * args.block as u64;
    let per_entry = map.mem_stats().overhead_per_entry();
    let [[single, batched], [single_packed, batched_packed]] = times;
    report.push(
        Row::new(
            &format!("update: blocks of {} + root, 1 thread", args.block),
            ops,
            single,
        )
        .floor(floor)
        .bytes_per_entry(per_entry),
    );
    report.push(
        Row::new("update: same blocks with `apply`, 1 thread", ops, batched)
            .floor(floor)
            .baseline("one write at a time + root", single)
            .bytes_per_entry(per_entry)
            .note(&format!(
                "blocks alternate with the row above; runs of {}",
                shamap::tree::APPLY_RUN
            )),
    );
    let packed_per_entry = packed.mem_stats().overhead_per_entry();
    report.push(
        Row::new(
            "update: same blocks + root, key-order copy, 1 thread",
            ops,
            single_packed,
        )
        .floor(floor)
        .baseline("as inserted", single)
        .bytes_per_entry(packed_per_entry)
        .note("the map after `clone()`/`compact()`: nodes in key order"),
    );
    report.push(
        Row::new(
            "update: same blocks with `apply`, key-order copy, 1 thread",
            ops,
            batched_packed,
        )
        .floor(floor)
        .baseline("as inserted", batched)
        .bytes_per_entry(packed_per_entry),
    );
}

fn gets(args: &Args, rng: &mut SmallRng, map: &ShaMap, keys: &[Key], report: &mut Report) {
    let n = 1_000_000usize;
    let probe: Vec<Key> = (0..n).map(|_| keys[rng.gen_range(0..keys.len())]).collect();
    let limit = args.time_limit.min(1.0);
    // Warm-up, and both forms must find every probe.
    let single = probe
        .iter()
        .take(n / 10)
        .filter(|k| map.get(k).is_some())
        .count();
    assert_eq!(single, n / 10, "every probed key is present");
    assert_eq!(get_batched(map, &probe[..n / 10]), n / 10);
    // Alternate the forms in rounds of the same probes, so that all of
    // them see the same machine (it is shared and noisy): one key at a
    // time and batched, on this thread, then both again with the probes
    // split between all the machine's threads (readers share `&ShaMap`;
    // a lookup takes no lock).
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut times = [Duration::ZERO; 4];
    let mut rounds = 0u64;
    let mut found = 0usize;
    while rounds == 0 || times.iter().sum::<Duration>().as_secs_f64() < 4.0 * limit {
        let forms: [Lookups<'_>; 2] = [
            &|p| p.iter().filter(|k| map.get(k).is_some()).count(),
            &|p| get_batched(map, p),
        ];
        for (i, form) in forms.iter().enumerate() {
            let t = Instant::now();
            found += form(&probe);
            times[i] += t.elapsed();
        }
        for (i, form) in forms.iter().enumerate() {
            let t = Instant::now();
            found += in_threads(threads, &probe, form);
            times[2 + i] += t.elapsed();
        }
        rounds += 1;
    }
    assert_eq!(
        found,
        4 * n * rounds as usize,
        "every probed key is present"
    );
    let done = n as u64 * rounds;
    let [single_time, batched_time, single_par, batched_par] = times;
    report.push(Row::new("get: random present keys", done, single_time));
    report.push(
        Row::new("get: same keys, batched (get_many)", done, batched_time)
            .baseline("single gets", single_time)
            .note(&format!(
                "{} lookups in flight",
                shamap::tree::GET_MANY_LANES
            )),
    );
    report.push(
        Row::new(
            &format!("get: same keys, {threads} threads"),
            done,
            single_par,
        )
        .baseline("single gets, 1 thread", single_time)
        .note("one key at a time; the probes split between the threads"),
    );
    report.push(
        Row::new(
            &format!("get: same keys, batched, {threads} threads"),
            done,
            batched_par,
        )
        .baseline("get_many, 1 thread", batched_time),
    );
}

/// A way of looking keys up: returns how many were found.
type Lookups<'a> = &'a (dyn Fn(&[Key]) -> usize + Sync);

/// Runs `form` on `threads` equal parts of `probe` at once; returns the sum
/// of what the parts return.
fn in_threads(threads: usize, probe: &[Key], form: Lookups<'_>) -> usize {
    let part = probe.len().div_ceil(threads.max(1));
    std::thread::scope(|s| {
        let handles: Vec<_> = probe
            .chunks(part)
            .map(|p| s.spawn(move || form(p)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("lookup thread"))
            .sum()
    })
}

/// Looks `probe` up with `get_many`, in batches of 4096 keys (a caller's
/// typical unit); returns how many were found.
fn get_batched(map: &ShaMap, probe: &[Key]) -> usize {
    let mut found = 0usize;
    for batch in probe.chunks(4096) {
        map.get_many(batch, |_, d| found += usize::from(d.is_some()));
    }
    found
}

fn proofs(args: &Args, rng: &mut SmallRng, map: &mut ShaMap, keys: &[Key], report: &mut Report) {
    let snap = map.snapshot();
    let t = Instant::now();
    let mut n = 0u64;
    let mut bytes = 0usize;
    while n == 0 || t.elapsed().as_secs_f64() < args.time_limit.min(1.0) {
        for _ in 0..1000 {
            let p = snap.proof_path(&keys[rng.gen_range(0..keys.len())]);
            bytes += p.nodes.iter().map(Vec::len).sum::<usize>();
            n += 1;
        }
    }
    report.push(
        Row::new("proof: proof_path of a random key", n, t.elapsed())
            .note(&format!("{} B per proof", bytes as u64 / n)),
    );
}

fn snapshots(args: &Args, rng: &mut SmallRng, map: &mut ShaMap, keys: &[Key], report: &mut Report) {
    map.root_hash();
    let before = map.mem_stats();
    let t = Instant::now();
    let snap = map.snapshot();
    let took = t.elapsed();
    let after = map.mem_stats();
    report.push(Row::new("snapshot: take one", 1, took).note(&format!(
        "{} bytes added",
        after.bytes.total as i64 - before.bytes.total as i64
    )));
    let data = random_data(rng, args.data_len);
    let k = 10_000usize.min(keys.len());
    let t = Instant::now();
    for i in 0..k {
        map.update(
            keys[rng.gen_range(0..keys.len())],
            &data[..(i % 2) + data.len() / 2],
        )
        .expect("present");
    }
    map.root_hash();
    let took = t.elapsed();
    let grown = map.mem_stats();
    let depth = map.shape_stats().mean_leaf_depth();
    let nodes = (grown.inner_nodes + grown.leaf_nodes) - (after.inner_nodes + after.leaf_nodes);
    report.push(
        Row::new(
            &format!("snapshot: {k} updates after it, + root"),
            k as u64,
            took,
        )
        .note(&format!(
            "{:.2} nodes copied per update (mean leaf depth {depth:.2}); {:.0} bytes per update",
            nodes as f64 / k as f64,
            (grown.bytes.total - after.bytes.total) as f64 / k as f64
        )),
    );
    drop(snap);
}

fn sessions(
    args: &Args,
    rng: &mut SmallRng,
    map: &mut ShaMap,
    keys: &mut Vec<Key>,
    report: &mut Report,
) {
    let data = random_data(rng, args.data_len);
    let mut plain = Duration::ZERO;
    let mut with = Duration::ZERO;
    let mut plain_nohash = Duration::ZERO;
    let mut with_nohash = Duration::ZERO;
    let pool = one_thread();
    let rounds = 6;
    for round in 0..rounds {
        // Alternate the order so drift favours neither side.
        for session in [round % 2 == 0, round % 2 == 1] {
            let t = Instant::now();
            if session {
                map.begin_session();
            }
            let block = gen_block(rng, keys, args.block);
            write_block(map, &block, &data);
            let write = t.elapsed();
            pool.install(|| map.root_hash());
            if session {
                map.commit();
            }
            let all = t.elapsed();
            if session {
                with += all;
                with_nohash += write;
            } else {
                plain += all;
                plain_nohash += write;
            }
        }
    }
    let ops = (rounds * args.block) as u64;
    report.push(
        Row::new(
            &format!("session: blocks of {} + root + commit", args.block),
            ops,
            with,
        )
        .baseline("no session", plain),
    );
    report.push(
        Row::new("session: writes only (no root)", ops, with_nohash)
            .baseline("no session", plain_nohash),
    );
}

fn diffs(args: &Args, rng: &mut SmallRng, map: &mut ShaMap, keys: &[Key], report: &mut Report) {
    let data = random_data(rng, args.data_len);
    for n in [keys.len() / 10, keys.len()] {
        if n == 0 {
            continue;
        }
        let mut small = ShaMap::with_options(MapKind::AccountState, args.map_options());
        let base = if n == keys.len() {
            map.snapshot()
        } else {
            for k in &keys[..n] {
                small.insert(*k, &data).expect("distinct");
            }
            small.snapshot()
        };
        let mut other = base.to_map();
        for k in keys[..n].iter().step_by(n / 100) {
            other
                .update(*k, b"changed data of this entry")
                .expect("present");
        }
        let other = other.snapshot();
        let t = Instant::now();
        let mut runs = 0u64;
        let mut found = 0;
        while runs == 0 || t.elapsed().as_secs_f64() < args.time_limit.min(1.0) {
            found = base.diff(&other, 10_000).expect("few differences").len();
            runs += 1;
        }
        report.push(
            Row::new(
                &format!("diff: two {n}-entry versions, {found} differences"),
                runs,
                t.elapsed(),
            )
            .note("time per diff; grows with differences × depth, not map size"),
        );
    }
    let _ = rng;
}
