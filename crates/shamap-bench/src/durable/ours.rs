//! Our engine in the `durable` workload: a node store (engine `ours`: our
//! node log, [`shamap_store::LogStore`]; `ours-fjall`: fjall; `ours-rocks`, with the
//! `rocksdb` feature: RocksDB), imported from a map built from sorted keys,
//! then changed and read through a [`BackedMap`] at the plan's node budget.
//! Every commit is durable: the root record is written with
//! [`NodeStore::write_durably`] (fdatasync; fjall's `SyncAll`; RocksDB's
//! synced write).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shamap::{Hash256, Key, MapKind, ShaMap};
use shamap_store::{
    meta, record_root, write_snapshot, Access, BackedMap, BackedOptions, FjallOptions, NewStore,
    NodeStore, OpenOptions, Opened,
};

use super::ops::{self, Blocks, Values, Write};
use super::{allocated_bytes, secs, timed_reads, Plan, Row};
use crate::args::Step;

/// The retained-root name the import and the commit step commit under
/// (the read steps read this root).
const ROOT_NAME: &str = "durable bench";
/// The reader of `read_with_writer` has this many times `--gets` keys
/// beyond the timed ones before it repeats one.
const READER_POOL_ROUNDS: usize = 10;
/// The name the writer of `read_with_writer` commits under.
const WRITER_ROOT_NAME: &str = "durable bench writer";

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The node stores our engine runs on, by engine name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `ours`: the node log.
    Log,
    /// `ours-fjall`.
    Fjall,
    /// `ours-rocks` (feature `rocksdb`).
    #[cfg(feature = "rocksdb")]
    Rocks,
}

impl Backend {
    /// The backends built into this binary, with their engine names.
    pub fn all() -> Vec<(&'static str, Backend)> {
        let v = vec![("ours", Backend::Log), ("ours-fjall", Backend::Fjall)];
        #[cfg(feature = "rocksdb")]
        let v = {
            let mut v = v;
            v.push(("ours-rocks", Backend::Rocks));
            v
        };
        v
    }
}

/// Moves buffered writes to their files (fjall's write buffer), so that
/// the directory's size is the store's.
fn settle(opened: &Opened) -> Result<(), String> {
    match opened {
        Opened::Fjall(s) => s.flush_memtables().map_err(err),
        _ => Ok(()),
    }
}

pub fn run(plan: &Plan, step: Step, engine: &str, backend: Backend) -> Result<Row, String> {
    let dir = plan.engine_dir(engine);
    let opened = open(plan, &dir, backend)?;
    match step {
        Step::Import => import(plan, &dir, &opened),
        Step::Commit => commit(plan, &dir, &opened),
        Step::Read => read(plan, opened.store()),
        Step::ReadWithWriter => read_with_writer(plan, opened.store()),
    }
}

/// Opens (or creates) the store through the store crate's one opening;
/// fjall with the plan's options: by default those for a store under a
/// backed map.
fn open(plan: &Plan, dir: &std::path::Path, backend: Backend) -> Result<Opened, String> {
    let mut opts = OpenOptions::new(Access::Create);
    opts.new_store = match backend {
        Backend::Log => NewStore::NodeLog,
        Backend::Fjall => NewStore::Fjall,
        #[cfg(feature = "rocksdb")]
        Backend::Rocks => NewStore::Rocks,
    };
    opts.fjall = FjallOptions::beside_node_cache();
    if let Some(mb) = plan.fjall_cache_mb {
        opts.fjall.cache_bytes = mb << 20;
    }
    if let Some(mb) = plan.memtable_mb {
        opts.fjall.memtable_bytes = mb << 20;
    }
    shamap_store::open_with(dir, &opts).map_err(err)
}

/// Threads for prefetching: one per core.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn options(plan: &Plan) -> BackedOptions {
    plan.cache_mb
        .map_or_else(BackedOptions::default, BackedOptions::with_budget_mb)
}

/// The root the import and commit steps committed last.
fn committed_root(store: &dyn NodeStore) -> Result<Hash256, String> {
    Ok(meta::retained(store)
        .map_err(err)?
        .into_iter()
        .find(|r| r.name == ROOT_NAME)
        .ok_or("no committed root: run the import step first")?
        .hash)
}

fn import(plan: &Plan, dir: &std::path::Path, opened: &Opened) -> Result<Row, String> {
    let values = Values::new(plan.seed, plan.data_len);
    let keys = ops::import_keys(plan.seed, plan.entries);
    let t = Instant::now();
    let mut map = ShaMap::from_sorted(
        MapKind::AccountState,
        keys.iter().map(|(k, tag)| (Key(*k), values.value(*tag))),
    )
    .map_err(err)?;
    drop(keys);
    let snap = map.snapshot();
    drop(map);
    let store = opened.store();
    let stats = write_snapshot(store, &snap, &mut |_| {}).map_err(err)?;
    record_root(store, ROOT_NAME, snap.root_hash(), Default::default()).map_err(err)?;
    let seconds = secs(t.elapsed());
    drop(snap);
    settle(opened)?;
    Ok(Row {
        ops: plan.entries,
        seconds,
        fsync: true,
        disk_bytes: Some(allocated_bytes(dir)),
        bytes_written: Some(stats.bytes + 32 * stats.written),
        note: format!("{} nodes", stats.written),
        ..Row::default()
    })
}

/// Loads the paths of `block`'s keys into `map`'s cache on every core,
/// unless `--no-prefetch`.
fn prefetch(map: &BackedMap<'_>, plan: &Plan, block: &[Write]) -> Result<(), String> {
    if !plan.prefetch {
        return Ok(());
    }
    let keys: Vec<Key> = block
        .iter()
        .map(|w| Key(ops::key(plan.seed, w.index())))
        .collect();
    map.prefetch(&keys, threads()).map_err(err)
}

/// Applies one block to `map`, checking that every write meets the state
/// the plan expects (an insert finds no key, an update and a remove find one).
fn apply(
    map: &mut BackedMap<'_>,
    plan: &Plan,
    values: &Values,
    block: &[Write],
    buf: &mut Vec<u8>,
) -> Result<(), String> {
    for w in block {
        match *w {
            Write::Insert { index, tag } | Write::Update { index, tag } => {
                values.value_into(tag, buf);
                let new = map
                    .upsert(Key(ops::key(plan.seed, index)), buf)
                    .map_err(err)?;
                if new != matches!(w, Write::Insert { .. }) {
                    return Err(format!("key {index}: the workload and the map disagree"));
                }
            }
            Write::Remove { index } => {
                if !map.remove(&Key(ops::key(plan.seed, index))).map_err(err)? {
                    return Err(format!("key {index}: removed but absent"));
                }
            }
        }
    }
    Ok(())
}

fn commit(plan: &Plan, dir: &std::path::Path, opened: &Opened) -> Result<Row, String> {
    let store = opened.store();
    let values = Values::new(plan.seed, plan.data_len);
    let mut map = BackedMap::open(
        store,
        committed_root(store)?,
        MapKind::AccountState,
        options(plan),
    )
    .map_err(err)?;
    let mut blocks = Blocks::new(plan.seed, plan.entries);
    let mut buf = Vec::new();
    let (mut applying, mut committing) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..plan.blocks {
        let block = blocks.next_block(plan.block);
        let t = Instant::now();
        prefetch(&map, plan, &block)?;
        apply(&mut map, plan, &values, &block, &mut buf)?;
        let applied = Instant::now();
        map.commit(ROOT_NAME).map_err(err)?;
        applying += applied - t;
        committing += applied.elapsed();
    }
    let elapsed = applying + committing;
    let s = map.stats();
    drop(map);
    settle(opened)?;
    Ok(Row {
        ops: (plan.blocks * plan.block) as u64,
        seconds: secs(elapsed),
        fsync: true,
        disk_bytes: Some(allocated_bytes(dir)),
        note: format!(
            "apply {:.2} s + commit {:.2} s; budget {} MiB (the store's index {} MiB of it); {} loads, {} hits, {} spills",
            secs(applying),
            secs(committing),
            s.budget_bytes >> 20,
            s.store_resident_bytes >> 20,
            s.loads,
            s.hits,
            s.spills
        ),
        ..Row::default()
    })
}

/// The keys the read steps look up: present after the commit step's blocks.
fn read_keys(plan: &Plan) -> (Blocks, Vec<Key>, Vec<Key>) {
    let mut blocks = Blocks::new(plan.seed, plan.entries);
    blocks.skip(plan.blocks, plan.block);
    let warm = blocks.present(plan.reads / 10);
    let timed = blocks.present(plan.reads);
    let to_keys = |v: Vec<u64>| v.into_iter().map(|i| Key(ops::key(plan.seed, i))).collect();
    (blocks, to_keys(warm), to_keys(timed))
}

fn read(plan: &Plan, store: &dyn NodeStore) -> Result<Row, String> {
    let map = BackedMap::open(
        store,
        committed_root(store)?,
        MapKind::AccountState,
        options(plan),
    )
    .map_err(err)?;
    let (_, warm, timed) = read_keys(plan);
    let get = |k: &Key| match map.get(k).map_err(err)? {
        Some(_) => Ok(()),
        None => Err(format!("key {k} is missing")),
    };
    timed_reads(&warm, &timed, get, "backed map gets")
}

/// Reads from the committed root (a [`BackedMap`] of its own, on a reader
/// thread) while
/// a writer applies and durably commits the plan's blocks again (the ones
/// after the commit step's), on the same store.
fn read_with_writer(plan: &Plan, store: &dyn NodeStore) -> Result<Row, String> {
    let root = committed_root(store)?;
    let values = Values::new(plan.seed, plan.data_len);
    let (mut blocks, warm, timed) = read_keys(plan);
    // More keys of the committed root, so that the reader does not go
    // round the timed ones (whose paths are cached after one round) while
    // the writer runs: indexes, made keys as they are read.
    let more = blocks.present(plan.reads.saturating_mul(READER_POOL_ROUNDS));
    let pool = timed.len() + more.len();
    let next: Vec<Vec<Write>> = (0..plan.blocks)
        .map(|_| blocks.next_block(plan.block))
        .collect();
    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let reader_store = store;
    let (read_secs, write_secs) = std::thread::scope(|scope| -> Result<(f64, f64), String> {
        let reader = scope.spawn(|| -> Result<f64, String> {
            // A map of its own on the committed root: the writer's changes,
            // committed or not, are not in it.
            let map = BackedMap::open(reader_store, root, MapKind::AccountState, options(plan))
                .map_err(err)?;
            for k in &warm {
                map.get(k).map_err(err)?;
            }
            let t = Instant::now();
            let keys = timed
                .iter()
                .copied()
                .chain(more.iter().map(|&i| Key(ops::key(plan.seed, i))));
            for k in keys.cycle() {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                if map.get(&k).map_err(err)?.is_none() {
                    return Err(format!("key {k} is missing from the committed root"));
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            Ok(secs(t.elapsed()))
        });
        let writer = || -> Result<f64, String> {
            let mut map =
                BackedMap::open(store, root, MapKind::AccountState, options(plan)).map_err(err)?;
            let mut buf = Vec::new();
            let t = Instant::now();
            for block in &next {
                prefetch(&map, plan, block)?;
                apply(&mut map, plan, &values, block, &mut buf)?;
                map.commit(WRITER_ROOT_NAME).map_err(err)?;
            }
            Ok(secs(t.elapsed()))
        };
        let w = writer();
        done.store(true, Ordering::Relaxed);
        let r = reader
            .join()
            .map_err(|_| "the reader thread panicked".to_owned())?;
        Ok((r?, w?))
    })?;
    let writes = (plan.blocks * plan.block) as f64;
    Ok(Row {
        ops: reads.load(Ordering::Relaxed),
        seconds: read_secs,
        fsync: true,
        note: format!(
            "backed-map reads of the committed root on one thread (a budget of its own) while a writer committed {} blocks at {:.0} writes/s; {} reads went past the end of its list of {} random keys, which then repeats",
            plan.blocks,
            writes / write_secs.max(1e-9),
            reads.load(Ordering::Relaxed).saturating_sub(pool as u64),
            pool,
        ),
        ..Row::default()
    })
}
