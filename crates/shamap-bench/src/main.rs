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

use clap::Parser;

/// Every engine in this binary allocates through mimalloc: the application
/// chooses the allocator, and every engine gets the same one. Measured
/// (`durable` workload, 1M entries, same run): our `commit_10k` 58.8k
/// writes/s with mimalloc vs 37.8k with glibc's malloc, whose free-list
/// coalescing took ~18% of a commit profile (the backed map's node cache
/// frees and allocates small nodes at every load and eviction); nomt 37.6k
/// vs 36.8k (docs/design.md, "mimalloc in the bench").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod durable;
#[cfg(feature = "peers-any")]
mod peers;
mod quick;
mod report;
mod rss;
mod workloads;

use args::{Args, Workload};

fn main() {
    let args = Args::parse();
    if args.quick {
        quick::run(&args);
        return;
    }
    if args.workloads.contains(&Workload::Peers) {
        run_peers(&args);
        return;
    }
    if args.workloads.contains(&Workload::Durable) {
        durable::run(&args);
        return;
    }
    workloads::run(&args);
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
