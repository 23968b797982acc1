//! The latency of one dependent random load on this machine, by working-set
//! size: a pointer chase through a random cyclic permutation of 64-byte
//! lines (each load's address comes from the previous load, so nothing
//! overlaps). It bounds what a single `get` can cost: a get at 1M entries
//! is a chain of such loads (see `docs/design.md`, "Lookups").
//!
//! `cargo run --release -p shamap-bench --example chase [MB ...]`
//! (default sizes 1 8 32 128 512). Base pages only (Vec memory).

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Words per 64-byte line.
const LINE: usize = 8;

fn chase(mb: usize) -> f64 {
    let lines = (mb << 20) / 64;
    let mut mem = vec![0usize; lines * LINE];
    let mut order: Vec<usize> = (0..lines).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(1));
    for (i, &line) in order.iter().enumerate() {
        mem[line * LINE] = order[(i + 1) % lines] * LINE;
    }
    let hops = 4_000_000usize;
    let mut at = order[0] * LINE;
    // One lap to warm what fits in the caches.
    for _ in 0..lines.min(hops) {
        at = mem[at];
    }
    let t = Instant::now();
    for _ in 0..hops {
        at = mem[at];
    }
    let ns = t.elapsed().as_nanos() as f64 / hops as f64;
    std::hint::black_box(at);
    ns
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes in MB"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1, 8, 32, 128, 512]
    } else {
        sizes
    };
    println!("| working set | ns per dependent random load |");
    println!("|---|---|");
    for mb in sizes {
        println!("| {mb} MB | {:.1} |", chase(mb));
    }
}
