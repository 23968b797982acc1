//! Builds N random entries and prints the counted memory and the time to
//! build and hash: `cargo run --release --example memory -- 1000000 [data_len]`.
//!
//! Keys are uniformly random; data is `data_len` bytes (default 32) so that
//! the figure beyond key and data is what the layout costs.

use std::time::Instant;

use clap::Parser;
use shamap::{Key, MapKind, MapOptions, ShaMap, SizeClasses};

/// Builds N random entries and prints the counted memory and the time to
/// build and hash.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Entries.
    #[arg(default_value_t = 1_000_000)]
    n: usize,
    /// Bytes of data per entry.
    #[arg(default_value_t = 32)]
    len: usize,
    /// The inner nodes' size classes (children per node), comma-separated.
    #[arg(value_delimiter = ',', default_values_t = [2u8, 4, 6, 16])]
    classes: Vec<u8>,
}

fn main() {
    let Args { n, len, classes } = Args::parse();
    let classes = SizeClasses::new(&classes).expect("valid size classes");
    let mut map = ShaMap::with_options(
        MapKind::AccountState,
        MapOptions::default().with_size_classes(classes),
    );
    let mut x: u64 = 0x0123_4567_89AB_CDEF;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let data = vec![0xA5u8; len];
    let t = Instant::now();
    for _ in 0..n {
        let mut k = [0u8; 32];
        for c in k.chunks_exact_mut(8) {
            c.copy_from_slice(&next().to_le_bytes());
        }
        map.insert(Key(k), &data).expect("random keys are distinct");
    }
    let build = t.elapsed();
    let t = Instant::now();
    let root = map.root_hash_serial();
    let hash = t.elapsed();
    let mut parallel = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        map.invalidate_hashes();
        let t = Instant::now();
        let again = pool.install(|| map.root_hash());
        parallel.push((threads, t.elapsed().as_secs_f64()));
        assert_eq!(again, root, "parallel hashing gives the serial root");
    }
    let s = map.mem_stats();
    println!(
        "entries {n} data_len {len} classes {:?}",
        classes.capacities()
    );
    println!(
        "build {:.3}s  root_hash {:.3}s  root {root}",
        build.as_secs_f64(),
        hash.as_secs_f64()
    );
    for (threads, secs) in &parallel {
        println!("root from scratch on {threads} thread(s): {secs:.3}s");
    }
    println!(
        "speed-up 2 threads vs 1: {:.2}x",
        parallel[0].1 / parallel[1].1
    );
    println!(
        "inner {} ({:.3}/entry), slots/inner {:.2}",
        s.inner_nodes,
        s.inner_nodes as f64 / n as f64,
        s.slots_per_inner()
    );
    println!("{:#?}", s.bytes);
    println!(
        "overhead per entry beyond key and data: {:.2} B",
        s.overhead_per_entry()
    );
}
