//! The latency of one dependent random load on this machine, by working-set
//! size: a pointer chase through a random cyclic permutation of 64-byte
//! lines (each load's address comes from the previous load, so nothing
//! overlaps). It bounds what a single `get` can cost: a get at 1M entries
//! is a chain of such loads (see `docs/design.md`, "Lookups").
//!
//! Also the other bound: loads that do not depend on each other, as `K`
//! chases interleaved (K = 1, 4, 16 independent chains), which is as fast
//! as the core can have misses in flight.
//!
//! `cargo run --release -p shamap-bench --example chase [MB ...]`
//! (default sizes 1 8 32 128 512). Base pages only (Vec memory).

use std::time::Instant;

use clap::Parser;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Words per 64-byte line.
const LINE: usize = 8;

/// A random cyclic permutation of the lines of `mb` MiB: each line's first
/// word holds the index of the next line's first word.
fn ring(mb: usize) -> (Vec<usize>, Vec<usize>) {
    let lines = (mb << 20) / 64;
    let mut mem = vec![0usize; lines * LINE];
    let mut order: Vec<usize> = (0..lines).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(1));
    for (i, &line) in order.iter().enumerate() {
        mem[line * LINE] = order[(i + 1) % lines] * LINE;
    }
    (mem, order)
}

/// Nanoseconds per load with `K` chains walked side by side (starting at
/// evenly spaced points of the ring), `hops` loads in all.
fn chase<const K: usize>(mem: &[usize], order: &[usize]) -> f64 {
    let hops = 4_000_000usize;
    let mut at: [usize; K] = std::array::from_fn(|c| order[c * order.len() / K] * LINE);
    // Warm what fits in the caches.
    for _ in 0..order.len().min(hops) / K {
        for a in at.iter_mut() {
            *a = mem[*a];
        }
    }
    let t = Instant::now();
    for _ in 0..hops / K {
        for a in at.iter_mut() {
            *a = mem[*a];
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / (hops / K * K) as f64;
    std::hint::black_box(at);
    ns
}

/// The latency of one dependent random load, by working-set size.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Working-set sizes in MB.
    #[arg(default_values_t = [1usize, 8, 32, 128, 512])]
    sizes: Vec<usize>,
}

fn main() {
    let sizes = Args::parse().sizes;
    println!("| working set | ns per load: 1 chain (dependent) | 4 chains | 16 chains |");
    println!("|---|---|---|---|");
    for mb in sizes {
        let (mem, order) = ring(mb);
        println!(
            "| {mb} MB | {:.1} | {:.1} | {:.1} |",
            chase::<1>(&mem, &order),
            chase::<4>(&mem, &order),
            chase::<16>(&mem, &order)
        );
    }
}
