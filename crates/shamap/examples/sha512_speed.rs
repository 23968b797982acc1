//! SHA512Half throughput on the input sizes the map hashes. Compare builds:
//! `cargo run --release --example sha512_speed` (asm, the default) and
//! `cargo run --release --example sha512_speed --no-default-features`.

use std::time::Instant;

use shamap::xrpl::sha512_half;

fn main() {
    let asm = cfg!(feature = "asm");
    for (name, len) in [("keylet", 22usize), ("leaf", 203), ("inner", 516)] {
        let buf = vec![0x5Au8; len];
        let iters = 2_000_000 / (1 + len / 128);
        let mut acc = 0u8;
        // Warm-up, then the best of three runs.
        for _ in 0..iters / 10 {
            acc ^= sha512_half(&[&buf]).0[0];
        }
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            for _ in 0..iters {
                acc ^= sha512_half(&[&buf]).0[0];
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        let ns = best * 1e9 / iters as f64;
        println!(
            "asm={asm} {name:>6} {len:>4} B: {ns:7.1} ns/hash {:7.1} MB/s (acc {acc})",
            len as f64 / ns * 1e3
        );
    }
}
