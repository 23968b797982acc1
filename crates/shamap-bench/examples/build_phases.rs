//! Where a build's time goes: `from_sorted` of N random keys (already
//! sorted), or with `insert` N inserts in random order, then the root on
//! one thread, repeated; prints each phase.
//!
//! `cargo run --release -p shamap-bench --example build_phases [ENTRIES] [ROUNDS] [insert]`

use std::time::Instant;

use clap::{Parser, ValueEnum};
use shamap::{MapKind, MapOptions, ShaMap};

/// Where a build's time goes.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Entries of the map.
    #[arg(default_value_t = 1_000_000)]
    entries: usize,
    /// Builds, one after another.
    #[arg(default_value_t = 3)]
    rounds: usize,
    /// How the map is built.
    #[arg(value_enum, default_value_t = Build::Sorted)]
    build: Build,
}

/// `from_sorted` of the sorted keys, or inserts in random order.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Build {
    Sorted,
    Insert,
}

#[path = "common/mod.rs"]
mod common;

fn main() {
    let args = Args::parse();
    let (entries, rounds) = (args.entries, args.rounds);
    let inserts = args.build == Build::Insert;
    let (_, data, mut keys) = common::inputs(entries);
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if !inserts {
        keys = sorted;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    for _ in 0..rounds {
        let t = Instant::now();
        let mut map = if inserts {
            let mut m = ShaMap::with_options(MapKind::AccountState, MapOptions::default());
            for k in &keys {
                m.insert(*k, &data).expect("new key");
            }
            m
        } else {
            ShaMap::from_sorted_with_options(
                MapKind::AccountState,
                MapOptions::default(),
                keys.iter().map(|k| (*k, &data[..])),
            )
            .expect("sorted")
        };
        let t1 = Instant::now();
        let (_, work) = pool.install(|| map.root_hash_with_work());
        let t2 = Instant::now();
        drop(map);
        let t3 = Instant::now();
        println!(
            "{} {:.0} ms, root {:.0} ms ({} leaves, {} inner), drop {:.0} ms",
            if inserts { "inserts" } else { "from_sorted" },
            (t1 - t).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            work.leaves,
            work.inner,
            (t3 - t2).as_secs_f64() * 1e3
        );
    }
}
