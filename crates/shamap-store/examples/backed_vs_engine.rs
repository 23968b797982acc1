//! The backed map's own tree beside the engine's batched `apply`, on the
//! same blocks: what the second implementation costs when every node is in
//! memory, and how that compares with what its loads cost when they are not
//! (the measurements behind "Why a separate tree" in `docs/design.md`).
//!
//! `cargo run --release -p shamap-store --example backed_vs_engine -- [ENTRIES] [BLOCKS] [WRITES]`
//! (defaults 200000, 40, 1000). Keys and data are random (data 40–200 bytes,
//! a third of the writes update existing keys, a tenth remove). Reports
//! microseconds per block, each the median of the run:
//! - `engine apply`: `ShaMap::apply` of the block, root included;
//! - `backed, all cached`: a backed map over a `MemStore` whose budget holds
//!   the whole state (writes one by one, then `root_hash`; the writes alone
//!   in brackets);
//! - `backed, 1/16 cached`: the same with a budget of a sixteenth of the
//!   state, so paths are loaded (and verified) from the store;
//! - each backed row also commits every block (hashing, serializing, writing
//!   to the `MemStore`), reported separately.

use std::time::Instant;

use clap::Parser;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Key, MapKind, ShaMap};
use shamap_store::{import_ledger, BackedMap, BackedOptions, MemStore};

type Block = Vec<(Key, Option<Vec<u8>>)>;

fn blocks(keys: &mut Vec<Key>, n: usize, writes: usize, rng: &mut SmallRng) -> Vec<Block> {
    (0..n)
        .map(|_| {
            (0..writes)
                .map(|_| {
                    let r = rng.gen_range(0..30);
                    if r < 3 {
                        let k = keys.swap_remove(rng.gen_range(0..keys.len()));
                        (k, None)
                    } else {
                        let k = if r < 13 {
                            keys[rng.gen_range(0..keys.len())]
                        } else {
                            let k = Key(rng.gen());
                            keys.push(k);
                            k
                        };
                        let len = rng.gen_range(40..200);
                        (k, Some((0..len).map(|_| rng.gen()).collect()))
                    }
                })
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The backed map's tree beside the engine's batched `apply`, on the same
/// blocks.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Entries of the base map.
    #[arg(default_value_t = 200_000)]
    entries: usize,
    /// Blocks applied.
    #[arg(default_value_t = 40)]
    blocks: usize,
    /// Writes per block.
    #[arg(default_value_t = 1000)]
    writes: usize,
}

fn main() {
    let Args {
        entries,
        blocks: nblocks,
        writes,
    } = Args::parse();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut items: Vec<(Key, Vec<u8>)> = (0..entries)
        .map(|_| {
            let len = rng.gen_range(40..200);
            (Key(rng.gen()), (0..len).map(|_| rng.gen()).collect())
        })
        .collect();
    items.sort_by_key(|a| a.0);
    items.dedup_by(|a, b| a.0 == b.0);
    let mut keys: Vec<Key> = items.iter().map(|(k, _)| *k).collect();
    let mut base = ShaMap::from_sorted(MapKind::AccountState, items).expect("build");
    let blocks = blocks(&mut keys, nblocks, writes, &mut rng);

    let mut engine = base.clone();
    let mut times = Vec::new();
    let mut roots = Vec::new();
    for b in &blocks {
        let t = Instant::now();
        let done = engine
            .apply(b.iter().map(|(k, d)| (*k, d.as_deref())))
            .expect("apply");
        times.push(t.elapsed().as_secs_f64() * 1e6);
        roots.push(done.root_hash);
    }
    println!("{entries} entries, {nblocks} blocks of {writes} writes; µs per block (median)");
    println!("engine apply          {:>10.0}", median(times));

    let snap = base.snapshot();
    let store = MemStore::new();
    import_ledger(&store, "base", Some(&snap), None, None, &mut |_| {}).expect("import");
    for (label, budget) in [
        ("backed, all cached", entries * 1024),
        ("backed, 1/16 cached", entries * 300 / 16),
    ] {
        let opts = BackedOptions {
            budget_bytes: budget,
            ..BackedOptions::default()
        };
        let mut map =
            BackedMap::open(&store, snap.root_hash(), MapKind::AccountState, opts).expect("open");
        // Warm the cache as a long-running map's would be.
        map.for_each(&mut |_, _| std::ops::ControlFlow::Continue(()))
            .expect("scan");
        map.prefetch(&keys, 1).expect("prefetch");
        let loads_before = map.stats().loads;
        let (mut apply, mut commit, mut writes_us) = (Vec::new(), Vec::new(), Vec::new());
        for (b, want) in blocks.iter().zip(&roots) {
            let t = Instant::now();
            for (k, d) in b {
                match d {
                    Some(d) => {
                        map.upsert(*k, d).expect("upsert");
                    }
                    None => {
                        map.remove(k).expect("remove");
                    }
                }
            }
            writes_us.push(t.elapsed().as_secs_f64() * 1e6);
            let root = map.root_hash();
            apply.push(t.elapsed().as_secs_f64() * 1e6);
            assert_eq!(root, *want, "the backed map and the engine disagree");
            let t = Instant::now();
            map.commit("head").expect("commit");
            commit.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let st = map.stats();
        println!(
            "{label:<21} {:>10.0}   (writes {:.0})   commit {:>8.0}   loads per block {:.0}",
            median(apply),
            median(writes_us),
            median(commit),
            (st.loads - loads_before) as f64 / nblocks as f64
        );
    }
}
