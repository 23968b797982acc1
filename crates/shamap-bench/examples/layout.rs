//! What the nodes' layout in memory costs: the same 1M-entry map as built
//! by random inserts (nodes wherever the pools had room) and as a key-order
//! copy (`clone()`, which is what `repack()` makes), measured alternately
//! in one process.
//!
//! `cargo run --release -p shamap-bench --example layout [ROUNDS] [scratch|clone|gets]`
//!
//! - `scratch`: root from scratch on one thread, each beside the multi-lane
//!   hashing floor of the same messages (measured between the two);
//! - `clone`: the time of a key-order copy of each;
//! - `gets`: random gets, one by one.

use std::time::Instant;

use clap::{Parser, ValueEnum};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{HashWork, Key, MapKind, MapOptions, ShaMap};

/// The multi-lane floor of `work`: its leaf and inner messages hashed in
/// batches of 512 from one buffer each.
fn floor(work: &HashWork) -> f64 {
    let leaf = vec![0x5Au8; (work.leaf_bytes / work.leaves.max(1)) as usize];
    let inner = vec![0xA5u8; 516];
    let mut out = vec![[0u8; 32]; 512];
    let t = Instant::now();
    for (msg, count) in [(&leaf, work.leaves), (&inner, work.inner)] {
        let msgs: Vec<&[u8]> = vec![&msg[..]; 512];
        let mut left = count as usize;
        while left > 0 {
            let n = left.min(512);
            sha512_lanes::sha512_half_batch(std::hint::black_box(&msgs[..n]), &mut out[..n]);
            left -= n;
        }
    }
    std::hint::black_box(&out);
    t.elapsed().as_secs_f64()
}

/// What the nodes' layout in memory costs.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Rounds, each measuring both maps.
    #[arg(default_value_t = 6)]
    rounds: usize,
    /// What is measured.
    #[arg(value_enum, default_value_t = Measure::Scratch)]
    what: Measure,
}

/// The measurements (see the module docs).
#[derive(Clone, Copy, ValueEnum)]
enum Measure {
    Scratch,
    Clone,
    Gets,
}

fn main() {
    let Args { rounds, what } = Args::parse();
    let mut rng = SmallRng::seed_from_u64(7);
    let data = vec![0x42u8; 64];
    let keys: Vec<Key> = (0..1_000_000).map(|_| Key(rng.gen())).collect();
    let mut inserted = ShaMap::with_options(MapKind::AccountState, MapOptions::default());
    for k in &keys {
        inserted
            .insert(*k, &data)
            .expect("random keys are distinct");
    }
    let mut ordered = inserted.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let (root, work) = pool.install(|| inserted.root_hash_with_work());
    assert_eq!(ordered.root_hash(), root);
    let probe: Vec<Key> = (0..2_000_000)
        .map(|_| keys[rng.gen_range(0..keys.len())])
        .collect();
    for r in 0..rounds {
        match what {
            Measure::Scratch => {
                let mut t = [0.0; 2];
                let mut f = 0.0;
                for (i, m) in [&mut inserted, &mut ordered].into_iter().enumerate() {
                    m.invalidate_hashes();
                    let start = Instant::now();
                    pool.install(|| m.root_hash());
                    t[i] = start.elapsed().as_secs_f64();
                    f += floor(&work) / 2.0;
                }
                println!(
                    "round {r}: floor {:.0} ms; root from scratch: as inserted {:.0} ms ({:.2}x), key order {:.0} ms ({:.2}x)",
                    f * 1e3,
                    t[0] * 1e3,
                    t[0] / f,
                    t[1] * 1e3,
                    t[1] / f
                );
            }
            Measure::Clone => {
                let mut t = [0.0; 2];
                for (i, m) in [&inserted, &ordered].into_iter().enumerate() {
                    let start = Instant::now();
                    let c = m.clone();
                    t[i] = start.elapsed().as_secs_f64();
                    drop(c);
                }
                println!(
                    "round {r}: key-order copy of the map as inserted {:.0} ms, of the key-order map {:.0} ms",
                    t[0] * 1e3,
                    t[1] * 1e3
                );
            }
            Measure::Gets => {
                let mut rate = [0.0; 2];
                for (i, m) in [&inserted, &ordered].into_iter().enumerate() {
                    let start = Instant::now();
                    let found = probe.iter().filter(|k| m.get(k).is_some()).count();
                    rate[i] = found as f64 / start.elapsed().as_secs_f64() / 1e6;
                }
                println!(
                    "round {r}: gets as inserted {:.2}M/s, key order {:.2}M/s",
                    rate[0], rate[1]
                );
            }
        }
    }
}
