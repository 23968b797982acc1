//! Where a 10k-write block's time goes: the writes, then the root (one
//! thread: a rayon pool of one), on a 1M-entry map, block after block. Prints each phase's
//! time per block and the hashing work of the root.
//!
//! `cargo run --release -p shamap-bench --example update_phases [ENTRIES] [BLOCKS] [apply]`
//! (with `apply`, the whole block is counted as root time)

use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use shamap::{MapKind, MapOptions, ShaMap};

#[path = "../src/workloads/blocks.rs"]
mod blocks;
use blocks::{apply_block, gen_block, one_thread, write_block};

/// Where a 10k-write block's time goes.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Entries of the map.
    #[arg(default_value_t = 1_000_000)]
    entries: usize,
    /// Blocks of 10,000 writes.
    #[arg(default_value_t = 40)]
    blocks: usize,
    /// How a block is applied.
    #[arg(value_enum, default_value_t = Apply::Writes)]
    apply: Apply,
}

/// Writes one by one and then the root (each timed), or `ShaMap::apply`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Apply {
    Writes,
    Apply,
}

#[path = "common/mod.rs"]
mod common;

fn main() {
    let args = Args::parse();
    let (entries, blocks) = (args.entries, args.blocks);
    let use_apply = args.apply == Apply::Apply;
    let (mut rng, data, mut keys) = common::inputs(entries);
    let mut map = ShaMap::with_options(MapKind::AccountState, MapOptions::default());
    for k in &keys {
        map.upsert(*k, &data).expect("upsert");
    }
    map.root_hash_serial();
    let pool = one_thread();
    let (mut w, mut h) = (Duration::ZERO, Duration::ZERO);
    let (mut leaves, mut inner) = (0u64, 0u64);
    for _ in 0..blocks {
        let block = gen_block(&mut rng, &mut keys, 10_000);
        if use_apply {
            let t = Instant::now();
            std::hint::black_box(apply_block(&pool, &mut map, &block, &data));
            h += t.elapsed();
            continue;
        }
        let t = Instant::now();
        write_block(&mut map, &block, &data);
        let t1 = Instant::now();
        let (_, work) = pool.install(|| map.root_hash_with_work());
        let t2 = Instant::now();
        w += t1 - t;
        h += t2 - t1;
        leaves += work.leaves;
        inner += work.inner;
    }
    let b = blocks as f64;
    println!(
        "per block: writes {:.2} ms, root {:.2} ms; per block hashed {:.0} leaves, {:.0} inner",
        w.as_secs_f64() * 1e3 / b,
        h.as_secs_f64() * 1e3 / b,
        leaves as f64 / b,
        inner as f64 / b
    );
}
