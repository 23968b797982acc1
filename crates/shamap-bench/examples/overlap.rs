//! Can memory work hide under the multi-lane hashing on one thread? An
//! update block is about as much random-line traffic as hashing (see
//! `docs/design.md`, "Batched writes"); if prefetches issued between hash
//! calls completed while the next call ran, a pass that prefetched the next
//! run's lines during this run's hashing would cost little more than the
//! hashing alone.
//!
//! Measured here without the tree: eight 516-byte messages per call to
//! `sha512_half_batch` (one eight-lane call with AVX-512), and after each
//! call `K` software prefetches of random lines of a 256 MiB buffer. Each
//! `K` is timed three ways, alternating in rounds: hashing alone, the
//! prefetches alone, both. If the prefetches overlapped the hashing, "both"
//! would stay near "hash"; `hidden` is how much of the prefetches' own time
//! disappeared (sum of the two alone minus both, per call).
//!
//! `cargo run --release -p shamap-bench --example overlap [ROUNDS]`
//! (base pages: the buffer is a `Vec`).

use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Whether memory work hides under the multi-lane hashing on one thread.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Rounds of every measurement.
    #[arg(default_value_t = 7)]
    rounds: usize,
}

fn main() {
    let rounds = Args::parse().rounds;
    let mem = vec![1u8; 256 << 20];
    let lines = mem.len() / 64;
    let mut rng = SmallRng::seed_from_u64(3);
    let addrs: Vec<usize> = (0..1 << 22).map(|_| rng.gen_range(0..lines) * 64).collect();
    let msgs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 516]).collect();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
    let mut out = vec![[0u8; 32]; 8];
    let calls = 20_000usize;
    let ks = [0usize, 1, 2, 4, 8, 16, 32, 64];
    // times[k][mode]: per-call nanoseconds of each round; modes: hash, prefetch, both.
    let mut times = vec![[Vec::new(), Vec::new(), Vec::new()]; ks.len()];
    let mut next = 0usize;
    for _ in 0..rounds {
        for (ki, &k) in ks.iter().enumerate() {
            for (mode, t_mode) in times[ki].iter_mut().enumerate() {
                let (hash, pf) = (mode != 1, mode != 0);
                let t = Instant::now();
                for _ in 0..calls {
                    if hash {
                        sha512_lanes::sha512_half_batch(&refs, &mut out);
                        black_box(&out);
                    }
                    if pf {
                        for _ in 0..k {
                            shamap::prefetch(&mem[addrs[next]]);
                            next = (next + 1) % addrs.len();
                        }
                    }
                }
                t_mode.push(t.elapsed().as_secs_f64() * 1e9 / calls as f64);
            }
        }
    }
    println!(
        "backend {:?}, {rounds} rounds, medians in ns per call of 8 messages",
        sha512_lanes::backend()
    );
    println!("| K | hash | prefetch | both | hidden |");
    println!("|---|---|---|---|---|");
    for (ki, &k) in ks.iter().enumerate() {
        let [h, p, b] = times[ki].clone().map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        });
        println!("| {k} | {h:.0} | {p:.0} | {b:.0} | {:.0} |", h + p - b);
    }
}
